/**
 * Connecting to PostgreSQL (contract §8a): the connection pool, the layout created or checked at
 * start-up, and which failures mean "the database is away" (a 503) rather than a refused write.
 */
import { StoreOpenError } from '../store.js';
import { loadDriver, type PgOptions, type Sql } from './driver.js';
import { LAYOUT_DDL, LAYOUT_VERSION, LAYOUT_VERSION_QUERY, SCHEMA } from './layout.js';

/** Connections of one process: the writers of every resource, the change feed and the loader share them. */
const POOL_SIZE = 8;
/** Seconds before a connection attempt is given up: a black-holed address must not hang start-up or a write. */
const CONNECT_TIMEOUT_S = 5;

/**
 * Seconds to wait before connecting again after a failure: the driver's default grows to 20 s,
 * which would keep a process away that long after the database is back. At most half a second.
 */
const backoff = (retries: number): number => Math.min(0.5, 0.02 * 2 ** retries);

/** `postgres://user@host:port/db` without the password: what messages may show. */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return `${parsed.protocol}//${parsed.username ? `${decodeURIComponent(parsed.username)}@` : ''}${parsed.host}${parsed.pathname}`;
  } catch {
    return 'the configured postgres:// URL';
  }
}

/** Error codes of the socket and of the driver that say the connection is gone or never came. */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOENT',
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED',
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

/** Why a connection failed, in a few words (`connection refused`, `password authentication failed …`). */
export function reason(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return 'connection timed out';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  return (error as Error)?.message ?? String(error);
}

export interface ConnectOptions {
  readonly url: string;
  /** The driver loader (tests replace it to see the driver missing). */
  readonly driver?: typeof loadDriver;
  /** Extra driver options (tests: a small pool). */
  readonly options?: PgOptions;
}

/** An open pool, and a way to open the single, long-lived connection the change feed LISTENs on. */
export interface Connection {
  readonly sql: Sql;
  /** `postgres://user@host:port/db`, without the password. */
  readonly where: string;
  listener(onNotify: () => void, onClose: () => void): Sql;
}

/**
 * Opens the pool and makes sure the layout is there (creating it on a first start). Throws
 * `StoreOpenError` with the one line a user sees when the driver is missing, the database cannot
 * be reached, or it holds another layout version.
 */
export async function connect({ url, driver = loadDriver, options = {} }: ConnectOptions): Promise<Connection> {
  let postgres;
  try {
    postgres = await driver();
  } catch (error) {
    throw new StoreOpenError((error as Error).message);
  }
  const sql = postgres(url, {
    max: POOL_SIZE,
    connect_timeout: CONNECT_TIMEOUT_S,
    backoff,
    // The type catalogue is read once per connection: text[] parameters need it (writes send arrays).
    onnotice: () => {},
    ...options,
  });
  try {
    // The DDL only on a first start: on a live database its table locks would pause other replicas' writes.
    const [present] = await sql.unsafe<{ present: boolean }[]>(`SELECT to_regclass('${SCHEMA}.entities') IS NOT NULL AS present`);
    if (!present?.present) {
      await sql.begin(async (tx) => {
        for (const statement of LAYOUT_DDL) await tx.unsafe(statement);
      });
    }
    const [row] = await sql.unsafe<{ value: string }[]>(LAYOUT_VERSION_QUERY);
    if (row?.value !== String(LAYOUT_VERSION)) {
      throw new StoreOpenError(`${describeUrl(url)} holds halserve's table layout version ${row?.value ?? 'unknown'}; this halserve uses version ${LAYOUT_VERSION}`);
    }
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    if (error instanceof StoreOpenError) throw error;
    throw new StoreOpenError(`cannot use PostgreSQL at ${describeUrl(url)}: ${reason(error)}`);
  }
  const connectPostgres = postgres;
  return {
    sql,
    where: describeUrl(url),
    listener: (onNotify, onClose) =>
      connectPostgres(url, {
        // `onnotify` is the driver's hook for NOTIFY on a connection of its own (not in its types).
        ...({ onnotify: () => onNotify() } as PgOptions),
        max: 1,
        connect_timeout: CONNECT_TIMEOUT_S,
        backoff,
        idle_timeout: 0,
        max_lifetime: 0,
        fetch_types: false,
        onnotice: () => {},
        ...options,
        onclose: () => onClose(),
      }),
  };
}
