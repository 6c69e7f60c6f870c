import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseCollectionQuery } from '../../src/conventions/query.js';
import { IndexBuilds, MAX_FIELD_INDEXES } from '../../src/store/index/index-builds.js';
import { QueryEngine } from '../../src/store/index/query-engine.js';
import type { Rows } from '../../src/store/index/rows.js';
import { IndexLimitError, type StoredEntity, type StoreQuery } from '../../src/store/store.js';

/**
 * The bound on field indexes (index-builds.ts, `MAX_FIELD_INDEXES`): past it the index asked for
 * least lately goes, never one a query under way reads.
 */

function rowsOf(count: number): Rows<StoredEntity> {
  const entities: StoredEntity[] = [];
  for (let i = 0; i < count; i++) {
    const record = { id: String(i), createdAt: 1, updatedAt: 1, n: i, f0: i % 2 === 0 ? 'x' : 'y' };
    entities.push({ id: String(i), json: JSON.stringify(record), version: '1', record } as StoredEntity);
  }
  return { size: count, slotCount: count, layout: 0, revision: '1', at: (row) => entities[row], page: (offset, limit) => entities.slice(offset, offset + limit) };
}

const field = (i: number): string[] => [`f${i}`];

function built(builds: IndexBuilds<StoredEntity>, path: readonly string[]): boolean {
  return builds.isBuilt(path);
}

async function fill(builds: IndexBuilds<StoredEntity>, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) await builds.wait([field(i)], false);
}

function query(text: string): StoreQuery {
  const q = parseCollectionQuery(text);
  return { filters: q.filters, sort: q.sort, search: q.search, offset: 0, limit: 100, facets: q.facets.map((f) => f.path) };
}

describe('IndexBuilds: at most MAX_FIELD_INDEXES field indexes', () => {
  test(`a ${MAX_FIELD_INDEXES + 1}th field -> the index asked for least lately goes, and the count stays ${MAX_FIELD_INDEXES}`, async () => {
    const builds = new IndexBuilds(rowsOf(10));
    await fill(builds, 0, MAX_FIELD_INDEXES);
    assert.equal(builds.fieldCount, MAX_FIELD_INDEXES);
    assert.equal(builds.wait([field(0)], false), undefined); // f0 asked for again: f1 is now the least lately asked for
    await builds.wait([['another']], false);
    assert.equal(builds.fieldCount, MAX_FIELD_INDEXES);
    assert.ok(built(builds, field(0)));
    assert.ok(built(builds, ['another']));
    assert.ok(built(builds, field(2)));
    assert.ok(!built(builds, field(1)), 'f1 was let go');
  });

  test('an index pinned by a query under way is not let go, however long ago it was asked for', async () => {
    const builds = new IndexBuilds(rowsOf(10));
    await fill(builds, 0, MAX_FIELD_INDEXES);
    const release = builds.pin([field(0)]);
    await builds.wait([['another']], false);
    assert.ok(built(builds, field(0)), 'the pinned f0 stays');
    assert.ok(!built(builds, field(1)), 'the next least lately asked for goes instead');
    release();
    release(); // a second call changes nothing
    await builds.wait([['more']], false);
    assert.ok(!built(builds, field(0)), 'once released, f0 is the least lately asked for');
  });

  test('every index pinned -> IndexLimitError, nothing let go; a release lets the field be indexed', async () => {
    const builds = new IndexBuilds(rowsOf(10));
    await fill(builds, 0, MAX_FIELD_INDEXES);
    const release = builds.pin(Array.from({ length: MAX_FIELD_INDEXES }, (_, i) => field(i)));
    await assert.rejects(builds.wait([['another']], false)!, IndexLimitError);
    assert.equal(builds.fieldCount, MAX_FIELD_INDEXES);
    release();
    await builds.wait([['another']], false);
    assert.ok(built(builds, ['another']));
  });

  test("a query's own fields are not let go to make room for its new ones", async () => {
    const builds = new IndexBuilds(rowsOf(10));
    await fill(builds, 0, MAX_FIELD_INDEXES);
    // f0 is the least lately asked for, and this query names it beside a new field.
    await builds.wait([field(0), ['another']], false);
    assert.ok(built(builds, field(0)));
    assert.ok(built(builds, ['another']));
    assert.ok(!built(builds, field(1)));
  });
});

describe('QueryEngine: a query under way pins the fields it names', () => {
  test('a query waiting for a build keeps its built fields while other queries name new ones', async () => {
    const engine = new QueryEngine(rowsOf(50));
    for (let i = 0; i < MAX_FIELD_INDEXES; i++) await engine.query(query(`f${i}=x`));
    // Names f0 (built) and a new field: it waits for the new field's build, so it is under way.
    // f1, asked for least lately, goes to make room for the new field.
    const waiting = engine.query(query('f0=x&sort=n'));
    assert.ok(waiting instanceof Promise);
    // Meanwhile every other field is asked for again, so f0 is the least lately asked for, then a new one.
    for (let i = 2; i < MAX_FIELD_INDEXES; i++) assert.ok(!(engine.query(query(`f${i}=x`)) instanceof Promise), `f${i} is built`);
    const other = engine.query(query('another=x'));
    // f0 stayed: a query naming it alone is answered at once, without a build.
    const meanwhile = engine.query(query('f0=x'));
    assert.ok(!(meanwhile instanceof Promise), 'f0 was not let go while the query under way read it');
    assert.equal(meanwhile.total, 25);
    assert.equal((await waiting).total, 25);
    await other;
  });

  test('a field let go is indexed again when named, and answers as before', async () => {
    const engine = new QueryEngine(rowsOf(50));
    const before = await engine.query(query('f0=x&sort=-n'));
    for (let i = 1; i <= MAX_FIELD_INDEXES; i++) await engine.query(query(`f${i}=x`));
    const again = engine.query(query('f0=x&sort=-n'));
    assert.ok(again instanceof Promise, 'f0 was let go');
    const after = await again;
    assert.equal(after.total, before.total);
    assert.deepEqual(
      after.entities.map((e) => e.id),
      before.entities.map((e) => e.id),
    );
  });
});
