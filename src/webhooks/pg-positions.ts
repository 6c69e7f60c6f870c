import type { Sql } from '../store/pg/driver.js';
import { LEASE_ROW, LEASE_TABLE, POSITIONS_TABLE } from './pg-schema.js';
import type { Position, Positions } from './positions.js';

/**
 * The positions in the database (pg-schema.ts), shared by every process of it. A save is fenced by
 * the lease: it writes only while `holder` holds an unexpired lease, so a deliverer that lost the
 * lease (it hung, the database thought it dead) cannot move a position back after another took over.
 */
export class PgPositions implements Positions {
  readonly #sql: () => Sql;
  readonly #holder: string;

  constructor(sql: () => Sql, holder: string) {
    this.#sql = sql;
    this.#holder = holder;
  }

  async load(): Promise<Map<string, Position>> {
    const rows = await this.#sql().unsafe<{ url: string; cursor: string; at: string }[]>(`SELECT url, cursor, at::text AS at FROM ${POSITIONS_TABLE}`);
    return new Map(rows.map((row) => [row.url, { cursor: row.cursor, at: Number(row.at) }]));
  }

  async save(positions: ReadonlyMap<string, Position>): Promise<void> {
    const sql = this.#sql();
    for (const [url, { cursor, at }] of positions) {
      await sql.unsafe(
        `INSERT INTO ${POSITIONS_TABLE} (url, cursor, at)
         SELECT $1, $2, $3::bigint WHERE EXISTS (SELECT 1 FROM ${LEASE_TABLE} WHERE id = ${LEASE_ROW} AND holder = $4 AND expires > clock_timestamp())
         ON CONFLICT (url) DO UPDATE SET cursor = EXCLUDED.cursor, at = EXCLUDED.at`,
        [url, cursor, String(at), this.#holder],
      );
    }
  }
}
