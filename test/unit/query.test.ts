import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HttpProblem } from '../../src/conventions/problem.js';
import { compareValues, matches, matchesSearch, parseCollectionQuery, parseSort, searchWords, sortComparator } from '../../src/conventions/query.js';
import type { EntityRecord } from '../../src/store/store.js';

const rec = (fields: Record<string, unknown>): EntityRecord => ({ id: 'x', createdAt: 1, updatedAt: 1, ...fields });

const parse = (query: string, declared?: (path: readonly string[]) => boolean) => parseCollectionQuery(query, declared);
const is400 = (pattern: RegExp) => (e: unknown) => e instanceof HttpProblem && e.status === 400 && pattern.test(e.detail);

describe('parseCollectionQuery', () => {
  test('page, limit, sort and filters -> filters exclude the reserved parameters', () => {
    const q = parse('page=2&limit=5&sort=-a,b&status=x,y&status=z&brand=q');
    assert.deepEqual(q.filters, [
      { field: 'status', path: ['status'], op: 'eq', values: ['x', 'y', 'z'] },
      { field: 'brand', path: ['brand'], op: 'eq', values: ['q'] },
    ]);
    assert.deepEqual(q.sort, [
      { field: 'a', path: ['a'], descending: true },
      { field: 'b', path: ['b'], descending: false },
    ]);
    assert.equal(q.carried, '&sort=-a,b&brand=q&status=x,y,z');
  });
  test('status[eq]=a&status=b -> one filter, two alternatives', () => {
    assert.deepEqual(parse('status[eq]=a&status=b').filters, [{ field: 'status', path: ['status'], op: 'eq', values: ['a', 'b'] }]);
  });
  test('every operator, dotted paths -> typed filters', () => {
    assert.deepEqual(parse('dimensions.weight[lte]=2&price[gt]=1.5&name[gte]=M&sku[lt]="100"&d[exists]=false&s[ne]=a,b').filters, [
      { field: 'dimensions.weight', path: ['dimensions', 'weight'], op: 'lte', bound: 2 },
      { field: 'price', path: ['price'], op: 'gt', bound: 1.5 },
      { field: 'name', path: ['name'], op: 'gte', bound: 'M' },
      { field: 'sku', path: ['sku'], op: 'lt', bound: '100' },
      { field: 'd', path: ['d'], op: 'exists', present: false },
      { field: 's', path: ['s'], op: 'ne', values: ['a', 'b'] },
    ]);
  });
  test('the same query spelled in two orders -> the same carried text', () => {
    assert.equal(parse('b=2&q=Lamp%20desk&a[gte]=1&sort=x').carried, parse('sort=x&a[gte]=1&b=2&q=Lamp%20desk').carried);
    assert.equal(parse('b=2&q=Lamp%20desk&a[gte]=1&sort=x').carried, '&sort=x&q=Lamp%20desk&a[gte]=1&b=2');
  });
  test('alternatives in another order, or repeated -> the same carried text, sorted', () => {
    assert.equal(parse('s=b&s=a,b').carried, '&s=a,b');
    assert.equal(parse('s[ne]=z,y').carried, parse('s[ne]=y&s[ne]=z').carried);
  });
  test('q -> folded words; an empty q -> no search, not carried', () => {
    assert.deepEqual(parse('q=%20Desk%20%20LAMP%20').search, ['desk', 'lamp']);
    assert.deepEqual(parse('q=').search, []);
    assert.equal(parse('q=').carried, '');
  });
  for (const name of ['page', 'limit', 'sort', 'q', 'price[gte]', 'a[exists]']) {
    test(`${name} twice -> 400`, () => {
      assert.throws(() => parse(`${name}=1&${name}=2`), is400(/given once/));
    });
  }
  for (const [query, pattern] of [
    ['price[between]=1', /price\[between\] has an unknown operator/],
    ['price[gte=1', /unknown operator/],
    ['a[exists]=yes', /a\[exists\] must be true or false/],
    ['a..b=1', /a\.\.b needs a field name/],
    ['.a=1', /needs a field name/],
    ['[eq]=1', /needs a field name/],
    ['price[gte]=', /price\[gte\] needs a number or a string/],
    ['price[gte]="1', /needs a number or a string/],
  ] as const) {
    test(`${query} -> 400 naming the parameter`, () => assert.throws(() => parse(query), is400(pattern)));
  }
  for (const sort of ['', ',', 'a,', '-', 'a..b']) {
    test(`sort=${JSON.stringify(sort)} -> 400`, () => assert.throws(() => parseSort(sort), HttpProblem));
  }
  test('with a schema: an undeclared filter or sort path -> 400; a declared one passes', () => {
    const declared = (path: readonly string[]) => path.join('.') === 'price' || path.join('.') === 'dimensions.weight';
    assert.throws(() => parse('colour=red', declared), is400(/colour names a field the schema does not declare/));
    assert.throws(() => parse('sort=colour', declared), is400(/sort names a field/));
    assert.equal(parse('price[gte]=1&sort=dimensions.weight', declared).filters.length, 1);
  });
});

