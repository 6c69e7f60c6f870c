import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { StoreWriteError, type Store } from '../../src/store/store.js';
import { sample } from '../helpers/metrics.js';
import { eventually } from '../helpers/process.js';
import { records, RFC2616, startItems, startServer } from '../helpers/server.js';

const problem = (status: number, title: string, detail: string): Record<string, unknown> => ({ type: RFC2616, title, detail, status });
const JSON_HEADERS = { 'content-type': 'application/json' };

describe('bearer authentication (docs/conventions.md §6)', () => {
  const tokens = ['secret-writer', 'read:secret-reader'];
  const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

  for (const [label, headers, detail] of [
    ['no Authorization', {}, 'A bearer token is required: Authorization: Bearer <token>'],
    ['unknown token', bearer('guess'), 'The bearer token is not valid'],
    ['Basic scheme', { authorization: 'Basic c2VjcmV0LXdyaXRlcg==' }, 'A bearer token is required: Authorization: Bearer <token> (the Basic scheme is not accepted)'],
    ['Bearer and two words', bearer('secret-writer extra'), 'The Authorization header is not "Bearer <token>" (one token, no spaces in it)'],
    ['Bearer alone', { authorization: 'Bearer' }, 'The Authorization header is not "Bearer <token>" (one token, no spaces in it)'],
    ['a bare token without a scheme (never repeated)', { authorization: 'secret-writer' }, 'A bearer token is required: Authorization: Bearer <token> (no other scheme is accepted)'],
    ['Digest scheme', { authorization: 'digest username="a"' }, 'A bearer token is required: Authorization: Bearer <token> (the Digest scheme is not accepted)'],
    ['only spaces', { authorization: '   ' }, 'The Authorization header is not "Bearer <token>" (one token, no spaces in it)'],
    ['token of another length', bearer('secret-writer-longer'), 'The bearer token is not valid'],
  ] as const) {
    test(`${label} -> 401 with WWW-Authenticate`, async () => {
      const s = await startItems(records(1), { tokens });
      const res = await s.request('/items', { headers });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="halserve"');
      assert.deepEqual(await res.json(), problem(401, 'Unauthorized', detail));
    });
  }

  test('unknown path without a token -> 401, not 404', async () => {
    const s = await startItems([], { tokens });
    assert.equal((await s.request('/secret-resource')).status, 401);
  });

  test('read token on GET -> 200', async () => {
    const s = await startItems(records(1), { tokens });
    assert.equal((await s.request('/items', { headers: bearer('secret-reader') })).status, 200);
  });

  test('scheme is case-insensitive -> bearer accepted', async () => {
    const s = await startItems(records(1), { tokens });
    assert.equal((await s.request('/items', { headers: { authorization: 'bearer secret-reader' } })).status, 200);
  });

  for (const [method, path] of [
    ['POST', '/items'],
    ['PUT', '/items/e000'],
    ['PATCH', '/items/e000'],
    ['DELETE', '/items/e000'],
  ] as const) {
    test(`read token on ${method} -> 403, nothing written`, async () => {
      const s = await startItems(records(1), { tokens });
      const res = await s.request(path, { method, headers: { ...bearer('secret-reader'), ...JSON_HEADERS }, body: method === 'DELETE' ? null : '{"x":1}' });
      assert.equal(res.status, 403);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(await res.json(), problem(403, 'Forbidden', 'This token may only read'));
      assert.deepEqual(s.store.get('e000')?.record, records(1)[0]);
      assert.equal(s.store.size, 1);
    });
  }

  test('write token on POST -> 201', async () => {
    const s = await startItems([], { tokens });
    const res = await s.request('/items', { method: 'POST', headers: { ...bearer('secret-writer'), ...JSON_HEADERS }, body: '{}' });
    assert.equal(res.status, 201);
  });

  test('/healthz and /readyz -> no token needed', async () => {
    const s = await startItems([], { tokens });
    assert.equal((await s.request('/healthz')).status, 200);
    assert.equal((await s.request('/readyz')).status, 200);
  });
});

