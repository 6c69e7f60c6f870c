import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Database } from '../../src/store/pg/connection.js';
import { PgChangeFeed } from '../../src/store/pg/pg-changes.js';
import { formatPgCursor } from '../../src/store/pg/pg-cursor.js';
import { RowEntity } from '../../src/store/pg/pg-entity.js';

/*
 * The PostgreSQL change feed's pages against a database that answers when told: what a page says
 * when a change is reported while its query runs. (test/pg/ runs the feed against a real cluster.)
 */

test('a change reported while the first page of an empty data set is read -> the empty page resumes before it, not after', async () => {
  let answer: ((rows: unknown[]) => void) | undefined;
  const database = { sql: { unsafe: () => new Promise((resolve) => (answer = resolve)) } } as unknown as Database;
  const dataset = { name: 'dset', unnamedResume: false };
  const feed = new PgChangeFeed(database, dataset, () => 1n, { tx: 0n, pos: 0n }, new Map(), () => {});
  const reading = feed.read(undefined, 20);
  // The query has left; a write lands and the feed reports it before the query's (empty) answer.
  const entity = new RowEntity('a', '{"id":"a","createdAt":1,"updatedAt":1}', 1, 1);
  feed.reported({ resource: 'items', id: 'a', type: 'created', entity, cursor: formatPgCursor('dset', 5n, 1n), at: 1 });
  answer!([]);
  const page = await reading;
  assert.deepEqual(page, { changes: [], cursor: formatPgCursor('dset', 0n, 0n) });
  // The next page, from that cursor, is asked for the change (its query starts after 0.0).
  assert.equal(feed.compare(page.cursor, formatPgCursor('dset', 5n, 1n)) < 0, true);
});
