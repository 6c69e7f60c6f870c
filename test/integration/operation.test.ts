import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { records, RFC2616, startItems, startServer } from '../helpers/server.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { sample } from '../helpers/metrics.js';

describe('GET /ping and /me (docs/conventions.md §4.1)', () => {
  test('GET /ping and /v1/ping without a token on an authenticated server -> 200 {timestamp}', async () => {
    const s = await startItems([], { tokens: ['w'], now: () => 1_767_225_600 });
    for (const path of ['/ping', '/v1/ping']) {
      const res = await s.request(path);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/hal+json');
      assert.deepEqual(await res.json(), { timestamp: 1_767_225_600 });
    }
  });

  test('GET /me with a plain token -> roles read and write, links to the index and every collection', async () => {
    const s = await startServer({ resources: [{ name: 'items', store: createMemoryStore() }, { name: 'tags', store: createMemoryStore() }], tokens: ['w', 'read:r'], basePath: '/api' });
    for (const path of ['/me', '/v1/me', '/api/v1/me']) {
      const res = await s.request(path, { headers: { authorization: 'Bearer w' } });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { roles: ['read', 'write'], _links: { index: { href: '/api/' }, items: { href: '/api/items' }, tags: { href: '/api/tags' } } });
    }
  });

  test('GET /me with a read: token -> roles [read]', async () => {
    const s = await startItems([], { tokens: ['w', 'read:r'] });
    assert.deepEqual((await (await s.request('/v1/me', { headers: { authorization: 'Bearer r' } })).json()).roles, ['read']);
  });

  test('GET /me without a token -> 401 problem; without authentication configured -> read and write', async () => {
    const locked = await startItems([], { tokens: ['w'] });
    const res = await locked.request('/me');
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="halserve"');
    const open = await startItems();
    assert.deepEqual((await (await open.request('/me')).json()).roles, ['read', 'write']);
  });
});

