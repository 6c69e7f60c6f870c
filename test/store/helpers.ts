import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { stampedLine, tombstoneLine } from '../../src/store/changes/change-stamp.js';

/** A fresh temporary directory, removed when the test file ends. */
export async function tempDir(prefix = 'halserve-store-'): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  after(() => fs.rm(dir, { recursive: true, force: true }));
  return dir;
}

/** The entity's JSON, as a line written by hand (or before change stamps) holds it. */
export const plainLine = (id: string, fields: Record<string, unknown> = {}): string =>
  JSON.stringify({ id, createdAt: 1_700_000_000, updatedAt: 1_700_000_000, ...fields });

/** Change numbers for `line` and `tombstone`, increasing over the test file's run. */
let lineSeq = 0;

/** The line of an entity as the store writes it: its JSON and its change stamp (a create). */
export const line = (id: string, fields: Record<string, unknown> = {}): string =>
  stampedLine(plainLine(id, fields), { seq: ++lineSeq, type: 'created', at: 1_700_000_000 });

/** The line of a delete as the store writes it. */
export const tombstone = (id: string): string => tombstoneLine(id, { seq: ++lineSeq, type: 'deleted', at: 1_700_000_000 });

/** Collects warnings. */
export function warnings(): { warn: (message: string) => void; messages: string[] } {
  const messages: string[] = [];
  return { warn: (message) => void messages.push(message), messages };
}