describe('OPTIONS and 405', () => {
  for (const [path, allow] of [
    ['/', 'GET, HEAD, OPTIONS'],
    ['/items', 'GET, HEAD, POST, OPTIONS'],
    ['/v1/items', 'GET, HEAD, POST, OPTIONS'],
    ['/items/e000', 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS'],
    ['/healthz', 'GET, HEAD, OPTIONS'],
  ] as const) {
    test(`OPTIONS ${path} -> 204 Allow: ${allow}`, async () => {
      const s = await startItems(records(1));
      const res = await s.request(path, { method: 'OPTIONS' });
      assert.equal(res.status, 204);
      assert.equal(res.headers.get('allow'), allow);
      assert.equal(await res.text(), '');
    });
  }

  for (const [method, path, allow] of [
    ['DELETE', '/items', 'GET, HEAD, POST, OPTIONS'],
    ['PUT', '/items', 'GET, HEAD, POST, OPTIONS'],
    ['POST', '/items/e000', 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS'],
    ['POST', '/', 'GET, HEAD, OPTIONS'],
    ['DELETE', '/healthz', 'GET, HEAD, OPTIONS'],
  ] as const) {
    test(`${method} ${path} -> 405 with Allow`, async () => {
      const s = await startItems(records(1));
      const res = await s.request(path, { method, headers: JSON_HEADERS, body: method === 'DELETE' ? null : '{}' });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), allow);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(await res.json(), problem(405, 'Method Not Allowed', `Method ${method} is not allowed here; allowed: ${allow}`));
    });
  }

  for (const [method, path, allow] of [
    ['PUT', '/items', 'GET, HEAD, POST, OPTIONS'],
    ['DELETE', '/', 'GET, HEAD, OPTIONS'],
  ] as const) {
    test(`${method} ${path} with a read-only token -> 405 with Allow, as for any token (not 403)`, async () => {
      const s = await startItems(records(1), { tokens: ['w', 'read:r'] });
      const res = await s.request(path, { method, headers: { ...JSON_HEADERS, authorization: 'Bearer r' }, body: method === 'DELETE' ? null : '{}' });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), allow);
      assert.deepEqual(await res.json(), problem(405, 'Method Not Allowed', `Method ${method} is not allowed here; allowed: ${allow}`));
    });
  }

  test('POST /items with a read-only token -> still 403 (the method is allowed, the token may not write)', async () => {
    const s = await startItems(records(1), { tokens: ['w', 'read:r'] });
    const res = await s.request('/items', { method: 'POST', headers: { ...JSON_HEADERS, authorization: 'Bearer r' }, body: '{}' });
    assert.equal(res.status, 403);
  });

  test('OPTIONS on an unknown resource -> 404', async () => {
    const s = await startItems();
    assert.equal((await s.request('/nothing', { method: 'OPTIONS' })).status, 404);
  });
});

describe('health (docs/conventions.md §4)', () => {
  test('GET /healthz -> 200 {"status":"ok"}', async () => {
    const s = await startItems();
    const res = await s.request('/healthz');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(await res.json(), { status: 'ok' });
  });

  test('GET /readyz while not ready -> 503, /healthz still 200', async () => {
    const s = await startItems([], { ready: () => false });
    const res = await s.request('/readyz');
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '5');
    assert.deepEqual(await res.json(), { status: 'unavailable' });
    assert.equal((await s.request('/healthz')).status, 200);
  });

  test('GET /v1/readyz -> 200 when ready', async () => {
    const s = await startItems();
    assert.equal((await s.request('/v1/readyz')).status, 200);
  });
});

/** A memory store whose writes or reads fail as told. */
function faultyStore(fault: 'write' | 'crash'): Store {
  const store = createMemoryStore(records(1));
  const failure = (): never => {
    throw fault === 'write' ? new StoreWriteError('ENOSPC: no space left on device') : new Error('secret internal detail /etc/passwd');
  };
  return over(store, {
    get: (id) => (fault === 'crash' ? failure() : store.get(id)),
    create: async () => failure(),
    update: async () => failure(),
    delete: async () => failure(),
  });
}

/** `store` as a `Store` whose methods in `changed` replace its own (a test's fault or gate). */
function over(store: Store, changed: Partial<Pick<Store, 'get' | 'create' | 'update' | 'delete'>>): Store {
  return {
    get size() {
      return store.size;
    },
    get revision() {
      return store.revision;
    },
    follow: (listener) => store.follow(listener),
    ready: true,
    get: (id) => store.get(id),
    query: (query) => store.query(query),
    create: (record, keyed) => store.create(record, keyed),
    update: (id, change, options) => store.update(id, change, options),
    delete: (id, options) => store.delete(id, options),
    close: () => store.close(),
    ...changed,
  };
}

