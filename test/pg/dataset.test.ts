import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CursorExpiredError } from '../../src/store/changes/change-feed.js';
import { readDataset } from '../../src/store/pg/connection.js';
import { importResources } from '../../src/store/pg/import.js';
import { LAYOUT_DDL } from '../../src/store/pg/layout.js';
import { formatPgCursor, parsePgCursor, readPgCursor } from '../../src/store/pg/pg-cursor.js';
import { connectDatabase, ensureLayout } from '../../src/store/pg/transfer-db.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { freshDatabase, openStores, pgMissing, until, type Opened } from './helpers.js';

/*
 * A PostgreSQL database's cursors carry its data set's name (layout.ts, pg-cursor.ts): a cursor of
 * another database is 410 Gone, as a copy's is on files, instead of resuming at a position that
 * means something else there; every process of one database hands out the same cursors, across
 * restarts; a database laid out by an earlier halserve is named at its first start and its
 * clients' unnamed cursors go on resuming.
 */

const NAMED = /^p[0-9a-f]{16}-[0-9]+\.[0-9]+$/;

async function serve(opened: Opened): Promise<TestServer> {
  return startServer({ resources: [...opened.stores].map(([name, store]) => ({ name, store })), changes: opened.changes });
}

/** Creates `ids` one after another (each its own transaction) and waits until the feed has reported them. */
async function create(opened: Opened, ids: readonly string[]): Promise<string[]> {
  const cursors: string[] = [];
  const stop = opened.changes.follow((change) => void cursors.push(change.cursor));
  for (const id of ids) await opened.stores.get('items')!.create({ id, createdAt: 1, updatedAt: 1 });
  await until(() => cursors.length >= ids.length, `${ids.length} changes reported`, 60_000);
  stop();
  return cursors;
}

interface Page {
  cursor: string;
  _embedded: { changes: { cursor: string; id: string }[] };
}

const ids = (page: Page): string[] => page._embedded.changes.map((change) => change.id);

/** A stream's answer from `Last-Event-ID: id`: its status (the stream is closed at once). */
async function streamStatus(s: TestServer, lastId: string): Promise<number> {
  const controller = new AbortController();
  const res = await s.request('/changes', { headers: { accept: 'text/event-stream', 'last-event-id': lastId }, signal: controller.signal });
  controller.abort();
  return res.status;
}

test('cursors of a database -> named; another data set\'s (a data directory\'s too) -> "other"; unnamed ones where the database handed them out, and the origin anywhere', () => {
  const named = { name: 'p0123456789abcdef', unnamedResume: false };
  const upgraded = { name: 'p0123456789abcdef', unnamedResume: true };
  const cases: [string, typeof named, { tx: bigint; pos: bigint } | 'other' | undefined][] = [
    ['p0123456789abcdef-12.3', named, { tx: 12n, pos: 3n }],
    ['pffffffffffffffff-12.3', named, 'other'],
    ['12.3', named, 'other'],
    ['12.3', upgraded, { tx: 12n, pos: 3n }],
    ['pffffffffffffffff-12.3', upgraded, 'other'],
    ['0.0', named, { tx: 0n, pos: 0n }],
    ['pffffffffffffffff-0.0', named, 'other'],
    ['p0123456789abcdef-012.3', named, undefined],
    ['P0123456789abcdef-12.3', named, undefined],
    ['1.2.3', named, undefined],
    ['abc', named, undefined],
    ['12_', named, undefined],
    // A data directory's cursors (the database imported from one): another data set's.
    ['12', named, 'other'],
    ['12', upgraded, 'other'],
    ['12_5', named, 'other'],
    ['b0123abcd-12', named, 'other'],
    ['p0123456789abcdef-12', named, 'other'],
  ];
  for (const [cursor, dataset, expected] of cases) assert.deepEqual(readPgCursor(cursor, dataset), expected, `${cursor} in ${JSON.stringify(dataset)}`);
  assert.equal(formatPgCursor('p0123456789abcdef', 12n, 3), 'p0123456789abcdef-12.3');
  assert.deepEqual(parsePgCursor('p0123456789abcdef-12.3'), { dataset: 'p0123456789abcdef', tx: 12n, pos: 3n });
});

