import type { IncomingMessage, ServerResponse } from 'node:http';
import { HEARTBEAT, HEARTBEAT_MS, STREAM_PREAMBLE, TEXT_EVENT_STREAM } from '../conventions/event-stream.js';
import { HttpProblem, serviceUnavailable, STREAMS_RETRY_AFTER_SECONDS } from '../conventions/problem.js';
import type { Reply, SharedText, StreamWriter } from './reply.js';

/** Starts a repeating task; returns the function that stops it (tests inject one they drive). */
export type Every = (ms: number, run: () => void) => () => void;

const realEvery: Every = (ms, run) => {
  const timer = setInterval(run, ms);
  timer.unref();
  return () => clearInterval(timer);
};

/** A reader further behind than this (bytes queued for its socket) is disconnected; it resumes by cursor. */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
/** What may stay queued for a reader when a producer that waits for it (`ready`) writes more. */
const READY_BYTES = 64 * 1024;
/** Open streams allowed at once by default (`--max-streams`). */
export const DEFAULT_MAX_STREAMS = 10_000;
/** Open streams one client (a principal, or an address without one) may hold by default (`--max-streams-per-client`). */
export const DEFAULT_MAX_STREAMS_PER_CLIENT = 1_000;
/**
 * A reader that has not taken a heartbeat by the time this many more are due has not taken, in that
 * long (two intervals, 30 s by default), what was queued before the heartbeat: it is disconnected, and
 * resumes by its last event id. A reader that stopped reading (or vanished without closing) would
 * otherwise hold its slot for good, a catch-up waiting on it.
 */
export const STALLED_HEARTBEATS = 2;

export interface StreamSettings {
  /** Most open streams; beyond, a stream request is a 503 with `Retry-After` (default 10,000). */
  readonly maxStreams?: number;
  /** Most open streams of one client (principal, or address without one); beyond, a 429 with `Retry-After` (default 1,000). */
  readonly maxStreamsPerClient?: number;
  /** A comment at least this often (default 15 s). */
  readonly heartbeatMs?: number;
  /** Bytes a reader may fall behind before it is disconnected (default 1 MiB). */
  readonly maxBufferedBytes?: number;
  /** The timer for heartbeats (default `setInterval`, unref'd). */
  readonly every?: Every;
  /** Aborted on shutdown: every open stream ends, and new ones are refused. */
  readonly closing?: AbortSignal;
}

const unixSeconds = (): number => Math.floor(Date.now() / 1000);

/** What the streams report, for `/metrics`. */
export interface StreamCounters {
  opened(): void;
  closed(): void;
  sent(events: number): void;
  slowReader(): void;
}

/**
 * The open event streams of one handler: bounded in number, each bounded in what it buffers, all
 * ended on shutdown. A stream's reply goes out through the handler's one boundary, which logs and
 * counts it when it ends.
 */
export class Streams {
  readonly #open = new Set<ServerStream>();
  /**
   * Slots taken: open streams, and replies made but not yet started (on PostgreSQL a stream's cursor
   * is checked in the database between the two). A slot is taken when the reply is made, not when
   * it starts, so requests whose checks finish together cannot pass the limits between them.
   */
  #held = 0;
  /** Slots taken by client key; a key leaves when its last slot is given back. */
  readonly #byClient = new Map<string, number>();
  readonly #max: number;
  readonly #maxPerClient: number;
  readonly #heartbeatMs: number;
  readonly #maxBuffered: number;
  readonly #every: Every;
  readonly #counters: StreamCounters;
  readonly #now: () => number;
  #closing = false;

  /** `now`: Unix seconds, against which a credential's end (`Principal.until`) is read. */
  constructor(settings: StreamSettings, counters: StreamCounters, now: () => number = unixSeconds) {
    this.#max = settings.maxStreams ?? DEFAULT_MAX_STREAMS;
    this.#maxPerClient = settings.maxStreamsPerClient ?? DEFAULT_MAX_STREAMS_PER_CLIENT;
    this.#heartbeatMs = settings.heartbeatMs ?? HEARTBEAT_MS;
    this.#maxBuffered = settings.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
    this.#every = settings.every ?? realEvery;
    this.#counters = counters;
    this.#now = now;
    settings.closing?.addEventListener('abort', () => this.endAll(), { once: true });
  }

