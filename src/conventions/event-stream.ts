/**
 * Server-Sent Events (HTML Living Standard §9.2, "Server-sent events"): the media type, when a
 * request asks for a stream, and the text of its messages. Pure: the stream itself is
 * src/http/event-stream.ts.
 */
import { parseAccept } from './accept.js';

/** HTML §9.2.7: the event stream's media type (always UTF-8). */
export const TEXT_EVENT_STREAM = 'text/event-stream';
/** How long a client waits before reconnecting, sent once at the start (at most 5 s). */
export const RETRY_MS = 2000;
/** A comment line at least this often while idle, so that proxies keep the connection. */
export const HEARTBEAT_MS = 15_000;
/** Whether an `Accept` names an event stream at all, in any case: the quick test before parsing it. */
const EVENT_STREAM_NAMED = /event-stream/i;
/** The JSON types a request may name beside the stream; the stream must be preferred to each. */
const JSON_TYPES: readonly string[] = ['application/hal+json', 'application/json'];

/**
 * True when `Accept` asks for an event stream: it names `text/event-stream` itself (never through a
 * wildcard) with a q above 0 and above that of every JSON type it names. A browser's `*\/*` or a
 * HAL client's header never does.
 */
export function wantsEventStream(accept: string | undefined): boolean {
  // Media types are case-insensitive (RFC 9110 §8.3.1): TEXT/EVENT-STREAM is one too.
  if (accept === undefined || !EVENT_STREAM_NAMED.test(accept)) return false;
  let stream = 0;
  let json = 0;
  for (const { type, subtype, q } of parseAccept(accept)) {
    const range = `${type}/${subtype}`;
    if (range === TEXT_EVENT_STREAM) stream = Math.max(stream, q);
    else if (JSON_TYPES.includes(range)) json = Math.max(json, q);
  }
  return stream > 0 && stream > json;
}

/** One message: `id:` (a cursor), `event:` (a type) and `data:` (JSON on one line). */
export function eventMessage(id: string, event: string, data: string): string {
  // Valid JSON holds a line break only as whitespace (inside strings it is escaped): one line.
  const line = data.includes('\n') || data.includes('\r') ? data.replace(/[\r\n]+/g, ' ') : data;
  return `id: ${id}\nevent: ${event}\ndata: ${line}\n\n`;
}

/** The first bytes of a stream: the reconnection delay. */
export const STREAM_PREAMBLE = `retry: ${RETRY_MS}\n\n`;
/** A comment line: keeps an idle connection alive, and carries no id. */
export const HEARTBEAT = ': keep-alive\n\n';