describe('the data set of a PostgreSQL database', { skip: pgMissing }, () => {
  test('a cursor of database A -> 410 on database B (a page, a stream, the feed webhooks read); B\'s own cursors resume', async () => {
    const a = await openStores(await freshDatabase());
    const b = await openStores(await freshDatabase());
    const [fromA] = await create(a, ['a1', 'a2']);
    const [fromB] = await create(b, ['b1', 'b2']);
    assert.match(fromA!, NAMED);
    assert.notEqual(parsePgCursor(fromA!)!.dataset, parsePgCursor(fromB!)!.dataset, 'two databases, two names');
    const sb = await serve(b);
    const gone = await sb.request(`/changes?since=${fromA}`);
    assert.equal(gone.status, 410);
    const problem = (await gone.json()) as { detail: string };
    assert.match(problem.detail, /is of another data set .*: list the collection again and follow its changes link$/);
    assert.equal(await streamStatus(sb, fromA!), 410);
    const streamSince = new AbortController();
    assert.equal((await sb.request(`/changes?since=${fromA}`, { headers: { accept: 'text/event-stream' }, signal: streamSince.signal })).status, 410);
    streamSince.abort();
    // Webhooks read the feed so: a position it cannot resume from is delivered on from the oldest event.
    await assert.rejects(Promise.resolve().then(() => b.changes.read(fromA, 10)), CursorExpiredError);
    assert.throws(() => b.changes.check(fromA!), CursorExpiredError);
    const own = await sb.request(`/changes?since=${fromB}`);
    assert.equal(own.status, 200);
    assert.deepEqual(ids((await own.json()) as Page), ['b2']);
    assert.equal(await streamStatus(sb, fromB!), 200);
  });

  test('two processes started at once on a new database, then a restart -> one name, the same cursors; a cursor from before the restart resumes', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([openStores(url), openStores(url)]);
    const onB: string[] = [];
    b.changes.follow((change) => onB.push(change.cursor));
    const told = await create(a, ['x', 'y']);
    await until(() => onB.length >= 2, 'B told of both', 60_000);
    assert.deepEqual(onB, told, 'the same cursors on both processes');
    assert.equal(b.changes.latest, a.changes.latest);
    assert.match(a.changes.latest, NAMED);
    const name = parsePgCursor(a.changes.latest)!.dataset;
    await Promise.all([a.close(), b.close()]);
    const c = await openStores(url);
    assert.equal(c.changes.latest, told[1], 'the same name after the restart');
    const sc = await serve(c);
    const page = (await (await sc.request(`/changes?since=${told[0]}`)).json()) as Page;
    assert.deepEqual(ids(page), ['y']);
    const sql = await connectDatabase(url);
    try {
      assert.deepEqual(await readDataset(sql), { name, unnamedResume: false });
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  test('a database laid out by an earlier halserve -> named at the first start (processes starting at once agree); its unnamed cursors resume, handed back named', async () => {
    const url = await freshDatabase();
    const sql = await connectDatabase(url);
    let unnamed: string;
    try {
      // The layout as an earlier halserve made it (without the name), and its writes.
      await sql.unsafe(LAYOUT_DDL.join(';\n'));
      await sql.unsafe(`DELETE FROM halserve.meta WHERE key = 'dataset'`);
      for (const id of ['old1', 'old2']) {
        await sql.unsafe(`INSERT INTO halserve.entities (resource, id, pos, rev, body) VALUES ('items', $1, nextval('halserve.creation'), 1, $2)`, [
          id,
          JSON.stringify({ id, createdAt: 1, updatedAt: 1 }),
        ]);
      }
      const [first] = await sql.unsafe<{ tx: string; pos: string }[]>(`SELECT tx::text AS tx, pos::text AS pos FROM halserve.entities WHERE id = 'old1'`);
      unnamed = `${first!.tx}.${first!.pos}`;
      assert.deepEqual(await readDataset(sql), { name: undefined, unnamedResume: false });
    } finally {
      await sql.end({ timeout: 1 });
    }
    const [a, b] = await Promise.all([openStores(url), openStores(url)]);
    assert.match(a.changes.latest, NAMED);
    assert.equal(b.changes.latest, a.changes.latest, 'one name for both processes');
    for (const opened of [a, b]) {
      const s = await serve(opened);
      const res = await s.request(`/changes?since=${unnamed}`);
      assert.equal(res.status, 200);
      const page = (await res.json()) as Page;
      assert.deepEqual(ids(page), ['old2']);
      assert.equal(page.cursor, a.changes.latest, 'the page hands out named cursors');
      assert.equal(await streamStatus(s, unnamed), 200);
    }
    const [later] = await create(a, ['new1']);
    assert.match(later!, NAMED);
  });

  test('a database laid out with its name -> an unnamed cursor is another database\'s (410), but 0.0 reads from the start', async () => {
    const a = await openStores(await freshDatabase());
    const [first] = await create(a, ['x', 'y']);
    const s = await serve(a);
    const { tx, pos } = parsePgCursor(first!)!;
    const res = await s.request(`/changes?since=${tx}.${pos}`);
    assert.equal(res.status, 410);
    const origin = (await (await s.request('/changes?since=0.0')).json()) as Page;
    assert.deepEqual(ids(origin), ['x', 'y']);
  });

  test('the layout made anew (the schema dropped, the server started again) -> a new name; a cursor of the old one -> 410', async () => {
    const url = await freshDatabase();
    const a = await openStores(url);
    const [old] = await create(a, ['x', 'y']);
    await a.close();
    const sql = await connectDatabase(url);
    try {
      await sql.unsafe('DROP SCHEMA halserve CASCADE');
    } finally {
      await sql.end({ timeout: 1 });
    }
    const b = await openStores(url);
    await create(b, ['z']);
    assert.notEqual(parsePgCursor(b.changes.latest)!.dataset, parsePgCursor(old!)!.dataset);
    const s = await serve(b);
    assert.equal((await s.request(`/changes?since=${old}`)).status, 410);
  });

  test('import into a new database names it; import --replace keeps the name: a cursor from before resumes with the import\'s changes', async () => {
    const url = await freshDatabase();
    const sql = await connectDatabase(url);
    try {
      await ensureLayout(sql, url);
      const named = await readDataset(sql);
      assert.match(named.name ?? '', /^p[0-9a-f]{16}$/);
      const entity = (id: string, n: number): { id: string; json: string } => ({ id, json: JSON.stringify({ id, createdAt: 1, updatedAt: 1, n }) });
      await importResources(sql, [{ name: 'items', entities: [entity('a', 1), entity('b', 1)] }], 'refuse');
      const opened = await openStores(url);
      const before = opened.changes.latest;
      assert.equal(parsePgCursor(before)!.dataset, named.name);
      // Replaced: `a` changed, `b` gone, `c` new — writes in the database's history, after `before`.
      await importResources(sql, [{ name: 'items', entities: [entity('a', 2), entity('c', 1)] }], 'replace');
      assert.deepEqual(await readDataset(sql), named);
      const s = await serve(opened);
      let page: Page | undefined;
      await until(async () => {
        const res = await s.request(`/changes?since=${before}`);
        assert.equal(res.status, 200);
        page = (await res.json()) as Page;
        return page._embedded.changes.length >= 3;
      }, 'the import\'s changes in the feed', 60_000);
      assert.deepEqual(ids(page!).sort(), ['a', 'b', 'c']);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
