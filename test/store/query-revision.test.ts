import assert from 'node:assert/strict';
import { test } from 'node:test';
import { matches, parseCollectionQuery } from '../../src/conventions/query.js';
import { MaterialisedIndex } from '../../src/store/index/materialised-index.js';
import type { EntityRecord, StoredEntity } from '../../src/store/store.js';

/*
 * A query sliced across turns of the event loop while writes land between its slices: its answer is
 * of one state, the one the index is in when it comes, and names that state's revision
 * (slices.ts). The clock is the test's: each reading moves it 0.02 ms, so the query gives up the
 * loop every few thousand rows, and its attempt run whole fits its 10 ms, whatever the machine.
 */

const entity = (record: EntityRecord, version: number): StoredEntity => ({ id: record.id, record, json: JSON.stringify(record), version: String(version) }) as StoredEntity;

test('a range walked in a sort order, 20,000 rows deep, with a write in every turn -> the answer names the revision it came in, and is exact for that state', async () => {
  let now = 0;
  const index = new MaterialisedIndex<StoredEntity>(() => (now += 0.02));
  const state = new Map<string, EntityRecord>();
  let version = 0;
  const put = (record: EntityRecord): void => {
    state.set(record.id, record);
    index.put(entity(record, ++version));
  };
  for (let i = 0; i < 30_000; i++) put({ id: `e${i}`, createdAt: 1, updatedAt: 1, n: (i * 7919) % 1000, m: (i * 104723) % 5000 });
  // Too many matches to sort once: the m order is walked, each row's n checked, 20,000 rows deep.
  const parsed = parseCollectionQuery('n[gte]=100&sort=-m,id');
  const query = { filters: parsed.filters, sort: parsed.sort, search: [], offset: 20_000, limit: 50 };
  // Built first: the race is the query's own, not the build's.
  await index.query(query);
  // A write in every turn: a row changes its n and its m, moving in both orders.
  let writing = true;
  let step = 0;
  const write = (): void => {
    if (!writing) return;
    step++;
    const id = `e${(step * 104729) % 30_000}`;
    put({ ...state.get(id)!, n: (step * 31) % 1000, m: (step * 37) % 5000 });
    setImmediate(write);
  };
  setImmediate(write);
  try {
    for (let round = 0; round < 5; round++) {
      // A write lands first: the page kept from the round before is not of this revision.
      await new Promise((resolve) => setImmediate(resolve));
      const asked = index.query(query);
      assert.ok(asked instanceof Promise, 'the query is sliced');
      const { answer, revision, records } = await asked.then((a) => ({ answer: a, revision: index.revision, records: [...state.values()] }));
      assert.ok(step > 0);
      assert.equal(answer.revision, revision, `round ${round}: the answer names the revision it came in`);
      const expected = records
        .filter((r) => matches(r, parsed.filters, []))
        .sort((a, b) => (b['m'] as number) - (a['m'] as number) || (a.id < b.id ? -1 : 1));
      assert.equal(answer.total, expected.length, `round ${round}: total`);
      assert.deepEqual(answer.entities.map((e) => e.id), expected.slice(20_000, 20_050).map((r) => r.id), `round ${round}: the page`);
    }
  } finally {
    writing = false;
  }
});
