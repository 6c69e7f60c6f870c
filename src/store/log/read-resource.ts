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
