/**
 * Connecting to PostgreSQL (docs/storage.md §2): the connection pool, the layout created or checked at
 * start-up, and which failures mean "the database is away" (a 503) rather than a refused write.
 */
import { StoreOpenError } from '../store.js';
import { DRIVER_OPTIONS, loadDriver, type PgOptions, type Sql } from './driver.js';
import { CREATE_FUNCTION_QUERY, CREATE_FUNCTION_SETUP } from './create-function.js';
import { renameEarlierKeys } from './earlier-keys.js';
import { ANSWERS_AT_BTREE_QUERY, ANSWERS_AT_MIGRATION, ANSWERS_TABLE, ANSWERS_TABLE_DDL, DATASET_MIGRATION, DATASET_QUERY, DELETED_AT_DDL, DELETED_AT_QUERY, LAYOUT_DDL, LAYOUT_LOCK, LAYOUT_VERSION, LAYOUT_VERSION_QUERY, SCHEMA, UNNAMED_CURSORS } from './layout.js';
import type { PgDataset } from './pg-cursor.js';

/** Connections of one process: the writers of every resource, the change feed and the loader share them. */
const POOL_SIZE = 8;
/** Seconds before a connection attempt is given up: a black-holed address must not hang start-up or a write. */
const CONNECT_TIMEOUT_S = 5;

/**
 * Seconds to wait before connecting again after a failure: the driver's default grows to 20 s,
 * which would keep a process away that long after the database is back. At most half a second.
 */
const backoff = (retries: number): number => Math.min(0.5, 0.02 * 2 ** retries);

/** `postgres://user@host:port/db` without the password (nor the query): what messages may show. */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return `${parsed.protocol}//${parsed.username ? `${decodeURIComponent(parsed.username)}@` : ''}${parsed.host}${parsed.pathname}`;
  } catch {
    // Not a URL: shown as given, less anything that looks like a password.
    return url.replace(/:[^:@/]*@/, '@');
  }
}

/**
 * How long the statements of one write try, or one round trip of a change-feed catch-up, may go
 * unanswered before the connection counts as lost: a query sent on a connection that died
 * silently (postgres 3.4.9 keeps such a query pending for ever) would otherwise hold a resource's
 * writes, or every process's view of others' writes, for ever. Well above any lock wait a write
 * meets in normal operation.
 */
export const STATEMENT_DEADLINE_MS = 10_000;

/** Code of `StatementDeadlineError`: counted among the connection failures. */
const DEADLINE = 'HALSERVE_DEADLINE';

/** A statement that did not answer within its deadline. */
export class StatementDeadlineError extends Error {
  override readonly name = 'StatementDeadlineError';
  readonly code = DEADLINE;
}

/**
 * What `work` resolves to, or a rejection with `StatementDeadlineError` once `ms` pass without an
 * answer; `work` may call `alive()` whenever a part of the answer arrives (a cursor's rows), which
 * starts the wait again. The statement itself is not cancelled (its connection is presumed dead;
 * the pool is replaced, see `Database.recycle`): a write it was may still have committed, which
 * the change feed then delivers.
 */
export function withDeadline<T>(work: (alive: () => void) => Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let fail: (error: Error) => void = () => {};
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => fail(new StatementDeadlineError(`${what}: no answer from PostgreSQL within ${ms} ms`)), ms);
  };
  const expired = new Promise<never>((_, reject) => (fail = reject));
  arm();
  return Promise.race([work(arm), expired]).finally(() => clearTimeout(timer));
}

/** Error codes of the socket and of the driver that say the connection is gone or never came. */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOENT',
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', DEADLINE,
]);

/**
 * True when `error` means the database cannot be reached or is going away: a socket error, a
 * connection the driver lost, SQLSTATE class 08 (connection exception), 57P01-57P03 (shutting
 * down, starting up) or 53300 (too many connections). Anything else is an answer from a working
 * database.
 */
