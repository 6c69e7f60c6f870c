import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request as httpRequest } from 'node:http';
import { describe, test } from 'node:test';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { createHandler, type AccessLogEntry } from '../../src/http/app.js';
import { staticKeySet } from '../../src/http/jwks.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { sample } from '../helpers/metrics.js';
import { records, startItems } from '../helpers/server.js';

/**
 * The fast lane of a GET asked again (src/http/kept-replies.ts): what it answers is what the full
 * path answers, whatever happened to the entity, the credential or the request in between.
 */

const TOKEN = 'lane-token-0123456789';
const AUTH = { authorization: `Bearer ${TOKEN}` } as const;

/** One response as written to `res`: status, header list and body. */
interface Written {
  status: number;
  head: string[];
  body: Buffer | undefined;
}

/**
 * A GET handed to the handler as Node's parser would (`rawHeaders`; `headers` built from them),
 * counting the reads of `req.headers`: the full path reads them, the lane never does.
 */
function call(handler: (req: IncomingMessage, res: ServerResponse) => void, url: string, raw: string[]): Promise<Written & { headerReads: number }> {
  let headerReads = 0;
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) headers[raw[i]!.toLowerCase()] = raw[i + 1]!;
  return new Promise((resolve) => {
    const written: Written = { status: 0, head: [], body: undefined };
    const req = {
      method: 'GET',
      url,
      rawHeaders: raw,
      httpVersionMajor: 1,
      httpVersionMinor: 1,
      complete: true,
      socket: { remoteAddress: '127.0.0.1' },
      get headers() {
        headerReads++;
        return headers;
      },
    } as unknown as IncomingMessage;
    const res = {
      headersSent: false,
      statusCode: 200,
      writeHead(status: number, head: string[]) {
        written.status = status;
        written.head = [...head];
        return this;
      },
      end(body?: Buffer) {
        written.body = body;
        resolve({ ...written, headerReads });
      },
      once() {},
      on() {},
      destroy() {},
    } as unknown as ServerResponse;
    handler(req, res);
  });
}

describe('the kept-reply lane in the handler', () => {
  test('an entity GET asked again -> answered without reading req.headers, with the same status, head and body as the first', async () => {
    const store = createMemoryStore(records(3));
    const handler = createHandler({ resources: [{ name: 'items', store }], tokens: [TOKEN] });
    const raw = ['Host', 'h', 'Authorization', `Bearer ${TOKEN}`, 'Accept', 'application/json'];
    const first = await call(handler, '/items/e001', raw);
    const second = await call(handler, '/items/e001', raw);
    assert.ok(first.headerReads > 0, 'the first GET went the full way');
    assert.equal(second.headerReads, 0, 'the second GET was answered by the lane');
    assert.deepEqual({ status: second.status, head: second.head, body: second.body?.toString() }, { status: first.status, head: first.head, body: first.body?.toString() });
    assert.equal(first.status, 200);
  });

  test('one allowed origin -> the lane\'s answer to a GET without Origin says Vary: Accept, Origin, as the full path\'s does', async () => {
    const handler = createHandler({ resources: [{ name: 'items', store: createMemoryStore(records(1)) }], tokens: [TOKEN], corsOrigin: 'https://app.example' });
    const raw = ['Host', 'h', 'Authorization', `Bearer ${TOKEN}`];
    const first = await call(handler, '/items/e000', raw);
    const second = await call(handler, '/items/e000', raw);
    assert.equal(second.headerReads, 0, 'the second GET was answered by the lane');
    for (const written of [first, second]) assert.equal(written.head[written.head.indexOf('vary') + 1], 'Accept, Origin');
    assert.deepEqual(second.head, first.head);
  });

  test('with a rate limit, or an embedder\'s authenticator -> no lane: every GET reads its headers', async () => {
    const raw = ['Host', 'h', 'Authorization', `Bearer ${TOKEN}`];
    for (const extra of [{ rateLimit: 1000 }, { authenticator: { authenticate: () => ({ key: 'embedder', access: 'read' as const }) } }]) {
      const handler = createHandler({ resources: [{ name: 'items', store: createMemoryStore(records(1)) }], tokens: [TOKEN], ...extra });
      await call(handler, '/items/e000', raw);
      const second = await call(handler, '/items/e000', raw);
      assert.ok(second.headerReads > 0, Object.keys(extra)[0]);
      assert.equal(second.status, 200);
    }
  });

  test('the entity replaced in the store behind the server -> the next GET goes the full way and shows the new version', async () => {
    const store = createMemoryStore(records(1));
    const handler = createHandler({ resources: [{ name: 'items', store }], tokens: [TOKEN] });
    const raw = ['Host', 'h', 'Authorization', `Bearer ${TOKEN}`];
    await call(handler, '/items/e000', raw);
    await store.update('e000', (current) => ({ ...current.record, n: 42, updatedAt: 1_800_000_000 }));
    const after = await call(handler, '/items/e000', raw);
    assert.ok(after.headerReads > 0);
    assert.equal(JSON.parse(after.body!.toString()).n, 42);
    const again = await call(handler, '/items/e000', raw);
    assert.equal(again.headerReads, 0, 'the new version is kept in its turn');
    assert.equal(JSON.parse(again.body!.toString()).n, 42);
  });
});

