import { LAYOUT_LOCK, SCHEMA } from '../store/pg/layout.js';
import type { Sql } from '../store/pg/driver.js';

/**
 * The webhooks' tables in PostgreSQL, beside the entities (store/pg/layout.ts), created when
 * absent on a deliverer's first start, under the layout's lock:
 * - `halserve.webhook_positions`: each URL's acknowledged position (positions.ts), by URL as written.
 * - `halserve.webhook_lease`: one row, the process that delivers and until when (pg-lease.ts). The
 *   expiry is the database's clock, so processes' clocks need not agree.
 */
export const POSITIONS_TABLE = `${SCHEMA}.webhook_positions`;
export const LEASE_TABLE = `${SCHEMA}.webhook_lease`;
/** The lease row's key: one deliverer per database. */
export const LEASE_ROW = 1;

const DDL: readonly string[] = [
  `SELECT pg_advisory_xact_lock(${LAYOUT_LOCK})`,
  `CREATE TABLE IF NOT EXISTS ${POSITIONS_TABLE} (url text PRIMARY KEY, cursor text NOT NULL, at bigint NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ${LEASE_TABLE} (id int PRIMARY KEY, holder text NOT NULL, expires timestamptz NOT NULL)`,
];

/** Creates the tables when absent (one simple query: one transaction). */
export async function prepareWebhookTables(sql: Sql): Promise<void> {
  const [present] = await sql.unsafe<{ present: boolean }[]>(`SELECT to_regclass('${LEASE_TABLE}') IS NOT NULL AND to_regclass('${POSITIONS_TABLE}') IS NOT NULL AS present`);
  if (!present?.present) await sql.unsafe(DDL.join(';\n'));
}