export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return CONNECTION_CODES.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/** Why a connection or statement failed, in a few words (`connection refused`, `password authentication failed …`): one line. */
export function reason(error: unknown): string {
  const e = error as { code?: unknown; message?: string; errors?: unknown[] } | null;
  const code = e?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return 'connection timed out';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  // A refused connection to `localhost` fails on ::1 and 127.0.0.1 both: an AggregateError.
  if (Array.isArray(e?.errors) && e.errors.length > 0 && !e.message) return reason(e.errors[0]);
  return (e?.message?.trim() || (typeof code === 'string' ? code : String(error))).split('\n')[0]!;
}

export interface ConnectOptions {
  readonly url: string;
  /** The driver loader (tests replace it to see the driver missing). */
  readonly driver?: typeof loadDriver;
  /** Extra driver options (tests: a small pool). */
  readonly options?: PgOptions;
}

/**
 * The connections of one process to its database: a pool for writes, the loader and the change
 * feed, and a connection of its own for LISTEN.
 *
 * The pool is replaced when the database goes away (`recycle`): with postgres 3.4.9, a connection
 * that had a write buffered at the moment its socket closed keeps that write pending for ever
 * (porsager/postgres#1154, #1208), and every later query on it would hang.
 */
export class Database {
  readonly #open: (extra: PgOptions) => Sql;
  #sql: Sql;
  /** `postgres://user@host:port/db`, without the password. */
  readonly where: string;

  constructor(open: (extra: PgOptions) => Sql, where: string) {
    this.#open = open;
    this.#sql = open({});
    this.where = where;
  }

  get sql(): Sql {
    return this.#sql;
  }

  /** A fresh pool from now on; the old one's connections are closed (their queries fail, as the database is away). */
  recycle(): void {
    const old = this.#sql;
    this.#sql = this.#open({});
    void old.end({ timeout: 0 }).catch(() => {});
  }

  /**
   * Runs `work` on a connection of its own, then closes that connection. The loader's COPY runs so:
   * with postgres 3.4.9, a connection that streamed a COPY out may never answer again.
   */
  async alone<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
    const sql = this.#open({ max: 1 });
    try {
      return await work(sql);
    } finally {
      await sql.end({ timeout: 0 }).catch(() => {});
    }
  }

  /** A connection of its own, kept open: NOTIFY calls `onNotify`, its loss `onClose`. */
  listener(onNotify: () => void, onClose: () => void): Sql {
    return this.#open({
      max: 1,
      idle_timeout: 0,
      max_lifetime: 0,
      // `onnotify` is the driver's hook for NOTIFY on a connection of its own (not in its types).
      ...({ onnotify: () => onNotify() } as PgOptions),
      onclose: () => onClose(),
    });
  }

  end(): Promise<void> {
    return this.#sql.end({ timeout: 5 });
  }
}

/**
 * Opens the pool and makes sure the layout is there (creating it on a first start). Throws
 * `StoreOpenError` with the one line a user sees when the driver is missing, the database cannot
 * be reached, or it holds another layout version.
 */
export async function connect({ url, driver = loadDriver, options = {} }: ConnectOptions): Promise<Database> {
  let postgres;
  try {
    postgres = await driver();
  } catch (error) {
    throw new StoreOpenError((error as Error).message);
  }
  const connectPostgres = postgres;
  let database: Database;
  try {
    database = newDatabase(connectPostgres, url, options);
  } catch (error) {
    // The driver parses the URL as it makes the pool: a malformed one is one line, as at import.
    throw new StoreOpenError(`bad database URL ${describeUrl(url)}: ${reason(error)}`);
  }
  const sql = database.sql;
  try {
    await prepareLayout(sql, database.where, true);
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    if (error instanceof StoreOpenError) throw error;
    throw new StoreOpenError(`cannot use PostgreSQL at ${database.where}: ${reason(error)}`);
  }
  return database;
}