describe('failures (docs/conventions.md §7)', () => {
  test('store write fails -> 503 problem, one warning line (no stack), reads go on', async () => {
    const logged: unknown[] = [];
    const warned: string[] = [];
    const s = await startServer({ resources: [{ name: 'items', store: faultyStore('write') }], errorLog: (e) => logged.push(e), warn: (m) => warned.push(m) });
    const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{}' });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(await res.json(), problem(503, 'Service Unavailable', 'The change could not be saved; it was not applied. Try again later'));
    assert.deepEqual(logged, []);
    assert.equal(warned.length, 1);
    assert.match(warned[0] ?? '', /^write to items failed: ENOSPC: /);
    assert.ok(!(warned[0] ?? '').includes('\n    at '));
    assert.equal((await s.request('/items/e000')).status, 200);
  });

  test('unexpected error -> 500 without internals, logged', async () => {
    const logged: unknown[] = [];
    const s = await startServer({ resources: [{ name: 'items', store: faultyStore('crash') }], errorLog: (e) => logged.push(e) });
    const res = await s.request('/items/e000');
    assert.equal(res.status, 500);
    const text = await res.text();
    assert.deepEqual(JSON.parse(text), problem(500, 'Internal Server Error', 'The server failed to handle the request'));
    assert.ok(!text.includes('passwd'));
    assert.match(String(logged[0]), /secret internal detail/);
    assert.equal((await s.request('/healthz')).status, 200);
  });
});

describe('CORS (docs/conventions.md §5)', () => {
  test('no --cors-origin -> no CORS headers', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items', { headers: { origin: 'https://app.example' } });
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  test('allowed origin -> allow-origin and exposed Location, ETag, Link', async () => {
    const s = await startItems(records(1), { corsOrigin: 'https://app.example' });
    const res = await s.request('/items', { headers: { origin: 'https://app.example' } });
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example');
    assert.equal(res.headers.get('access-control-expose-headers'), 'Location, ETag, Link, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Wait, RateLimit-Policy, RateLimit, Idempotency-Replayed');
    assert.equal(res.headers.get('vary'), 'Accept, Origin');
  });

  test('other origin -> no allow-origin', async () => {
    const s = await startItems(records(1), { corsOrigin: 'https://app.example' });
    const res = await s.request('/items', { headers: { origin: 'https://evil.example' } });
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });

  test('preflight without a token -> 204 with allowed methods and headers', async () => {
    const s = await startItems(records(1), { corsOrigin: '*', tokens: ['t'] });
    const res = await s.request('/items/e000', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'PATCH' },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.equal(res.headers.get('access-control-allow-methods'), 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS');
    assert.equal(res.headers.get('access-control-allow-headers'), 'Authorization, Content-Type, Accept, If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since, Idempotency-Key');
    assert.equal(res.headers.get('access-control-max-age'), '600');
  });

  /**
   * One exchange with exactly these headers (Node's client adds Host and Connection, so a GET asked
   * again may be answered by the kept-reply lane): its status and headers. A stream is left at once.
   */
  const exchange = (url: string, path: string, method: string, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders }> =>
    new Promise((resolve, reject) => {
      const req = httpRequest(`${url}${path}`, { method, headers }, (res) => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers });
        if (res.headers['content-type'] === 'text/event-stream') res.destroy();
        else res.resume();
      });
      req.on('error', reject);
      req.end();
    });

  /** The requests whose responses a cache may store or that a browser sends: each route kind, each asked twice (a kept page, a kept entity). */
  const EXCHANGES: readonly (readonly [string, string, string, Record<string, string>, number])[] = [
    ['entity', 'GET', '/items/e000', {}, 200],
    ['entity again (kept reply)', 'GET', '/items/e000', {}, 200],
    ['collection page', 'GET', '/items', {}, 200],
    ['collection page again (page cache)', 'GET', '/items', {}, 200],
    ['HEAD of the page', 'HEAD', '/items', {}, 200],
    ['problem', 'GET', '/items/nothing-here', {}, 404],
    ['stream', 'GET', '/items', { accept: 'text/event-stream' }, 200],
    ['OPTIONS', 'OPTIONS', '/items', {}, 204],
    ['preflight', 'OPTIONS', '/items', { 'access-control-request-method': 'POST' }, 204],
  ];
  const ORIGINS = [undefined, 'https://app.example', 'https://other.example'] as const;
  /** A Vary field's names, in order. */
  const names = (vary: string | undefined): string[] => (vary === undefined ? [] : vary.split(',').map((name) => name.trim()));

  test('one allowed origin -> Vary: Origin on every response, with Origin or without (a cache must not hand one for the other), allow-origin only to it', async () => {
    const s = await startItems(records(3), { corsOrigin: 'https://app.example' });
    const etag = String((await exchange(s.url, '/items/e000', 'GET', {})).headers.etag);
    // 304 in the list: the first request without Origin makes each kept reply (the page, the entity).
    const all = [...EXCHANGES, ['304', 'GET', '/items/e000', { 'if-none-match': etag }, 304] as const];
    for (const [what, method, path, headers, status] of all) {
      const varies: string[][] = [];
      for (const origin of [...ORIGINS, undefined]) {
        const res = await exchange(s.url, path, method, origin === undefined ? headers : { ...headers, origin });
        const label = `${what}, Origin ${origin ?? 'none'}`;
        assert.equal(res.status, status, label);
        assert.equal(names(res.headers.vary).filter((name) => name === 'Origin').length, 1, `${label}: Vary ${res.headers.vary}`);
        assert.equal(res.headers['access-control-allow-origin'], origin === 'https://app.example' ? origin : undefined, label);
        varies.push(names(res.headers.vary));
      }
      // The same Vary whatever the Origin: what a cache keys the response by cannot depend on it.
      for (const vary of varies) assert.deepEqual(vary, varies[0], what);
    }
    // The page was answered from the page cache.
    const metrics = await (await s.request('/metrics')).text();
    assert.ok((sample(metrics, 'halserve_page_cache_requests_total{resource="items",result="hit"}') ?? 0) >= 3);
  });

  test('--cors-origin * -> allow-origin on every response, with Origin or without, and no Vary: Origin (no response differs by Origin)', async () => {
    const s = await startItems(records(3), { corsOrigin: '*' });
    for (const [what, method, path, headers, status] of EXCHANGES) {
      for (const origin of ORIGINS) {
        const res = await exchange(s.url, path, method, origin === undefined ? headers : { ...headers, origin });
        const label = `${what}, Origin ${origin ?? 'none'}`;
        assert.equal(res.status, status, label);
        assert.equal(res.headers['access-control-allow-origin'], '*', label);
        assert.ok(!names(res.headers.vary).includes('Origin'), `${label}: Vary ${res.headers.vary}`);
      }
    }
  });

  test('error response to an allowed origin -> still carries allow-origin', async () => {
    const s = await startItems([], { corsOrigin: '*', tokens: ['t'] });
    const res = await s.request('/items', { headers: { origin: 'https://app.example' } });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
  });
});