describe('matchesFilter (the reference semantics)', () => {
  const f = (query: string) => parse(query).filters;
  for (const [fields, query, expected] of [
    [{ status: 'active' }, 'status=active', true],
    [{ status: 'active' }, 'status=paused,active', true],
    [{ status: 'active' }, 'status="active"', false],
    [{ stock: 0 }, 'stock=0', true],
    [{ stock: 0 }, 'stock=00', false],
    [{ on: true }, 'on=true', true],
    [{ gone: null }, 'gone=null', true],
    [{ tags: ['a', 'b'] }, 'tags=b', true],
    [{ tags: [] }, 'tags=b', false],
    [{}, 'status=active', false],
    [{ a: '1', b: '2' }, 'a=1&b=3', false],
    [{ status: 'a' }, 'status[ne]=a', false],
    [{ status: 'a' }, 'status[ne]=b,c', true],
    [{}, 'status[ne]=b', false],
    [{ tags: ['a', 'b'] }, 'tags[ne]=a', true],
    [{ tags: ['a'] }, 'tags[ne]=a', false],
    [{ price: 10 }, 'price[gte]=10', true],
    [{ price: 10 }, 'price[gt]=10', false],
    [{ price: 10 }, 'price[lt]=10.5', true],
    [{ price: 10 }, 'price[lte]=9', false],
    [{ price: '10' }, 'price[gte]=1', false],
    [{ name: 'b' }, 'name[gt]=a', true],
    [{ name: 'B' }, 'name[gt]=a', false],
    [{ sku: '100' }, 'sku[gte]="100"', true],
    [{ price: 10 }, 'price[gte]=10&price[lt]=20', true],
    [{ price: 20 }, 'price[gte]=10&price[lt]=20', false],
    [{ sizes: [1, 30] }, 'sizes[gt]=20', true],
    [{ d: { w: 2 } }, 'd.w[lte]=2', true],
    [{ d: { w: 3 } }, 'd.w[lte]=2', false],
    [{ d: [{ w: 1 }] }, 'd.w=1', false],
    [{ d: 'x' }, 'd.w[exists]=false', true],
    [{ d: null }, 'd[exists]=true', true],
    [{}, 'd[exists]=false', true],
    [{ createdAt: 5 }, 'createdAt[gte]=5', true],
  ] as const) {
    test(`${JSON.stringify(fields)} with ${query} -> ${expected}`, () => {
      assert.equal(matches(rec(fields), f(query), []), expected);
    });
  }
  test('a filter named after an inherited member -> no match', () => {
    assert.equal(matches(rec({}), f('toString=x'), []), false);
    assert.equal(matches(rec({}), f('toString[exists]=true'), []), false);
  });
});

describe('matchesSearch', () => {
  for (const [fields, q, expected] of [
    [{ name: 'Desk Lamp' }, 'lamp', true],
    [{ name: 'Desk Lamp' }, 'LAMP desk', true],
    [{ name: 'Desk Lamp' }, 'lamp chair', false],
    [{ name: 'Desk', d: { note: 'brass lamp' } }, 'desk lamp', true],
    [{ tags: ['Outdoor'] }, 'door', true],
    [{ name: 'Straße' }, 'STRASSE', true],
    [{ price: 12 }, '12', false],
    [{ name: 'ΣΊΣΥΦΟΣ' }, 'σίσυφος', true],
  ] as const) {
    test(`${JSON.stringify(fields)} with q=${q} -> ${expected}`, () => {
      assert.equal(matchesSearch(rec(fields), searchWords(q)), expected);
    });
  }
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

describe('parseCollectionQuery: commas', () => {
  test('name=a%2Cb -> one alternative "a,b", carried as name=a%2Cb', () => {
    const q = parse('name=a%2Cb');
    assert.deepEqual(q.filters, [{ field: 'name', path: ['name'], op: 'eq', values: ['a,b'] }]);
    assert.equal(q.carried, '&name=a%2Cb');
  });
  test('name=a,b -> two alternatives, carried as name=a,b', () => {
    assert.deepEqual(parse('name=a,b').filters, [{ field: 'name', path: ['name'], op: 'eq', values: ['a', 'b'] }]);
    assert.equal(parse('name=b,a').carried, '&name=a,b');
  });
  test('name[gte]=a%2Cb and name[gte]=a,b -> the bound "a,b" either way, carried with %2C', () => {
    for (const query of ['n[gte]=a%2Cb', 'n[gte]=a,b']) {
      const q = parse(query);
      assert.deepEqual(q.filters, [{ field: 'n', path: ['n'], op: 'gte', bound: 'a,b' }]);
      assert.equal(q.carried, '&n[gte]=a%2Cb');
    }
  });
  test('a+b%20c, a malformed escape %zz -> decoded as URLSearchParams does', () => {
    assert.deepEqual(parse('name=a+b%20c,%zz').filters, [{ field: 'name', path: ['name'], op: 'eq', values: ['a b c', '%zz'] }]);
  });
});
