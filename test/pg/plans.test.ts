import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadDriver, DRIVER_OPTIONS } from '../../src/store/pg/driver.js';
import { ReplayedAnswer, type KeyedWrite } from '../../src/store/idempotency.js';
import { record } from '../store/store-suite.js';
import { freshDatabase, openStores, pgMissing, until } from './helpers.js';

/*
 * The server's statements are prepared and planned at each execution (src/store/pg/driver.ts
 * `PREPARED`, `DRIVER_OPTIONS`). A prepared statement may otherwise run PostgreSQL's generic
 * plan, made once from the table as it was then: made while a resource had a few rows, the
 * write's plan found the row it updates by scanning every row of the resource (a bitmap scan on
 * `resource`, the id a filter), and so did the read of the rows a write needs. Seen as a write's
 * backend CPU growing from ~130 µs to over 1,000 µs in 60,000 writes; here as the index entries
 * each write reads, counted by PostgreSQL (`pg_stat_user_indexes`), not as time.
 */

/**
 * Entries read from `halserve.entities`' indexes, once this backend sees at least `atLeast`. Not
 * from `entities_tx`: the change feed reads every new row by its transaction there, the 3,000
 * inserted here included, whenever its counts arrive.
 */
async function entriesRead(url: string, atLeast: number): Promise<number> {
  const postgres = await loadDriver();
  const sql = postgres(url, { max: 1, ...DRIVER_OPTIONS });
  try {
    let read = 0;
    // Other backends report their counts when idle, within a second: wait for at least `atLeast`.
    await until(async () => {
      await sql.unsafe('SELECT pg_stat_clear_snapshot()');
      const [row] = await sql.unsafe<{ read: string }[]>(`SELECT coalesce(sum(idx_tup_read), 0)::text AS read FROM pg_stat_user_indexes WHERE relid = 'halserve.entities'::regclass AND indexrelname <> 'entities_tx'`);
      read = Number(row?.read ?? 0);
      return read >= atLeast;
    }, 'the statistics of the store\'s writes');
    return read;
  } finally {
    await sql.end();
  }
}

