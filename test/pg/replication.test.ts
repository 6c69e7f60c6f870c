import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import postgres from 'postgres';
import { CHANNEL, SCHEMA } from '../../src/store/pg/layout.js';
import type { PgStore } from '../../src/store/pg/pg-store.js';
import type { EntityRecord, StoredEntity } from '../../src/store/store.js';
import { record } from '../store/store-suite.js';
import { freshDatabase, openStores, pgMissing, until } from './helpers.js';

/*
 * Two stores (two processes' worth: each its own connections, feed and index) on one database.
 */

const order = async (store: PgStore): Promise<string[]> =>
  (await store.query({ filters: [], sort: [], search: [], offset: 0, limit: 1e9 })).entities.map((e) => e.id);

const increment = (current: StoredEntity): EntityRecord => ({ ...current.record, n: (current.record.n as number) + 1 });

/** A raw connection to the database, closed after the test. */
function raw(url: string, t: { after: (fn: () => Promise<void>) => void }): postgres.Sql {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  t.after(() => sql.end({ timeout: 1 }));
  return sql;
}

describe('two stores on one database', { skip: pgMissing }, () => {
  test('a create, update and delete on one -> on the other (waited for); on the writer at once', async () => {
    const url = await freshDatabase();
    const a = await openStores(url);
    const b = await openStores(url);
    const sa = a.stores.get('items')!;
    const sb = b.stores.get('items')!;
    const created = await sa.create(record('x1', { n: 1 }));
    // The same state, not necessarily the same object: the change feed may have brought the row first.
    const held = sa.get('x1');
    assert.deepEqual({ json: held?.json, version: held?.version }, { json: created.json, version: created.version }, 'read-your-writes: the writer holds it before the create resolves');
    await until(() => sb.get('x1') !== undefined, 'the create on the other store');
    assert.equal(sb.get('x1')!.json, created.json);
    assert.equal(sb.get('x1')!.version, created.version);
    const updated = await sb.update('x1', increment);
    assert.equal(sb.get('x1')!.version, updated!.version);
    await until(() => sa.get('x1')?.version === updated!.version, 'the update on the first store');
    assert.equal(sa.get('x1')!.record.n, 2);
    assert.equal(await sa.delete('x1'), true);
    assert.equal(sa.get('x1'), undefined);
    await until(() => sb.get('x1') === undefined, 'the delete on the other store');
    assert.equal(sb.size, 0);
  });

  test('concurrent creates from both -> the same creation order on both, that of pos', async (t) => {
    const url = await freshDatabase();
    const a = await openStores(url);
    const b = await openStores(url);
    const sa = a.stores.get('items')!;
    const sb = b.stores.get('items')!;
    await Promise.all([
      ...Array.from({ length: 150 }, (_, i) => sa.create(record(`a${i}`))),
      ...Array.from({ length: 150 }, (_, i) => sb.create(record(`b${i}`))),
    ]);
    await Promise.all([a.sync(), b.sync()]);
    const [orderA, orderB] = [await order(sa), await order(sb)];
    assert.equal(orderA.length, 300);
    assert.deepEqual(orderB, orderA);
    const sql = raw(url, t);
    const byPos = (await sql`SELECT id FROM ${sql(SCHEMA)}.entities ORDER BY pos`).map((r) => r.id as string);
    assert.deepEqual(orderA, byPos);
  });

  test('conditional increments of one counter from both, 40 each -> none lost, each accepted exactly once', async () => {
    const url = await freshDatabase();
    const a = await openStores(url);
    const b = await openStores(url);
    const sa = a.stores.get('items')!;
    const sb = b.stores.get('items')!;
    await sa.create(record('counter', { n: 0 }));
    await until(() => sb.get('counter') !== undefined, 'the counter on the other store');
    // Each client reads its store's state and writes only if the version it read is still current
    // (If-Match): a stale read must lose, never overwrite.
    let accepted = 0;
    let refused = 0;
    const client = async (store: PgStore): Promise<void> => {
      for (let done = 0; done < 40; ) {
        const seen = store.get('counter')!;
        try {
          await store.update('counter', (current) => {
            if (current.version !== seen.version) throw new Error('412');
            return increment(current);
          });
          accepted++;
          done++;
        } catch (error) {
          if ((error as Error).message !== '412') throw error;
          refused++;
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      }
    };
    await Promise.all([client(sa), client(sb), client(sa), client(sb)]);
    assert.equal(accepted, 160);
    await Promise.all([a.sync(), b.sync()]);
    assert.equal(sa.get('counter')!.record.n, 160);
    assert.equal(sb.get('counter')!.record.n, 160);
    assert.ok(refused > 0, 'some stale reads were refused');
  });

  test('the same id created on both at once -> one create wins, the other is a StoreConflictError', async () => {
    const url = await freshDatabase();
    const a = await openStores(url);
    const b = await openStores(url);
    for (let i = 0; i < 20; i++) {
      const results = await Promise.allSettled([a.stores.get('items')!.create(record(`same${i}`, { by: 'a' })), b.stores.get('items')!.create(record(`same${i}`, { by: 'b' }))]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      assert.equal(won.length, 1, `same${i}: one winner`);
      assert.equal(lost[0]!.reason.name, 'StoreConflictError');
    }
    await Promise.all([a.sync(), b.sync()]);
    for (let i = 0; i < 20; i++) assert.equal(a.stores.get('items')!.get(`same${i}`)!.json, b.stores.get('items')!.get(`same${i}`)!.json);
  });

  test('a transaction that took its pos first commits last -> held back, then placed before the later create on both', async (t) => {
    const url = await freshDatabase();
    const a = await openStores(url);
    const b = await openStores(url);
    const sa = a.stores.get('items')!;
    const sb = b.stores.get('items')!;
    const sql = raw(url, t);
    // A writer elsewhere (an import, another process) takes a pos and its xid, then stalls.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const hasInserted = new Promise<void>((resolve) => (inserted = resolve));
    const slow = sql.begin(async (tx) => {
      await tx.unsafe(`INSERT INTO ${SCHEMA}.entities (resource, id, pos, rev, body) VALUES ('items', 'early', nextval('${SCHEMA}.creation'), 1, $1)`, [JSON.stringify(record('early'))]);
      inserted();
      await released;
    });
    await hasInserted;
    await sb.create(record('late'));
    assert.deepEqual(await order(sb), ['late'], 'read-your-writes on the writer');
    // Committed, but behind a transaction still running: A must not move past it.
    await a.sync();
    assert.equal(sa.get('late'), undefined, 'a change committed after a running one waits for it');
    release();
    await slow;
    await Promise.all([a.sync(), b.sync()]);
    assert.deepEqual(await order(sa), ['early', 'late']);
    assert.deepEqual(await order(sb), ['early', 'late'], 'the writer re-placed its own create after the earlier pos');
  });

  test('a store that started while rows were being written -> loads a snapshot and misses nothing after it', async (t) => {
    const url = await freshDatabase();
    const a = await openStores(url);
    const sa = a.stores.get('items')!;
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) writes.push(sa.create(record(`w${i}`, { n: 0 })));
    const b = await openStores(url);
    for (let i = 0; i < 100; i++) writes.push(sa.update(`w${i}`, increment), sa.delete(`w${199 - i}`));
    await Promise.all(writes);
    await b.sync();
    const sb = b.stores.get('items')!;
    assert.deepEqual(await order(sb), await order(sa));
    assert.deepEqual([...sb.values()].map((e) => e.json), [...sa.values()].map((e) => e.json));
    assert.equal(sb.size, 100);
    t.diagnostic(`b loaded while a wrote: ${sb.size} entities`);
  });

  test('its LISTEN connection ended by the database -> listens again at once, not at the next poll: another store\'s write arrives', async (t) => {
    const url = await freshDatabase();
    const a = await openStores(url);
    // No poll in the test's time: only a notification can bring a's write.
    const b = await openStores(url, ['items'], { pollMs: 600_000 });
    const sql = raw(url, t);
    const listeners = `FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN ${CHANNEL}'`;
    await until(async () => (await sql.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n ${listeners}`))[0]!.n === 2, 'both stores listening');
    const [ended] = await sql.unsafe<{ n: number }[]>(`SELECT count(pg_terminate_backend(pid))::int AS n ${listeners}`);
    assert.equal(ended!.n, 2);
    await a.stores.get('items')!.create(record('after', { n: 1 }));
    await until(() => b.stores.get('items')!.get('after') !== undefined, "a's write on b, through a new LISTEN");
  });

  test('rows of a resource not served -> a warning, the served ones unaffected', async (t) => {
    const url = await freshDatabase();
    const a = await openStores(url, ['items', 'orders']);
    const b = await openStores(url, ['items']);
    await a.stores.get('orders')!.create(record('o1'));
    await a.stores.get('items')!.create(record('i1'));
    await until(() => b.stores.get('items')!.get('i1') !== undefined, 'the served resource');
    await b.sync();
    assert.equal(b.stores.has('orders'), false);
    assert.ok(b.warnings.some((w) => w.includes('resource "orders" was created by another process')), b.warnings.join('\n'));
    // A restart serves it: the table holds a live row of it.
    const c = await openStores(url, []);
    assert.deepEqual([...c.stores.keys()], ['items', 'orders']);
    assert.equal(c.stores.get('orders')!.get('o1')!.json, JSON.stringify(record('o1')));
    const sql = raw(url, t);
    await sql.unsafe(`INSERT INTO ${SCHEMA}.entities (resource, id, pos, rev, body) VALUES ('Bad Name', 'x', nextval('${SCHEMA}.creation'), 1, '{"id":"x"}')`);
    const d = await openStores(url, [], { nameProblem: (name) => (/^[a-z]+$/.test(name) ? undefined : 'not a resource name') });
    assert.deepEqual([...d.stores.keys()], ['items', 'orders']);
    assert.ok(d.warnings.some((w) => w.includes('"Bad Name" are not served: not a resource name')), d.warnings.join('\n'));
  });
});
