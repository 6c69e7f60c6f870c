import assert from 'node:assert/strict';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after } from 'node:test';
import type { HandlerOptions } from '../../src/http/app.js';
import { createHalServer } from '../../src/http/server.js';

/**
 * A bare-bones HTTP/1.1 client over a raw socket, for requests that `fetch` refuses to send or
 * silently repairs (`..` segments, bad chunk sizes, conflicting lengths, pipelining). Every socket
 * it opens is closed before its promise settles, so no test leaves one behind.
 */

/** One parsed response from the server's byte stream. */
export interface RawResponse {
  readonly status: number;
  /** Lower-case names; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** What came back on one connection. */
export interface RawExchange {
  /** Everything the server sent, as latin1 text (bytes one to one). */
  readonly text: string;
  /** The responses in `text`, in order. */
  readonly responses: readonly RawResponse[];
  /** True when the server closed the connection before the deadline. */
  readonly closedByServer: boolean;
}

export interface RawOptions {
  /** Give up (and close the socket) after this many milliseconds. Default 2000. */
  readonly timeoutMs?: number;
  /** Stop waiting once this many complete final (non-1xx) responses have arrived. */
  readonly responses?: number;
  /** Close our side right after writing, as a client that disconnects mid-request does. */
  readonly destroyAfterWriteMs?: number;
}

/**
 * `createHalServer(options)` listening on a free port, its own timeouts short enough for a test
 * (the CLI's: 10 s and 30 s), closed with its connections after the test; its URL.
 */
export async function startShortTimeouts(options: HandlerOptions): Promise<string> {
  const server = createHalServer(options, { headersTimeout: 300, requestTimeout: 600, connectionsCheckingInterval: 50 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** `http://127.0.0.1:1234` → its port. */
export function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** Sends `data` (a string is sent as latin1, byte for byte) and collects what the server answers. */
export function rawExchange(url: string, data: string | Buffer | readonly (string | Buffer)[], options: RawOptions = {}): Promise<RawExchange> {
  const { timeoutMs = 2000, responses: wanted, destroyAfterWriteMs } = options;
  const chunks = (Array.isArray(data) ? data : [data]) as (string | Buffer)[];
  return new Promise((resolve) => {
    const socket: Socket = connect(portOf(url), '127.0.0.1');
    let text = '';
    let settled = false;
    const finish = (closedByServer: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, responses: parseResponses(text), closedByServer });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('error', () => {}); // a reset is an outcome, reported through `closedByServer`
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (wanted !== undefined && parseResponses(text).filter((r) => r.status >= 200).length >= wanted) finish(false);
    });
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk);
      if (destroyAfterWriteMs !== undefined) setTimeout(() => finish(false), destroyAfterWriteMs);
    });
  });
}

/** Splits a byte stream into HTTP/1.1 responses (Content-Length or chunked bodies; 1xx have none). */
export function parseResponses(text: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = text;
  for (;;) {
    const end = rest.indexOf('\r\n\r\n');
    if (end === -1) return out;
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (!match) return out;
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    rest = rest.slice(end + 4);
    let body = '';
    if (status >= 200 && status !== 204 && status !== 304) {
      if (headers['content-length'] !== undefined) {
        const length = Number(headers['content-length']);
        if (Buffer.byteLength(rest, 'latin1') < length) return out;
        body = rest.slice(0, length);
        rest = rest.slice(length);
      } else if (headers['transfer-encoding'] === 'chunked') {
        const done = rest.indexOf('0\r\n\r\n');
        if (done === -1) return out;
        body = rest.slice(0, done).replace(/(^|\r\n)[0-9a-f]+\r\n/gi, '');
        rest = rest.slice(done + 5);
      }
    }
    out.push({ status, headers, body: Buffer.from(body, 'latin1').toString('utf8') });
  }
}

/** The seed's problem type (docs/conventions.md §7). */
export const RFC2616 = 'http://www.w3.org/Protocols/rfc2616/rfc2616-sec10.html';

/** Asserts a raw or fetched response is a problem document (docs/conventions.md §7) of `status`; returns it. */
export function assertProblem(
  response: { status: number; contentType: string | null | undefined; body: string },
  status: number,
  detail?: string,
): Record<string, unknown> {
  assert.equal(response.status, status, response.body);
  assert.equal(response.contentType, 'application/problem+json');
  const doc = JSON.parse(response.body) as Record<string, unknown>;
  assert.equal(doc['type'], RFC2616);
  assert.equal(doc['status'], status);
  assert.equal(typeof doc['title'], 'string');
  assert.equal(typeof doc['detail'], 'string');
  if (detail !== undefined) assert.equal(doc['detail'], detail);
  return doc;
}

/** `assertProblem` for a parsed raw response. */
export function assertRawProblem(response: RawResponse | undefined, status: number, detail?: string): Record<string, unknown> {
  assert.ok(response, `expected a ${status} response, got none`);
  return assertProblem({ status: response.status, contentType: response.headers['content-type'], body: response.body }, status, detail);
}

/** `assertProblem` for a fetch Response (reads its body). */
export async function assertFetchProblem(res: Response, status: number, detail?: string): Promise<Record<string, unknown>> {
  return assertProblem({ status: res.status, contentType: res.headers.get('content-type'), body: await res.text() }, status, detail);
}