/** The pools of one process on `url` (`Database`), made by the driver. */
function newDatabase(connectPostgres: Awaited<ReturnType<typeof loadDriver>>, url: string, options: ConnectOptions['options'] = {}): Database {
  return new Database(
    (extra) =>
      connectPostgres(url, {
        max: POOL_SIZE,
        connect_timeout: CONNECT_TIMEOUT_S,
        backoff,
        onnotice: () => {},
        // No statement of the driver's own on a new connection: its failure would go unhandled (driver.ts).
        ...DRIVER_OPTIONS,
        ...options,
        ...extra,
      }),
    describeUrl(url),
  );
}

/**
 * Makes sure the database holds this halserve's layout (layout.ts): with `create`, creates it when
 * absent — only then: on a live database its table locks would pause other processes' writes — in
 * one simple query of several statements (one transaction, no ROLLBACK to send). Resolves false
 * when absent and not created. Throws `StoreOpenError` when the database holds another version;
 * `where` names the database in that message.
 */
export async function prepareLayout(sql: Sql, where: string, create: boolean): Promise<boolean> {
  const [present] = await sql.unsafe<{ present: boolean }[]>(`SELECT to_regclass('${SCHEMA}.entities') IS NOT NULL AS present`);
  if (!present?.present) {
    if (!create) return false;
    await sql.unsafe(LAYOUT_DDL.join(';\n'));
  }
  const [row] = await sql.unsafe<{ value: string }[]>(LAYOUT_VERSION_QUERY);
  if (row?.value !== String(LAYOUT_VERSION)) {
    throw new StoreOpenError(`${where} holds halserve's table layout version ${row?.value ?? 'unknown'}; this halserve uses version ${LAYOUT_VERSION}`);
  }
  // A database laid out before idempotency answers were kept gets their table (layout.ts).
  const [answers] = await sql.unsafe<{ present: boolean }[]>(`SELECT to_regclass('${ANSWERS_TABLE}') IS NOT NULL AS present`);
  if (!answers?.present && create) await sql.unsafe([`SELECT pg_advisory_xact_lock(${LAYOUT_LOCK})`, ...ANSWERS_TABLE_DDL].join(';\n'));
  // The first layout's B-tree of the answers' time gives way to a BRIN index (layout.ts); asked
  // first, since dropping an index takes its table's lock even where there is none to drop.
  const [btree] = await sql.unsafe<{ present: boolean }[]>(ANSWERS_AT_BTREE_QUERY);
  if (btree?.present && create) await sql.unsafe(ANSWERS_AT_MIGRATION.join(';\n'));
  // A table laid out before deletes kept their time gets the column (layout.ts); asked first, since
  // ALTER TABLE would wait for every other process's statements on the table even when it has it.
  const [deletedAt] = await sql.unsafe<{ present: boolean }[]>(DELETED_AT_QUERY);
  if (!deletedAt?.present && create) await sql.unsafe([`SELECT pg_advisory_xact_lock(${LAYOUT_LOCK})`, DELETED_AT_DDL].join(';\n'));
  // The function batches of creates run (create-function.ts), in a database of any age.
  const [createFunction] = await sql.unsafe<{ present: boolean }[]>(CREATE_FUNCTION_QUERY);
  if (!createFunction?.present && create) await sql.unsafe(CREATE_FUNCTION_SETUP);
  // A database laid out before data sets were named gets its name (layout.ts); asked first, as
  // the others, so that a start on a named database writes nothing.
  if ((await readDataset(sql)).name === undefined && create) await sql.unsafe(DATASET_MIGRATION.join(';\n'));
  // Answers an earlier version recorded, under the keys it made, take this version's (earlier-keys.ts).
  if (create) await renameEarlierKeys(sql);
  return true;
}

/**
 * The data set's name and whether unnamed cursors resume (layout.ts), as the database holds them
 * now; no name in a database laid out by an earlier halserve that no writing process of this one
 * has started on yet.
 */
export async function readDataset(sql: Sql): Promise<PgDataset> {
  const rows = await sql.unsafe<{ key: string; value: string }[]>(DATASET_QUERY);
  const value = (key: string): string | undefined => rows.find((row) => row.key === key)?.value;
  return { name: value('dataset'), unnamedResume: value(UNNAMED_CURSORS) !== undefined };
}
