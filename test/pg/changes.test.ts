import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { comparePgCursors, parsePgCursor } from '../../src/store/pg/pg-cursor.js';
import type { StoreChange } from '../../src/store/store.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { follow, listing, Mirror } from '../changes/mirror.js';
import { freshDatabase, openStores, pgMissing, until, type Opened } from './helpers.js';

/*
 * The change feed of one PostgreSQL database served by several processes: the same cursor for the
 * same change everywhere, a resume on any process, the same collection tags on replicas at rest.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };

async function serve(opened: Opened, ids: string[]): Promise<TestServer> {
  return startServer({
    resources: [...opened.stores].map(([name, store]) => ({ name, store })),
    changes: opened.changes,
    now: () => 1_800_000_000,
    newId: () => ids.shift() ?? 'none',
  });
}

interface Event {
  cursor: string;
  type: string;
  resource: string;
  id: string;
  entity?: { name?: string };
}
/**
 * Counts the changes each process's feed reports. `sync` alone is not enough: the feed reads only
 * below the cluster's xmin, which another test's transaction may hold back for a moment. The bound
 * of 60 s is generous on purpose: on a machine loaded twenty times over its cores a catch-up can
 * pass its statement deadline and be tried again.
 */
function counting(...opened: Opened[]): { reported: (n: number) => Promise<void> } {
  const counts = opened.map(() => 0);
  opened.forEach((o, i) => o.changes.follow(() => counts[i]!++));
  return { reported: (n) => until(() => counts.every((c) => c >= n), `${n} changes reported on every process`, 60_000) };
}

const page = async (s: TestServer, href: string): Promise<{ cursor: string; _embedded: { changes: Event[] }; _links: { next: { href: string } } }> => {
  const res = await s.request(href);
  assert.equal(res.status, 200, href);
  return res.json();
};

