import fs from 'node:fs/promises';
import { MaterialisedIndex } from '../index/materialised-index.js';
import type { LogEntity } from './jsonl-entity.js';
import { loadLog } from './jsonl-load.js';
import { nodeFs } from './store-fs.js';

/**
 * The live entities of one resource file in creation order, read as the file store reads it at
 * start-up (the last line per id wins, a tombstone removes, a malformed line other than the last
 * throws `StoreOpenError` naming `file:line`), without changing the file: a torn final line is
 * left out with a warning, where the server would also truncate it away.
 */
export async function readResource(file: string, warn: (message: string) => void): Promise<LogEntity[]> {
  const index = new MaterialisedIndex<LogEntity>();
  const loaded = await loadLog(nodeFs, file, index, false);
  if (loaded.torn) {
    warn(`${file}: torn final line ${loaded.torn.line} (${loaded.torn.bytes.length} bytes, an interrupted write) left out; the file is not changed`);
  }
  return Array.from(index.values());
}

/**
 * The number of the last line of `file` that holds the entity `id` (a live entity's own line), for
 * a message naming `file:line`; undefined when none parses to it. It reads the whole file: only
 * for the message of a refusal.
 */
export async function lastLineOf(file: string, id: string): Promise<number | undefined> {
  const lines = (await fs.readFile(file, 'utf8')).split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      if ((JSON.parse(lines[i]!) as { id?: unknown } | null)?.id === id) return i + 1;
    } catch {
      // A blank, torn or malformed line names no entity.
    }
  }
  return undefined;
}
