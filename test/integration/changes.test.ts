import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LocalChangeLog } from '../../src/store/changes/local-feed.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { RFC2616, startServer, type TestServer } from '../helpers/server.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

/** The ids the next POSTs get (`post` queues its body's `id`). */
const nextIds: string[] = [];
const newId = (): string => nextIds.shift() ?? `auto${Math.random()}`;

/** A server over two memory stores sharing one change log: `items` and `orders`. */
async function start(extra: { tokens?: string[]; now?: () => number } = {}): Promise<TestServer> {
  const changes = new LocalChangeLog(extra.now ? { now: extra.now } : {});
  return startServer({
    newId,
    resources: [
      { name: 'items', store: createMemoryStore([], { resource: 'items', changes }) },
      { name: 'orders', store: createMemoryStore([], { resource: 'orders', changes }) },
    ],
    ...(extra.tokens ? { tokens: extra.tokens } : {}),
    now: () => 1_700_000_000,
  });
}

/** POSTs `body` (its `id` becomes the new entity's id, through `newId`). */
const post = async (s: TestServer, name: string, { id, ...body }: Record<string, unknown>): Promise<void> => {
  nextIds.push(String(id));
  const res = await s.request(`/${name}`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) });
  assert.equal(res.status, 201);
};

describe('GET /changes (the change feed as a HAL document)', () => {
  test('creates, an update, a delete -> one event per entity, oldest first, each with its type, entity and cursor', async () => {
    const s = await start();
    await post(s, 'items', { id: 'a', n: 1 });
    await post(s, 'orders', { id: 'o', n: 1 });
    await post(s, 'items', { id: 'b', n: 1 });
    await s.request('/items/a', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: '{"n":2}' });
    await s.request('/orders/o', { method: 'DELETE' });
    const res = await s.request('/changes');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/hal+json');
    const page = await res.json();
    assert.deepEqual(
      page._embedded.changes.map((e: { type: string; resource: string; id: string }) => `${e.type} ${e.resource}/${e.id}`),
      ['created items/b', 'updated items/a', 'deleted orders/o'],
    );
    const [b, a, o] = page._embedded.changes;
    assert.deepEqual(Object.keys(a), ['cursor', 'type', 'resource', 'id', 'at', 'entity']);
    assert.equal(a.entity.n, 2);
    assert.equal(a.entity._links.self.href, '/items/a');
    assert.equal(o.entity, undefined);
    assert.equal(typeof b.at, 'number');
    assert.equal(page.count, 3);
    assert.equal(page.limit, 20);
    assert.equal(page.cursor, o.cursor);
    assert.equal(page._links.next.href, `/changes?since=${o.cursor}&limit=20`);
  });

  test('limit and next -> pages that follow one another with no gap and no repeat; an empty page keeps its cursor', async () => {
    const s = await start();
    for (let i = 0; i < 7; i++) await post(s, 'items', { id: `e${i}` });
    const seen: string[] = [];
    let href = '/changes?limit=3';
    let last: { count: number; cursor: string; _links: { next: { href: string } } } | undefined;
    for (let i = 0; i < 4; i++) {
      last = await (await s.request(href)).json();
      for (const e of (last as unknown as { _embedded: { changes: { id: string }[] } })._embedded.changes) seen.push(e.id);
      href = last!._links.next.href;
    }
    assert.deepEqual(seen, ['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6']);
    assert.equal(last!.count, 0);
    assert.equal(href, `/changes?since=${last!.cursor}&limit=3`);
    await post(s, 'items', { id: 'late' });
    const after = await (await s.request(href)).json();
    assert.deepEqual(after._embedded.changes.map((e: { id: string }) => e.id), ['late']);
  });

  test('resource=orders -> only its events, and next keeps it; resource=items,orders -> both', async () => {
    const s = await start();
    await post(s, 'items', { id: 'i' });
    await post(s, 'orders', { id: 'o' });
    const orders = await (await s.request('/changes?resource=orders&limit=5')).json();
    assert.deepEqual(orders._embedded.changes.map((e: { id: string }) => e.id), ['o']);
    assert.equal(orders._links.next.href, `/changes?since=${orders.cursor}&limit=5&resource=orders`);
    const both = await (await s.request('/v1/changes?resource=items,orders')).json();
    assert.equal(both.count, 2);
  });

  test('since=now -> an empty page at the latest change; a write after it -> the next page has it', async () => {
    const s = await start();
    await post(s, 'items', { id: 'old' });
    const now = await (await s.request('/changes?since=now')).json();
    assert.equal(now.count, 0);
    assert.equal(now._links.next.href, `/changes?since=${now.cursor}&limit=20`);
    await post(s, 'items', { id: 'new' });
    const next = await (await s.request(now._links.next.href)).json();
    assert.deepEqual(next._embedded.changes.map((e: { id: string }) => e.id), ['new']);
  });

  test('an empty data set -> an empty page with a cursor before every change', async () => {
    const s = await start();
    const page = await (await s.request('/changes')).json();
    assert.equal(page.count, 0);
    assert.equal(page._links.next.href, `/changes?since=${page.cursor}&limit=20`);
    await post(s, 'items', { id: 'first' });
    assert.equal((await (await s.request(page._links.next.href)).json()).count, 1);
  });

  test('a collection page -> _links.changes is /changes?since=<cursor>&resource=<name> whatever its query; list then watch misses nothing', async () => {
    const s = await start();
    await post(s, 'items', { id: 'a', n: 1 });
    const list = await (await s.request('/items?n=1&sort=-n&limit=5')).json();
    assert.match(list._links.changes.href, /^\/changes\?since=[0-9]+&resource=items$/);
    await post(s, 'items', { id: 'b', n: 2 });
    await post(s, 'orders', { id: 'o' });
    const watched = await (await s.request(list._links.changes.href)).json();
    assert.deepEqual(watched._embedded.changes.map((e: { id: string }) => e.id), ['b']);
    // The page's ETag names the state and the cursor: a write moves it.
    const first = await s.request('/items');
    await post(s, 'items', { id: 'c' });
    const second = await s.request('/items');
    assert.notEqual(first.headers.get('etag'), second.headers.get('etag'));
  });

  for (const [query, detail] of [
    ['since=', /^Query parameter since must be a cursor/],
    ['since=%20', /^Query parameter since must be a cursor/],
    ['since=abc', /^Query parameter since: "abc" is not a cursor of this server's changes/],
    ['since=999', /^Query parameter since: cursor 999 is after the latest change/],
    ['since=01', /^Query parameter since: "01" is not a cursor/],
    ['limit=0', /^Query parameter limit must be at least 1/],
    ['limit=x', /^Query parameter limit must be a base-10 integer/],
    ['resource=nope', /^Query parameter resource names "nope"/],
    ['resource=items,', /^Query parameter resource names ""/],
    ['page=2', /^Unknown query parameter "page"/],
    ['since=1&since=2', /^Query parameter since is given more than once/],
  ] as const) {
    test(`GET /changes?${query} -> 400 problem naming it`, async () => {
      const s = await start();
      await post(s, 'items', { id: 'a' });
      const res = await s.request(`/changes?${query}`);
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      const body = await res.json();
      assert.equal(body.type, RFC2616);
      assert.match(body.detail, detail);
    });
  }

  test('limit=500 -> 200 in limit, self and next', async () => {
    const s = await start();
    const page = await (await s.request('/changes?limit=500')).json();
    assert.equal(page.limit, 200);
    assert.match(page._links.next.href, /&limit=200$/);
    assert.equal(page._links.self.href, '/changes?limit=200');
    const kept = await (await s.request('/changes?resource=items&limit=500')).json();
    assert.equal(kept._links.self.href, '/changes?limit=200&resource=items');
  });

  test('without a token when tokens are set -> 401; a read token -> 200', async () => {
    const s = await start({ tokens: ['w', 'read:r'] });
    assert.equal((await s.request('/changes')).status, 401);
    assert.equal((await s.request('/changes', { headers: { authorization: 'Bearer r' } })).status, 200);
  });

  test('a delete past retention forgotten -> a cursor before it is 410 Gone, with a problem saying to list again', async () => {
    let now = Date.UTC(2026, 0, 1);
    const changes = new LocalChangeLog({ now: () => now, retentionMs: 60_000 });
    const store = createMemoryStore([], { resource: 'items', changes });
    const s = await startServer({ resources: [{ name: 'items', store }], newId });
    await post(s, 'items', { id: 'a' });
    const before = (await (await s.request('/changes?since=now')).json()).cursor;
    await s.request('/items/a', { method: 'DELETE' });
    now += 120_000;
    const expired = changes.expired('items');
    changes.forgot(Math.max(...expired.map((d) => d.seq)));
    changes.resource('items').forget(expired);
    const res = await s.request(`/changes?since=${before}`);
    assert.equal(res.status, 410);
    const body = await res.json();
    assert.equal(body.title, 'Gone');
    assert.match(body.detail, /list the collection again/);
  });
});

