import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createHandler, type HandlerOptions } from './app.js';
import { expectationFailed, unparsable } from '../conventions/problem.js';
import { ServerMetrics } from '../metrics/server-metrics.js';
import { answerClientError, METHOD_NOT_IMPLEMENTED, problemReply, rawReply, writeReply, type ParserError } from './reply.js';
import { createTokenScrubber } from './access-log.js';
import { createAnswerRecorder, createRefusalRecorder } from './refusals.js';

/**
 * Slow or stalled clients are cut off: headers within 10 s, a whole request within 30 s, checked
 * every second (Node's defaults are 60 s, 300 s and 30 s).
 */
export const SERVER_TIMEOUTS: Readonly<ServerOptions> = { headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 1_000 };

/**
 * Node's own checks that answer with an empty body are turned off or taken over, so that every
 * error is a problem document (docs/conventions.md §7): a missing Host is refused by the handler instead.
 */
const PROBLEM_DOCUMENTS_ONLY: Readonly<ServerOptions> = { requireHostHeader: false };

/**
 * A `node:http` server around `createHandler(options)`, with what the handler alone cannot do:
 * problem documents for requests the parser refuses (docs/conventions.md §7), for a CONNECT and for
 * an `Expect` it cannot meet, each counted and logged as the handler's answers are (refusals.ts),
 * `100 Continue` sent only when a body is about to be read, and timeouts for slow clients. It is
 * not listening yet.
 */
export function createHalServer(options: HandlerOptions, serverOptions: Readonly<ServerOptions> = SERVER_TIMEOUTS): Server {
  // One set of metrics for the handler's answers and the server's own.
  const metrics = options.metrics ?? new ServerMetrics();
  const handler = pipelineBounded(createHandler({ ...options, metrics }));
  const refused = createRefusalRecorder(metrics, options.accessLog);
  const answered = createAnswerRecorder(metrics, options.accessLog, createTokenScrubber(options.tokens ?? []));
  const server = createServer({ ...serverOptions, ...PROBLEM_DOCUMENTS_ONLY }, handler);
  // A connection that takes nothing of what it is sent (nor sends anything) for this long is
  // ended: the answers waiting in it are memory held for a client that may never read them.
  server.timeout = STALLED_CONNECTION_MS;
  // RFC 9110 §10.1.1: an expectation the server cannot meet is a 417, counted and logged as the
  // handler's answers are (refusals.ts).
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const reply = problemReply(expectationFailed());
    writeReply(res, reply);
    answered(req, reply, started);
  });
  // With a listener here, Node no longer answers `Expect: 100-continue` on its own (RFC 9110 §10.1.1).
  server.on('checkContinue', handler);
  server.on('clientError', (error: ParserError, socket: Duplex) => answerClientError(error, socket, (status, bytes) => refused(status, bytes, error.code)));
  // RFC 9110 §9.1: CONNECT (a tunnel, for proxies) is a method this server does not implement: a
  // 501 problem, then close, where Node would close the connection without a word; counted and
  // logged, its target never (refusals.ts).
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const started = performance.now();
    const reply = problemReply(unparsable(501, METHOD_NOT_IMPLEMENTED));
    socket.end(rawReply(reply), () => socket.destroy());
    answered(req, reply, started);
  });
  return server;
}

/** Requests of one connection answered ahead of the first still being sent (HTTP/1.1 pipelining). */
export const MAX_PIPELINED_AHEAD = 8;
/** How long a connection may make no progress at all (nothing read, nothing sent) before it is ended. */
export const STALLED_CONNECTION_MS = 60_000;

/**
 * `handler` with at most `MAX_PIPELINED_AHEAD` requests of one connection under way at once: Node
 * parses every request a read brings (a 64 KiB read holds hundreds of pipelined GETs) and hands
 * each to the handler, whose answers then wait in order behind the first. A client that sends
 * many and reads none would have every answer built and held — gigabytes for pages of large
 * entities. The rest wait, unbuilt, until an answer ahead of them is done. A request with no
 * answer ahead of it (Node has given its response the socket: the usual case) costs one check.
 *
 * While any request waits, the connection is not read (Node's own pause: `_paused`, which also
 * stops its parser after the read in hand): Node stops reading a connection only once the answers
 * queued in it pass the socket's high-water mark, and answers that wait unbuilt queue nothing, so a
 * client that pipelined small requests and read no answer had every request it sent parsed and
 * held — millions, gigabytes within seconds, and a close that then took minutes. Reading resumes
 * once the last waiting request has begun; a resume of Node's own meanwhile is undone.
 */
