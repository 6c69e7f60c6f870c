import { STATEMENT_DEADLINE_MS, withDeadline, type Database } from './connection.js';
import type { Sql } from './driver.js';
import { CHANNEL, SCHEMA } from './layout.js';
import type { Readers } from './replica.js';

/** One row as the catch-up query reads it. `body` NULL is a tombstone. */
export interface FeedRow {
  readonly resource: string;
  readonly id: string;
  readonly pos: string;
  readonly rev: string;
  readonly tx: string;
  readonly body: string | null;
}

export interface FeedOptions {
  /** The pool and the LISTEN connection. */
  readonly database: Database;
  /** The xmin of the snapshot the indexes were loaded from. */
  readonly from: bigint;
  readonly readers: Readers;
  /** Applies rows read by a catch-up (in cursor order, `tx` then `pos`, in batches; a row may come again later). */
  readonly deliver: (rows: readonly FeedRow[]) => void;
  /** Told when the database becomes unreachable (with the error) or reachable again. */
  readonly onStatus: (up: boolean, error?: unknown) => void;
  /** The safety net under LISTEN: a catch-up at least this often (default 1000 ms). */
  readonly pollMs?: number;
  /** How long a round trip of a catch-up may go unanswered before the database counts as away (default `STATEMENT_DEADLINE_MS`). */
  readonly deadlineMs?: number;
}

/** Rows read per round trip of a catch-up: a large window (an import) never sits in memory whole. */
const CURSOR_ROWS = 2000;
/** First wait before reading again when committed rows lay beyond the window (doubling up to the poll interval). */
const BEYOND_FIRST_MS = 2;

/**
 * The change feed of one process (docs/storage.md §2). A catch-up reads, in a REPEATABLE READ snapshot,
 * `h = pg_snapshot_xmin(pg_current_snapshot())` — every transaction below `h` has ended — and the
 * rows whose `tx` lies in `[last, h)`; then `last = h`. A transaction that writes holds its xid
 * from its first write to its end, so while it runs, `h` stays at or below it: its rows are read by
 * the first catch-up after it ends, whatever order transactions commit in, and by no other (each
 * row is read in the window its `tx` falls in; a row written again moves to a later window).
 *
 * LISTEN on `halserve_changes` wakes it (every write notifies, at commit); a poll every second is
 * the safety net (a lost notification, a lost LISTEN connection). Rows committed beyond the window
 * (`tx >= h`: an older transaction still ran) are read again after a short wait that doubles.
 */
export class ChangeFeed {
  readonly #options: FeedOptions;
  readonly #pollMs: number;
  #last: bigint;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #up = true;
  #poll: NodeJS.Timeout | undefined;
  #beyond: NodeJS.Timeout | undefined;
  #beyondMs = BEYOND_FIRST_MS;
  #listener: Sql | undefined;
  #listening: Promise<unknown> | undefined;
  /** Catch-ups completed; `sync()` waits for one more. */
  #rounds = 0;
  readonly #waiters: { round: number; resolve: () => void }[] = [];

  constructor(options: FeedOptions) {
    this.#options = options;
    this.#pollMs = options.pollMs ?? 1000;
    this.#last = options.from;
  }

  /** Every transaction below this has ended and its rows have been delivered. */
  get last(): bigint {
    return this.#last;
  }

  /** True while the last catch-up succeeded. */
  get up(): boolean {
    return this.#up;
  }

  start(): void {
    this.#poll = setInterval(() => this.wake(), this.#pollMs);
    this.#poll.unref();
    this.#listen();
    this.wake();
  }

