import { webhookHeaders } from '../conventions/webhook-signature.js';
import { CursorExpiredError, CursorMalformedError, type ChangeFeed, type FeedPage } from '../store/changes/change-feed.js';
import type { StoreChange } from '../store/store.js';
import { retryDelay, type BackoffPolicy } from './backoff.js';
import type { Position } from './positions.js';
import type { FailureCause, Send } from './send.js';

/** Events read from the feed at a time: what one URL holds in memory, however far behind it is. */
export const DELIVERY_PAGE = 200;
/** Pending events counted at start, at most (the count is then an upper bound kept by follow and acknowledgements). */
const COUNT_LIMIT = 1_000_000;
/** How long a caught-up delivery waits for a change before it reads the feed again anyway. */
const IDLE_POLL_MS = 5_000;

/** Time and waiting, injected so that tests are deterministic. */
export interface Scheduler {
  /** Milliseconds since the epoch: the events' timestamps, the positions' `at`, the lag gauges. */
  now(): number;
  /**
   * Milliseconds on a monotonic clock, which no step of the wall clock moves: the PostgreSQL
   * lease's term is counted on both (pg-lease.ts), since on the wall clock alone it would last as
   * long as a step back while the database hands the row to another process.
   */
  monotonic(): number;
  /** Resolves after `ms`, or as soon as `signal` aborts. Never rejects. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /** A number in [0, 1): the backoff's jitter. */
  random(): number;
}

/** Real time. */
export const realScheduler: Scheduler = {
  now: Date.now,
  monotonic: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    }),
  random: Math.random,
};

export interface DeliveryOptions {
  /** The URL as configured (positions are stored under it). */
  readonly url: string;
  /** How metrics and logs name it (no credentials). */
  readonly label: string;
  readonly feed: ChangeFeed;
  /** The resources delivered; undefined: all. */
  readonly resources: ReadonlySet<string> | undefined;
  /** An event's JSON, as `/changes` shows it. */
  readonly json: (change: StoreChange) => string;
  /** The signing key (webhook-signature.ts). */
  readonly key: Uint8Array;
  readonly send: Send;
  readonly scheduler: Scheduler;
  readonly backoff?: BackoffPolicy;
  /** Called with each new position after a 2xx (it saves them). */
  readonly acknowledged: (position: Position) => void;
  readonly failed: (cause: FailureCause) => void;
  readonly delivered: () => void;
  /** The position could not be resumed: delivery goes on from the oldest event held. */
  readonly missed: (why: string) => void;
  readonly warn: (message: string) => void;
}

/**
 * The delivery of the change feed to one URL: a subscriber of the feed with a position of its own.
 *
 * Why nothing is skipped and order holds: the loop reads the feed page by page from the position
 * (the feed's `read` gives every entity's latest change after a cursor, in cursor order), sends
 * each event in turn, and moves the position to an event's cursor only after its 2xx. A failure
 * retries the same event, so no later event is sent before it. The position is saved after the
 * move (positions.ts): a crash resumes from a saved position at or before the last 2xx — events
 * after it may be sent again, none is skipped. A change made while the loop waits wakes it
 * (`heard`); one made while it reads is caught by the flag `#woken`, set before the read returns,
 * so the loop reads again rather than wait. Memory is one page, whatever the backlog.
 */
export class Delivery {
  readonly #o: DeliveryOptions;
  #position: Position;
  #pending = 0;
  /** The event being delivered (for the lag), or undefined when caught up. */
  #head: StoreChange | undefined;
  #woken = false;
  #wake: (() => void) | undefined;
  /** While the start-up count runs: the cursors heard meanwhile (counted after it, if it did not). */
  #heardWhileCounting: string[] | undefined = [];
  /**
   * The position whose miss was reported: while no event moves it (none held of the URL's
   * resources), each idle poll finds it again, and that is the same miss, not another.
   */
  #missedAt: string | undefined;

  constructor(options: DeliveryOptions, position: Position) {
    this.#o = options;
    this.#position = position;
  }

  get position(): Position {
    return this.#position;
  }

  get pending(): number {
    return this.#pending;
  }

