/**
 * The PostgreSQL driver, loaded only when a `postgres://` store is configured (docs/storage.md §2).
 *
 * halserve's core has no runtime dependencies; the driver is the one exception, an optional peer
 * dependency: `postgres` (Postgres.js) — it has no dependencies of its own, pipelines queries on
 * one connection, speaks LISTEN/NOTIFY and COPY, and is actively maintained. Without it installed,
 * opening a PostgreSQL store fails with one line that says what to install.
 */
import type { Options, PostgresType, Sql } from 'postgres';

export type { Sql };
export type PgOptions = Options<Record<string, PostgresType>>;
type Connect = (url: string, options?: PgOptions) => Sql;

/** The driver is not installed. The message is the line a user sees. */
export class DriverMissingError extends Error {
  override readonly name = 'DriverMissingError';
}

export const DRIVER_PACKAGE = 'postgres';

let loaded: Promise<Connect> | undefined;

/** How a module is imported: `import()` itself, or a test's stand-in for a driver that is not installed. */
export type Importer = (specifier: string) => Promise<{ default: Connect }>;

/**
 * `import('postgres')` once; rejects with `DriverMissingError` when it is not installed. A test
 * passes its own `importer` (not cached) to see that path without uninstalling anything.
 */
export function loadDriver(importer?: Importer): Promise<Connect> {
  if (importer) return importDriver(importer);
  loaded ??= importDriver((specifier) => import(specifier) as Promise<{ default: Connect }>);
  return loaded;
}

function importDriver(importer: Importer): Promise<Connect> {
  return importer(DRIVER_PACKAGE).then(
    (module: { default: Connect }) => module.default,
    (error: NodeJS.ErrnoException) => {
      loaded = undefined;
      if (error.code === 'ERR_MODULE_NOT_FOUND') {
        throw new DriverMissingError(`a postgres:// store needs the PostgreSQL driver: npm install ${DRIVER_PACKAGE} (it is an optional peer dependency of halserve)`);
      }
      throw error;
    },
  );
}

/**
 * Options every connection halserve opens is made with (the server's pool, `import`, `export`).
 *
 * `fetch_types: false`: otherwise postgres 3.4.9 sends a statement of its own first on every new
 * connection (the server's array types) and drops its promise: `ReadyForQuery` calls the async
 * `fetchArrayTypes()` and nothing awaits it (porsager/postgres#1192, #1223). When that statement
 * fails, nobody hears it: an unhandled rejection, which ends a server's process. It fails whenever
 * the connection is lost while it runs — closed, and connecting again refused (`connect
 * ECONNREFUSED`, seen when a proxy went away as the pool was being replaced after an outage),
 * or the backend terminated (57P01) — so an outage would crash the server instead of answering
 * 503. halserve needs none of those types: it sends arrays as text literals (`textArray`, cast
 * with `::text[]` by the server) and reads no array column. A new connection saves the round trip too.
 *
 * `plan_cache_mode = force_custom_plan`, a parameter of the connection's start: a prepared
 * statement (`PREPARED`) is planned at each execution for the parameters it is given, as one not
 * prepared is, never with PostgreSQL's generic plan. A generic plan is made once, from the table
 * as it was then: made while a resource had few rows, the write's plan and the read of the rows a
 * write needs scanned every row of the resource (a bitmap scan on `resource`, filtered by id):
 * one write's backend CPU grew from ~130 µs to over 1,000 µs within 60,000 writes, and
 * test/pg/plans.test.ts counts the index entries. A URL's query can set it otherwise
 * (`?plan_cache_mode=auto`).
 */
export const DRIVER_OPTIONS = { fetch_types: false, connection: { plan_cache_mode: 'force_custom_plan' } } as const satisfies PgOptions;

/**
 * The options of a statement the server runs again and again with other parameters (a write, the
 * reads a write needs, a page or poll of the change feed): a named prepared statement on each
 * connection. Postgres.js prepares none of `sql.unsafe`'s statements unless asked, and one that is
 * not prepared but has parameters costs two round trips (Parse and Describe, then Bind and
 * Execute) and PostgreSQL's parsing and analysis every time: on this project's VM a one-row write
 * took ~700 µs of the backend's CPU that way against ~440 µs prepared (bench/NOTES.md). Each
 * execution is still planned for its own parameters (`plan_cache_mode`, `DRIVER_OPTIONS`). A URL
 * with `?prepare=false` turns preparing off (postgres.js reads it), for a pooler that does not keep
 * named statements (docs/storage.md §2).
 */
export const PREPARED = { prepare: true } as const;

/** True for a store location that names PostgreSQL rather than a data directory. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * A PostgreSQL array literal of text values (`{"a","b",NULL}`), sent as one text parameter and cast
 * with `::text[]` by the server. Not `sql.array`: postgres 3.4.9 serialises an array parameter as
 * an array only once it has fetched the server's array types on that pool, and on a pool made
 * while the database was down it sent the bare values ("malformed array literal", 22P02).
 */
export function textArray(values: readonly (string | null)[]): string {
  let literal = '';
  for (const v of values) literal += literal === '' ? element(v) : `,${element(v)}`;
  return `{${literal}}`;
}

/** Characters JSON escapes other than `"` and `\`: a value with none is quoted by `JSON.stringify` as an array literal quotes it. */
const OTHER_ESCAPES = /[\u0000-\u001f\ud800-\udfff]/;

/**
 * One element of an array literal: NULL, or the value in double quotes with `"` and `\` escaped by
 * a backslash (PostgreSQL's array input takes any other character as it is). For a value where
 * those are the only characters JSON escapes, `JSON.stringify` writes exactly that, natively: half
 * the time of a `replace` with `\$&` on a JSON body full of quotes, which every write sends.
 */
function element(v: string | null): string {
  if (v === null) return 'NULL';
  return OTHER_ESCAPES.test(v) ? `"${v.replace(/[\\"]/g, '\\$&')}"` : JSON.stringify(v);
}

/**
 * Reads a raw statement's rows `rows` at a time through a cursor and hands each batch to `take`,
 * one batch after another; resolves once the last batch is taken. Postgres.js awaits the callback
 * between batches but not for a statement's last one (it calls it and resolves the statement), so
 * the batches are chained here and the chain awaited: nothing after this sees a batch half written.
 */
export async function eachBatch(sql: Sql, statement: string, rows: number, take: (batch: readonly unknown[][]) => Promise<void>): Promise<void> {
  let taken: Promise<void> = Promise.resolve();
  // raw(): each column as the bytes PostgreSQL sent, never decoded into a string and back.
  await sql
    .unsafe(statement)
    .raw()
    .cursor(rows, (batch) => {
      taken = taken.then(() => take(batch as unknown as unknown[][]));
      // A failed batch is reported once the statement is done (below), not as an unhandled rejection.
      taken.catch(() => {});
      return taken;
    });
  await taken;
}