describe('/changes over PostgreSQL, several processes', { skip: pgMissing }, () => {
  test('writes on one process -> the same events with the same cursors on another; a resume there from the first one\'s cursor misses nothing', async () => {
    const url = await freshDatabase();
    const a = await openStores(url, ['items', 'orders']);
    const b = await openStores(url, ['items', 'orders']);
    const sa = await serve(a, ['i1', 'o1', 'i2', 'i3']);
    const sb = await serve(b, []);
    const feeds = counting(a, b);
    for (const [name, body] of [['items', '{"name":"one"}'], ['orders', '{"name":"o"}'], ['items', '{"name":"two"}']] as const) {
      assert.equal((await sa.request(`/${name}`, { method: 'POST', headers: JSON_HEADERS, body })).status, 201);
    }
    assert.equal((await sa.request('/items/i1', { method: 'PATCH', headers: JSON_HEADERS, body: '{"name":"uno"}' })).status, 200);
    assert.equal((await sa.request('/orders/o1', { method: 'DELETE' })).status, 204);
    await feeds.reported(5);
    const fromA = await page(sa, '/changes');
    const fromB = await page(sb, '/changes');
    assert.deepEqual(fromB._embedded.changes, fromA._embedded.changes);
    assert.deepEqual(
      fromA._embedded.changes.map((e) => `${e.type} ${e.resource}/${e.id}`),
      ['created items/i2', 'updated items/i1', 'deleted orders/o1'],
    );
    // A client reads the first event on A, then resumes on B.
    const first = await page(sa, '/changes?limit=1');
    const rest = await page(sb, first._links.next.href.replace('limit=1', 'limit=10'));
    assert.deepEqual(rest._embedded.changes.map((e) => e.id), ['i1', 'o1']);
    // Cursors order the changes.
    const cursors = fromA._embedded.changes.map((e) => e.cursor);
    assert.equal(new Set(cursors).size, 3);
    assert.equal(first.cursor, cursors[0]);
    // One resource, as a collection page's changes link asks: its events only, on either process.
    const changesLink = ((await (await sb.request('/items')).json()) as { _links: { changes: { href: string } } })._links.changes.href;
    assert.deepEqual((await page(sb, '/changes?resource=items'))._embedded.changes.map((e) => `${e.type} ${e.resource}/${e.id}`), ['created items/i2', 'updated items/i1']);
    assert.deepEqual((await page(sa, '/changes?resource=orders,items&limit=2'))._embedded.changes.map((e) => e.id), ['i2', 'i1']);
    assert.deepEqual((await page(sb, changesLink))._embedded.changes, []);
    assert.equal((await sa.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"name":"three"}' })).status, 201);
    await feeds.reported(6);
    assert.deepEqual((await page(sb, changesLink))._embedded.changes.map((e) => `${e.type} ${e.resource}/${e.id}`), ['created items/i3']);
  });

  test('followers of two processes -> told the same changes, with the same cursors, in the same order, own writes and others\' alike', async () => {
    const url = await freshDatabase();
    const a = await openStores(url, ['items', 'orders']);
    const b = await openStores(url, ['items', 'orders']);
    const told = { a: [] as string[], b: [] as string[] };
    // `at` too: a delete's time is kept in its tombstone, so every process reports the same one.
    const show = (c: StoreChange): string => `${c.cursor} ${c.type} ${c.resource}/${c.id} ${c.at > 0 ? 'at' : 'no time'}`;
    a.changes.follow((c) => told.a.push(show(c)));
    b.changes.follow((c) => told.b.push(show(c)));
    const items = a.stores.get('items')!;
    const orders = b.stores.get('orders')!;
    // Each write waits until both processes were told of the one before: a process may coalesce
    // another's changes to one entity that reach it in one read of the feed (docs/changes.md), and
    // this test is about the order and cursors of changes, not about coalescing.
    const toldBoth = (n: number): Promise<void> => until(() => told.a.length >= n && told.b.length >= n, `${n} changes on each process`, 60_000);
    await Promise.all([items.create({ id: 'x', createdAt: 1, updatedAt: 1 }), orders.create({ id: 'y', createdAt: 1, updatedAt: 1 })]);
    await toldBoth(2);
    await items.update('x', (c) => ({ ...c.record, n: 1 }));
    await toldBoth(3);
    await orders.delete('y');
    await toldBoth(4);
    assert.equal(told.a.length, 4);
    assert.deepEqual(told.b, told.a);
    for (const line of told.a) assert.ok(line.endsWith(' at'), `${line}: a Unix second`);
    const sorted = [...told.a].sort((p, q) => comparePgCursors(parsePgCursor(p.split(' ')[0]!)!, parsePgCursor(q.split(' ')[0]!)!));
    assert.deepEqual(told.a, sorted, 'in cursor order');
  });

  test('thirty creates at once (positions 9 and 10 in one transaction) -> followers and pages in numeric cursor order', async () => {
    const url = await freshDatabase();
    const a = await openStores(url, ['items']);
    const sa = await serve(a, []);
    const told: string[] = [];
    a.changes.follow((c) => told.push(c.cursor));
    const items = a.stores.get('items')!;
    await Promise.all(Array.from({ length: 30 }, (_, i) => items.create({ id: `n${i}`, createdAt: 1, updatedAt: 1 })));
    await until(() => told.length >= 30, 'thirty changes reported');
    const numeric = (p: string, q: string): number => comparePgCursors(parsePgCursor(p)!, parsePgCursor(q)!);
    assert.deepEqual(told, [...told].sort(numeric));
    // Read page by page: each page resumes after the last cursor of the one before, so an order by text would skip changes.
    const paged: string[] = [];
    for (let href = '/changes?limit=7'; paged.length < 30; ) {
      const p = await page(sa, href);
      assert.ok(p._embedded.changes.length > 0, `a page after ${paged.length} changes`);
      paged.push(...p._embedded.changes.map((e) => e.cursor));
      href = p._links.next.href;
    }
    assert.deepEqual(paged, told);
  });

  test('two processes at rest -> a collection page has the same ETag on both; a conditional GET on one with the other\'s tag -> 304', async () => {
    const url = await freshDatabase();
    const a = await openStores(url, ['items']);
    const sa = await serve(a, ['p1', 'p2']);
    const onA = counting(a);
    await sa.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"name":"one"}' });
    await sa.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"name":"two"}' });
    await onA.reported(2);
    const b = await openStores(url, ['items']);
    const sb = await serve(b, []);
    await until(() => b.stores.get('items')!.size === 2 && b.changes.latestOf('items') === a.changes.latestOf('items'), 'B caught up');
    const fromA = await sa.request('/items?limit=1');
    const fromB = await sb.request('/items?limit=1');
    assert.ok(fromA.headers.get('etag'));
    assert.equal(fromB.headers.get('etag'), fromA.headers.get('etag'));
    assert.equal(await fromB.text(), await fromA.text());
    const conditional = await sb.request('/items?limit=1', { headers: { 'if-none-match': fromA.headers.get('etag')! } });
    assert.equal(conditional.status, 304);
    // A write moves the tag, on both once they have read it.
    const both = counting(a, b);
    await sb.request('/items/p1', { method: 'PATCH', headers: JSON_HEADERS, body: '{"name":"uno"}' });
    await both.reported(1);
    const afterA = await sa.request('/items?limit=1');
    const afterB = await sb.request('/items?limit=1');
    assert.notEqual(afterA.headers.get('etag'), fromA.headers.get('etag'));
    assert.equal(afterB.headers.get('etag'), afterA.headers.get('etag'));
  });

  test('a stream on one process, moved to another by Last-Event-ID, writers on both -> the follower holds the listing, no id twice', async () => {
    const url = await freshDatabase();
    const a = await openStores(url, ['items']);
    const b = await openStores(url, ['items']);
    const ids = Array.from({ length: 40 }, (_, i) => `w${i}`);
    const sa = await serve(a, ids.slice(0, 20));
    const sb = await serve(b, ids.slice(20));
    // The last write, a delete, reported by both feeds: B's index has it at once (read-your-writes),
    // so the sizes alone would say "caught up" before its event exists.
    let deletes = 0;
    for (const o of [a, b]) o.changes.follow((c) => {
      if (c.type === 'deleted') deletes++;
    });
    const mirror = new Mirror();
    let stop = false;
    const first = follow(sa.url, mirror, () => stop, {}, undefined, '0.0');
    for (let i = 0; i < 10; i++) await (i % 2 ? sa : sb).request('/items', { method: 'POST', headers: JSON_HEADERS, body: `{"n":${i}}` });
    await until(() => mirror.seen.size >= 5, 'five events on A');
    stop = true;
    await first;
    // Moved: more writes, a change of one entity seen already, a delete; B continues after A's last id.
    for (let i = 10; i < 20; i++) await (i % 2 ? sa : sb).request('/items', { method: 'POST', headers: JSON_HEADERS, body: `{"n":${i}}` });
    await sa.request('/items/w20', { method: 'PATCH', headers: JSON_HEADERS, body: '{"n":"changed"}' });
    await sb.request('/items/w0', { method: 'DELETE' });
    stop = false;
    const second = follow(sb.url, mirror, () => stop);
    await until(() => deletes === 2 && mirror.lastId === b.changes.latest && b.changes.latest === a.changes.latest, 'B caught up and the follower with it', 60_000);
    stop = true;
    await second;
    assert.deepEqual(mirror.entities, await listing(sb.url, ['items']));
  });

  test("malformed cursors -> 400; a data directory's cursor (the database imported from one) -> 410; a cursor this process has not reached yet -> an empty page that resumes there", async () => {
    const url = await freshDatabase();
    const a = await openStores(url, ['items']);
    const sa = await serve(a, []);
    for (const bad of ['abc', '1.2.3', '01.1', '01']) assert.equal((await sa.request(`/changes?since=${bad}`)).status, 400, bad);
    for (const directory of ['1', '1_1', 'copyab12-7']) assert.equal((await sa.request(`/changes?since=${directory}`)).status, 410, directory);
    const far = `${parsePgCursor(a.changes.latest)!.dataset}-99999999.1`;
    const ahead = await page(sa, `/changes?since=${far}`);
    assert.equal(ahead._embedded.changes.length, 0);
    assert.equal(ahead.cursor, far);
  });
});
