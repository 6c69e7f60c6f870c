import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { bodyLimits, ClientAbortedError, readBody } from '../../src/http/body.js';
import { after, describe, test } from 'node:test';
import { METHOD_NOT_IMPLEMENTED } from '../../src/http/reply.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { records, startItems } from '../helpers/server.js';
import { assertRawProblem, rawExchange, startShortTimeouts } from './raw.js';

/**
 * Malformed and unusual HTTP/1.1 over a raw socket: what a hostile or broken client sends. The rule
 * under test: never a crash, never a hang, never a partial or smuggled entity in the store.
 */

const JSON_POST = 'POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n';

/** The server still answers a plain request: nothing that came before broke it. */
async function assertAlive(s: { request(path: string): Promise<Response> }): Promise<void> {
  const res = await s.request('/healthz');
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { status: 'ok' });
}

describe('malformed requests -> 400 problem document, connection closed, nothing stored', () => {
  for (const [label, data] of [
    ['request line "GARBAGE"', 'GARBAGE\r\n\r\n'],
    ['NUL byte in the request target', 'GET /items/a\0b HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['raw UTF-8 bytes in the request target', Buffer.concat([Buffer.from('GET /items/'), Buffer.from('é', 'utf8'), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')])],
    ['bare CR inside a header value (injection)', 'GET /items HTTP/1.1\r\nHost: x\r\nX-A: a\rSet-Cookie: b\r\n\r\n'],
    ['obs-fold continuation line', 'GET /items HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n'],
    ['Content-Length and Transfer-Encoding together (smuggling)', `${JSON_POST}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`],
    ['two different Content-Length headers', `${JSON_POST}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{} `],
    ['negative Content-Length', `${JSON_POST}Content-Length: -1\r\n\r\n{}`],
    ['chunk size "zz"', `${JSON_POST}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`],
    ['Transfer-Encoding: gzip without chunked', `${JSON_POST}Transfer-Encoding: gzip\r\n\r\n{}`],
  ] as const) {
    test(`${label} -> 400 problem, closed, nothing stored`, async () => {
      const s = await startItems(records(1));
      const { responses, closedByServer } = await rawExchange(s.url, data);
      assert.equal(responses.length, 1);
      assertRawProblem(responses[0], 400);
      assert.equal(closedByServer, true);
      assert.equal(s.store.size, 1);
      await assertAlive(s);
    });
  }

  test('HTTP/1.0 without Host -> 200 (Host is required from HTTP/1.1 on)', async () => {
    const s = await startItems(records(1));
    const { responses } = await rawExchange(s.url, 'GET /items HTTP/1.0\r\n\r\n', { responses: 1 });
    assert.equal(responses[0]?.status, 200);
    assert.equal(JSON.parse(responses[0]?.body ?? '{}').total, 1);
  });

  test(
    'HTTP/1.1 without Host -> 400 problem document',
    async () => {
      const s = await startItems(records(1));
      const { responses } = await rawExchange(s.url, 'GET /items HTTP/1.1\r\n\r\n', { responses: 1 });
      assertRawProblem(responses[0], 400);
    },
  );

  test('Content-Length shorter than the body -> leftover bytes are a bad request, never an entity', async () => {
    const s = await startItems();
    // The body is `{}` but the length says 1: the `}` left over must not start a second request.
    const { responses, closedByServer } = await rawExchange(s.url, `${JSON_POST}Content-Length: 1\r\n\r\n{}`);
    assert.ok(responses.some((r) => r.status === 400));
    assert.ok(responses.every((r) => r.status !== 201));
    assert.equal(closedByServer, true);
    assert.equal(s.store.size, 0);
    await assertAlive(s);
  });

  test('header of 20 KB -> 431 problem, closed, server keeps serving', async () => {
    const s = await startItems();
    const { responses, closedByServer } = await rawExchange(s.url, `GET /items HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assertRawProblem(responses[0], 431, 'The request headers are too large');
    assert.equal(closedByServer, true);
    await assertAlive(s);
  });

  test(
    'Expect: 200-ok -> 417 problem document, nothing stored',
    async () => {
      const s = await startItems();
      const { responses } = await rawExchange(s.url, `${JSON_POST}Content-Length: 2\r\nExpect: 200-ok\r\n\r\n{}`, { responses: 1 });
      assertRawProblem(responses[0], 417);
      assert.equal(s.store.size, 0);
    },
  );

  test('CONNECT -> 501 problem (RFC 9110 §9.1), connection closed, server keeps serving', async () => {
    const s = await startItems();
    const { responses, closedByServer } = await rawExchange(s.url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    assert.equal(responses.length, 1);
    assertRawProblem(responses[0], 501, METHOD_NOT_IMPLEMENTED);
    assert.equal(closedByServer, true);
    await assertAlive(s);
  });

  for (const [label, data] of [
    ['unknown method FOO', `FOO /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`],
  ] as const) {
    test(`${label} -> 501 problem (RFC 9110 §9.1), closed, nothing stored`, async () => {
      const s = await startItems(records(1));
      const { responses, closedByServer } = await rawExchange(s.url, data);
      assert.equal(responses.length, 1);
      assertRawProblem(responses[0], 501, METHOD_NOT_IMPLEMENTED);
      assert.equal(closedByServer, true);
      assert.equal(s.store.size, 1);
      await assertAlive(s);
    });
  }

  test('GET, then an unknown method pipelined behind it -> 200, then 501 and close', async () => {
    const s = await startItems(records(1));
    const { responses, closedByServer } = await rawExchange(s.url, 'GET /items/e000 HTTP/1.1\r\nHost: x\r\n\r\nBREW /items HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.deepEqual(
      responses.map((r) => r.status),
      [200, 501],
    );
    assertRawProblem(responses[1], 501, METHOD_NOT_IMPLEMENTED);
    assert.equal(closedByServer, true);
  });
});

describe('framing that request smuggling plays on (RFC 9112 §6)', () => {
  const smuggled = 'GET /items/smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
  for (const [label, data, status] of [
    ['Transfer-Encoding:<tab>chunked (OWS is a tab)', `${JSON_POST}Transfer-Encoding:\tchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`, 201],
    ['TRANSFER-ENCODING: CHUNKED (case-insensitive)', `${JSON_POST}TRANSFER-ENCODING: CHUNKED\r\n\r\n2\r\n{}\r\n0\r\n\r\n`, 201],
    ['a chunk extension (2;a=b)', `${JSON_POST}Transfer-Encoding: chunked\r\n\r\n2;a=b\r\n{}\r\n0\r\n\r\n`, 201],
    ['Transfer-Encoding: xchunked beside Content-Length', `${JSON_POST}Transfer-Encoding: xchunked\r\nContent-Length: 2\r\n\r\n{}`, 400],
    ['a space before the colon', `${JSON_POST}Transfer-Encoding : chunked\r\nContent-Length: 2\r\n\r\n{}`, 400],
    ['Content-Length: 2, 2', `${JSON_POST}Content-Length: 2, 2\r\n\r\n{}`, 400],
    ['Content-Length: +2', `${JSON_POST}Content-Length: +2\r\n\r\n{}`, 400],
    ['Content-Length: 0x2', `${JSON_POST}Content-Length: 0x2\r\n\r\n{}`, 400],
    ['Transfer-Encoding chunked, then identity', `${JSON_POST}Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n2\r\n{}\r\n0\r\n\r\n`, 400],
    ['Transfer-Encoding: chunked, chunked', `${JSON_POST}Transfer-Encoding: chunked, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`, 400],
    ['chunks ended by bare LF', `${JSON_POST}Transfer-Encoding: chunked\r\n\r\n2\n{}\n0\n\n`, 400],
    ['headers ended by bare LF', 'POST /items HTTP/1.1\nHost: x\nContent-Type: application/json\nContent-Length: 2\n\n{}', 400],
    ['NUL inside a header value', `${JSON_POST}X-A: a\0b\r\nContent-Length: 2\r\n\r\n{}`, 400],
    ['Content-Length 2 and chunked, a request hidden after the 0 chunk', `${JSON_POST}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`, 400],
    ['Content-Length 0 and chunked, a request hidden after the 0 chunk', `${JSON_POST}Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n${smuggled}`, 400],
  ] as const) {
    test(`${label} -> ${status}${status === 400 ? ' and close, nothing stored, nothing hidden runs' : ', one entity'}`, async () => {
      const s = await startItems();
      const { responses, closedByServer } = await rawExchange(s.url, data, status === 201 ? { responses: 1 } : {});
      assert.deepEqual(
        responses.map((r) => r.status),
        [status],
      );
      if (status === 400) {
        assertRawProblem(responses[0], 400);
        assert.equal(closedByServer, true);
        assert.equal(s.store.size, 0);
      } else {
        assert.equal(s.store.size, 1);
      }
    });
  }

  test('HTTP/1.0 with Transfer-Encoding: chunked (RFC 9112 §6.1: faulty framing) -> 400 and close, nothing stored, nothing hidden runs', async () => {
    const s = await startItems();
    // A 1.0 hop that did not decode the chunks would read the body otherwise than Node does.
    const data = `POST /items HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n${smuggled}`;
    const { responses, closedByServer } = await rawExchange(s.url, data);
    assert.equal(responses.length, 1);
    assertRawProblem(responses[0], 400, 'An HTTP/1.0 request cannot carry Transfer-Encoding: send the body with a Content-Length');
    assert.equal(responses[0]?.headers['connection'], 'close');
    assert.equal(closedByServer, true);
    assert.equal(s.store.size, 0);
  });
});

describe('pipelining', () => {
  test('GET entity, GET unknown id, GET /healthz in one write -> three answers in order', async () => {
    const s = await startItems(records(1));
    const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const { responses } = await rawExchange(s.url, get('/items/e000') + get('/items/nope') + get('/healthz'), { responses: 3 });
    assert.deepEqual(
      responses.map((r) => r.status),
      [200, 404, 200],
    );
    assert.equal(JSON.parse(responses[0]?.body ?? '').id, 'e000');
    assertRawProblem(responses[1], 404, 'There is no items entity with id "nope"');
    assert.equal(responses[2]?.body, '{"status":"ok"}');
  });

  test('100 POSTs in one write -> 100 answers 201, 100 distinct entities', async () => {
    const s = await startItems();
    const posts = Array.from({ length: 100 }, (_, i) => `${JSON_POST}Content-Length: ${`{"n":${i}}`.length}\r\n\r\n{"n":${i}}`).join('');
    const { responses } = await rawExchange(s.url, posts, { responses: 100, timeoutMs: 5000 });
    assert.equal(responses.length, 100);
    assert.ok(responses.every((r) => r.status === 201));
    const ns = responses.map((r) => JSON.parse(r.body).n as number);
    assert.deepEqual(ns, Array.from({ length: 100 }, (_, i) => i));
    assert.equal(s.store.size, 100);
    assert.equal(new Set(responses.map((r) => r.headers['location'])).size, 100);
  });

  test('a bad request pipelined between two POSTs -> the first POST\'s 201, then 400 and close; the POST after it never runs', async () => {
    const s = await startItems();
    const good = `${JSON_POST}Content-Length: 2\r\n\r\n{}`;
    const { responses, closedByServer } = await rawExchange(s.url, `${good}BROKEN LINE\r\n\r\n${good}`);
    // Node's parser reads the whole write at once and finds the bad request while the first POST
    // is still being written: that POST is answered first (it was made), then the bad request.
    assert.deepEqual(responses.map((r) => r.status), [201, 400]);
    assert.equal(closedByServer, true);
    assert.equal(s.store.size, 1);
    await assertAlive(s);
  });

  for (const [label, first, bad] of [
    ['a DELETE', 'DELETE /items/e000 HTTP/1.1\r\nHost: x\r\n\r\n', 'BROKEN\r\n\r\n'],
    ['a POST', `${JSON_POST}Content-Length: 2\r\n\r\n{}`, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\0b\r\n\r\n'],
  ] as const) {
    test(`${label}, then a bad request in the same write -> the write's own answer, then 400 and close`, async () => {
      const s = await startItems(records(1));
      const { responses, closedByServer } = await rawExchange(s.url, `${first}${bad}`);
      assert.deepEqual(responses.map((r) => r.status), [label === 'a DELETE' ? 204 : 201, 400]);
      assert.equal(closedByServer, true);
      assert.equal(s.store.size, label === 'a DELETE' ? 0 : 2);
    });
  }
});

