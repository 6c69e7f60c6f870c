import type { IncomingMessage, ServerResponse } from 'node:http';
import { codedTag } from './conditional.js';
import { chooseEncoding, COMPRESSION_THRESHOLD_BYTES, encode } from './encoding.js';
import { PROBLEM_MEDIA_TYPE, type HttpProblem } from './problem.js';

/** What a route handler answers; `send` is the one writer of responses. */
export interface Reply {
  readonly status: number;
  /** Lower-case header names. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

/** A JSON body in `mediaType`, which depended on `Accept`. */
export function jsonReply(status: number, mediaType: string, body: string, headers: Readonly<Record<string, string>> = {}): Reply {
  return { status, headers: { 'content-type': mediaType, vary: 'Accept', ...headers }, body };
}

/** The problem document of an error (seed 7), with the headers that belong to it. */
export function problemReply(problem: HttpProblem): Reply {
  const headers: Record<string, string> = { 'content-type': PROBLEM_MEDIA_TYPE, ...problem.headers };
  // An oversized body may still be arriving: close the connection rather than read it.
  if (problem.status === 413) headers['connection'] = 'close';
  return { status: problem.status, headers, body: JSON.stringify(problem) };
}

/** Appends to a comma-separated list header (`Vary`, RFC 9110 §12.5.5). */
function addToList(headers: Record<string, string | number>, name: string, value: string): void {
  const current = headers[name];
  headers[name] = current === undefined ? value : `${current}, ${value}`;
}

/**
 * Writes a reply: `extra` headers (CORS) merged in, the body compressed when the client asks and
 * it is large enough (contract §5), `Content-Length` always set. Returns the bytes of body sent.
 */
export function send(req: IncomingMessage, res: ServerResponse, reply: Reply, extra?: Readonly<Record<string, string>>): number {
  if (res.headersSent) {
    res.destroy();
    return 0;
  }
  const headers: Record<string, string | number> = { ...reply.headers };
  if (extra) {
    for (const [name, value] of Object.entries(extra)) {
      if (name === 'vary') addToList(headers, name, value);
      else headers[name] = value;
    }
  }
  let body: string | Buffer | undefined = reply.body;
  if (body !== undefined && body.length >= COMPRESSION_THRESHOLD_BYTES) {
    addToList(headers, 'vary', 'Accept-Encoding');
    const coding = chooseEncoding(req.headers['accept-encoding']);
    if (coding) {
      body = encode(body, coding);
      headers['content-encoding'] = coding;
      // A compressed representation has its own strong tag (RFC 9110 §8.8.3).
      const etag = headers['etag'];
      if (typeof etag === 'string') headers['etag'] = codedTag(etag, coding);
    }
  }
  const bytes = body === undefined ? 0 : Buffer.byteLength(body);
  if (body !== undefined) headers['content-length'] = bytes;
  res.writeHead(reply.status, headers);
  // HEAD gets the headers a GET would get, and no body.
  res.end(req.method === 'HEAD' ? undefined : body);
  return bytes;
}
