/**
 * Cursors of the PostgreSQL change feed: `<tx>.<pos>` of the row the change wrote, both decimal.
 * The change feed reads a row only once its transaction id lies below the snapshot's xmin (every
 * transaction below it has ended, feed.ts), so windows come in increasing `tx`; within a
 * transaction the rows are read in `pos` order, and a transaction never writes two rows with the
 * same `pos` (each id has its own). So `(tx, pos)` orders every change of the database, and every
 * process computes the same cursor for the same change from the row alone.
 */
const CURSOR = /^(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,19})$/;

export interface PgCursor {
  readonly tx: bigint;
  readonly pos: bigint;
}

export const formatPgCursor = (tx: bigint | string, pos: bigint | number | string): string => `${tx}.${pos}`;

/** The `(tx, pos)` a cursor names, or undefined when it is not one. */
export function parsePgCursor(cursor: string): PgCursor | undefined {
  const m = CURSOR.exec(cursor);
  return m ? { tx: BigInt(m[1]!), pos: BigInt(m[2]!) } : undefined;
}

/** Negative, zero or positive as `a` comes before, with or after `b`. */
export function comparePgCursors(a: PgCursor, b: PgCursor): number {
  return a.tx !== b.tx ? (a.tx < b.tx ? -1 : 1) : a.pos !== b.pos ? (a.pos < b.pos ? -1 : 1) : 0;
}