  get size(): number {
    return this.#open.size;
  }

  /**
   * A reply that streams `produce`'s events for `client` (its principal's key, or its address), or a
   * problem when no stream may open now: 503 when the server holds its limit, 429 when the client
   * holds its own (one client cannot take every stream of the server). The reply holds its slot
   * from now on; `start` must be given it (the boundary does, for every streaming reply), and gives
   * the slot back when the stream ends, or at once if its client has gone.
   *
   * `until` is the last second the request's credential answers for (`Principal.until`: a JWT's
   * `exp` and the leeway): the stream ends at the first heartbeat after it, so an expired token
   * is not read to for good; the client reconnects with its last event id and a fresh token.
   */
  reply(headers: Readonly<Record<string, string>>, produce: (out: StreamWriter) => void, client: string, until?: number): Reply {
    if (this.#closing) throw serviceUnavailable('The server is shutting down; reconnect to another instance or later', STREAMS_RETRY_AFTER_SECONDS);
    if (this.#held >= this.#max) throw serviceUnavailable(`This server has ${this.#max} open streams, its limit; try again shortly`, STREAMS_RETRY_AFTER_SECONDS);
    if ((this.#byClient.get(client) ?? 0) >= this.#maxPerClient) {
      // RFC 6585 §4: a 429 says when to try again too (RFC 9110 §10.2.3).
      throw new HttpProblem(429, `This client has ${this.#maxPerClient} open streams, its limit; close one first`, {}, { 'retry-after': String(STREAMS_RETRY_AFTER_SECONDS) });
    }
    this.#held++;
    this.#byClient.set(client, (this.#byClient.get(client) ?? 0) + 1);
    // The same URL answers JSON to another Accept: a cache must not hand this on (RFC 9110 §12.5.5).
    return { status: 200, headers: { 'content-type': TEXT_EVENT_STREAM, 'cache-control': 'no-cache', 'x-accel-buffering': 'no', vary: 'Accept', ...headers }, stream: produce, streamClient: client, ...(until === undefined ? {} : { streamUntil: until }) };
  }

  /** Gives back the slot `reply` took for `client`. */
  #release(client: string): void {
    this.#held--;
    const held = (this.#byClient.get(client) ?? 1) - 1;
    if (held > 0) this.#byClient.set(client, held);
    else this.#byClient.delete(client);
  }

  /** Ends every open stream (shutdown): each response gets its last chunk. */
  endAll(): void {
    this.#closing = true;
    for (const stream of [...this.#open]) stream.end();
  }

  /**
   * Sends a streaming reply's head now and hands its body to the reply's producer; `done` is told
   * the bytes sent once the response has ended, whatever ended it.
   */
  start(req: IncomingMessage, res: ServerResponse, reply: Reply, extra: Readonly<Record<string, string>>, done: (bytes: number) => void): void {
    // A client that left while its stream's start was being checked (a cursor looked up in the
    // database): its response has closed already, and would never say so again to free a slot.
    const client = reply.streamClient ?? '';
    if (res.destroyed) {
      this.#release(client);
      done(0);
      return;
    }
    const stream = new ServerStream(res, this.#maxBuffered, this.#counters, () => {
      this.#open.delete(stream);
      this.#release(client);
      this.#counters.closed();
      done(stream.bytes);
    });
    this.#open.add(stream);
    this.#counters.opened();
    const vary = extra['vary'] === undefined || reply.headers?.['vary'] === undefined ? undefined : `${reply.headers['vary']}, ${extra['vary']}`;
    res.writeHead(reply.status, vary === undefined ? { ...reply.headers, ...extra } : { ...reply.headers, ...extra, vary });
    // HEAD: the headers a GET would get, and no body.
    if (req.method === 'HEAD') {
      stream.end();
      return;
    }
    stream.write(STREAM_PREAMBLE);
    const until = reply.streamUntil;
    const stop = this.#every(this.#heartbeatMs, () => (until !== undefined && this.#now() > until ? stream.end() : stream.heartbeat()));
    stream.onClose(stop);
    if (this.#closing) stream.end();
    else reply.stream!(stream);
  }
}

/** One open event stream: writes, the bound on what it buffers, its end. */
class ServerStream implements StreamWriter {
  readonly #res: ServerResponse;
  readonly #maxBuffered: number;
  readonly #counters: StreamCounters;
  readonly #cleanups: (() => void)[] = [];
  bytes = 0;
  #closed = false;
  /** Heartbeats written that the socket has not yet handed to the kernel. */
  #heartbeatsQueued = 0;
  readonly #heartbeatTaken = (): void => {
    this.#heartbeatsQueued--;
  };

  constructor(res: ServerResponse, maxBuffered: number, counters: StreamCounters, ended: () => void) {
    this.#res = res;
    this.#maxBuffered = maxBuffered;
    this.#counters = counters;
    this.#cleanups.push(ended);
    res.once('close', () => this.#close());
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** `taken`, for a string: called once the socket has handed it to the kernel. */
  write(text: string | SharedText, events = typeof text === 'string' && text.startsWith('id:') ? 1 : 0, taken?: () => void): void {
    if (this.#closed) return;
    const res = this.#res;
    // The socket takes what it can; the rest queues here. A reader that has not taken what it was
    // sent before, down to the bound, is cut off rather than buffered without bound: it resumes by
    // its last event id. What this write adds does not count: one write larger than the bound (a
    // batch of large entities) goes to a reader that keeps up, which would otherwise be cut off at
    // every attempt, and so never get it.
    if (res.writableLength > this.#maxBuffered) {
      this.#cutOff();
      return;
    }
    if (typeof text === 'string') {
      res.write(text, taken);
      this.bytes += Buffer.byteLength(text);
    } else {
      const socket = res.socket;
      // While the response holds its socket and frames its body in chunks, node's own write puts
      // each chunk straight on the socket too (in order with what came before); the chunk framed
      // once for every stream goes there in one write, without the response's cork and tick per
      // write, which were most of a pass over thousands of streams (bench/NOTES.md).
      if (socket !== null && socket.writable && res.chunkedEncoding && res.headersSent && (socket as { _httpMessage?: unknown })._httpMessage === res) socket.write(text.chunk);
      else res.write(text.bytes);
      this.bytes += text.bytes.length;
    }
    if (events > 0) this.#counters.sent(events);
  }

  /**
   * A heartbeat comment, or the end of a reader that has taken nothing since the last
   * `STALLED_HEARTBEATS` heartbeats were written (each still queued behind what came before it).
   */
  heartbeat(): void {
    if (this.#closed) return;
    if (this.#heartbeatsQueued >= STALLED_HEARTBEATS) {
      this.#cutOff();
      return;
    }
    this.#heartbeatsQueued++;
    this.write(HEARTBEAT, 0, this.#heartbeatTaken);
  }

  get behind(): boolean {
    const socket = this.#res.socket;
    return !this.#closed && socket !== null && this.#res.writableLength > READY_BYTES && socket.writableNeedDrain;
  }

  ready(): Promise<void> {
    // Waited for only when the socket's last write said to wait (past its high-water mark): it emits
    // 'drain' once it has written everything. Anything else resolves at once, so no wait is left
    // hanging on a 'drain' that will not come.
    if (!this.behind) return Promise.resolve();
    const res = this.#res;
    const socket = res.socket!;
    return new Promise((resolve) => {
      const done = (): void => {
        socket.off('drain', done);
        socket.off('close', done);
        res.off('close', done);
        resolve();
      };
      socket.on('drain', done);
      socket.on('close', done);
      res.on('close', done);
    });
  }

  end(): void {
    if (this.#closed) return;
    this.#res.end();
    this.#close();
  }

  onClose(cleanup: () => void): void {
    if (this.#closed) cleanup();
    else this.#cleanups.push(cleanup);
  }

  /** Disconnects a reader too far behind, or stalled; it resumes by its last event id. */
  #cutOff(): void {
    this.#counters.slowReader();
    this.#res.destroy();
    this.#close();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
  }
}
