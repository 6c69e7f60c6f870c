/**
 * The database end of `halserve import` and `halserve export`: one connection (a temporary
 * staging table lives in its session), the table layout made sure of as a server's start does
 * (connection.ts), and every failure turned into the one line a user sees.
 */
import { describeUrl, prepareLayout, reason } from './connection.js';
import { DRIVER_OPTIONS, loadDriver, type Sql } from './driver.js';

/** A failure of `import` or `export`; the message is the one line a user sees. */
export class TransferError extends Error {
  override readonly name = 'TransferError';
}

/** How long a connection attempt may take before the database counts as unreachable. */
const CONNECT_TIMEOUT_S = 10;

/**
 * Connects to `url` (one connection) and proves the connection with a first query, so that an
 * unreachable database or a refused login is reported here.
 */
export async function connectDatabase(url: string): Promise<Sql> {
  const connect = await loadDriver();
  let sql: Sql;
  try {
    sql = connect(url, { max: 1, connect_timeout: CONNECT_TIMEOUT_S, onnotice: () => {}, ...DRIVER_OPTIONS });
  } catch (error) {
    throw new TransferError(`bad database URL ${describeUrl(url)}: ${reason(error)}`);
  }
  try {
    await sql`SELECT 1`;
  } catch (error) {
    await sql.end({ timeout: 0 }).catch(() => {});
    throw new TransferError(`cannot reach the database ${describeUrl(url)}: ${reason(error)}`);
  }
  return sql;
}

/** Creates the layout when absent (as a server's first start does) and checks its version. */
export async function ensureLayout(sql: Sql, url: string): Promise<void> {
  await prepareLayout(sql, describeUrl(url), true);
}

/** True when the database holds halserve's table (of this version); false for a database halserve never used. */
export function hasLayout(sql: Sql, url: string): Promise<boolean> {
  return prepareLayout(sql, describeUrl(url), false);
}
