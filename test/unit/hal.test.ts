import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { carriedQuery, collectionJson, collectionLinks, entityHref, entityJson, indexDocument, linkHeader, pageHref } from '../../src/conventions/hal.js';
import { pageRange } from '../../src/conventions/pagination.js';

describe('hrefs', () => {
  for (const [path, id, href] of [
    ['/products', 'abc', '/products/abc'],
    ['/api/products', 'a b/c', '/api/products/a%20b%2Fc'],
  ] as const) {
    test(`entityHref(${path}, ${JSON.stringify(id)}) -> ${href}`, () => assert.equal(entityHref(path, id), href));
  }
  test('pageHref with carried query -> page and limit first', () => {
    assert.equal(pageHref('/products', 2, 50, '&sort=name'), '/products?page=2&limit=50&sort=name');
  });
  for (const [sort, filters, carried] of [
    [undefined, [], ''],
    ['-price,name', [], '&sort=-price,name'],
    [undefined, [['status', ['active', 'paused']], ['brand', ['A&B']]], '&brand=A%26B&status=active,paused'],
    ['name', [['z', ['1']], ['a', ['x y']]], '&sort=name&a=x%20y&z=1'],
  ] as const) {
    test(`carriedQuery(${sort}, ${JSON.stringify(filters)}) -> ${JSON.stringify(carried)}`, () => {
      assert.equal(carriedQuery(sort, new Map(filters.map(([k, v]) => [k, [...v]]))), carried);
    });
  }
});

describe('collectionLinks', () => {
  const href = (page: number, limit = 10): { href: string } => ({ href: `/p?page=${page}&limit=${limit}` });
  for (const [total, page, expected] of [
    [0, 1, { self: href(1), first: href(1), last: href(1) }],
    [10, 1, { self: href(1), first: href(1), last: href(1) }],
    [30, 1, { self: href(1), first: href(1), next: href(2), last: href(3) }],
    [30, 2, { self: href(2), first: href(1), prev: href(1), next: href(3), last: href(3) }],
    [30, 3, { self: href(3), first: href(1), prev: href(2), last: href(3) }],
  ] as const) {
    test(`total ${total}, page ${page} -> ${Object.keys(expected).join(', ')}`, () => {
      const links = collectionLinks('/p', pageRange(total, { page, limit: 10 }));
      assert.deepEqual(links, expected);
      assert.deepEqual(Object.keys(links), Object.keys(expected));
    });
  }
  test('self, first and last are always there, and typed so (an embedder reads links.self.href under strict TypeScript)', () => {
    const links = collectionLinks('/p', pageRange(0, { page: 1, limit: 10 }));
    const always: [string, string, string] = [links.self.href, links.first.href, links.last.href];
    assert.deepEqual(always, ['/p?page=1&limit=10', '/p?page=1&limit=10', '/p?page=1&limit=10']);
    const maybe: [string | undefined, string | undefined] = [links.prev?.href, links.next?.href];
    assert.deepEqual(maybe, [undefined, undefined]);
  });
  test('links -> Link header in the same order', () => {
    assert.equal(
      linkHeader(collectionLinks('/p', pageRange(30, { page: 2, limit: 10 }))),
      '</p?page=2&limit=10>; rel="self", </p?page=1&limit=10>; rel="first", </p?page=1&limit=10>; rel="prev", </p?page=3&limit=10>; rel="next", </p?page=3&limit=10>; rel="last"',
    );
  });
});

describe('entityJson', () => {
  for (const [stored, expected] of [
    ['{"id":"a","createdAt":1}', '{"id":"a","createdAt":1,"_links":{"self":{"href":"/p/a"}}}'],
    ['{}', '{"_links":{"self":{"href":"/p/a"}}}'],
    ['{"id":"a"} ', '{"id":"a","_links":{"self":{"href":"/p/a"}}}'],
  ] as const) {
    test(`${stored} -> self link appended`, () => {
      const json = entityJson(stored, '/p/a');
      assert.equal(json, expected);
      assert.deepEqual(JSON.parse(json)._links, { self: { href: '/p/a' } });
    });
  }
});

describe('entityJson of a line written by hand, holding members only the server writes', () => {
  const self = '"_links":{"self":{"href":"/p/a"}}';
  for (const [stored, expected] of [
    ['{"id":"a","_links":{"self":{"href":"/evil"}},"n":1}', `{"id":"a","n":1,${self}}`],
    ['{"id":"a","_embedded":{"x":[1,{"}":"]"}]},"n":1.0}', `{"id":"a","n":1.0,${self}}`],
    ['{ "_links" : {"self":{}} , "id" : "a" , "big" : 12345678901234567890 }', `{"id" : "a","big" : 12345678901234567890,${self}}`],
    ['{"id":"a","_links":1,"\\u005fembedded":[],"note":"a \\"_links\\" word"}', `{"id":"a","note":"a \\"_links\\" word",${self}}`],
    // Named only inside a value or a nested object: left as it is.
    ['{"id":"a","note":"_links","o":{"_links":1}}', `{"id":"a","note":"_links","o":{"_links":1},${self}}`],
    ['{"id":"a","_links":{}}', `{"id":"a",${self}}`],
    ['{"id":"a","_templates":{"default":{"method":"DELETE"}},"n":1}', `{"id":"a","n":1,${self}}`],
  ] as const) {
    test(`${stored} -> its _links and _embedded left out, the rest byte for byte`, () => {
      const json = entityJson(stored, '/p/a');
      assert.equal(json, expected);
      assert.deepEqual(JSON.parse(json)._links, { self: { href: '/p/a' } });
      assert.equal(JSON.parse(json)._embedded, undefined);
    });
  }
});

describe('collectionJson', () => {
  test('page of two -> the seed collection shape, entities embedded under the name', () => {
    const range = pageRange(3, { page: 1, limit: 2 });
    const links = collectionLinks('/p', range);
    const json = collectionJson('p', range, links, ['{"id":"a"}', '{"id":"b"}']);
    assert.deepEqual(JSON.parse(json), {
      total: 3,
      count: 2,
      pages: 2,
      page: 1,
      limit: 2,
      _links: { self: { href: '/p?page=1&limit=2' }, first: { href: '/p?page=1&limit=2' }, next: { href: '/p?page=2&limit=2' }, last: { href: '/p?page=2&limit=2' } },
      _embedded: { p: [{ id: 'a' }, { id: 'b' }] },
    });
  });
});

describe('indexDocument', () => {
  test('names and base path -> a link per collection', () => {
    assert.deepEqual(indexDocument('/api', ['a', 'b']), { _links: { a: { href: '/api/a' }, b: { href: '/api/b' } } });
  });
});