describe('the kept-reply lane with many clients', () => {
  test('100 static tokens (half read-only) asking one entity in turn, twice -> the second time every one answered by the lane, with the first answer\'s head and body', async () => {
    const tokens = Array.from({ length: 100 }, (_, i) => `lane-client-${String(i).padStart(3, '0')}-0123456789`);
    const handler = createHandler({ resources: [{ name: 'items', store: createMemoryStore(records(3)) }], tokens: tokens.map((t, i) => (i % 2 === 0 ? t : `read:${t}`)) });
    const raw = (t: string): string[] => ['Host', 'h', 'Authorization', `Bearer ${t}`, 'Accept', 'application/json'];
    const first: Awaited<ReturnType<typeof call>>[] = [];
    for (const t of tokens) first.push(await call(handler, '/items/e001', raw(t)));
    const second: Awaited<ReturnType<typeof call>>[] = [];
    for (const t of tokens) second.push(await call(handler, '/items/e001', raw(t)));
    assert.deepEqual(first.map((w) => w.status), tokens.map(() => 200));
    assert.ok(first.every((w) => w.headerReads > 0), 'a token the server has not yet checked takes the full path');
    assert.equal(second.filter((w) => w.headerReads === 0).length, 100, 'every token, once checked, is answered by the lane');
    for (const w of second) assert.deepEqual({ head: w.head, body: w.body?.toString() }, { head: first[0]!.head, body: first[0]!.body?.toString() });
  });

  test('JWTs of 20 subjects with read, items:read or only orders:read -> the first two kinds answered by the lane after their first request; the third refused (403) by the full path every time', async () => {
    const NOW = 1_800_000_000;
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1' };
    const handler = createHandler({
      resources: [
        { name: 'items', store: createMemoryStore(records(1)) },
        { name: 'orders', store: createMemoryStore([]) },
      ],
      jwt: { keys: staticKeySet({ keys: [jwk] }), issuer: 'https://idp.example/', audience: 'halserve' },
      now: () => NOW,
    });
    const scopes = ['read', 'items:read', 'orders:read'];
    const mint = (i: number): Promise<string> =>
      new SignJWT({ iss: 'https://idp.example/', aud: 'halserve', sub: `user-${i}`, exp: NOW + 3600, iat: NOW, scope: scopes[i % 3] })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .sign(privateKey);
    const jwts = await Promise.all(Array.from({ length: 20 }, (_, i) => mint(i)));
    const ask = (jwt: string): ReturnType<typeof call> => call(handler, '/items/e000', ['Host', 'h', 'Authorization', `Bearer ${jwt}`]);
    for (const jwt of jwts) await ask(jwt);
    for (let pass = 0; pass < 2; pass++) {
      const answers = [];
      for (const jwt of jwts) answers.push(await ask(jwt));
      assert.deepEqual(
        answers.map((w) => [w.status, w.headerReads === 0]),
        jwts.map((_, i) => (i % 3 === 2 ? [403, false] : [200, true])),
      );
    }
  });
});

