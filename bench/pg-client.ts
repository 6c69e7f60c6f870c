/**
 * The bench's PostgreSQL client: Postgres.js (the driver of halserve's PostgreSQL store, a dev
 * dependency) on one connection over the cluster's Unix socket. `query` sends its text with the
 * simple query protocol, so several statements (`SELECT count(*) …; SELECT id …`) take one round
 * trip, as halserve's page is one request; every value comes back as text.
 */
import postgres from 'postgres';

/** The rows of one statement, every value as text (null for NULL). */
export interface PgResult {
  readonly rows: (string | null)[][];
}

export class PgClient {
  readonly #sql: postgres.Sql;

  private constructor(sql: postgres.Sql) {
    this.#sql = sql;
  }

  static async connect(socketDir: string, port: number, user = 'postgres', database = 'postgres'): Promise<PgClient> {
    const sql = postgres({ path: `${socketDir}/.s.PGSQL.${port}`, username: user, database, max: 1, idle_timeout: 0, onnotice: () => undefined });
    const client = new PgClient(sql);
    await client.query('SELECT 1');
    return client;
  }

  /** Runs `text` (one or more statements) and returns each statement's rows. */
  async query(text: string): Promise<PgResult[]> {
    const results = (await this.#sql.unsafe(text).simple().values()) as unknown[] & { command?: string };
    // One statement gives its result (which carries its command tag); several, an array of them.
    const list = (results.command === undefined ? results : [results]) as unknown[][][];
    return list.map((rows) => ({ rows: rows.map((row) => row.map((v) => (v === null ? null : typeof v === 'string' ? v : String(v)))) }));
  }

  async close(): Promise<void> {
    await this.#sql.end({ timeout: 5 });
  }
}
