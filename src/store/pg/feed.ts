import { STATEMENT_DEADLINE_MS, withDeadline, type Database } from './connection.js';
import { PREPARED, type Sql } from './driver.js';
import { CHANNEL, SCHEMA } from './layout.js';
import { compareOwn, type OwnVersion, type OwnWrites } from './own-writes.js';
import type { ReaderClock } from './replica.js';

/** One row as the catch-up query reads it. `body` NULL is a tombstone; `at` a tombstone's time (layout.ts). */
export interface FeedRow {
  readonly resource: string;
  readonly id: string;
  readonly pos: string;
  readonly rev: string;
  readonly tx: string;
  readonly body: string | null;
  readonly at: string | null;
}

/**
 * The columns of a `FeedRow` from the table as `e`, as the catch-up and the feed's pages select
 * them, and their cursor order. The order names the table's columns: a bare `ORDER BY tx, pos`
 * would sort by the output columns of those names, the text (`10` before `9`).
 */
export const FEED_COLUMNS = 'e.resource, e.id, e.pos::text AS pos, e.rev::text AS rev, e.tx::text AS tx, e.body, e.deleted_at::text AS at';
export const FEED_ORDER = 'ORDER BY e.tx, e.pos';

/** What a catch-up reports: a row of another process (or of this one, read back), or a version this process wrote. */
export type FeedItem = FeedRow | OwnVersion;
export const isOwn = (item: FeedItem): item is OwnVersion => 'state' in item;

export interface FeedOptions {
  /** The pool and the LISTEN connection. */
  readonly database: Database;
  /** The xmin of the snapshot the indexes were loaded from. */
  readonly from: bigint;
  readonly readers: ReaderClock;
  /** This process's own writes, every version: reported in their place instead of the table's latest row. */
  readonly own: OwnWrites;
  /**
   * Applies and reports what a catch-up read, in cursor order (`tx` then `pos`, in batches), each
   * cursor once: the window's rows, with this process's versions in their places (`OwnWrites`).
   */
  readonly deliver: (items: readonly FeedItem[]) => void;
  /** Told at the end of each catch-up that succeeded: the resources of the rows it left for a later window (`tx >= h`). */
  readonly caughtUp: (beyond: ReadonlySet<string>) => void;
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
 * The change feed of one process (docs/storage.md §2). A catch-up reads, in two statements and no
 * transaction, `h = pg_snapshot_xmin(pg_current_snapshot())` — every transaction below `h` has
 * ended, so the second statement's snapshot holds all their rows — and then the rows whose `tx`
 * lies in `[last, h)`; then `last = h`. A transaction that writes holds its xid
 * from its first write to its end, so while it runs, `h` stays at or below it: its rows are read by
 * the first catch-up after it ends, whatever order transactions commit in, and by no other (each
 * row is read in the window its `tx` falls in; a row written again moves to a later window).
 *
 * This process's own writes are reported from `OwnWrites`, every version in its place, rather than
 * from the table, which holds only each entity's latest: the catch-up waits, once it has read `h`,
 * for the write statements then in flight, so it knows every version of its own below `h`.
 * A cursor is reported once: one that a catch-up given up on had reported is not reported again.
 *
 * LISTEN on `halserve_changes` wakes it (every write notifies, at commit); a poll every second is
 * the safety net (a lost notification, a lost LISTEN connection). Rows committed beyond the window
 * (`tx >= h`: an older transaction still ran) are read again after a short wait that doubles.
 */
export class ChangeFeed {
  readonly #options: FeedOptions;
  readonly #pollMs: number;
  #last: bigint;
  /** The latest cursor reported: a catch-up run again after a failure skips what it had reported. */
  #told: { tx: bigint; pos: bigint } | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #up = true;
  #poll: NodeJS.Timeout | undefined;
  #beyond: NodeJS.Timeout | undefined;
  #beyondMs = BEYOND_FIRST_MS;
  #listener: Sql | undefined;
  #listening: Promise<unknown> | undefined;
  /** The connection LISTEN took effect on. */
  #listened: Sql | undefined;
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
    const { database, readers, deliver, own } = this.#options;
    const tick = readers.begin();
    /** Resources of the rows past the window (read again soon, `#scheduleBeyond`). */
    const beyondOf = new Set<string>();
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
      // This process's versions below h are all known once the statements in flight now have
      // answered (own-writes.ts); each is bounded by its writer's deadline.
      await own.settled();
      const mine = own.below(h);
      let m = 0;
      const report = (items: FeedItem[], item: FeedItem, tx: bigint, pos: bigint): void => {
        const told = this.#told;
        if (told !== undefined && (tx < told.tx || (tx === told.tx && pos <= told.pos))) return;
        this.#told = { tx, pos };
        if (isOwn(item)) own.reported(item);
        items.push(item);
      };
      await withDeadline(
        (alive) =>
          sql
            .unsafe<FeedRow[]>(`SELECT ${FEED_COLUMNS} FROM ${SCHEMA}.entities e WHERE e.tx >= $1::xid8 ${FEED_ORDER}`, [this.#last.toString()], PREPARED)
            .cursor(CURSOR_ROWS, (rows) => {
              // Rows of a catch-up given up on are older than what later readers apply: never delivered.
              if (abandoned) return;
              alive();
              // The driver loses a query whose row callback throws (it never settles): keep it here.
              try {
                const items: FeedItem[] = [];
                for (const row of rows) {
                  const tx = BigInt(row.tx);
                  if (tx >= h) {
                    beyondOf.add(row.resource);
                    continue;
                  }
                  const pos = BigInt(row.pos);
                  let same = false;
                  for (; m < mine.length && compareOwn(mine[m]!, tx, pos) <= 0; m++) {
                    const version = mine[m]!;
                    same = compareOwn(version, tx, pos) === 0;
                    report(items, version, version.tx, BigInt(version.state.pos));
                  }
                  // A row this process wrote is reported as its own version (the same cursor, with its write's type).
                  if (!same) report(items, row, tx, pos);
                }
                if (items.length > 0) deliver(items);
              } catch (error) {
                failed ??= error;
              }
            }),
        ms,
        'change feed',
      );
      if (failed !== undefined) throw failed;
      // This process's versions after the window's last row (another process wrote their rows again since).
      const rest: FeedItem[] = [];
      for (; m < mine.length; m++) report(rest, mine[m]!, mine[m]!.tx, BigInt(mine[m]!.state.pos));
      if (rest.length > 0) deliver(rest);
      own.forget(h);
      this.#last = h;
      this.#options.caughtUp(beyondOf);
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
    this.#scheduleBeyond(beyondOf.size > 0);
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
   * The loss of one that was listening starts that catch-up at once: until the next poll, nothing
   * would wake this process to other processes' writes. (One that never listened does not: the
   * database refusing new connections would make that a loop.)
   */
  #listen(): void {
    if (this.#closed) return;
    const listener = (this.#listener ??= this.#options.database.listener(
      () => this.wake(),
      () => {
        if (this.#listener === listener) this.#dropListener();
        else void listener.end({ timeout: 0 }).catch(() => {});
        if (this.#listened === listener) {
          this.#listened = undefined;
          this.wake();
        }
      },
    ));
    this.#listening = listener.unsafe(`LISTEN ${CHANNEL}`).then(
      // Changes committed before LISTEN took effect woke no one: read them.
      () => {
        this.#listened = listener;
        this.wake();
      },
      () => {
        this.#listening = undefined;
      },
    );
  }
}