/** A GET over a real socket, with exactly these headers (Node's client adds Host and Connection). */
function rawGet(url: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the kept-reply lane over HTTP', () => {
  test('GET, GET, PATCH, GET, DELETE, GET -> each answer is the current state', async () => {
    const s = await startItems(records(2), { tokens: [TOKEN] });
    const read = (): ReturnType<typeof rawGet> => rawGet(s.url, '/items/e000', AUTH);
    const one = await read();
    const two = await read();
    assert.equal(two.body, one.body);
    assert.equal(two.headers.etag, one.headers.etag);
    const patched = await s.request('/items/e000', { method: 'PATCH', headers: { ...AUTH, 'content-type': 'application/merge-patch+json' }, body: '{"n":7}' });
    assert.equal(patched.status, 200);
    const three = await read();
    assert.equal(JSON.parse(three.body).n, 7);
    assert.notEqual(three.headers.etag, one.headers.etag);
    assert.equal((await s.request('/items/e000', { method: 'DELETE', headers: AUTH })).status, 204);
    assert.equal((await read()).status, 404);
  });

  test('a conditional GET, a cross-origin GET, another Accept after a kept answer -> each answered as its own headers ask', async () => {
    const s = await startItems(records(1), { tokens: [TOKEN], corsOrigin: 'https://app.example' });
    const first = await rawGet(s.url, '/items/e000', AUTH);
    await rawGet(s.url, '/items/e000', AUTH);
    const etag = String(first.headers.etag);
    assert.equal((await rawGet(s.url, '/items/e000', { ...AUTH, 'if-none-match': etag })).status, 304);
    const cors = await rawGet(s.url, '/items/e000', { ...AUTH, origin: 'https://app.example' });
    assert.equal(cors.headers['access-control-allow-origin'], 'https://app.example');
    const hal = await rawGet(s.url, '/items/e000', { ...AUTH, accept: 'application/hal+json' });
    assert.equal(hal.headers['content-type'], 'application/hal+json');
    const json = await rawGet(s.url, '/items/e000', { ...AUTH, accept: 'application/json' });
    assert.equal(json.headers['content-type'], 'application/json');
  });

  test('40 tokens asking one entity in turn, a PATCH, then again -> every token sees the new version; every GET counted', async () => {
    const tokens = Array.from({ length: 40 }, (_, i) => `over-http-${String(i).padStart(2, '0')}-0123456789`);
    const s = await startItems(records(1), { tokens });
    const auth = (t: string): Record<string, string> => ({ authorization: `Bearer ${t}` });
    for (let pass = 0; pass < 2; pass++) for (const t of tokens) assert.equal(JSON.parse((await rawGet(s.url, '/items/e000', auth(t))).body).n, 0);
    const patched = await s.request('/items/e000', { method: 'PATCH', headers: { ...auth(tokens[0]!), 'content-type': 'application/merge-patch+json' }, body: '{"n":9}' });
    assert.equal(patched.status, 200);
    for (let pass = 0; pass < 2; pass++) for (const t of tokens) assert.equal(JSON.parse((await rawGet(s.url, '/items/e000', auth(t))).body).n, 9);
    const metrics = await (await s.request('/metrics', { headers: auth(tokens[0]!) })).text();
    assert.equal(sample(metrics, 'halserve_http_requests_total{method="GET",route="/items/{id}",status="200"}'), 160);
  });

  test('a kept answer, then no token, a wrong token, a read-only token elsewhere -> 401, 401, and the read-only one reads', async () => {
    const s = await startItems(records(1), { tokens: [TOKEN, 'read:reader-token-0123'] });
    await rawGet(s.url, '/items/e000', AUTH);
    await rawGet(s.url, '/items/e000', AUTH);
    assert.equal((await rawGet(s.url, '/items/e000', {})).status, 401);
    assert.equal((await rawGet(s.url, '/items/e000', { authorization: 'Bearer not-a-token' })).status, 401);
    assert.equal((await rawGet(s.url, '/items/e000', { authorization: 'Bearer reader-token-0123' })).status, 200);
  });

  test('five GETs of one entity -> five requests in the metrics and five lines in the access log, each with the bytes sent', async () => {
    const lines: AccessLogEntry[] = [];
    const s = await startItems(records(1), { tokens: [TOKEN], accessLog: (entry) => lines.push(entry) });
    const bodies: string[] = [];
    for (let i = 0; i < 5; i++) bodies.push((await rawGet(s.url, '/items/e000', AUTH)).body);
    const metrics = await (await s.request('/metrics', { headers: AUTH })).text();
    assert.equal(sample(metrics, 'halserve_http_requests_total{method="GET",route="/items/{id}",status="200"}'), 5);
    assert.equal(sample(metrics, 'halserve_http_request_duration_seconds_count{method="GET",route="/items/{id}"}'), 5);
    const gets = lines.filter((l) => l.path === '/items/e000');
    assert.deepEqual(
      gets.map((l) => [l.method, l.status, l.bytes]),
      bodies.map((b) => ['GET', 200, Buffer.byteLength(b)]),
    );
  });

  test('a JWT answered from the lane, then the clock past its exp and leeway -> 401, as on the full path', async () => {
    const NOW = 1_800_000_000;
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1' };
    let now = NOW;
    const s = await startItems(records(1), { jwt: { keys: staticKeySet({ keys: [jwk] }), issuer: 'https://idp.example/', audience: 'halserve' }, now: () => now });
    const token = await new SignJWT({ iss: 'https://idp.example/', aud: 'halserve', sub: 'alice', exp: NOW + 10, iat: NOW, scope: 'read' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .sign(privateKey);
    const read = (): ReturnType<typeof rawGet> => rawGet(s.url, '/items/e000', { authorization: `Bearer ${token}` });
    assert.equal((await read()).status, 200);
    now = NOW + 70;
    assert.equal((await read()).status, 200);
    now = NOW + 71;
    const expired = await read();
    assert.equal(expired.status, 401);
    assert.match(JSON.parse(expired.body).detail, /it expired at/);
  });
});