describe('bodies that stop early', () => {
  test('half a body, then the client disconnects -> readBody rejects with ClientAbortedError (no promise left pending)', async () => {
    let outcome!: Promise<unknown>;
    let reached!: () => void;
    const arrived = new Promise<void>((resolve) => (reached = resolve));
    const server = createServer((req) => {
      outcome = readBody(req, bodyLimits({})).then(
        () => 'resolved',
        (error: unknown) => error,
      );
      reached();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    after(() => server.close());
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(`${JSON_POST}Content-Length: 100\r\n\r\n{"half":`);
    await arrived;
    socket.destroy();
    const error = await outcome;
    assert.ok(error instanceof ClientAbortedError, String(error));
  });

  test('half a body, then the client disconnects -> nothing stored, server keeps serving', async () => {
    const s = await startItems(records(1), { errorLog: () => {} });
    await rawExchange(s.url, `${JSON_POST}Content-Length: 100\r\n\r\n{"half":`, { destroyAfterWriteMs: 100 });
    // Give the server a moment to notice the closed socket.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(s.store.size, 1);
    await assertAlive(s);
  });

  test('half a chunked body, then the client disconnects -> nothing stored', async () => {
    const s = await startItems([], { errorLog: () => {} });
    await rawExchange(s.url, `${JSON_POST}Transfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n`, { destroyAfterWriteMs: 100 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(s.store.size, 0);
    await assertAlive(s);
  });

  test(
    'half a body, then the client disconnects -> not logged as an unexpected server error',
    async () => {
      const logged: unknown[] = [];
      const s = await startItems([], { errorLog: (error) => logged.push(error) });
      await rawExchange(s.url, `${JSON_POST}Content-Length: 100\r\n\r\n{"half":`, { destroyAfterWriteMs: 100 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.deepEqual(logged, []);
    },
  );

  test('chunked body in 1-byte chunks -> 201 with the whole body', async () => {
    const s = await startItems();
    const body = '{"name":"tiny chunks"}';
    const chunks = [...body].map((c) => `1\r\n${c}\r\n`).join('');
    const { responses } = await rawExchange(s.url, `${JSON_POST}Transfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`, { responses: 1 });
    assert.equal(responses[0]?.status, 201);
    assert.equal(JSON.parse(responses[0]?.body ?? '').name, 'tiny chunks');
  });
});

describe('Expect: 100-continue', () => {
  test('text/plain with Expect -> 415 seed document, nothing stored', async () => {
    const s = await startItems();
    const { responses } = await rawExchange(s.url, 'POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n', {
      responses: 1,
    });
    const final = responses.find((r) => r.status >= 200);
    assertRawProblem(final, 415, 'Expecting one of the application/json');
    assert.equal(s.store.size, 0);
  });

  test('declared body over the limit with Expect -> 413 and close, body never sent', async () => {
    const s = await startItems();
    const { responses, closedByServer } = await rawExchange(s.url, `${JSON_POST}Content-Length: 99999999\r\nExpect: 100-continue\r\n\r\n`, { timeoutMs: 1000 });
    const final = responses.find((r) => r.status >= 200);
    assertRawProblem(final, 413, 'Request body is larger than the limit of 1048576 bytes');
    assert.equal(final?.headers['connection'], 'close');
    assert.equal(closedByServer, true);
  });

  for (const [label, headers, status] of [
    ['text/plain', 'Content-Type: text/plain\r\nContent-Length: 2', 415],
    ['a declared body over the limit', 'Content-Type: application/json\r\nContent-Length: 99999999', 413],
  ] as const) {
    test(`Expect: 100-continue with ${label} -> ${status} and no interim 100 Continue`, async () => {
      const s = await startItems();
      const { responses } = await rawExchange(s.url, `POST /items HTTP/1.1\r\nHost: x\r\n${headers}\r\nExpect: 100-continue\r\n\r\n`, { responses: 1 });
      assert.deepEqual(
        responses.map((r) => r.status),
        [status],
      );
    });
  }

  test('Expect: 100-continue on a good POST -> 100 Continue, then 201 once the body is sent', async () => {
    const s = await startItems();
    const { responses } = await rawExchange(s.url, [`${JSON_POST}Content-Length: 2\r\nExpect: 100-continue\r\n\r\n`], { timeoutMs: 300 });
    assert.deepEqual(
      responses.map((r) => r.status),
      [100],
    );
    const done = await rawExchange(s.url, `${JSON_POST}Content-Length: 2\r\nExpect: 100-continue\r\n\r\n{}`, { responses: 1 });
    assert.deepEqual(
      done.responses.map((r) => r.status),
      [100, 201],
    );
    assert.equal(s.store.size, 1);
  });
});

describe('request targets and codings', () => {
  for (const target of ['*', '*items']) {
    test(`GET ${target} (not a path; the asterisk form is OPTIONS's alone) -> 400 problem`, async () => {
      const s = await startItems(records(1));
      const { responses } = await rawExchange(s.url, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`, { responses: 1 });
      assertRawProblem(responses[0], 400, 'The request target is not a path: only OPTIONS takes *');
    });
  }

  for (const coding of ['gzip, chunked', 'x-foo, chunked']) {
    test(`Transfer-Encoding: ${coding} -> 501 problem (RFC 9112 §6.1), nothing stored`, async () => {
      const s = await startItems(records(1));
      const { responses } = await rawExchange(s.url, `${JSON_POST}Transfer-Encoding: ${coding}\r\n\r\n2\r\n{}\r\n0\r\n\r\n`, { responses: 1 });
      assertRawProblem(responses[0], 501, `Transfer-Encoding "${coding}" is not supported: send the body chunked, or with a Content-Length`);
      assert.equal(s.store.size, 1);
      await assertAlive(s);
    });
  }

  for (const target of ['/items/e000#top', '/items?n=1#x', 'http://x/items/e000#top']) {
    test(`GET ${target} (a fragment, which no request target holds: RFC 9112 §3.2) -> 400 problem, never the id or filter value with "#…"`, async () => {
      const s = await startItems(records(1));
      const { responses } = await rawExchange(s.url, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`, { responses: 1 });
      assertRawProblem(responses[0], 400, 'The request target holds a fragment (#…): send the URL without it');
    });
  }

  test('OPTIONS * -> 204 with an Allow header', async () => {
    const s = await startItems();
    const { responses } = await rawExchange(s.url, 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n', { responses: 1 });
    assert.equal(responses[0]?.status, 204);
    assert.equal(responses[0]?.headers['allow'], 'GET, HEAD, OPTIONS');
  });

  test('/items/.. and /items/%2e%2e sent as they are -> 404 for id "..", never the index or another resource', async () => {
    const s = await startItems(records(1));
    for (const target of ['/items/..', '/items/%2e%2e', '/items/%2E%2E']) {
      const { responses } = await rawExchange(s.url, `GET ${target} HTTP/1.1\r\nHost: x\r\n\r\n`, { responses: 1 });
      assertRawProblem(responses[0], 404, 'There is no items entity with id ".."');
    }
  });

  test('/%2e%2e/items sent as it is -> 404, not the collection', async () => {
    const s = await startItems(records(1));
    const { responses } = await rawExchange(s.url, 'GET /%2e%2e/items HTTP/1.1\r\nHost: x\r\n\r\n', { responses: 1 });
    assertRawProblem(responses[0], 404);
  });

  test(
    'absolute-form target GET http://x/items -> the collection, as origin-form /items',
    async () => {
      const s = await startItems(records(1));
      const { responses } = await rawExchange(s.url, 'GET http://x/items HTTP/1.1\r\nHost: x\r\n\r\n', { responses: 1 });
      assert.equal(responses[0]?.status, 200);
      assert.equal(JSON.parse(responses[0]?.body ?? '{}').total, 1);
    },
  );

  test(
    'POST with Content-Encoding: gzip -> 415, nothing stored',
    async () => {
      const s = await startItems();
      const { responses } = await rawExchange(s.url, `${JSON_POST}Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}`, { responses: 1 });
      assertRawProblem(responses[0], 415, 'Request bodies must not carry a Content-Encoding');
      assert.equal(s.store.size, 0);
    },
  );
});

describe('slow clients, with the timeouts shortened', () => {
  /** createHalServer's own handling, with timeouts short enough for a test (the CLI's: 10 s and 30 s). */
  async function startShort(): Promise<{ url: string; store: Store }> {
    const store = createMemoryStore();
    return { url: await startShortTimeouts({ resources: [{ name: 'items', store }] }), store };
  }

  test('headers never finished (slowloris) -> 408 problem and close once headersTimeout passes', async () => {
    const s = await startShort();
    const { responses, closedByServer } = await rawExchange(s.url, 'GET /items HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n', { timeoutMs: 3000 });
    assertRawProblem(responses[0], 408, 'The request took too long to arrive');
    assert.equal(closedByServer, true);
  });

  test('body never finished -> 408 problem and close once requestTimeout passes, nothing stored', async () => {
    const s = await startShort();
    const { responses, closedByServer } = await rawExchange(s.url, `${JSON_POST}Content-Length: 100\r\n\r\n{"slow":`, { timeoutMs: 3000 });
    assertRawProblem(responses[0], 408);
    assert.equal(closedByServer, true);
    assert.equal(s.store.size, 0);
  });
});