describe('base path', () => {
  test('--base-path /api -> links carry it; requests work with and without it', async () => {
    const s = await startItems(records(1), { basePath: '/api/' });
    for (const path of ['/api/items', '/items', '/api/v1/items']) {
      const body = await (await s.request(path)).json();
      assert.equal(body._links.self.href, '/api/items?page=1&limit=20');
      assert.equal(body._embedded.items[0]._links.self.href, '/api/items/e000');
    }
    assert.deepEqual(await (await s.request('/api')).json(), { _links: { items: { href: '/api/items' } } });
  });
});

describe('access log', () => {
  test('each request -> one entry with method, path, status, ms, bytes', async () => {
    const entries: Record<string, unknown>[] = [];
    const s = await startItems(records(1), { accessLog: (e) => entries.push({ ...e }) });
    const res = await s.request('/items/e000?x=1', { headers: { authorization: 'Bearer not-logged' } });
    const text = await res.text();
    // The entry is written when the server sees the exchange end, which may be after the client has read it all.
    await eventually(() => entries.length > 0);
    assert.equal(entries.length, 1);
    const entry = entries[0] ?? {};
    assert.deepEqual(Object.keys(entry), ['time', 'method', 'path', 'query', 'status', 'ms', 'bytes']);
    assert.equal(entry['method'], 'GET');
    assert.equal(entry['path'], '/items/e000');
    assert.equal(entry['query'], 'x=1');
    assert.equal(entry['status'], 200);
    assert.equal(entry['bytes'], Buffer.byteLength(text));
    assert.equal(typeof entry['ms'], 'number');
    assert.ok(!JSON.stringify(entry).includes('not-logged'));
  });

  test('a client that goes away before its answer is sent -> still one entry, with the status decided and aborted: true', async () => {
    const entries: Record<string, unknown>[] = [];
    const store = createMemoryStore();
    let called!: () => void;
    const writing = new Promise<void>((resolve) => (called = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const slow = over(store, {
      create: async (record) => {
        called();
        await released;
        return store.create(record);
      },
    });
    const s = await startServer({ resources: [{ name: 'items', store: slow }], accessLog: (e) => entries.push({ ...e }) });
    const { port } = new URL(s.url);
    // The server's side of the connection, to know when it has seen the client go.
    const closed = new Promise((resolve) => s.server.once('connection', (theirs: Socket) => theirs.once('close', resolve)));
    const socket = connect(Number(port), '127.0.0.1');
    socket.write(`POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`);
    await writing;
    // Gone while the write is under way: the server answers a closed connection.
    socket.destroy();
    await closed;
    release();
    await eventually(() => entries.length > 0, 'the entry of the abandoned request');
    const entry = entries[0] ?? {};
    assert.equal(entry['method'], 'POST');
    assert.equal(entry['path'], '/items');
    assert.equal(entry['status'], 201);
    assert.equal(entry['aborted'], true);
    // A request answered whole says nothing of the kind.
    assert.equal((await s.request('/items')).status, 200);
    await eventually(() => entries.length > 1, 'the entry of the next request');
    assert.equal(entries[1]?.['aborted'], undefined);
  });
});