describe('the PostgreSQL store\'s statements', { skip: pgMissing }, () => {
  test('updates made while the resource had 20 rows, then 3,000: each later update still reads its own row, not all of the resource', async () => {
    const url = await freshDatabase();
    const stores = await openStores(url);
    const store = stores.stores.get('items')!;
    const postgres = await loadDriver();
    const sql = postgres(url, { max: 1, ...DRIVER_OPTIONS });
    const insert = (from: number, to: number): Promise<unknown> =>
      sql.unsafe(`INSERT INTO halserve.entities (resource, id, pos, rev, body) SELECT 'items', 'x' || g, 100 + g, 1, '{"id":"x' || g || '"}' FROM generate_series(${from}, ${to}) AS g`);
    try {
      await insert(1, 20);
      await store.create(record('a', { n: 0 }));
      // More executions than PostgreSQL's five custom plans before it considers a generic one.
      for (let n = 1; n <= 12; n++) await store.update('a', (current) => ({ ...current.record, n }));
      await insert(21, 3000);
    } finally {
      await sql.end();
    }
    const before = await entriesRead(url, 1);
    const updates = 20;
    for (let n = 13; n < 13 + updates; n++) await store.update('a', (current) => ({ ...current.record, n }));
    const after = await entriesRead(url, before + updates);
    // Each update reads its row (the read before the write, the write itself): a few entries each.
    // With `?plan_cache_mode=auto` on the URL, PostgreSQL's generic plans read ~3,000 for 20 (a bitmap scan of the resource's rows).
    assert.ok(after - before < updates * 20, `${after - before} index entries read by ${updates} updates`);
    assert.equal((await store.get('a'))?.record['n'], 13 + updates - 1);
  });

  test('creates, keyed and not, made while the resource had 20 rows, then 3,000: each runs the create function (planned once) and reads a few index entries', async () => {
    const url = await freshDatabase();
    const postgres = await loadDriver();
    const sql = postgres(url, { max: 1, ...DRIVER_OPTIONS });
    const insert = (from: number, to: number): Promise<unknown> =>
      sql.unsafe(`INSERT INTO halserve.entities (resource, id, pos, rev, body) SELECT 'items', 'x' || g, 100 + g, 1, '{"id":"x' || g || '"}' FROM generate_series(${from}, ${to}) AS g`);
    /** The function's calls and the entities' index entries read, once the calls counted reach `calls` (a backend reports both at once, when idle). */
    const counts = async (calls: number): Promise<{ calls: number; read: number }> => {
      let found = { calls: 0, read: 0 };
      await until(async () => {
        await sql.unsafe('SELECT pg_stat_clear_snapshot()');
        const [row] = await sql.unsafe<{ calls: string; read: string }[]>(
          `SELECT (SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE schemaname = 'halserve' AND funcname = 'write_created_v1')::text AS calls,
                  (SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes WHERE relid = 'halserve.entities'::regclass AND indexrelname <> 'entities_tx')::text AS read`,
        );
        found = { calls: Number(row?.calls ?? 0), read: Number(row?.read ?? 0) };
        return found.calls >= calls;
      }, `${calls} calls of the create function counted`);
      return found;
    };
    const keyed = (n: number): KeyedWrite => ({ key: `k${n}`, fingerprint: 'f', answer: (outcome) => ('entity' in outcome && outcome.entity ? { status: 201, headers: {}, body: outcome.entity.json } : undefined) });
    const creates = 20;
    try {
      // Calls of PL/pgSQL functions counted, in the store's sessions (which start after this).
      await sql.unsafe(`ALTER DATABASE "${new URL(url).pathname.slice(1)}" SET track_functions = 'pl'`);
      const store = (await openStores(url)).stores.get('items')!;
      await insert(1, 20);
      // More calls than PostgreSQL's five custom plans before it considers a generic one (the function makes its plans generic at once).
      for (let n = 0; n < 12; n++) await store.create(record(`early${n}`, { n }), n % 2 === 0 ? keyed(n) : undefined);
      await insert(21, 3000);
      const before = await counts(12);
      for (let n = 0; n < creates; n++) await store.create(record(`late${n}`, { n }), n % 2 === 0 ? keyed(100 + n) : undefined);
      const after = await counts(12 + creates);
      // Every create, keyed or not, was the function's (none the plain statement's).
      assert.equal(after.calls, 12 + creates);
      // Each create looks its id up before the write (no entry: a new id); the insert itself only in the primary key.
      assert.ok(after.read - before.read < creates * 20, `${after.read - before.read} index entries read by ${creates} creates`);
      const [answers] = await sql.unsafe<{ n: string }[]>(`SELECT count(*)::text AS n FROM halserve.answers WHERE resource = 'items'`);
      assert.equal(Number(answers?.n), 6 + creates / 2);
      assert.equal((await store.get('late19'))?.record['n'], 19);
    } finally {
      await sql.end();
    }
  });

  test('a database laid out before the create function -> opened, it has it again; creates and keyed creates as before', async () => {
    const url = await freshDatabase();
    const first = await openStores(url);
    await first.close();
    const postgres = await loadDriver();
    const sql = postgres(url, { max: 1, ...DRIVER_OPTIONS });
    try {
      await sql.unsafe('DROP FUNCTION halserve.write_created_v1');
      const store = (await openStores(url)).stores.get('items')!;
      const [row] = await sql.unsafe<{ present: boolean }[]>(`SELECT to_regproc('halserve.write_created_v1') IS NOT NULL AS present`);
      assert.equal(row?.present, true);
      await store.create(record('a', { n: 1 }));
      const keyed: KeyedWrite = { key: 'k', fingerprint: 'f', answer: () => ({ status: 201, headers: {}, body: '{"first":true}' }) };
      await store.create(record('b', { n: 2 }), keyed);
      // The retry's statement meets the key's answer (answers_pkey), runs again, and replays it.
      await assert.rejects(store.create(record('c', { n: 3 }), keyed), (error: unknown) => error instanceof ReplayedAnswer && error.answer.body === '{"first":true}');
      assert.deepEqual((await sql.unsafe<{ id: string }[]>(`SELECT id FROM halserve.entities ORDER BY id`)).map((r) => r.id), ['a', 'b']);
    } finally {
      await sql.end();
    }
  });

  test('a URL with ?prepare=false&plan_cache_mode=auto (a pooler that keeps no named statements): writes and reads as usual', async () => {
    const url = await freshDatabase();
    const stores = await openStores(`${url}?prepare=false&plan_cache_mode=auto`);
    const store = stores.stores.get('items')!;
    await store.create(record('a', { n: 0 }));
    for (let n = 1; n <= 8; n++) await store.update('a', (current) => ({ ...current.record, n }));
    assert.equal((await store.get('a'))?.record['n'], 8);
  });
});
