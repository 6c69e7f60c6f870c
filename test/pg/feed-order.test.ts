import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { comparePgCursors, parsePgCursor } from '../../src/store/pg/pg-cursor.js';
import type { FeedPage } from '../../src/store/changes/change-feed.js';
import { freshDatabase, openStores, pgMissing, until } from './helpers.js';

/*
 * The feed's rows are ordered by the table's `tx` and `pos`, never by the select list's text
 * aliases of the same names: as text, transaction 1000 sorts before 998, and a reader paging by the
 * last cursor of a page skipped the events between. The writes here straddle a power of ten of the
 * cluster's transaction ids.
 */
describe('PostgreSQL change feed order across a transaction id that gains a digit', { skip: pgMissing }, () => {
  test('writes before and after xid 10^k -> every page in cursor order, paging by the last cursor skips nothing', async () => {
    const opened = await openStores(await freshDatabase());
    const sql = opened.database.sql;
    const store = opened.stores.get('items')!;
    const current = async (): Promise<bigint> => BigInt((await sql.unsafe<{ x: string }[]>('SELECT pg_current_xact_id()::text AS x'))[0]!.x);
    let xid = await current();
    const boundary = 10n ** BigInt(xid.toString().length);
    // Spend transaction ids (each statement is one) until a few writes will straddle the boundary.
    while (xid < boundary - 4n) xid = await current();
    for (let i = 0; i < 8; i++) await store.create({ id: `e${i}`, createdAt: 1, updatedAt: 1, n: i });
    assert.ok((await current()) > boundary, 'the writes crossed the boundary');
    const pages = async (): Promise<string[]> => {
      const cursors: string[] = [];
      let since: string | undefined;
      for (;;) {
        const page: FeedPage = await opened.changes.read(since, 3);
        if (page.changes.length === 0) return cursors;
        cursors.push(...page.changes.map((c) => c.cursor));
        since = page.cursor;
      }
    };
    let all: string[] = [];
    // The feed reads below the oldest running transaction: the last write shows once the feed has passed it.
    await until(async () => (all = await pages()).length >= 8, 'every write in the feed');
    assert.equal(all.length, 8, `every write once: ${all.join(' ')}`);
    for (let i = 1; i < all.length; i++) assert.ok(comparePgCursors(parsePgCursor(all[i - 1]!)!, parsePgCursor(all[i]!)!) < 0, `${all[i - 1]} before ${all[i]}`);
  });
});