describe('a delete forgotten, the feed read from its start', () => {
  test('more live entities older than the delete than a page holds -> next goes on page after page (no 410), each entity once', async () => {
    let now = Date.UTC(2026, 0, 1);
    const changes = new LocalChangeLog({ now: () => now, retentionMs: 60_000 });
    const store = createMemoryStore([], { resource: 'items', changes });
    const s = await startServer({ resources: [{ name: 'items', store }], newId });
    for (let i = 0; i < 12; i++) await post(s, 'items', { id: `e${String(i).padStart(2, '0')}` });
    await post(s, 'items', { id: 'gone' });
    assert.equal((await s.request('/items/gone', { method: 'DELETE' })).status, 204);
    await post(s, 'items', { id: 'late' });
    now += 120_000;
    const expired = changes.expired('items');
    changes.forgot(Math.max(...expired.map((d) => d.seq)));
    changes.resource('items').forget(expired);
    const ids: string[] = [];
    for (let href = '/changes?limit=5'; ; ) {
      const res = await s.request(href);
      assert.equal(res.status, 200, href);
      const page = await res.json();
      if (page.count === 0) break;
      ids.push(...page._embedded.changes.map((c: { id: string }) => c.id));
      href = page._links.next.href;
    }
    assert.deepEqual(ids, [...Array.from({ length: 12 }, (_, i) => `e${String(i).padStart(2, '0')}`), 'late']);
  });

  test('a delete of another resource forgotten after a page was listed -> listing again links a cursor that resumes, not the kept page\'s (410 for ever)', async () => {
    let now = Date.UTC(2026, 0, 1);
    const changes = new LocalChangeLog({ now: () => now, retentionMs: 60_000 });
    const s = await startServer({
      newId,
      resources: [
        { name: 'items', store: createMemoryStore([], { resource: 'items', changes }) },
        { name: 'orders', store: createMemoryStore([], { resource: 'orders', changes }) },
      ],
    });
    await post(s, 'items', { id: 'a' });
    await post(s, 'orders', { id: 'o' });
    assert.equal((await s.request('/orders/o', { method: 'DELETE' })).status, 204);
    const listed = (await (await s.request('/items')).json())._links.changes.href;
    now += 120_000;
    const expired = changes.expired('orders');
    changes.forgot(Math.max(...expired.map((d) => d.seq)));
    changes.resource('orders').forget(expired);
    // The items have not changed, but the cursor the page was listed at is now older than a forgotten delete.
    assert.equal((await s.request(listed)).status, 410);
    // The client lists again, as the 410 says, and follows the new page's link.
    const again = await s.request('/items');
    const href = (await again.json())._links.changes.href;
    assert.match(again.headers.get('link') ?? '', new RegExp(`<${href.replace(/[?]/g, '\\?')}>; rel="changes"`));
    const res = await s.request(href);
    assert.equal(res.status, 200, href);
    assert.deepEqual((await res.json())._embedded.changes, []);
  });
});

describe('resource names', () => {
  test('a resource named changes -> refused: the name is the feed\'s', async () => {
    const { resourceNameProblem } = await import('../../src/config.js');
    assert.equal(resourceNameProblem('changes'), 'resource name "changes" is reserved');
  });
});
