import type { Sql } from './driver.js';
import { SCHEMA } from './layout.js';
import { comparePgCursors, type PgCursor } from './pg-cursor.js';

/**
 * The latest row of each resource below a start-up snapshot's xmin, and of the whole database: where
 * the changes stood when the indexes were loaded (open.ts), in cursor order (`tx`, then `pos`).
 *
 * One pass over the table, in one hash table of a group per resource: each group keeps the largest
 * `[tx, pos]`, compared as an array, element by element, which is the cursor order. It was a
 * `DISTINCT ON (resource) … ORDER BY resource, tx DESC, pos DESC`, which no index serves (the
 * `tx` index leads with `tx`, not the resource): PostgreSQL sorted every row of the table, and past
 * `work_mem` (4 MB by default, ~40,000 rows) on disk. At 1,000,000 entities that sort took 9-11 s of
 * a 30 s start-up on a loaded two-core machine, where this statement takes 1.5-3 s and a bare count of
 * the same rows 1.3-1.6 s (bench/NOTES.md, "PostgreSQL start-up at 1,000,000 entities").
 *
 * `numeric`, not `bigint`: an `xid8` is an unsigned 64-bit number.
 */
const LATEST_BELOW = `SELECT m.resource, (m.latest)[1]::text AS tx, (m.latest)[2]::text AS pos
  FROM (SELECT e.resource, max(ARRAY[e.tx::text::numeric, e.pos::numeric]) AS latest
        FROM ${SCHEMA}.entities e WHERE e.tx < $1::xid8 GROUP BY e.resource) m`;

export interface LoadPosition {
  /** The latest row below the snapshot's xmin, `{ tx: 0n, pos: 0n }` when there is none. */
  readonly latest: PgCursor;
  /** The same per resource, for resources with such a row. */
  readonly latestOf: Map<string, PgCursor>;
}

/** Where the changes stood below `xmin` (`pg_snapshot_xmin` taken before the start-up copy). */
export async function loadPosition(sql: Sql, xmin: bigint): Promise<LoadPosition> {
  const rows = await sql.unsafe<{ resource: string; tx: string; pos: string }[]>(LATEST_BELOW, [xmin.toString()]);
  let latest: PgCursor = { tx: 0n, pos: 0n };
  const latestOf = new Map<string, PgCursor>();
  for (const row of rows) {
    const cursor = { tx: BigInt(row.tx), pos: BigInt(row.pos) };
    latestOf.set(row.resource, cursor);
    if (comparePgCursors(cursor, latest) > 0) latest = cursor;
  }
  return { latest, latestOf };
}