  /** Runs a catch-up now (or right after the one under way). */
  wake(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#catchUp().finally(() => {
      this.#running = undefined;
      if (this.#again) {
        this.#again = false;
        this.wake();
      }
    });
  }

  /** A write found the database unreachable: not ready until a catch-up succeeds again. */
  down(error: unknown): void {
    this.#status(false, error);
    this.wake();
  }

  /** Resolves after a catch-up that started after this call has succeeded (tests, and writes that must see others). */
  sync(): Promise<void> {
    const round = this.#rounds + (this.#running ? 2 : 1);
    const waited = new Promise<void>((resolve) => this.#waiters.push({ round, resolve }));
    this.wake();
    return waited;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#poll);
    clearTimeout(this.#beyond);
    await this.#running;
    await this.#listener?.end({ timeout: 1 }).catch(() => {});
  }

  async #catchUp(): Promise<void> {
    const { database, readers, deliver } = this.#options;
    const tick = readers.begin();
    let beyond = false;
    let failed: unknown;
    let abandoned = false;
    try {
      // Two statements, no transaction: every transaction below h had ended when h was taken, so
      // the second statement's snapshot holds all their rows.
      // A connection that died silently never answers: each round trip has a deadline.
      const sql = database.sql;
      const ms = this.#options.deadlineMs ?? STATEMENT_DEADLINE_MS;
      const [snapshot] = await withDeadline(() => sql.unsafe<{ h: string }[]>('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h'), ms, 'change feed');
      const h = BigInt(snapshot!.h);
      // ORDER BY names the table's columns: the select list's text aliases would sort "1000" before "998".
      await withDeadline(
        (alive) =>
          sql
            .unsafe<FeedRow[]>(
              `SELECT resource, id, pos::text AS pos, rev::text AS rev, tx::text AS tx, body FROM ${SCHEMA}.entities WHERE tx >= $1::xid8 ORDER BY entities.tx, entities.pos`,
              [this.#last.toString()],
            )
            .cursor(CURSOR_ROWS, (rows) => {
              // Rows of a catch-up given up on are older than what later readers apply: never delivered.
              if (abandoned) return;
              alive();
              // The driver loses a query whose row callback throws (it never settles): keep it here.
              try {
                const window = rows.filter((row) => BigInt(row.tx) < h);
                if (window.length < rows.length) beyond = true;
                if (window.length > 0) deliver(window);
              } catch (error) {
                failed ??= error;
              }
            }),
        ms,
        'change feed',
      );
      if (failed !== undefined) throw failed;
      this.#last = h;
      this.#rounds++;
      this.#status(true);
      for (let i = this.#waiters.length - 1; i >= 0; i--) {
        const waiter = this.#waiters[i]!;
        if (waiter.round <= this.#rounds) {
          this.#waiters.splice(i, 1);
          waiter.resolve();
        }
      }
      if (!this.#listening) this.#listen();
    } catch (error) {
      abandoned = true;
      this.#status(false, error);
    } finally {
      readers.end(tick);
    }
    this.#scheduleBeyond(beyond);
  }

  /** Committed rows past `h` (or rows still unseen) are read again soon, not at the next poll. */
  #scheduleBeyond(beyond: boolean): void {
    clearTimeout(this.#beyond);
    if (!beyond || this.#closed) {
      this.#beyondMs = BEYOND_FIRST_MS;
      return;
    }
    this.#beyond = setTimeout(() => this.wake(), this.#beyondMs);
    this.#beyond.unref();
    this.#beyondMs = Math.min(this.#pollMs, this.#beyondMs * 2);
  }

  #status(up: boolean, error?: unknown): void {
    if (up === this.#up) return;
    this.#up = up;
    // The LISTEN connection may be as dead as the pool without knowing it (a silent network):
    // the next successful catch-up listens again, on a new one.
    if (!up) this.#dropListener();
    this.#options.onStatus(up, error);
  }

  #dropListener(): void {
    const listener = this.#listener;
    this.#listener = undefined;
    this.#listening = undefined;
    void listener?.end({ timeout: 0 }).catch(() => {});
  }

  /**
   * LISTEN on a connection of its own. When it is lost, the next successful catch-up listens
   * again, on a new one (a connection lost with a write buffered never writes again, see `Database`).
   */
  #listen(): void {
    if (this.#closed) return;
    const listener = (this.#listener ??= this.#options.database.listener(
      () => this.wake(),
      () => {
        if (this.#listener === listener) this.#dropListener();
        else void listener.end({ timeout: 0 }).catch(() => {});
      },
    ));
    this.#listening = listener.unsafe(`LISTEN ${CHANNEL}`).then(
      // Changes committed before LISTEN took effect woke no one: read them.
      () => this.wake(),
      () => {
        this.#listening = undefined;
      },
    );
  }
}