export function pipelineBounded(handler: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const socket = req.socket as PipelinedSocket;
    if (socket._httpMessage === res && socket[PIPELINE] === undefined) {
      handler(req, res);
      return;
    }
    // Behind another answer: counted, the first (untracked) one included.
    const pipeline = (socket[PIPELINE] ??= trackPipeline(socket));
    const run = (): void => {
      pipeline.behind++;
      res.once('close', () => {
        pipeline.behind--;
        // The next begins once this answer's close has been seen through by every listener.
        queueMicrotask(() => {
          if (socket.destroyed) pipeline.waiting.length = 0;
          else pipeline.waiting.shift()?.();
          if (pipeline.waiting.length === 0) readAgain(socket, pipeline);
        });
      });
      handler(req, res);
    };
    if (pipeline.behind < MAX_PIPELINED_AHEAD - 1) run();
    else {
      pipeline.waiting.push(run);
      stopReading(socket, pipeline);
    }
  };
}

const PIPELINE = Symbol('halserve pipeline');

interface Pipeline {
  behind: number;
  waiting: (() => void)[];
  /** This pipeline stopped the reading (and so resumes it): Node's own pauses are left to Node. */
  holding: boolean;
}

type PipelinedSocket = Socket & {
  _httpMessage?: ServerResponse | null;
  /** Node's flag of a connection it stopped reading (node:_http_server): its parser pauses after the read in hand, and a body's read does not resume it. */
  _paused?: boolean;
  parser?: { pause(): void; resume(): void } | null;
  [PIPELINE]?: Pipeline;
};

/** A connection's pipeline, made when a request first comes behind another. */
function trackPipeline(socket: PipelinedSocket): Pipeline {
  const pipeline: Pipeline = { behind: 0, waiting: [], holding: false };
  // Node resumes a paused connection whenever the answers queued in it fall under the high-water
  // mark (its socketOnDrain): not while requests wait here. The resume is undone in the same tick,
  // before any read.
  socket.on('resume', () => {
    if (pipeline.waiting.length > 0) stopReading(socket, pipeline);
  });
  return pipeline;
}

/** Stops reading the connection, as Node does when its answers back up. */
function stopReading(socket: PipelinedSocket, pipeline: Pipeline): void {
  if (socket._paused === true || socket.destroyed) return;
  pipeline.holding = true;
  socket._paused = true;
  socket.pause();
}

/** Reads the connection again, as Node does once its answers have drained, if this pipeline stopped it. */
function readAgain(socket: PipelinedSocket, pipeline: Pipeline): void {
  if (!pipeline.holding) return;
  pipeline.holding = false;
  if (socket._paused !== true || socket.destroyed) return;
  socket._paused = false;
  socket.parser?.resume();
  socket.resume();
}

/**
 * Keeps the open connections of `server`, so that a shutdown can end every one that has no
 * response under way — keep-alive ones between requests, and ones that never sent a request —
 * and make the response under way the last of the others: it says `Connection: close` (RFC 9112
 * §9.6), so that its client sends no further request on a connection about to be closed.
 * Nothing runs per request: a connection's response in progress is Node's own `_httpMessage`.
 */
export function trackConnections(server: Server): { closeIdle(): void } {
  const sockets = new Set<PipelinedSocket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    closeIdle() {
      for (const socket of sockets) {
        const response = socket._httpMessage;
        if (response === undefined || response === null) socket.destroy();
        // Not when requests pipelined behind it are under way: Node drops their answers after a close.
        else if (!response.headersSent && nothingPipelined(socket)) response.shouldKeepAlive = false;
      }
    },
  };
}

/** True when no request of the connection is under way or waiting behind the one being answered. */
function nothingPipelined(socket: PipelinedSocket): boolean {
  const pipeline = socket[PIPELINE];
  return pipeline === undefined || (pipeline.behind === 0 && pipeline.waiting.length === 0);
}
