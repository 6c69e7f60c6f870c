import { isDirectoryCursor } from '../changes/local-feed.js';
/**
 * Cursors of the PostgreSQL change feed: `<dataset>-<tx>.<pos>`, the database's data set name
 * (`halserve.meta`, layout.ts) and the `(tx, pos)` of the row the change wrote, both decimal.
 * The change feed reads a row only once its transaction id lies below the snapshot's xmin (every
 * transaction below it has ended, feed.ts), so windows come in increasing `tx`; within a
 * transaction the rows are read in `pos` order, and a transaction never writes two rows with the
 * same `pos` (each id has its own). So `(tx, pos)` orders every change of the database, and every
 * process computes the same cursor for the same change from the row alone.
 *
 * The name tells databases apart: `(tx, pos)` are positions in one database's history only, and a
 * cursor of another database (another one, or this one's layout made anew) would resume at a
 * position that means something else there, missing or repeating changes. Such a cursor is
 * answered as a copy's cursors are on files (local-feed.ts): 410, list again.
 */

/**
 * `[<dataset>-]<tx>.<pos>`, the name as a data directory's (`DATASET` in local-feed.ts); cursors
 * of halserve before databases were named have none.
 */
const CURSOR = /^(?:([a-z][a-z0-9]{3,39})-)?(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,19})$/;

export interface PgCursor {
  readonly tx: bigint;
  readonly pos: bigint;
}

/** What a database's cursors carry (`halserve.meta`, read at start-up). */
export interface PgDataset {
  /** The data set's name; undefined only for a database no halserve of this version has started on (a backup reads it as it is). */
  readonly name: string | undefined;
  /**
   * Whether a cursor without a name resumes: true for a database laid out by a halserve that
   * handed out unnamed cursors (named on its first start since), so that its clients' cursors go
   * on resuming across the upgrade; false for one laid out with its name, which never handed one out.
   */
  readonly unnamedResume: boolean;
}

/** The cursor of `(tx, pos)` in `dataset` (without a name when the data set has none). */
export const formatPgCursor = (dataset: string | undefined, tx: bigint | string, pos: bigint | number | string): string =>
  dataset === undefined ? `${tx}.${pos}` : `${dataset}-${tx}.${pos}`;

/** The cursor before every change of `dataset`. */
export const pgCursorOrigin = (dataset: string | undefined): string => formatPgCursor(dataset, 0n, 0n);

/** The `(tx, pos)` a cursor names and the data set name it carries, or undefined when it is not one. */
export function parsePgCursor(cursor: string): (PgCursor & { readonly dataset: string | undefined }) | undefined {
  const m = CURSOR.exec(cursor);
  return m ? { dataset: m[1], tx: BigInt(m[2]!), pos: BigInt(m[3]!) } : undefined;
}

/**
 * Where a cursor stands in `dataset`: its `(tx, pos)`; `'other'` for a well-formed cursor of
 * another data set (another name, or no name where unnamed cursors do not resume, or a data
 * directory's); undefined for no cursor at all. The unnamed origin `0.0` resumes everywhere: its client has seen no change, so
 * every change of any database is new to it.
 */
export function readPgCursor(cursor: string, dataset: PgDataset): PgCursor | 'other' | undefined {
  const parsed = parsePgCursor(cursor);
  // A data directory's cursor: the database was imported from one (or a client came from one),
  // and its clients list again, as the clients of any copy do (docs/storage.md).
  if (parsed === undefined) return isDirectoryCursor(cursor) ? 'other' : undefined;
  const { tx, pos } = parsed;
  if (parsed.dataset === undefined) return dataset.unnamedResume || dataset.name === undefined || (tx === 0n && pos === 0n) ? { tx, pos } : 'other';
  return parsed.dataset === dataset.name ? { tx, pos } : 'other';
}

/** Negative, zero or positive as `a` comes before, with or after `b`. */
export function comparePgCursors(a: PgCursor, b: PgCursor): number {
  return a.tx !== b.tx ? (a.tx < b.tx ? -1 : 1) : a.pos !== b.pos ? (a.pos < b.pos ? -1 : 1) : 0;
}
