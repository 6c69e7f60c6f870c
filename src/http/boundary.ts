import type { IncomingMessage, ServerResponse } from 'node:http';
import { databaseUnavailable, HttpProblem, internalError, writeFailed } from '../conventions/problem.js';
import { UNMATCHED_ROUTE, type ServerMetrics } from '../metrics/server-metrics.js';
import { StoreUnavailableError, StoreWriteError } from '../store/store.js';
import { redactQuery } from './access-log.js';
import { ClientAbortedError } from './body.js';
import type { Exchange } from './context.js';
import type { Cors } from './cors.js';
import { failureCause } from './operational-log.js';
import type { Streams } from './event-stream.js';
import type { KeptReplies } from './kept-replies.js';
import { problemReply, send, type Reply } from './reply.js';

/** One line of the access log (docs/conventions.md §8). Never holds a token. */
export interface AccessLogEntry {
  readonly time: string;
  readonly method: string;
  /** The path as sent, without the query. */
  readonly path: string;
  /** The query as sent, credential-like values redacted; absent when there is none. */
  readonly query?: string;
  readonly status: number;
  readonly ms: number;
  readonly bytes: number;
  /** True when the connection closed before the whole answer was sent (the client went away); absent otherwise. */
  readonly aborted?: true;
  /**
   * Node's code for why its parser refused the request (`HPE_HEADER_OVERFLOW`, `HPE_INVALID_CHUNK_SIZE`,
   * `ERR_HTTP_REQUEST_TIMEOUT`, …: refusals.ts), which the server answered itself; `method` and
   * `path` are then empty and `ms` is 0. Absent for every request the handler answered.
   */
  readonly refused?: string;
}

/**
 * The access-log line of a request answered: its target split into the path and the query, the
 * credential-like values of the query redacted (access-log.ts) and `scrub` run over both.
 */
export function accessLogEntry(req: IncomingMessage, status: number, ms: number, bytes: number, scrub: (text: string) => string, aborted = false): AccessLogEntry {
  const target = req.url ?? '';
  const mark = target.indexOf('?');
  const query = mark === -1 ? '' : redactQuery(target.slice(mark + 1));
  return {
    time: new Date().toISOString(),
    method: req.method ?? '',
    path: scrub(mark === -1 ? target : target.slice(0, mark)),
    ...(query === '' ? {} : { query: scrub(query) }),
    status,
    ms,
    bytes,
    ...(aborted ? { aborted } : {}),
  };
}

export interface BoundaryOptions {
  readonly cors: Cors;
  readonly metrics: ServerMetrics;
  readonly accessLog: ((entry: AccessLogEntry) => void) | undefined;
  /** Unexpected errors, with their stack, for the server's log. */
  readonly errorLog: ((error: unknown) => void) | undefined;
  /** Expected operational failures (a full disk): one line per kind, rate-limited by the caller. */
  readonly operationalLog: (kind: string, message: string) => void;
  /** Removes configured tokens from text bound for the log. */
  readonly scrub: (text: string) => string;
  /** Where streaming replies go (event streams): they are logged and counted when they end. */
  readonly streams: Streams;
  /** Replies answered again without dispatching (kept-replies.ts); none: every request is dispatched. */
  readonly kept?: KeptReplies | undefined;
}

/** Milliseconds since `started` (`performance.now()`), to the microsecond, as the log says them. */
export const elapsedMs = (started: number): number => Math.round((performance.now() - started) * 1000) / 1000;

type Dispatch = (req: IncomingMessage, res: ServerResponse, exchange: Exchange) => Reply | Promise<Reply>;

/**
 * The one error boundary (STYLE: one error path): whatever a route throws becomes a problem
 * document here, then the reply is written, logged and counted.
 */
