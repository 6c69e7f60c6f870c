import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';

/** A fresh temporary directory, removed when the test file ends. */
export async function tempDir(prefix = 'halserve-store-'): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  after(() => fs.rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The JSON line of an entity as the store writes it. */
export const line = (id: string, fields: Record<string, unknown> = {}): string =>
  JSON.stringify({ id, createdAt: 1_700_000_000, updatedAt: 1_700_000_000, ...fields });

/** Collects warnings. */
export function warnings(): { warn: (message: string) => void; messages: string[] } {
  const messages: string[] = [];
  return { warn: (message) => void messages.push(message), messages };
}
