import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { METHOD_NOT_IMPLEMENTED } from '../../src/http/reply.js';
import { records, startItems } from '../helpers/server.js';
import { assertRawProblem, rawExchange } from './raw.js';

/** Request headers that clients get wrong, or use against the server: conditionals, Host, upgrades. */

const J = 'Content-Type: application/json\r\n';
const request = (method: string, path: string, headers: string, body = ''): string =>
  `${method} ${path} HTTP/1.1\r\nHost: x\r\n${headers}${body === '' && method !== 'PUT' && method !== 'PATCH' ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`}\r\n${body}`;

describe('conditional requests (RFC 9110 §13)', () => {
  test('If-Match: W/"<current tag>" on PATCH -> 412 (If-Match compares strongly), entity unchanged', async () => {
    const s = await startItems(records(1));
    const tag = (await s.request('/items/e000')).headers.get('etag') ?? '';
    const { responses } = await rawExchange(s.url, request('PATCH', '/items/e000', `${J}If-Match: W/${tag}\r\n`, '{"n":9}'), { responses: 1 });
    assertRawProblem(responses[0], 412, 'If-Match does not match the current ETag');
    assert.deepEqual(s.store.get('e000')?.record, records(1)[0]);
  });

  for (const ifMatch of ['""', '"', 'garbage', '"a", "b"', ', ,', 'W/*']) {
    test(`If-Match: ${ifMatch} on DELETE -> 412, entity kept`, async () => {
      const s = await startItems(records(1));
      const { responses } = await rawExchange(s.url, request('DELETE', '/items/e000', `If-Match: ${ifMatch}\r\n`), { responses: 1 });
      assertRawProblem(responses[0], 412);
      assert.equal(s.store.size, 1);
    });
  }

  test('If-None-Match with 1500 tags on GET -> 200', async () => {
    const s = await startItems(records(1));
    const tags = Array.from({ length: 1500 }, (_, i) => `"t${i}"`).join(', ');
    const res = await s.request('/items/e000', { headers: { 'if-none-match': tags } });
    assert.equal(res.status, 200);
  });

  test(
    'PUT with If-None-Match: * on an existing entity -> 412, entity unchanged',
    async () => {
      const s = await startItems(records(1));
      const { responses } = await rawExchange(s.url, request('PUT', '/items/e000', `${J}If-None-Match: *\r\n`, '{"n":2}'), { responses: 1 });
      assertRawProblem(responses[0], 412);
      assert.deepEqual(s.store.get('e000')?.record, records(1)[0]);
    },
  );

  test(
    'GET with an If-Match that does not match -> 412',
    async () => {
      const s = await startItems(records(1));
      const { responses } = await rawExchange(s.url, request('GET', '/items/e000', 'If-Match: "nope"\r\n'), { responses: 1 });
      assertRawProblem(responses[0], 412);
    },
  );
});

describe('Host, upgrades and method tricks', () => {
  test(
    'two Host headers -> 400 (RFC 9112 §3.2)',
    async () => {
      const s = await startItems(records(1));
      const { responses } = await rawExchange(s.url, 'GET /items HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n', { responses: 1 });
      assertRawProblem(responses[0], 400);
    },
  );

  test('two Authorization headers, whichever comes first -> 400 naming the header, nothing written', async () => {
    const s = await startItems(records(1), { tokens: ['w'] });
    for (const [first, second] of [
      ['Bearer w', 'Bearer nope'],
      ['Bearer nope', 'Bearer w'],
    ]) {
      const body = '{"n":1}';
      const { responses } = await rawExchange(s.url, `POST /items HTTP/1.1\r\nHost: x\r\nAuthorization: ${first}\r\nauthorization: ${second}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, { responses: 1 });
      assertRawProblem(responses[0], 400);
      assert.equal(JSON.parse(responses[0]!.body).detail, 'The request has more than one Authorization header');
    }
    assert.equal(s.store.size, 1);
  });

  test('two Content-Type headers, whichever comes first -> 400 naming the header, nothing written', async () => {
    // Node keeps the first and drops the other; a proxy in front may have judged the other.
    const s = await startItems(records(1));
    for (const [first, second] of [
      ['application/json', 'text/plain'],
      ['text/plain', 'application/json'],
      ['application/json', 'application/json'],
    ]) {
      const body = '{"n":1}';
      const { responses } = await rawExchange(s.url, `POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: ${first}\r\ncontent-type: ${second}\r\nContent-Length: ${body.length}\r\n\r\n${body}`, { responses: 1 });
      assertRawProblem(responses[0], 400);
      assert.equal(JSON.parse(responses[0]!.body).detail, 'The request has more than one Content-Type header');
    }
    assert.equal(s.store.size, 1);
  });

  test('Upgrade: websocket -> ignored, the request is answered as plain HTTP/1.1', async () => {
    const s = await startItems(records(1));
    const { responses } = await rawExchange(s.url, 'GET /items HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n', { responses: 1 });
    assert.equal(responses[0]?.status, 200);
    assert.equal(JSON.parse(responses[0]?.body ?? '{}').total, 1);
  });

  test('HTTP/2 connection preface -> 400, closed', async () => {
    const s = await startItems();
    const { responses, closedByServer } = await rawExchange(s.url, 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    assert.equal(responses[0]?.status, 400);
    assert.equal(closedByServer, true);
  });

  test('a request line saying HTTP/2.0 -> 505 problem, closed', async () => {
    const s = await startItems(records(1));
    // Asked first as HTTP/1.1, so that the reply is kept for the fast lane (kept-replies.ts).
    assert.equal((await rawExchange(s.url, 'GET /items/e000 HTTP/1.1\r\nHost: x\r\n\r\n', { responses: 1 })).responses[0]?.status, 200);
    assert.equal((await rawExchange(s.url, 'GET /items/e000 HTTP/2.0\r\nHost: x\r\n\r\n')).responses[0]?.status, 505);
    const { responses, closedByServer } = await rawExchange(s.url, 'GET /items HTTP/2.0\r\nHost: x\r\n\r\n');
    assertRawProblem(responses[0], 505, 'HTTP/2.0 is not supported: send HTTP/1.1 (or HTTP/1.0)');
    assert.equal(closedByServer, true);
  });

  test('lower-case method "get" -> 501 problem (methods are case-sensitive: an unknown one, RFC 9110 §9.1)', async () => {
    const s = await startItems(records(1));
    const { responses } = await rawExchange(s.url, 'get /items HTTP/1.1\r\nHost: x\r\n\r\n');
    assertRawProblem(responses[0], 501, METHOD_NOT_IMPLEMENTED);
  });

  test('X-HTTP-Method-Override: DELETE on a POST to an entity -> 405, nothing deleted', async () => {
    const s = await startItems(records(1));
    const { responses } = await rawExchange(s.url, request('POST', '/items/e000', `${J}X-HTTP-Method-Override: DELETE\r\n`, '{}'), { responses: 1 });
    assertRawProblem(responses[0], 405);
    assert.equal(s.store.size, 1);
  });

  test('Range: bytes=0-10 -> ignored, the whole entity with 200', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items/e000', { headers: { range: 'bytes=0-10' } });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).id, 'e000');
  });

  for (const accept of ['application/hal+json;q=abc', 'application/json;q=2', '*/*;q=-1']) {
    test(`Accept: ${accept} (a malformed q) -> 406 problem, never a 500`, async () => {
      const s = await startItems(records(1));
      const res = await s.request('/items/e000', { headers: { accept } });
      assert.equal(res.status, 406);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
    });
  }

  for (const encoding of ['br;q=NaN, gzip;q=0', 'gzip;q=0.5, br;q=1e3', '*;q=0', 'x'.repeat(4000)]) {
    test(`Accept-Encoding: ${encoding.slice(0, 30)} on a large page -> 200 that decodes, never a 500`, async () => {
      const s = await startItems(records(50, (i) => ({ text: 'x'.repeat(100), i })));
      const res = await s.request('/items', { headers: { 'accept-encoding': encoding } });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).count, 20);
    });
  }
});