export function createBoundary(dispatch: Dispatch, options: BoundaryOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { cors, metrics, accessLog, errorLog, operationalLog, scrub, streams, kept } = options;

  /** Logs a finished exchange (when there is an access log). */
  const log = (req: IncomingMessage, res: ServerResponse, started: number, bytes: number, aborted = false): void => {
    if (!accessLog) return;
    accessLog(accessLogEntry(req, res.statusCode, elapsedMs(started), bytes, scrub, aborted));
  };

  /**
   * Logs the exchange once its response is over: sent whole ('finish'), or cut off by a client that
   * went away, before or while it was sent, which Node reports only by 'close' (never 'finish').
   */
  const logWhenOver = (req: IncomingMessage, res: ServerResponse, started: number, bytes: () => number): void => {
    if (res.closed) log(req, res, started, bytes(), true);
    else res.once('close', () => log(req, res, started, bytes(), !res.writableFinished));
  };

  const fail = (error: unknown, exchange: Exchange, method: string | undefined): Reply => {
    const reply = failure(error, exchange, method);
    // RFC 9110 §12.5.5: a browser would have got the shell here; a cache must not hand it this problem.
    if (!exchange.negotiated || reply.headers === undefined || reply.headers['vary'] !== undefined) return reply;
    return { ...reply, headers: { ...reply.headers, vary: 'Accept' } };
  };

  const failure = (error: unknown, exchange: Exchange, method: string | undefined): Reply => {
    if (error instanceof HttpProblem) return problemReply(error);
    // A client that left has no one to answer; that is no failure of the server.
    if (error instanceof ClientAbortedError) return { status: 400 };
    if (error instanceof StoreUnavailableError && (method === 'GET' || method === 'HEAD')) {
      // A read the database answers (a page of the change feed): no write was refused.
      const what = exchange.resource ?? exchange.route;
      operationalLog(`${what} unavailable`, `read of ${what} refused: ${error.message}`);
      return problemReply(databaseUnavailable(false));
    }
    if (error instanceof StoreUnavailableError) {
      // The database is away (docs/storage.md §2): one line per resource, rate-limited; the write was not
      // acknowledged, and a client may retry once it is back.
      const resource = exchange.resource ?? 'unknown';
      metrics.writeFailures.inc(1, resource, 'unavailable');
      operationalLog(`${resource} unavailable`, `write to ${resource} refused: ${error.message}`);
      return problemReply(databaseUnavailable());
    }
    if (error instanceof StoreWriteError) {
      // Expected in operation (a full disk): one counted line, no stack trace; `Retry-After` by cause.
      const resource = exchange.resource ?? 'unknown';
      const cause = failureCause(error);
      metrics.writeFailures.inc(1, resource, cause);
      operationalLog(`${resource} ${cause}`, `write to ${resource} failed: ${cause}: ${error.message}`);
      return problemReply(writeFailed(cause));
    }
    errorLog?.(error);
    return problemReply(internalError());
  };

  return (req, res) => {
    const started = performance.now();
    const again = kept?.answer(req);
    if (again !== undefined) {
      // Counted and logged as the full path would: the same route, status and bytes.
      const { reply, record } = again;
      res.writeHead(reply.status, reply.head as string[]);
      res.end(reply.body);
      record((performance.now() - started) / 1000);
      if (accessLog) logWhenOver(req, res, started, () => reply.body.length);
      return;
    }
    const exchange: Exchange = { route: UNMATCHED_ROUTE, resource: undefined, headers: undefined, negotiated: false };
    // A response that cannot be written (a header Node refuses) ends this exchange, not the process.
    const unwritable = (error: unknown): void => {
      errorLog?.(error);
      res.destroy();
    };
    const finish = (reply: Reply): void => {
      let bytes = 0;
      const corsHeaders = cors.headers(req.headers.origin);
      const extra = exchange.headers === undefined ? corsHeaders : { ...exchange.headers, ...corsHeaders };
      if (reply.stream !== undefined) {
        // A stream is counted and logged when it ends, with its whole duration and size.
        try {
          streams.start(req, res, reply, extra ?? {}, (sent) => {
            metrics.request(req.method ?? '', exchange.route, res.statusCode, (performance.now() - started) / 1000);
            log(req, res, started, sent);
          });
        } catch (error) {
          unwritable(error);
        }
        return;
      }
      // Counted when the response is handed to the socket: no listener per request on this hot path.
      try {
        const sent = send(req, res, reply, extra);
        if (typeof sent === 'number') {
          bytes = sent;
          metrics.request(req.method ?? '', exchange.route, res.statusCode, (performance.now() - started) / 1000);
        } else {
          sent.then((n) => {
            bytes = n;
            metrics.request(req.method ?? '', exchange.route, res.statusCode, (performance.now() - started) / 1000);
          }, unwritable);
        }
      } catch (error) {
        unwritable(error);
        return;
      }
      if (accessLog) logWhenOver(req, res, started, () => bytes);
    };
    let reply: Reply | Promise<Reply>;
    try {
      reply = dispatch(req, res, exchange);
    } catch (error) {
      reply = fail(error, exchange, req.method);
    }
    if (reply instanceof Promise) reply.then(finish, (error: unknown) => finish(fail(error, exchange, req.method)));
    else finish(reply);
  };
}
