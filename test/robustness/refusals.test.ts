import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import type { AccessLogEntry } from '../../src/http/boundary.js';
import { refusalCode, refusalEntry } from '../../src/http/refusals.js';
import { METHOD_NOT_IMPLEMENTED } from '../../src/http/reply.js';
import { ServerMetrics } from '../../src/metrics/server-metrics.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { sample } from '../helpers/metrics.js';
import { startItems } from '../helpers/server.js';
import { assertRawProblem, portOf, rawExchange, startShortTimeouts } from './raw.js';

/**
 * Requests Node's parser refuses never reach the handler: the server answers them itself
 * (reply.ts), and counts and logs each answer as the handler would (refusals.ts), with none of the
 * bytes refused. Raw sockets, since fetch sends nothing malformed.
 */

const TOKEN = 'sekrit-refused-token-1234';
const JSON_POST = 'POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n';
const REFUSED = (status: number): string => `halserve_http_requests_total{method="other",route="unparsed",status="${status}"}`;

/** A server over `items` with its metrics and access log at hand, the token configured. */
async function serve(): Promise<{ url: string; lines: AccessLogEntry[]; metrics: () => Promise<string> }> {
  const lines: AccessLogEntry[] = [];
  const s = await startItems([], { tokens: [TOKEN], metrics: new ServerMetrics(), accessLog: (entry) => lines.push(entry) });
  const metrics = async (): Promise<string> => (await s.request('/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })).text();
  return { url: s.url, lines, metrics };
}

describe('requests the parser refuses -> counted as method other, route unparsed, and one access-log line each', () => {
  for (const [label, data, status, code] of [
    ['a malformed request line', 'GARBAGE\r\n\r\n', 400, 'HPE_INVALID_METHOD'],
    ['a header of 20 KB holding the token', `GET /items?access_token=${TOKEN} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'HPE_HEADER_OVERFLOW'],
    ['a bare CR in a header value', `GET /items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nX-A: a\rSet-Cookie: b\r\n\r\n`, 400, 'HPE_LF_EXPECTED'],
    ['an invalid character in a header name', `GET /items?token=${TOKEN} HTTP/1.1\r\nHost: x\r\nX(A): b\r\n\r\n`, 400, 'HPE_INVALID_HEADER_TOKEN'],
    ['a bad chunk size (the handler already has the request)', `${JSON_POST}Authorization: Bearer ${TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`, 400, 'HPE_INVALID_CHUNK_SIZE'],
    ['a bad chunk after a good one', `${JSON_POST}Authorization: Bearer ${TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\nzz\r\n`, 400, 'HPE_INVALID_CHUNK_SIZE'],
  ] as const) {
    test(`${label} -> ${status}, Connection: close, counted once, one line without the bytes sent`, async () => {
      const s = await serve();
      const { responses, closedByServer } = await rawExchange(s.url, data);
      assert.equal(responses.length, 1);
      assertRawProblem(responses[0], status);
      assert.equal(responses[0]?.headers['connection'], 'close');
      assert.equal(closedByServer, true);

      assert.deepEqual(
        s.lines.map(({ time: _, ...rest }) => rest),
        [{ method: '', path: '', status, ms: 0, bytes: Buffer.byteLength(responses[0]?.body ?? ''), refused: code }],
      );
      assert.ok(!JSON.stringify(s.lines).includes('sekrit'), 'the token reached the access log');
      const text = await s.metrics();
      assert.equal(sample(text, REFUSED(status)), 1);
      // No latency: nothing says when a refused request began.
      assert.ok(!text.includes('halserve_http_request_duration_seconds_count{method="other",route="unparsed"}'));
    });
  }

  test('a GET, then a malformed request pipelined behind it -> the GET logged as usual, the refusal once', async () => {
    const s = await serve();
    const { responses, closedByServer } = await rawExchange(s.url, `GET /items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\nBREW /items?token=${TOKEN} HTTP/1.1\r\n\r\n`);
    assert.deepEqual(
      responses.map((r) => r.status),
      [200, 501],
    );
    assert.equal(closedByServer, true);
    assert.deepEqual(
      s.lines.map((l) => [l.method, l.path, l.status, l.refused]).sort(),
      [
        ['', '', 501, 'HPE_INVALID_METHOD'],
        ['GET', '/items', 200, undefined],
      ],
    );
    assert.ok(!JSON.stringify(s.lines).includes('sekrit'));
    const text = await s.metrics();
    assert.equal(sample(text, REFUSED(501)), 1);
    assert.equal(sample(text, 'halserve_http_requests_total{method="GET",route="/items",status="200"}'), 1);
  });

  test('a connection reset mid-head, one closed without a byte -> nothing sent, nothing counted or logged', async () => {
    const s = await serve();
    await Promise.all([closeAfter(s.url, 'GET /items HTTP/1.1\r\nHost: x\r\n', true), closeAfter(s.url, '', false)]);
    const text = await s.metrics();
    assert.ok(!text.includes('route="unparsed"'), text);
    assert.deepEqual(s.lines.filter((l) => l.refused !== undefined), []);
  });
});

describe('requests Node parsed that the server answers itself -> counted with route unmatched, latency included, and one access-log line each', () => {
  test('CONNECT with credentials in its target -> 501, counted as method other, its line without the target', async () => {
    const s = await serve();
    const proxyAuth = Buffer.from(`user:${TOKEN}`).toString('base64');
    const { responses, closedByServer } = await rawExchange(s.url, `CONNECT user:${TOKEN}@example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic ${proxyAuth}\r\n\r\n`);
    assert.equal(responses.length, 1);
    assertRawProblem(responses[0], 501, METHOD_NOT_IMPLEMENTED);
    assert.equal(closedByServer, true);
    assert.deepEqual(
      s.lines.map(({ time: _, ms: __, ...rest }) => rest),
      [{ method: 'CONNECT', path: '', status: 501, bytes: Buffer.byteLength(responses[0]?.body ?? '') }],
    );
    assert.equal(typeof s.lines[0]?.ms, 'number');
    assert.ok(!JSON.stringify(s.lines).includes('sekrit') && !JSON.stringify(s.lines).includes('example.com'), 'the target reached the access log');
    const text = await s.metrics();
    assert.equal(sample(text, 'halserve_http_requests_total{method="other",route="unmatched",status="501"}'), 1);
    assert.equal(sample(text, 'halserve_http_request_duration_seconds_count{method="other",route="unmatched"}'), 1);
    assert.ok(!text.includes('CONNECT') && !text.includes('example.com'), 'the method or target in a label');
  });

  test('Expect: 200-ok on a POST whose target holds the token -> 417, counted with its method, its line redacted as the handler\'s are, nothing stored', async () => {
    const s = await serve();
    const { responses } = await rawExchange(s.url, `POST /items/${TOKEN}?access_token=${TOKEN}&page=2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 200-ok\r\n\r\n{}`, { responses: 1 });
    assertRawProblem(responses[0], 417);
    assert.deepEqual(
      s.lines.map(({ time: _, ms: __, ...rest }) => rest),
      [{ method: 'POST', path: '/items/[redacted]', query: 'access_token=[redacted]&page=2', status: 417, bytes: Buffer.byteLength(responses[0]?.body ?? '') }],
    );
    assert.ok(!JSON.stringify(s.lines).includes('sekrit'), 'the token reached the access log');
    const text = await s.metrics();
    assert.equal(sample(text, 'halserve_http_requests_total{method="POST",route="unmatched",status="417"}'), 1);
    assert.equal(sample(text, 'halserve_http_request_duration_seconds_count{method="POST",route="unmatched"}'), 1);
    assert.equal(sample(text, 'halserve_entities{resource="items"}'), 0);
  });
});

describe('requests too slow to arrive, with the timeouts shortened -> 408, counted and logged', () => {
  for (const [label, data] of [
    ['headers never finished', `GET /items?token=${TOKEN} HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n`],
    ['a body never finished (the handler already has the request)', `${JSON_POST}Authorization: Bearer ${TOKEN}\r\nContent-Length: 100\r\n\r\n{"slow":`],
  ] as const) {
    test(label, async () => {
      const lines: AccessLogEntry[] = [];
      const metrics = new ServerMetrics();
      const url = await startShortTimeouts({ resources: [{ name: 'items', store: createMemoryStore() }], tokens: [TOKEN], metrics, accessLog: (entry) => lines.push(entry) });
      const { responses } = await rawExchange(url, data, { timeoutMs: 3000 });
      assertRawProblem(responses[0], 408);
      assert.equal(responses[0]?.headers['connection'], 'close');
      assert.deepEqual(
        lines.map((l) => [l.method, l.path, l.status, l.refused]),
        [['', '', 408, 'ERR_HTTP_REQUEST_TIMEOUT']],
      );
      assert.equal(metrics.requests.get('other', 'unparsed', '408'), 1);
    });
  }
});

/** Sends `data`, then closes the connection (with a reset when `reset`) and waits until it is closed. */
function closeAfter(url: string, data: string, reset: boolean): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(portOf(url), '127.0.0.1', () => {
      if (data !== '') socket.write(data);
      setTimeout(() => (reset ? socket.resetAndDestroy() : socket.end()), 20);
    });
    socket.on('error', () => {});
    socket.resume();
    socket.on('close', () => resolve());
  });
}

describe('the line of a refusal', () => {
  test('Node codes pass as they are; anything else is other', () => {
    assert.equal(refusalCode('HPE_HEADER_OVERFLOW'), 'HPE_HEADER_OVERFLOW');
    assert.equal(refusalCode('ERR_HTTP_REQUEST_TIMEOUT'), 'ERR_HTTP_REQUEST_TIMEOUT');
    assert.equal(refusalCode(undefined), 'other');
    assert.equal(refusalCode('not a code'), 'other');
    assert.equal(refusalCode(`HPE_${'X'.repeat(100)}`), 'other');
  });

  test('holds the status, the bytes sent and the code, and nothing of the request', () => {
    assert.deepEqual(refusalEntry(431, 165, 'HPE_HEADER_OVERFLOW', new Date(0)), {
      time: '1970-01-01T00:00:00.000Z',
      method: '',
      path: '',
      status: 431,
      ms: 0,
      bytes: 165,
      refused: 'HPE_HEADER_OVERFLOW',
    });
  });
});
