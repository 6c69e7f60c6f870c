import { findStamp } from '../src/store/changes/change-stamp.js';
import type { Rows } from '../src/store/index/rows.js';
import { LoadedEntity } from '../src/store/log/jsonl-entity.js';
import { LineScanner } from '../src/store/log/line-scanner.js';

/**
 * Entities loaded as the file store loads them, for the index-build benchmarks
 * (`field-index-build.ts`, `text-index-build.ts`): a `LoadedEntity` per stamped line of one buffer,
 * pointing into it, and the rows an index reads them through.
 */

/** A `LoadedEntity` per line, as `jsonl-load.ts` makes them. */
export function loadEntities(buffer: Buffer): LoadedEntity[] {
  const scanner = new LineScanner();
  const entities: LoadedEntity[] = [];
  for (let start = 0, line = 1; start < buffer.length; line++) {
    const end = buffer.indexOf(0x0a, start);
    if (!scanner.scan(buffer, start, end)) throw new Error(`line ${line} does not scan`);
    const r = scanner.result;
    entities.push(new LoadedEntity(buffer, r.objectStart, r.objectEnd, r.idStart, r.idEnd, findStamp(buffer, r.objectStart, r.objectEnd)));
    start = end + 1;
  }
  return entities;
}

/** The entities as the rows of one revision. */
export function rowsOf(entities: readonly LoadedEntity[]): Rows<LoadedEntity> {
  return { size: entities.length, slotCount: entities.length, layout: 0, revision: 'bench.0', at: (row) => entities[row], page: (offset, limit) => entities.slice(offset, offset + limit) };
}
