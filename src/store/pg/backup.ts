/**
 * `halserve backup --from postgres://…` (docs/storage.md §4): every resource of the table as of one
 * cursor of the change feed, written as `<dir>/<name>.jsonl` (one line per live entity in creation
 * order, as `export` writes them).
 *
 * One statement reads it all, so one snapshot; its first row says whether that snapshot is a cut
 * of the feed. Let `h` be the snapshot's xmin: every transaction below `h` has ended, so the
 * snapshot shows all their rows. If it shows no row with `tx >= h` (no later transaction that
 * committed before the snapshot while an older one was still running), it holds exactly the
 * changes of the transactions below `h`, which are the feed's changes up to the largest
 * `(tx, pos)` it shows (pg-cursor.ts): the feed reads a row only once its `tx` is below the xmin,
 * and every later change has a `tx` at or above `h`. Otherwise the snapshot is not one cursor, and
 * the caller tries again: halserve's transactions are single short statements, so such moments
 * pass in milliseconds. Nothing is locked and no write waits. The cursor carries the database's
 * data set name (layout.ts), read in the same snapshot, as the server's cursors do.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { eachBatch, type Sql } from './driver.js';
import { SCHEMA } from './layout.js';
import { formatPgCursor, pgCursorOrigin } from './pg-cursor.js';
import { LOG_EXTENSION } from '../log/data-dir.js';
import { writeFully } from '../log/store-fs.js';

/** Rows fetched, and written, at a time. */
const CURSOR_ROWS = 10_000;

export interface DatabaseCopy {
  /** The cursor of the feed the copy is at, as a server on the database hands it out (`<dataset>-<tx>.<pos>`). */
  readonly cursor: string;
  /** Every resource with a row (an empty file for one whose rows are all deleted), with its live entities. */
  readonly resources: readonly { readonly name: string; readonly entities: number }[];
}

/** The statement: a header row (k = 0), then every live row in resource and creation order. */
const COPY_STATEMENT = `
WITH s AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS h)
SELECT 0 AS k, NULL::text AS resource, NULL::bigint AS pos, json_build_object(
  'late', EXISTS (SELECT 1 FROM ${SCHEMA}.entities, s WHERE tx >= s.h),
  'last', (SELECT json_build_array(tx::text, pos::text) FROM ${SCHEMA}.entities ORDER BY tx DESC, pos DESC LIMIT 1),
  'dataset', (SELECT value FROM ${SCHEMA}.meta WHERE key = 'dataset'),
  'resources', (SELECT coalesce(json_agg(DISTINCT resource), '[]'::json) FROM ${SCHEMA}.entities)
)::text AS body
UNION ALL
SELECT 1, resource, pos, body FROM ${SCHEMA}.entities WHERE body IS NOT NULL
ORDER BY k, resource, pos`;

interface Header {
  readonly late: boolean;
  /** The `(tx, pos)` of the latest change, as text. */
  readonly last: [string, string] | null;
  /** The data set's name (none in a database no halserve that names them has started on: its cursors have none either). */
  readonly dataset: string | null;
  readonly resources: string[];
}

/**
 * Writes the copy into `dir` (empty), each file synced; resolves undefined, with `dir` emptied
 * again, when the snapshot was not a cut of the feed (try again). `nameProblem` refuses a resource
 * name that cannot be a file.
 */
export async function copyDatabase(sql: Sql, dir: string, nameProblem: (name: string) => string | undefined): Promise<DatabaseCopy | undefined> {
  let header: Header | undefined;
  const files = new Map<string, { handle: fs.FileHandle; entities: number }>();
  const open = async (name: string): Promise<{ handle: fs.FileHandle; entities: number }> => {
    let file = files.get(name);
    if (file === undefined) {
      const problem = nameProblem(name);
      if (problem !== undefined) throw new Error(`the database holds a resource that cannot be a file: ${problem}`);
      file = { handle: await fs.open(path.join(dir, name + LOG_EXTENSION), 'wx', 0o644), entities: 0 };
      files.set(name, file);
    }
    return file;
  };
  /** One batch of rows into the files (eachBatch runs them one after another). */
  const take = async (rows: readonly unknown[][]): Promise<void> => {
    // Lines gathered per resource, then written: one write per resource per batch of rows.
    const parts = new Map<string, Buffer[]>();
    for (const [k, resource, , body] of rows) {
      if ((k as Buffer).toString() === '0') {
        header = JSON.parse((body as Buffer).toString('utf8')) as Header;
        continue;
      }
      if (header?.late !== false) continue;
      const name = (resource as Buffer).toString('utf8');
      let list = parts.get(name);
      if (list === undefined) parts.set(name, (list = []));
      list.push(body as Buffer, NEWLINE);
    }
    for (const [name, list] of parts) {
      const file = await open(name);
      file.entities += list.length / 2;
      await writeFully(file.handle, Buffer.concat(list));
    }
  };
  try {
    await eachBatch(sql, COPY_STATEMENT, CURSOR_ROWS, take);
    if (header === undefined) throw new Error('the copy statement returned no header');
    if (header.late) {
      for (const [name, file] of files) {
        await file.handle.close();
        await fs.rm(path.join(dir, name + LOG_EXTENSION));
      }
      files.clear();
      return undefined;
    }
    for (const name of header.resources) await open(name);
    for (const file of files.values()) await file.handle.sync();
    const resources = [...files].map(([name, file]) => ({ name, entities: file.entities })).sort((a, b) => (a.name < b.name ? -1 : 1));
    const dataset = header.dataset ?? undefined;
    return { cursor: header.last === null ? pgCursorOrigin(dataset) : formatPgCursor(dataset, header.last[0], header.last[1]), resources };
  } finally {
    await Promise.all([...files.values()].map((file) => file.handle.close().catch(() => {})));
  }
}

const NEWLINE = Buffer.from([0x0a]);
