import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadDriver, DRIVER_OPTIONS } from '../../src/store/pg/driver.js';
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

  test('a URL with ?prepare=false&plan_cache_mode=auto (a pooler that keeps no named statements): writes and reads as usual', async () => {
    const url = await freshDatabase();
    const stores = await openStores(`${url}?prepare=false&plan_cache_mode=auto`);
    const store = stores.stores.get('items')!;
    await store.create(record('a', { n: 0 }));
    for (let n = 1; n <= 8; n++) await store.update('a', (current) => ({ ...current.record, n }));
    assert.equal((await store.get('a'))?.record['n'], 8);
  });
});
