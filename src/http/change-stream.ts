import { eventMessage } from '../conventions/event-stream.js';
import type { EventType } from '../conventions/changes.js';
import type { ChangeFeed, FeedPage } from '../store/changes/change-feed.js';
import type { MaybePromise, StoreChange } from '../store/store.js';
import type { StreamWriter } from './reply.js';

/** Changes read per page while a stream catches up. */
const CATCH_UP_PAGE = 200;

/**
 * Each change's message text by type, made once however many streams send it: a write followed by
 * thousands of streams costs one serialisation, not one per stream.
 */
const messages = new WeakMap<StoreChange, Map<EventType, string>>();
function messageOf(change: StoreChange, type: EventType, json: (change: StoreChange, type: EventType) => string): string {
  let byType = messages.get(change);
  if (byType === undefined) messages.set(change, (byType = new Map()));
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
  /** The event's JSON. */
  readonly json: (change: StoreChange, type: EventType) => string;
}

/**
 * Streams the feed's changes after `after`: first the changes already made (read page by page,
 * each entity's latest), then those that happen, in cursor order, each once. Changes that happen
 * while it catches up wait in a list and are sent after it, those the pages already held left out
 * (cursor not after the last sent), so nothing is missed or repeated across the switch.
 */
export function streamChanges(out: StreamWriter, options: ChangeStreamOptions): void {
  const { feed, resources, select, json } = options;
  let last = options.after;
  let live = false;
  const waiting: StoreChange[] = [];
  const send = (change: StoreChange): void => {
    last = change.cursor;
    const type = select(change);
    if (type !== undefined) out.write(messageOf(change, type, json));
  };
  // Live changes are sent on the next turn of the event loop, together: the write that made them
  // is answered first, and a burst of writes is one socket write per stream.
  let queued: StoreChange[] = [];
  const flush = (): void => {
    const batch = queued;
    queued = [];
    for (const change of batch) if (!out.closed && feed.compare(change.cursor, last) > 0) send(change);
  };
  const stop = feed.follow((change) => {
    if (out.closed || (resources !== undefined && !resources.has(change.resource))) return;
    if (!live) waiting.push(change);
    else {
      if (queued.length === 0) setImmediate(flush);
      queued.push(change);
    }
  });
  out.onClose(stop);
  const catchUp = async (): Promise<void> => {
    for (;;) {
      if (out.closed) return;
      const read: MaybePromise<FeedPage> = feed.read(last, CATCH_UP_PAGE, resources);
      const page = read instanceof Promise ? await read : read;
      for (const change of page.changes) send(change);
      if (page.changes.length < CATCH_UP_PAGE) break;
    }
    live = true;
    for (const change of waiting.splice(0)) if (feed.compare(change.cursor, last) > 0) send(change);
  };
  // A feed that cannot be read (the database away) ends the stream: the client reconnects with its last id.
  catchUp().catch(() => out.end());
}
