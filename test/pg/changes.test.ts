import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import postgres from 'postgres';
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
    // A state read is named once its catch-up has ended (no row of it left past the window).
    await Promise.all([a.sync(), b.sync()]);
    const afterA = await sa.request('/items?limit=1');
    const afterB = await sb.request('/items?limit=1');
    assert.notEqual(afterA.headers.get('etag'), fromA.headers.get('etag'));
    assert.equal(afterB.headers.get('etag'), afterA.headers.get('etag'));
  });

  test('a process started while a transaction holds the feeds back, after a later write -> its collection ETag is not that of a process without the write', async () => {
    const url = await freshDatabase();
    const a = await openStores(url, ['items']);
    const b = await openStores(url, ['items']);
    const sb = await serve(b, []);
    const items = a.stores.get('items')!;
    const setUp = counting(b);
    await items.create({ id: 'x', createdAt: 1, updatedAt: 1, v: 0 });
    await items.create({ id: 'y', createdAt: 1, updatedAt: 1, v: 0 });
    await setUp.reported(2);
    const k = postgres(url, { max: 1, onnotice: () => {} });
    let started: Opened;
    try {
      await k.unsafe('BEGIN');
      await k.unsafe('SELECT pg_current_xact_id()');
      // Past K: no feed reads it, but the copy of a process starting now holds it (at y's cursor, the latest below K).
      await items.update('x', (e) => ({ ...e.record, v: 1 }));
      started = await openStores(url, ['items']);
      const sc = await serve(started, []);
      const [fromB, fromC] = [await sb.request('/items'), await sc.request('/items')];
      assert.deepEqual(((await fromB.json()) as { _embedded: { items: { v: number }[] } })._embedded.items.map((e) => e.v), [0, 0]);
      assert.deepEqual(((await fromC.json()) as { _embedded: { items: { v: number }[] } })._embedded.items.map((e) => e.v), [1, 0]);
      assert.notEqual(fromC.headers.get('etag'), fromB.headers.get('etag'), 'two states, two tags');
      await k.unsafe('COMMIT');
    } finally {
      await k.end({ timeout: 1 });
    }
    await until(() => b.stores.get('items')!.get('x')?.record['v'] === 1 && b.changes.latestOf('items') === started.changes.latestOf('items'), 'B and the new process at one cursor', 60_000);
  });

  test('a catch-up that skips a change rewritten past its window -> no collection ETag that another process gives another state', async () => {
    const url = await freshDatabase();
    const a = await openStores(url, ['items']);
    const b = await openStores(url, ['items']);
    const c = await openStores(url, ['items', 'others']);
    const sb = await serve(b, []);
    const sc = await serve(c, []);
    const items = a.stores.get('items')!;
    const [setUpB, setUpC] = [counting(b), counting(c)];
    await items.create({ id: 'x', createdAt: 1, updatedAt: 1, v: 0 });
    await items.create({ id: 'y', createdAt: 1, updatedAt: 1, v: 0 });
    await c.stores.get('others')!.create({ id: 'z', createdAt: 1, updatedAt: 1 });
    await setUpB.reported(2);
    await setUpC.reported(3);
    // K holds every feed below its transaction while x and y change.
    const k = postgres(url, { max: 1, onnotice: () => {} });
    const l = postgres(url, { max: 1, onnotice: () => {} });
    const watch = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await k.unsafe('BEGIN');
      await k.unsafe('SELECT pg_current_xact_id()');
      await items.update('x', (e) => ({ ...e.record, v: 1 }));
      await items.update('y', (e) => ({ ...e.record, v: 1 }));
      // L, after them, will end every window before x is written again; a row lock of its
      // savepoint holds C's write to z, and with it C's catch-ups, which wait for their process's writes.
      await l.unsafe('BEGIN');
      await l.unsafe('SELECT pg_current_xact_id()');
      await l.unsafe('SAVEPOINT s');
      await l.unsafe("SELECT 1 FROM halserve.entities WHERE resource = 'others' AND id = 'z' FOR UPDATE");
      const held = c.stores.get('others')!.update('z', (e) => ({ ...e.record, n: 1 }));
      const waiting = async (): Promise<boolean> =>
        (await watch.unsafe<{ n: number }[]>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))[0]!.n === 1;
      await until(waiting, "C's write waiting for L's lock");
      const onB = counting(b);
      const onC = counting(c);
      await k.unsafe('COMMIT');
      // B reads x and y at v 1; C, held, reads the window only once x is at v 2, past it.
      await onB.reported(2);
      const fromB = await sb.request('/items');
      await items.update('x', (e) => ({ ...e.record, v: 2 }));
      await l.unsafe('ROLLBACK TO SAVEPOINT s');
      await held;
      await onC.reported(1);
      const fromC = await sc.request('/items');
      const bodyB = (await fromB.json()) as { _embedded: { items: { id: string; v: number }[] } };
      const bodyC = (await fromC.json()) as { _embedded: { items: { id: string; v: number }[] } };
      assert.deepEqual(bodyB._embedded.items.map((e) => `${e.id}${e.v}`), ['x1', 'y1']);
      assert.deepEqual(bodyC._embedded.items.map((e) => `${e.id}${e.v}`), ['x0', 'y1']);
      assert.notEqual(fromC.headers.get('etag'), fromB.headers.get('etag'), 'two states, two tags');
      assert.equal((await sc.request('/items', { headers: { 'if-none-match': fromB.headers.get('etag')! } })).status, 200);
      await l.unsafe('COMMIT');
    } finally {
      await Promise.all([k, l, watch].map((sql) => sql.end({ timeout: 1 })));
    }
    // Once both have read everything, they name the one state alike again.
    const atTwo = (o: Opened): boolean => o.stores.get('items')!.get('x')?.record['v'] === 2;
    await until(() => atTwo(b) && atTwo(c) && b.changes.latestOf('items') === c.changes.latestOf('items'), 'B and C caught up', 60_000);
    let rest: [string, string | null][] = [];
    const alike = async (): Promise<boolean> => {
      rest = await Promise.all([sb, sc].map(async (s): Promise<[string, string | null]> => {
        const res = await s.request('/items');
        return [await res.text(), res.headers.get('etag')];
      }));
      return rest[0]![1] !== null && rest[0]![1] === rest[1]![1];
    };
    await until(alike, 'one tag on B and C', 60_000);
    assert.equal(rest[1]![0], rest[0]![0]);
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