describe('GET /metrics (docs/conventions.md §4.1)', () => {
  test('after traffic -> requests by method, route template and status; latency; entities; page cache; query kinds', async () => {
    const s = await startItems(records(30));
    const before = await (await s.request('/metrics')).text();
    assert.equal(sample(before, 'halserve_entities{resource="items"}'), 30);
    assert.equal(sample(before, 'halserve_http_requests_total{method="GET",route="/items",status="200"}'), undefined);

    for (let i = 0; i < 3; i++) assert.equal((await s.request('/items?page=2&limit=5')).status, 200);
    await s.request('/items?n[gte]=3');
    await s.request('/items?sort=-n');
    await s.request('/items?q=x');
    await s.request('/items/e001');
    await s.request('/v1/items/e002');
    await s.request('/items/nope');
    await s.request('/nothing/here/at/all');
    await s.request('/items', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":99}' });
    const res = await s.request('/metrics');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    assert.equal(sample(text, 'halserve_http_requests_total{method="GET",route="/items",status="200"}'), 6);
    assert.equal(sample(text, 'halserve_http_requests_total{method="GET",route="/items/{id}",status="200"}'), 2);
    assert.equal(sample(text, 'halserve_http_requests_total{method="GET",route="/items/{id}",status="404"}'), 1);
    assert.equal(sample(text, 'halserve_http_requests_total{method="GET",route="unmatched",status="404"}'), 1);
    assert.equal(sample(text, 'halserve_http_requests_total{method="POST",route="/items",status="201"}'), 1);
    assert.equal(sample(text, 'halserve_http_requests_total{method="GET",route="/metrics",status="200"}'), 1);
    assert.equal(sample(text, 'halserve_http_request_duration_seconds_count{method="GET",route="/items"}'), 6);
    assert.equal(sample(text, 'halserve_entities{resource="items"}'), 31);
    // The same page three times: built once, then twice from the cache.
    assert.equal(sample(text, 'halserve_page_cache_requests_total{resource="items",result="hit"}'), 2);
    assert.equal(sample(text, 'halserve_page_cache_requests_total{resource="items",result="miss"}'), 4);
    for (const kind of ['plain', 'filter', 'sort', 'search']) {
      assert.equal(sample(text, `halserve_query_duration_seconds_count{resource="items",kind="${kind}"}`), 1, kind);
    }
    assert.ok(!text.includes('e001') && !text.includes('nothing'), 'no raw path or id in a label');
    assert.match(text, /^halserve_event_loop_delay_seconds\{stat="p99"\} [0-9.e-]+$/m);
  });

  test('methods halserve does not serve (PROPFIND, MKCOL, ...) -> counted under method="other", never a label each', async () => {
    const s = await startItems(records(1));
    // Node's parser accepts some thirty methods: each one a label would multiply every route's series.
    for (const method of ['PROPFIND', 'MKCOL', 'LOCK', 'PURGE', 'SEARCH']) {
      assert.equal((await s.request('/items', { method })).status, 405, method);
    }
    await s.request('/items/e000', { method: 'PROPFIND' });
    const text = await (await s.request('/metrics')).text();
    assert.equal(sample(text, 'halserve_http_requests_total{method="other",route="/items",status="405"}'), 5);
    assert.equal(sample(text, 'halserve_http_request_duration_seconds_count{method="other",route="/items"}'), 5);
    assert.equal(sample(text, 'halserve_http_requests_total{method="other",route="/items/{id}",status="405"}'), 1);
    assert.doesNotMatch(text, /PROPFIND|MKCOL|LOCK|PURGE|SEARCH/);
  });

  test('a failed durable write -> counted by resource and cause', async () => {
    const store = createMemoryStore();
    const failing = { ...store, size: 0, revision: '0', ready: true, get: store.get.bind(store), query: store.query.bind(store), close: store.close.bind(store), update: store.update.bind(store), delete: store.delete.bind(store), create: async (): Promise<never> => {
      const { StoreWriteError } = await import('../../src/store/store.js');
      throw new StoreWriteError('/d/items.jsonl: write failed: ENOSPC: no space left on device, write');
    } };
    const s = await startServer({ resources: [{ name: 'items', store: failing }], warn: () => {} });
    for (let i = 0; i < 3; i++) assert.equal((await s.request('/items', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 503);
    const text = await (await s.request('/metrics')).text();
    assert.equal(sample(text, 'halserve_store_write_failures_total{resource="items",cause="ENOSPC"}'), 3);
  });

  test('GET /metrics needs a token like any read; a read: token may', async () => {
    const s = await startItems([], { tokens: ['w', 'read:r'] });
    assert.equal((await s.request('/metrics')).status, 401);
    assert.equal((await s.request('/v1/metrics', { headers: { authorization: 'Bearer r' } })).status, 200);
  });
});

describe('--rate-limit (docs/conventions.md §4.1)', () => {
  test('rate 1, burst 2 -> two allowed with X-RateLimit-* and RateLimit fields, the third 429 with Retry-After and X-RateLimit-Wait', async () => {
    // The clock stands still: no request is refilled by the time the test itself takes.
    const s = await startItems(records(1), { rateLimit: 1, rateLimitBurst: 2, clock: () => 0 });
    const first = await s.request('/items/e000');
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-ratelimit-limit'), '2');
    assert.equal(first.headers.get('x-ratelimit-remaining'), '1');
    assert.equal(first.headers.get('ratelimit-policy'), '"default";q=2;w=2');
    assert.equal(first.headers.get('ratelimit'), '"default";r=1;t=0');
    const second = await s.request('/items');
    assert.equal(second.headers.get('x-ratelimit-remaining'), '0');
    assert.equal(second.headers.get('ratelimit'), '"default";r=0;t=1');
    const third = await s.request('/items/e000');
    assert.equal(third.status, 429);
    assert.equal(third.headers.get('content-type'), 'application/problem+json');
    assert.equal(third.headers.get('retry-after'), '1');
    assert.equal(third.headers.get('x-ratelimit-wait'), '1');
    assert.equal(third.headers.get('x-ratelimit-limit'), '2');
    assert.equal(third.headers.get('x-ratelimit-remaining'), '0');
    assert.equal(third.headers.get('ratelimit-policy'), '"default";q=2;w=2');
    assert.equal(third.headers.get('ratelimit'), '"default";r=0;t=1');
    assert.deepEqual(await third.json(), { type: RFC2616, title: 'Too Many Requests', detail: `Too many requests: wait ${third.headers.get('x-ratelimit-wait')} s`, status: 429 });
    // Probes are never limited.
    assert.equal((await s.request('/healthz')).status, 200);
  });

  test('waiting X-RateLimit-Wait seconds -> allowed again (what the Shopping Feed SDK does)', async () => {
    let now = 0;
    const s = await startItems(records(1), { rateLimit: 20, rateLimitBurst: 1, clock: () => now });
    assert.equal((await s.request('/ping')).status, 200);
    const refused = await s.request('/ping');
    assert.equal(refused.status, 429);
    const wait = Number(refused.headers.get('x-ratelimit-wait')) * 1000;
    now += wait / 2;
    assert.equal((await s.request('/ping')).status, 429, 'half the wait is not enough');
    now += wait;
    assert.equal((await s.request('/ping')).status, 200);
  });

  test('a client that waits X-RateLimit-Wait after each 429 (the Shopping Feed SDK\'s handler) -> walks every page to the end', async () => {
    // Time moves only when the client waits, as if every request took no time at all.
    let now = 0;
    const s = await startItems(records(40), { rateLimit: 50, rateLimitBurst: 2, clock: () => now });
    const ids: string[] = [];
    let refused = 0;
    let next: string | undefined = '/v1/items?limit=4';
    while (next !== undefined) {
      const res = await s.request(next);
      if (res.status === 429) {
        refused++;
        now += Number(res.headers.get('x-ratelimit-wait')) * 1000;
        continue;
      }
      assert.equal(res.status, 200);
      const page = await res.json();
      ids.push(...page._embedded.items.map((e: { id: string }) => e.id));
      next = page._links.next?.href;
    }
    assert.deepEqual(ids, records(40).map((r) => r.id));
    assert.ok(refused > 0, 'the limit never bit');
  });

  test('per token: one token over its limit -> another token still served; unknown tokens count against the address', async () => {
    const s = await startItems(records(1), { rateLimit: 1, rateLimitBurst: 1, tokens: ['a', 'b'] });
    const as = (token: string): Promise<Response> => s.request('/items/e000', { headers: { authorization: `Bearer ${token}` } });
    assert.equal((await as('a')).status, 200);
    assert.equal((await as('a')).status, 429);
    assert.equal((await as('b')).status, 200);
    const refused = await as('made-up-1');
    assert.equal(refused.status, 401);
    // A 401 carries all four fields too: it counted against the address.
    assert.deepEqual(['x-ratelimit-limit', 'x-ratelimit-remaining', 'ratelimit-policy', 'ratelimit'].map((h) => refused.headers.get(h)), ['1', '0', '"default";q=1;w=1', '"default";r=0;t=1']);
    assert.equal((await as('made-up-2')).status, 429);
  });

  test('rate 2.5 without a burst -> burst 2 (the rate rounded down): X-RateLimit-Limit 2, q=2, w=1', async () => {
    const s = await startItems(records(1), { rateLimit: 2.5 });
    const res = await s.request('/items/e000');
    assert.equal(res.headers.get('x-ratelimit-limit'), '2');
    assert.equal(res.headers.get('ratelimit-policy'), '"default";q=2;w=1');
    assert.equal(res.headers.get('ratelimit'), '"default";r=1;t=0');
  });

  for (const [label, path, accept] of [
    ['the browser shell', '/items', 'text/html'],
    ['a browser asset', '/_browser/app.js', '*/*'],
  ] as const) {
    test(`${label} (served before authentication) -> limited per address, with the four fields`, async () => {
      const s = await startItems(records(1), { rateLimit: 1, rateLimitBurst: 1, tokens: ['a'], clock: () => 0 });
      const first = await s.request(path, { headers: { accept } });
      assert.equal(first.status, 200);
      assert.deepEqual(['x-ratelimit-limit', 'x-ratelimit-remaining', 'ratelimit-policy', 'ratelimit'].map((h) => first.headers.get(h)), ['1', '0', '"default";q=1;w=1', '"default";r=0;t=1']);
      await first.arrayBuffer();
      const second = await s.request(path, { headers: { accept } });
      assert.equal(second.status, 429);
      assert.equal(second.headers.get('retry-after'), '1');
      assert.equal(second.headers.get('content-type'), 'application/problem+json');
      // The address's bucket is spent for the API too.
      assert.equal((await s.request('/items/e000', { headers: { authorization: 'Bearer made-up' } })).status, 429);
    });
  }

  test('off by default -> no X-RateLimit headers', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items/e000');
    assert.deepEqual(['x-ratelimit-limit', 'ratelimit-policy', 'ratelimit'].map((h) => res.headers.get(h)), [null, null, null]);
  });
});
