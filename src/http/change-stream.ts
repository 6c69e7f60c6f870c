import { eventMessage } from '../conventions/event-stream.js';
import type { EventType } from '../conventions/changes.js';
import type { ChangeFeed, FeedPage } from '../store/changes/change-feed.js';
import type { MaybePromise, StoreChange } from '../store/store.js';
import { performance } from 'node:perf_hooks';
import { SharedText, type StreamWriter } from './reply.js';

/** Changes read per page while a stream catches up. */
const CATCH_UP_PAGE = 200;
/**
 * About how many characters of a page a catch-up writes at once, each write once its reader has
 * taken the one before (`ready`): a page of large entities is not queued whole for a reader.
 */
const CATCH_UP_WRITE = 64 * 1024;
/**
 * The most changes a stream that catches up holds for after it (`waiting`): past it they are let
 * go, and the catch-up reads another page, which holds them, before it goes live. A catch-up that
 * waits for a slow reader holds no more than this, however many writes the data set takes meanwhile.
 */
const MAX_WAITING = CATCH_UP_PAGE;

/** How a stream writes an event's JSON. */
type EventJson = (change: StoreChange, type: EventType) => string;

/**
 * Each change's message text by `json` function and type, made once however many streams send it:
 * a write followed by thousands of streams costs one serialisation, not one per stream. Keyed by
 * the function too: two handlers serving one store (another base path, other resources) write
 * other links for the same change.
 */
const messages = new WeakMap<EventJson, WeakMap<StoreChange, Map<EventType, string>>>();
function messageOf(change: StoreChange, type: EventType, json: EventJson): string {
  let byChange = messages.get(json);
  if (byChange === undefined) messages.set(json, (byChange = new WeakMap()));
  let byType = byChange.get(change);
  if (byType === undefined) byChange.set(change, (byType = new Map()));
  let text = byType.get(type);
  if (text === undefined) byType.set(type, (text = eventMessage(change.cursor, type, json(change, type))));
  return text;
}

export interface ChangeStreamOptions {
  readonly feed: ChangeFeed;
  /** The cursor to continue after (checked already). */
  readonly after: string;
  /** The resources followed; undefined: all. */
  readonly resources: ReadonlySet<string> | undefined;
  /** The event a change becomes on this stream, or undefined to send none. */
  readonly select: (change: StoreChange) => EventType | undefined;
  /** The event's JSON: one function for every stream that writes it alike (the text is made once per function). */
  readonly json: EventJson;
  /**
   * Streams with the same `shared` key and the same `json` function send the same text for the
   * same changes (a stream of `/changes` of the same resources): one pass of the fan-out composes
   * it once for all of them.
   */
  readonly shared?: string;
}

/** A stream as the fan-out sees it. */
interface Follower {
  /** Takes a batch of changes (in cursor order); `texts` holds what this pass composed for shared keys. */
  take(batch: readonly StoreChange[], texts: Map<unknown, Map<string, Composed>>): void;
}

/**
 * What a batch comes to on a stream: its bytes (encoded once, however many sockets they go to),
 * the number of events in them, and the last cursor.
 */
interface Composed {
  readonly text: SharedText;
  readonly events: number;
  readonly last: string;
}

/**
 * While changes come faster than a pass takes (on average), or in bursts (a pass found more than
 * one), the next pass waits at least this many times as long as the last one took, socket writes
 * included: with thousands of streams under a steady flow of writes, sending to every socket takes
 * about a tenth of the process, the writes go on at their rate, and each stream gets the changes in
 * fewer, larger writes. A change after a quiet moment is sent at once.
 */
const PACE = 9;
/** The longest a pass waits for PACE: a stream is never further behind than this because of it. */
const MAX_WAIT_MS = 250;
/** Streams written per turn of the event loop: a pass over 10,000 streams lets requests run between its slices. */
const SLICE = 500;

