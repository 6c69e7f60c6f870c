import type { IncomingMessage } from 'node:http';
import { UNMATCHED_ROUTE, type ServerMetrics } from '../metrics/server-metrics.js';
import { accessLogEntry, elapsedMs, type AccessLogEntry } from './boundary.js';
import type { Reply } from './reply.js';

/**
 * What a request Node's parser refused leaves behind once the server has answered it (reply.ts,
 * `answerClientError`): one count in `halserve_http_requests_total` and one access-log line, as a
 * request the handler answered leaves. Neither holds a byte of what the client sent: the refused
 * bytes may carry a credential (an `Authorization` in an oversized head, a token in a target that
 * never parsed), and they were never split into the path and query that the log's redaction
 * (access-log.ts) works on. So a line is the same few fields whatever was sent, and a flood of
 * refused requests costs one such line each: no copy, decoding or scan of the bytes refused.
 *
 * The requests Node parsed and the server still answered itself (a CONNECT, an `Expect` it cannot
 * meet: `createAnswerRecorder`) leave the same two things.
 */

/** An error code as Node writes its own (llhttp's `HPE_*`, `ERR_HTTP_REQUEST_TIMEOUT`). */
const NODE_CODE = /^[A-Z][A-Z0-9_]{0,47}$/;

/**
 * The code a refusal is logged with: Node's, which names what was wrong (`HPE_HEADER_OVERFLOW`,
 * `HPE_INVALID_CHUNK_SIZE`, `HPE_INVALID_HEADER_TOKEN`, …), or `other` for one that is missing or
 * not shaped as Node's are.
 */
export function refusalCode(code: string | undefined): string {
  return code !== undefined && NODE_CODE.test(code) ? code : 'other';
}

/**
 * The access-log line of a refusal: its status and the bytes of the problem document sent, no
 * method or path (none that can be trusted was parsed), and no time spent (nothing says when the
 * request began).
 */
export function refusalEntry(status: number, bytes: number, code: string | undefined, time: Date = new Date()): AccessLogEntry {
  return { time: time.toISOString(), method: '', path: '', status, ms: 0, bytes, refused: refusalCode(code) };
}

/** Counts, and logs when there is an access log, each refusal the server answered. */
export function createRefusalRecorder(
  metrics: ServerMetrics,
  accessLog: ((entry: AccessLogEntry) => void) | undefined,
): (status: number, bytes: number, code: string | undefined) => void {
  return (status, bytes, code) => {
    metrics.refused(status);
    accessLog?.(refusalEntry(status, bytes, code));
  };
}

/**
 * Counts, and logs when there is an access log, a request Node parsed but the server answered
 * before the handler could (server.ts): a CONNECT (501) and an `Expect` other than 100-continue
 * (417). Unlike a refusal it has a method and a target, and a start: it is counted with its
 * latency, as the handler counts the requests it refuses before routing (route `unmatched`, the
 * method `other` unless halserve answers it), and its line is the handler's, path and query
 * redacted (boundary.ts). A CONNECT's target is no path but an authority (RFC 9110 §9.3.6:
 * `host:port`), in which a client may put user-info (`user:password@host:443`) that no redaction
 * of paths or queries would find: its `path` is logged empty, whatever it was.
 */
export function createAnswerRecorder(
  metrics: ServerMetrics,
  accessLog: ((entry: AccessLogEntry) => void) | undefined,
  scrub: (text: string) => string,
): (req: IncomingMessage, reply: Reply, started: number) => void {
  return (req, reply, started) => {
    const method = req.method ?? '';
    const { status } = reply;
    metrics.request(method, UNMATCHED_ROUTE, status, (performance.now() - started) / 1000);
    if (accessLog === undefined) return;
    const ms = elapsedMs(started);
    const bytes = reply.body === undefined ? 0 : Buffer.byteLength(reply.body);
    accessLog(method === 'CONNECT' ? { time: new Date().toISOString(), method, path: '', status, ms, bytes } : accessLogEntry(req, status, ms, bytes, scrub));
  };
}
