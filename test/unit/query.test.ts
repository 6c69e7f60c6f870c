import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HttpProblem } from '../../src/conventions/problem.js';
import { compareValues, matchesFilters, parseCollectionQuery, parseSort, sortComparator } from '../../src/conventions/query.js';
import type { EntityRecord } from '../../src/store/store.js';

const rec = (fields: Record<string, unknown>): EntityRecord => ({ id: 'x', createdAt: 1, updatedAt: 1, ...fields });

describe('parseCollectionQuery', () => {
  test('page, limit, sort and filters -> filters exclude the reserved parameters', () => {
    const q = parseCollectionQuery(new URLSearchParams('page=2&limit=5&sort=-a,b&status=x,y&status=z&brand=q'));
    assert.deepEqual([...q.filters], [['status', ['x', 'y', 'z']], ['brand', ['q']]]);
    assert.equal(q.sort, '-a,b');
    assert.deepEqual(q.sortKeys, [{ field: 'a', descending: true }, { field: 'b', descending: false }]);
  });
  for (const name of ['page', 'limit', 'sort']) {
    test(`${name} twice -> 400`, () => {
      assert.throws(() => parseCollectionQuery(new URLSearchParams(`${name}=1&${name}=2`)), (e: unknown) => e instanceof HttpProblem && e.status === 400);
    });
  }
  for (const sort of ['', ',', 'a,', '-']) {
    test(`sort=${JSON.stringify(sort)} -> 400`, () => assert.throws(() => parseSort(sort), HttpProblem));
  }
});

describe('matchesFilters', () => {
  for (const [fields, filters, expected] of [
    [{ status: 'active' }, { status: ['active'] }, true],
    [{ status: 'active' }, { status: ['paused', 'active'] }, true],
    [{ status: 'active' }, { status: ['"active"'] }, false],
    [{ stock: 0 }, { stock: ['0'] }, true],
    [{ stock: 0 }, { stock: ['00'] }, false],
    [{ on: true }, { on: ['true'] }, true],
    [{ gone: null }, { gone: ['null'] }, true],
    [{ tags: ['a'] }, { tags: ['["a"]'] }, true],
    [{}, { status: ['active'] }, false],
    [{ a: '1', b: '2' }, { a: ['1'], b: ['3'] }, false],
    [{ a: '1' }, {}, true],
  ] as const) {
    test(`${JSON.stringify(fields)} with ${JSON.stringify(filters)} -> ${expected}`, () => {
      assert.equal(matchesFilters(rec(fields), new Map(Object.entries(filters).map(([k, v]) => [k, [...v]]))), expected);
    });
  }
  test('a filter named after an inherited member -> no match', () => {
    assert.equal(matchesFilters(rec({}), new Map([['toString', ['x']]])), false);
  });
});

describe('compareValues and sortComparator', () => {
  for (const [a, b, sign] of [
    [1, 2, -1],
    [10, 9, 1],
    ['a', 'b', -1],
    ['b', 'B', 1],
    [undefined, null, -1],
    [null, false, -1],
    [true, 1, -1],
    [5, 'a', -1],
    ['z', { a: 1 }, -1],
    [false, true, -1],
    [[1], [1], 0],
    ['x', 'x', 0],
  ] as const) {
    test(`compare ${JSON.stringify(a) ?? 'undefined'} and ${JSON.stringify(b)} -> ${sign}`, () => assert.equal(Math.sign(compareValues(a, b)), sign));
  }
  test('sort=-price,name -> price descending, then name, missing price last', () => {
    const rows = [rec({ name: 'b', price: 1 }), rec({ name: 'a', price: 1 }), rec({ name: 'c' }), rec({ name: 'd', price: 5 })];
    rows.sort(sortComparator(parseSort('-price,name')));
    assert.deepEqual(rows.map((r) => r['name']), ['d', 'a', 'b', 'c']);
  });
});