/**
 * The live side of every stream of one feed: one follower of the feed, and one pass over the open
 * streams per batch of changes (rather than a follower, a queued task and a socket write per
 * stream and change). A pass sends each stream everything that came since the last one, in one
 * write; the text of the streams that share it is composed once.
 */
class FanOut {
  readonly #feed: ChangeFeed;
  readonly #streams = new Set<Follower>();
  #pending: StoreChange[] = [];
  #scheduled = false;
  /** A pass is under way (in slices): the next one starts after it, so each stream gets the batches in order. */
  #running = false;
  /** performance.now() before which no pass starts (PACE). */
  #earliest = 0;
  /** When the last change came, and the mean time between changes (moving average), in ms. */
  #lastChange = 0;
  #gap = Infinity;
  #stop: (() => void) | undefined;

  constructor(feed: ChangeFeed) {
    this.#feed = feed;
  }

  add(stream: Follower): () => void {
    this.#streams.add(stream);
    this.#stop ??= this.#feed.follow((change) => {
      const now = performance.now();
      const gap = now - this.#lastChange;
      this.#lastChange = now;
      this.#gap = this.#gap === Infinity ? gap : this.#gap * 0.8 + gap * 0.2;
      this.#pending.push(change);
      this.#schedule();
    });
    return () => {
      this.#streams.delete(stream);
      if (this.#streams.size === 0) {
        this.#stop?.();
        this.#stop = undefined;
        this.#pending = [];
      }
    };
  }

  #schedule(): void {
    if (this.#scheduled || this.#running) return;
    this.#scheduled = true;
    // The next turn at the earliest: the write that made a change is answered first, and a burst
    // of writes is one pass.
    const wait = this.#earliest - performance.now();
    if (wait <= 0) setImmediate(this.#pass);
    else setTimeout(this.#pass, wait);
  }

  readonly #pass = (): void => {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    this.#running = true;
    // The streams open now; one opened during the pass starts after these changes (its own catch-up reads them).
    const streams = [...this.#streams];
    const texts = new Map<unknown, Map<string, Composed>>();
    let at = 0;
    let spent = 0;
    const slice = (): void => {
      const started = performance.now();
      const end = Math.min(streams.length, at + SLICE);
      for (; at < end; at++) streams[at]!.take(batch, texts);
      // Each response's write reaches its socket on the next tick (the response is corked until
      // then): measured after those, queued before this one.
      process.nextTick(() => {
        const ended = performance.now();
        spent += ended - started;
        if (at < streams.length) {
          setImmediate(slice);
          return;
        }
        this.#running = false;
        this.#earliest = batch.length > 1 || this.#gap < spent ? ended + Math.min(MAX_WAIT_MS, spent * PACE) : 0;
        if (this.#pending.length > 0) this.#schedule();
      });
    };
    slice();
  };
}

const fanOuts = new WeakMap<ChangeFeed, FanOut>();

/**
 * Streams the feed's changes after `after`: first the changes already made (read page by page,
 * each entity's latest), then those that happen, in cursor order, each once. Changes that happen
 * while it catches up wait in a list and are sent after it, those the pages already held left out
 * (cursor not after the last sent), so nothing is missed or repeated across the switch.
 */
export function streamChanges(out: StreamWriter, options: ChangeStreamOptions): void {
  const { feed, resources, select, json, shared } = options;
  let last = options.after;
  let live = false;
  const waiting: StoreChange[] = [];
  /** Whether changes were let go from `waiting` since the last page was read (`MAX_WAITING`). */
  let dropped = false;
  /**
   * The text of `changes` after `last` on this stream (moving `last`), from index `from`, stopping
   * once it holds `limit` characters or more: `next` is the index of the first change left out.
   */
  const compose = (changes: readonly StoreChange[], from = 0, limit = Infinity): Composed & { next: number } => {
    let text = '';
    let events = 0;
    let at = from;
    for (; at < changes.length && text.length < limit; at++) {
      const change = changes[at]!;
      if (resources !== undefined && !resources.has(change.resource)) continue;
      if (feed.compare(change.cursor, last) <= 0) continue;
      last = change.cursor;
      const type = select(change);
      if (type === undefined) continue;
      text += messageOf(change, type, json);
      events++;
    }
    return { text: new SharedText(text), events, last, next: at };
  };
  const send = (composed: Composed): void => {
    if (composed.events > 0) out.write(composed.text, composed.events);
  };
  const stop = fanOut(feed).add({
    take(batch, texts) {
      if (out.closed) return;
      if (!live) {
        for (const change of batch) if (resources === undefined || resources.has(change.resource)) waiting.push(change);
        if (waiting.length > MAX_WAITING) {
          waiting.length = 0;
          dropped = true;
        }
        return;
      }
      // A reader that has not taken what it was sent gets no more queued for it (a batch can be
      // any size, and the bound on what a reader leaves untaken judges only what came before):
      // it catches up again from its last event, at its own pace, and comes back live after.
      if (out.behind) {
        paceAgain();
        return;
      }
      // A stream already past the batch's first change (it caught up over it) composes its own,
      // at most about one catch-up write of it: the rest goes at the reader's pace too (a text of
      // its own is memory of its own; one shared by many streams is held once).
      if (shared === undefined || feed.compare(batch[0]!.cursor, last) <= 0) {
        const composed = compose(batch, 0, CATCH_UP_WRITE);
        send(composed);
        if (composed.next < batch.length) paceAgain();
        return;
      }
      let byKey = texts.get(json);
      if (byKey === undefined) texts.set(json, (byKey = new Map()));
      let composed = byKey.get(shared);
      if (composed === undefined) byKey.set(shared, (composed = compose(batch)));
      else last = composed.last;
      send(composed);
    },
  });
  out.onClose(stop);
  /** Leaves live for a catch-up from the last event sent. */
  const paceAgain = (): void => {
    live = false;
    waiting.length = 0;
    catchUp().catch(() => out.end());
  };
  // The catch-up goes at its reader's pace: each write once the reader has taken what was sent
  // before, so that a backlog larger than the bound on what a reader may leave untaken (1 MiB) is
  // sent, not cut off at every attempt (event-stream.ts).
  const catchUp = async (): Promise<void> => {
    for (;;) {
      await out.ready();
      if (out.closed) return;
      dropped = false;
      const read: MaybePromise<FeedPage> = feed.read(last, CATCH_UP_PAGE, resources);
      const page = read instanceof Promise ? await read : read;
      let paced = false;
      for (let at = 0; ; ) {
        const composed = compose(page.changes, at, CATCH_UP_WRITE);
        send(composed);
        at = composed.next;
        if (at >= page.changes.length) break;
        paced = true;
        await out.ready();
        if (out.closed) return;
      }
      // What came while it waited and the pages already held is not kept twice.
      let held = 0;
      while (held < waiting.length && feed.compare(waiting[held]!.cursor, last) <= 0) held++;
      waiting.splice(0, held);
      // A short page sent without waiting ends it: nothing came between its read and going live
      // but what `waiting` holds. After a wait, or once `waiting` let changes go, the next page
      // reads what came meanwhile.
      if (page.changes.length < CATCH_UP_PAGE && !paced && !dropped) break;
      // A reader that takes everything at once (a fast one on a near network) never makes `ready`
      // wait, and its catch-up would run in microtasks alone: the next page waits for the loop's
      // next turn, so that catching up over a million changes never holds every other request.
      await nextTurn();
    }
    live = true;
    send(compose(waiting.splice(0)));
  };
  // A feed that cannot be read (the database away) ends the stream: the client reconnects with its last id.
  catchUp().catch(() => out.end());
}

/** Resolves in the event loop's next check phase: what is waiting for I/O runs first. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function fanOut(feed: ChangeFeed): FanOut {
  let hub = fanOuts.get(feed);
  if (hub === undefined) fanOuts.set(feed, (hub = new FanOut(feed)));
  return hub;
}
