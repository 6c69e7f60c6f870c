import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadDriver, DRIVER_OPTIONS } from '../../src/store/pg/driver.js';
import { record } from '../store/store-suite.js';
import { freshDatabase, openStores, pgMissing } from './helpers.js';

/*
 * At start-up a process reads where the changes stood when it loaded (src/store/pg/load-position.ts):
 * the latest row of each resource. Read by sorting every row of the table, that took 9-11 s of a
 * 30 s start at 1,000,000 entities, on disk past `work_mem` (bench/NOTES.md). Here as what the
 * database must do, not as time: with the smallest `work_mem` and no temporary file allowed
 * (`temp_file_limit = 0`, both passed on the URL, which halserve hands to PostgreSQL), a sort of
 * the table's 6,000 rows cannot run, and the start would fail.
 */
describe('a start-up\'s position in the changes', { skip: pgMissing }, () => {
  test('6,000 rows of three resources: read without sorting the table (no temporary file), the same cursors as a process that was there', async () => {
    const url = await freshDatabase();
    const first = await openStores(url, ['items', 'notes', 'empty']);
    const postgres = await loadDriver();
    const sql = postgres(url, { max: 1, ...DRIVER_OPTIONS });
    try {
      const insert = (resource: string, from: number, to: number): Promise<unknown> =>
        sql.unsafe(
          `INSERT INTO halserve.entities (resource, id, pos, rev, body) SELECT '${resource}', '${resource}' || g, nextval('halserve.creation'), 1, '{"id":"${resource}' || g || '","pad":"' || repeat('x', 40) || '"}' FROM generate_series(${from}, ${to}) AS g`,
        );
      // Each resource's latest row in another transaction, a delete's tombstone the latest of one.
      await insert('items', 1, 3000);
      await insert('notes', 1, 3000);
      await insert('items', 3001, 3002);
      await sql.unsafe(`ANALYZE halserve.entities`);
      await first.sync();
      await first.stores.get('notes')!.delete('notes7');
      await first.stores.get('items')!.create(record('late', { n: 1 }));
      await first.sync();
    } finally {
      await sql.end();
    }
    const started = await openStores(`${url}?work_mem=64kB&temp_file_limit=0`, ['items', 'notes', 'empty']);
    assert.equal(started.stores.get('items')!.size, 3003);
    assert.equal(started.stores.get('notes')!.size, 2999);
    for (const resource of ['items', 'notes', 'empty']) assert.equal(started.changes.latestOf(resource), first.changes.latestOf(resource), resource);
    assert.equal(started.changes.latest, first.changes.latest);
    assert.notEqual(started.changes.latestOf('items'), started.changes.latestOf('notes'));
  });
});
