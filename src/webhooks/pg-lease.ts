import { withDeadline } from '../store/pg/connection.js';
import type { Sql } from '../store/pg/driver.js';
import type { Scheduler } from './delivery.js';
import type { Lease } from './lease.js';
import { LEASE_ROW, LEASE_TABLE, prepareWebhookTables } from './pg-schema.js';

/**
 * How long a lease lasts unless renewed (`--webhook-lease`). It is renewed, and asked for by the
 * other processes, every third of it: another process takes over at most 4/3 of it after the
 * deliverer died, hung or lost the database — 20 s by default, within the 30 s promised.
 */
export const DEFAULT_LEASE_MS = 15_000;

/** The end of a lease's term on this process's two clocks, in milliseconds (`Scheduler`). */
interface Term {
  readonly monotonic: number;
  readonly wall: number;
}

const NOT_RENEWED = 'webhook lease not renewed in time (PostgreSQL unreachable or slow): delivery stops until this process holds it again';

/**
 * The one deliverer of a PostgreSQL database: a lease row (pg-schema.ts) with a holder and an
 * expiry on the database's clock.
 *
 * Why two processes never both believe they deliver: a process takes or renews the row only when
 * it is expired or its own, in one statement, setting the expiry to the database's now + ttl. It
 * counts the lease valid until its own clock passes the moment it *sent* that statement + ttl,
 * which is no later than the expiry the database set (clocks run at the same rate; they need not
 * agree), so its validity ends before another process can take the row. "Its own clock" is two
 * (`Term`): the wall clock steps, and set back an hour (NTP, an operator) it alone would keep a
 * holder that can no longer renew delivering for that hour beside the next holder; the monotonic
 * clock may stand still while the machine is suspended, which the wall clock, set right on
 * waking, does not. The term ends when either clock passes it: a step forward costs no more than
 * a lease taken again. When it ends without a renewal the holder stops and drops its delivery in
 * flight (`lost`). Positions are saved only under the lease (pg-positions.ts). What remains is at
 * least once: events the old holder had delivered but not yet saved are delivered again by the
 * next.
 */
export class PgLease implements Lease {
  readonly #sql: () => Sql;
  readonly #holder: string;
  readonly #ttlMs: number;
  readonly #scheduler: Scheduler;
  readonly #warn: (message: string) => void;
  #prepared = false;
  #held = false;

  constructor(options: { sql: () => Sql; holder: string; ttlMs?: number; scheduler: Scheduler; warn: (message: string) => void }) {
    this.#sql = options.sql;
    this.#holder = options.holder;
    this.#ttlMs = options.ttlMs ?? DEFAULT_LEASE_MS;
    this.#scheduler = options.scheduler;
    this.#warn = options.warn;
  }

  get #everyMs(): number {
    return Math.max(1, Math.floor(this.#ttlMs / 3));
  }

  /** Takes the row when expired or ours; true when this process holds it now. */
  async #take(): Promise<boolean> {
    const sql = this.#sql();
    if (!this.#prepared) {
      await withDeadline(() => prepareWebhookTables(sql), this.#everyMs * 3, 'preparing the webhook tables');
      this.#prepared = true;
    }
    const rows = await withDeadline(
      () =>
        sql.unsafe<{ holder: string }[]>(
          `INSERT INTO ${LEASE_TABLE} AS l (id, holder, expires) VALUES (${LEASE_ROW}, $1, clock_timestamp() + $2::bigint * interval '1 millisecond')
           ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, expires = EXCLUDED.expires
           WHERE l.holder = EXCLUDED.holder OR l.expires <= clock_timestamp()
           RETURNING holder`,
          [this.#holder, String(this.#ttlMs)],
        ),
      this.#everyMs,
      'taking the webhook lease',
    );
    return rows.length === 1;
  }

  /** The term of a statement sent now: it ends `ttlMs` later on either clock. */
  #termFromNow(): Term {
    return { monotonic: this.#scheduler.monotonic() + this.#ttlMs, wall: this.#scheduler.now() + this.#ttlMs };
  }

  /** Milliseconds left of `term`: by the clock that has run further into it. */
  #left(term: Term): number {
    return Math.min(term.monotonic - this.#scheduler.monotonic(), term.wall - this.#scheduler.now());
  }

  async acquire(signal: AbortSignal): Promise<AbortSignal | undefined> {
    let term: Term;
    for (;;) {
      if (signal.aborted) return undefined;
      const sent = this.#termFromNow();
      try {
        if (await this.#take()) {
          term = sent;
          break;
        }
      } catch {
        // The database away: asked again at the next interval.
      }
      await this.#scheduler.sleep(this.#everyMs, signal);
    }
    this.#held = true;
    this.#term = term;
    const lost = new AbortController();
    const renew = async (): Promise<void> => {
      while (!lost.signal.aborted) {
        await this.#scheduler.sleep(Math.max(0, Math.min(this.#everyMs, this.#left(term))), lost.signal);
        if (lost.signal.aborted) return;
        if (this.#left(term) <= 0) {
          this.#warn(NOT_RENEWED);
          break;
        }
        const sent = this.#termFromNow();
        try {
          if (await this.#take()) {
            term = sent;
            if (!lost.signal.aborted) this.#term = term;
          } else {
            this.#warn('webhook lease taken by another process: it delivers now');
            break;
          }
        } catch {
          // Tried again at the next interval, while the lease is still valid.
        }
      }
      this.#held = false;
      lost.abort();
    };
    void renew();
    this.#lost = lost;
    return lost.signal;
  }

  #lost: AbortController | undefined;
  /** When the lease held ends by this process's clocks, unless renewed. */
  #term: Term = { monotonic: 0, wall: 0 };

  /**
   * The renewal's timer tells of a lease that ran out only once it runs: after a stall of the event
   * loop (a long synchronous task, a paused machine), an answer can be handled first and the next
   * attempt sent by a holder that is no longer one. So each attempt asks the clocks first.
   */
  holds(): boolean {
    const lost = this.#lost;
    if (lost === undefined || lost.signal.aborted) return false;
    if (this.#left(this.#term) > 0) return true;
    this.#warn(NOT_RENEWED);
    this.#held = false;
    lost.abort();
    return false;
  }

  async release(): Promise<void> {
    this.#lost?.abort();
    if (!this.#held && this.#lost === undefined) return;
    this.#lost = undefined;
    try {
      await withDeadline(() => this.#sql().unsafe(`DELETE FROM ${LEASE_TABLE} WHERE id = ${LEASE_ROW} AND holder = $1`, [this.#holder]), this.#everyMs, 'releasing the webhook lease');
    } catch {
      // It expires on its own.
    }
  }
}
