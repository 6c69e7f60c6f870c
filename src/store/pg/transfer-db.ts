/**
 * The database end of `halserve import` and `halserve export`: one connection, the table layout
 * (layout.ts) made sure of, and every failure turned into the one line a user sees.
 */
import { loadDriver, type Sql } from './driver.js';
import { LAYOUT_DDL, LAYOUT_VERSION, LAYOUT_VERSION_QUERY, SCHEMA } from './layout.js';

/** A failure of `import` or `export`; the message is the one line a user sees. */
export class TransferError extends Error {
  override readonly name = 'TransferError';
}

/** How long a connection attempt may take before the database counts as unreachable. */
const CONNECT_TIMEOUT_S = 10;

/** The URL with its password hidden, for messages and the summary line. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@');
  }
}

/** Why a connection or query failed, in words: the driver's message, or the error code alone. */
export function describeDbError(error: unknown): string {
  const e = error as { message?: string; code?: string; errors?: unknown[] };
  // A refused connection to `localhost` fails on ::1 and 127.0.0.1 both: an AggregateError.
  if (Array.isArray(e.errors) && e.errors.length > 0 && !e.message) return describeDbError(e.errors[0]);
  const message = e.message?.trim() || e.code || String(error);
  return message.split('\n')[0]!;
}

/**
 * Connects to `url` (one connection: a transfer is one transaction) and proves the connection
 * with a first query, so that an unreachable database or a refused login is reported here.
 */
export async function connectDatabase(url: string): Promise<Sql> {
  const connect = await loadDriver();
  let sql: Sql;
  try {
    sql = connect(url, { max: 1, connect_timeout: CONNECT_TIMEOUT_S, onnotice: () => {} });
  } catch (error) {
    throw new TransferError(`bad database URL ${redactUrl(url)}: ${describeDbError(error)}`);
  }
  try {
    await sql`SELECT 1`;
  } catch (error) {
    await sql.end({ timeout: 0 }).catch(() => {});
    throw new TransferError(`cannot reach the database ${redactUrl(url)}: ${describeDbError(error)}`);
  }
  return sql;
}

/** Creates the layout when absent (as a server's first start does) and checks its version. */
export async function ensureLayout(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    for (const statement of LAYOUT_DDL) await tx.unsafe(statement);
  });
  await checkLayoutVersion(sql);
}

/** True when the database holds halserve's table; false for a database halserve never used. */
export async function hasLayout(sql: Sql): Promise<boolean> {
  const [row] = await sql<{ found: boolean }[]>`SELECT to_regclass(${`${SCHEMA}.entities`}) IS NOT NULL AS found`;
  if (row?.found !== true) return false;
  await checkLayoutVersion(sql);
  return true;
}

async function checkLayoutVersion(sql: Sql): Promise<void> {
  const [row] = await sql.unsafe<{ value: string }[]>(LAYOUT_VERSION_QUERY);
  if (row?.value !== String(LAYOUT_VERSION)) {
    throw new TransferError(`the database holds halserve layout version ${row?.value ?? '(none)'}; this halserve reads version ${LAYOUT_VERSION}`);
  }
}