  lagSeconds(): number {
    const head = this.#head;
    return head === undefined ? 0 : Math.max(0, this.#o.scheduler.now() / 1000 - head.at);
  }

  positionAgeSeconds(): number {
    return Math.max(0, (this.#o.scheduler.now() - this.#position.at) / 1000);
  }

  /** A change applied (told by the feed's `follow`): counted and the loop woken if it waits. */
  heard(change: StoreChange): void {
    if (this.#o.resources !== undefined && !this.#o.resources.has(change.resource)) return;
    if (this.#heardWhileCounting !== undefined) this.#heardWhileCounting.push(change.cursor);
    else this.#pending++;
    this.#woken = true;
    this.#wake?.();
  }

  /**
   * Delivers until `stopping` aborts (no new attempt starts; a wait ends) — an attempt in flight
   * then goes on until `abandon` aborts, when it is dropped and its event stays unacknowledged.
   */
  async run(stopping: AbortSignal, abandon: AbortSignal): Promise<void> {
    const { scheduler } = this.#o;
    await this.#count(stopping);
    let retry = 0;
    let readFailures = 0;
    while (!stopping.aborted) {
      this.#woken = false;
      // Taken before the read: an empty page says that no event of the URL's resources lies up to it.
      const latest = this.#o.feed.latest;
      let page: FeedPage;
      try {
        page = await this.#read(this.#position.cursor);
        readFailures = 0;
      } catch (error) {
        // The feed cannot be read now (the database away): try again later, from the same position.
        this.#o.warn(`webhook ${this.#o.label}: cannot read the change feed (${(error as Error).message}); trying again`);
        await scheduler.sleep(retryDelay(++readFailures, scheduler.random, this.#o.backoff), stopping);
        continue;
      }
      if (page.changes.length === 0) {
        this.#pending = 0;
        this.#head = undefined;
        // Caught up: the position moves past the events of other resources too (its time is that of
        // its last acknowledgement), so that a delete of theirs, once forgotten, does not leave it
        // behind a horizon it cannot resume from, and the URL told it missed events it never had to get.
        if (this.#o.feed.compare(latest, this.#position.cursor) > 0) {
          this.#position = { cursor: latest, at: this.#position.at };
          this.#o.acknowledged(this.#position);
        }
        if (!this.#woken) await this.#idle(stopping);
        continue;
      }
      for (const change of page.changes) {
        this.#head = change;
        const body = this.#o.json(change);
        for (;;) {
          if (stopping.aborted) return;
          const timestamp = Math.floor(scheduler.now() / 1000);
          const outcome = await this.#o.send(body, webhookHeaders(this.#o.key, change.cursor, timestamp, body), abandon);
          if (abandon.aborted) return;
          if (outcome.ok) {
            if (retry > 0) this.#o.warn(`webhook ${this.#o.label}: delivering again after ${retry} failed ${retry === 1 ? 'attempt' : 'attempts'}`);
            retry = 0;
            this.#position = { cursor: change.cursor, at: scheduler.now() };
            this.#pending = Math.max(0, this.#pending - 1);
            this.#o.delivered();
            this.#o.acknowledged(this.#position);
            break;
          }
          this.#o.failed(outcome.cause);
          const wait = retryDelay(++retry, scheduler.random, this.#o.backoff);
          // One line when a run of failures starts; the metric counts every one.
          if (retry === 1) this.#o.warn(`webhook ${this.#o.label}: delivery of event ${change.cursor} failed (${outcome.detail}); retrying with backoff, later events wait`);
          await scheduler.sleep(wait, stopping);
        }
      }
    }
  }

  /** A page after `cursor`; a position the feed can no longer resume from goes on from the oldest event held. */
  async #read(cursor: string): Promise<FeedPage> {
    const { feed, resources } = this.#o;
    try {
      return await feed.read(cursor, DELIVERY_PAGE, resources);
    } catch (error) {
      if (!(error instanceof CursorExpiredError || error instanceof CursorMalformedError)) throw error;
      if (this.#missedAt !== cursor) {
        this.#missedAt = cursor;
        this.#o.missed(error.message);
      }
      const page = await feed.read(undefined, DELIVERY_PAGE, resources);
      // The position stays where it was until the first of these events is acknowledged.
      return page;
    }
  }

  /**
   * Sets `pending` to the events after the position (at most `COUNT_LIMIT`), one page at a time;
   * from the oldest event held when the position cannot be resumed, as delivery will go (`#read`).
   */
  async #count(stopping: AbortSignal): Promise<void> {
    let cursor: string | undefined = this.#position.cursor;
    let counted = 0;
    let last: string | undefined;
    const { feed, resources } = this.#o;
    const read = async (after: string | undefined): Promise<FeedPage> => {
      try {
        return await feed.read(after, DELIVERY_PAGE, resources);
      } catch (error) {
        if (after === undefined || !(error instanceof CursorExpiredError || error instanceof CursorMalformedError)) throw error;
        return feed.read(undefined, DELIVERY_PAGE, resources);
      }
    };
    try {
      while (!stopping.aborted && counted < COUNT_LIMIT) {
        const page = await read(cursor);
        counted += page.changes.length;
        last = page.changes.at(-1)?.cursor ?? last;
        if (page.changes.length < DELIVERY_PAGE) break;
        cursor = page.cursor;
      }
    } catch {
      // Counted as far as it could; the loop reports what it cannot read.
    }
    const heard = this.#heardWhileCounting ?? [];
    this.#heardWhileCounting = undefined;
    this.#pending += counted + heard.filter((c) => last === undefined || this.#o.feed.compare(c, last) > 0).length;
  }

  /** Waits for a change (`heard`), a stop, or the idle poll. */
  async #idle(stopping: AbortSignal): Promise<void> {
    const woken = new AbortController();
    const stop = (): void => woken.abort();
    stopping.addEventListener('abort', stop, { once: true });
    this.#wake = stop;
    try {
      await this.#o.scheduler.sleep(IDLE_POLL_MS, woken.signal);
    } finally {
      this.#wake = undefined;
      stopping.removeEventListener('abort', stop);
    }
  }
}
