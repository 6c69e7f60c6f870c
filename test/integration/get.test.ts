import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { records, RFC2616, startItems, startServer } from '../helpers/server.js';
import { createMemoryStore } from '../../src/store/memory-store.js';

const page = (n: number, limit: number, rest = ''): { href: string } => ({ href: `/items?page=${n}&limit=${limit}${rest}` });
const entity = (i: number): Record<string, unknown> => {
  const id = `e${String(i).padStart(3, '0')}`;
  return { id, createdAt: 1_700_000_000 + i, updatedAt: 1_700_000_000 + i, n: i, _links: { self: { href: `/items/${id}` } } };
};
/** The `changes` link of a page over `count` initial records: the changes after their creates. */
const changes = (count: number): { href: string } => ({ href: `/changes?since=${count}&resource=items` });
const range = (from: number, to: number): Record<string, unknown>[] => Array.from({ length: to - from }, (_, i) => entity(from + i));

describe('GET /', () => {
  test('GET / -> 200 index linking every collection', async () => {
    const store = createMemoryStore();
    const s = await startServer({ resources: [{ name: 'products', store }, { name: 'categories', store: createMemoryStore() }] });
    const res = await s.request('/');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/hal+json');
    assert.deepEqual(await res.json(), { _links: { products: { href: '/products' }, categories: { href: '/categories' } } });
  });

  test('GET /v1 and /v1/ -> the same index', async () => {
    const s = await startItems();
    for (const path of ['/v1', '/v1/']) {
      const res = await s.request(path);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { _links: { items: { href: '/items' } } });
    }
  });
});

describe('GET /<name>', () => {
  test('no query -> page 1, limit 20, self/first/next/last, no prev', async () => {
    const s = await startItems(records(45));
    const res = await s.request('/items');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/hal+json');
    assert.deepEqual(await res.json(), {
      total: 45,
      count: 20,
      pages: 3,
      page: 1,
      limit: 20,
      _links: { self: page(1, 20), first: page(1, 20), next: page(2, 20), last: page(3, 20), changes: changes(45) },
      _embedded: { items: range(0, 20) },
    });
  });

  test('middle page -> prev and next both present', async () => {
    const s = await startItems(records(45));
    const body = await (await s.request('/items?page=2')).json();
    assert.deepEqual(body._links, { self: page(2, 20), first: page(1, 20), prev: page(1, 20), next: page(3, 20), last: page(3, 20), changes: changes(45) });
    assert.deepEqual(body._embedded.items, range(20, 40));
  });

  test('last page -> count of the remainder, no next', async () => {
    const s = await startItems(records(45));
    const body = await (await s.request('/items?page=3&limit=20')).json();
    assert.deepEqual(body, {
      total: 45,
      count: 5,
      pages: 3,
      page: 3,
      limit: 20,
      _links: { self: page(3, 20), first: page(1, 20), prev: page(2, 20), last: page(3, 20), changes: changes(45) },
      _embedded: { items: range(40, 45) },
    });
  });

  test('empty collection -> one empty page', async () => {
    const s = await startItems();
    const res = await s.request('/items');
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), {
      total: 0,
      count: 0,
      pages: 1,
      page: 1,
      limit: 20,
      _links: { self: page(1, 20), first: page(1, 20), last: page(1, 20), changes: changes(0) },
      _embedded: { items: [] },
    });
  });

  test('limit=500 -> clamped to 200 in body and links', async () => {
    const s = await startItems(records(250));
    const body = await (await s.request('/items?limit=500')).json();
    assert.equal(body.limit, 200);
    assert.equal(body.count, 200);
    assert.equal(body.pages, 2);
    assert.deepEqual(body._links, { self: page(1, 200), first: page(1, 200), next: page(2, 200), last: page(2, 200), changes: changes(250) });
  });

  test('the same links, changes included -> Link header (RFC 8288)', async () => {
    const s = await startItems(records(45));
    const res = await s.request('/items?page=2&limit=20');
    assert.equal(
      res.headers.get('link'),
      '</items?page=2&limit=20>; rel="self", </items?page=1&limit=20>; rel="first", </items?page=1&limit=20>; rel="prev", ' +
        '</items?page=3&limit=20>; rel="next", </items?page=3&limit=20>; rel="last", </changes?since=45&resource=items>; rel="changes"',
    );
  });

  for (const [query, pages, requested] of [
    ['page=999', 3, 999],
    ['page=4', 3, 4],
    ['page=0', 3, 0],
    ['page=-1', 3, -1],
  ] as const) {
    test(`${query} on 45 items -> 409 seed document with pages ${pages} and page ${requested}`, async () => {
      const s = await startItems(records(45));
      const res = await s.request(`/items?${query}`);
      assert.equal(res.status, 409);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(await res.json(), {
        type: RFC2616,
        title: 'Conflict',
        detail: 'requested page is out of range',
        status: 409,
        pages,
        page: requested,
      });
    });
  }

  test('page=2 on an empty collection -> 409 with pages 1', async () => {
    const s = await startItems();
    const res = await s.request('/items?page=2');
    assert.equal(res.status, 409);
    assert.deepEqual(await res.json(), { type: RFC2616, title: 'Conflict', detail: 'requested page is out of range', status: 409, pages: 1, page: 2 });
  });

  for (const [query, detail] of [
    ['page=abc', 'Query parameter page must be a base-10 integer'],
    ['page=1.5', 'Query parameter page must be a base-10 integer'],
    ['page=', 'Query parameter page must be a base-10 integer'],
    ['page=0x10', 'Query parameter page must be a base-10 integer'],
    ['limit=ten', 'Query parameter limit must be a base-10 integer'],
    ['limit=1e2', 'Query parameter limit must be a base-10 integer'],
    ['limit=0', 'Query parameter limit must be at least 1'],
    ['limit=-5', 'Query parameter limit must be at least 1'],
    ['page=1&page=2', 'Query parameter page must be given once'],
    ['sort=', 'Query parameter sort must list field names, each optionally prefixed with -'],
  ] as const) {
    test(`${query} -> 400 naming the parameter`, async () => {
      const s = await startItems(records(3));
      const res = await s.request(`/items?${query}`);
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(await res.json(), { type: RFC2616, title: 'Bad Request', detail, status: 400 });
    });
  }

  test('/v1/<name> -> same collection, links unprefixed', async () => {
    const s = await startItems(records(3));
    const a = await (await s.request('/v1/items')).json();
    const b = await (await s.request('/items')).json();
    assert.deepEqual(a, b);
    assert.equal(a._links.self.href, '/items?page=1&limit=20');
  });

  test('unknown resource -> 404 problem', async () => {
    const s = await startItems();
    const res = await s.request('/nothing');
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(await res.json(), { type: RFC2616, title: 'Not Found', detail: 'There is no resource named "nothing"', status: 404 });
  });

  test('unknown path -> 404 problem', async () => {
    const s = await startItems();
    const res = await s.request('/items/a/b');
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { type: RFC2616, title: 'Not Found', detail: 'There is nothing at "/items/a/b"', status: 404 });
  });
});

describe('filters and sort (docs/queries.md)', () => {
  const catalogue = (): ReturnType<typeof records> =>
    records(6, (i) => ({ status: ['active', 'paused', 'archived'][i % 3], price: [5, 3, 9, 3, 1, 7][i], stock: i % 2, name: `p${i}` }));

  test('status=active -> only active, total and links describe the filtered set', async () => {
    const s = await startItems(catalogue());
    const body = await (await s.request('/items?status=active&limit=1')).json();
    assert.equal(body.total, 2);
    assert.equal(body.pages, 2);
    assert.deepEqual(body._embedded.items.map((e: { id: string }) => e.id), ['e000']);
    assert.deepEqual(body._links, {
      self: page(1, 1, '&status=active'),
      first: page(1, 1, '&status=active'),
      next: page(2, 1, '&status=active'),
      last: page(2, 1, '&status=active'),
      changes: changes(6),
    });
  });

  test('status=active,paused -> either value', async () => {
    const s = await startItems(catalogue());
    const body = await (await s.request('/items?status=active,paused')).json();
    assert.deepEqual(body._embedded.items.map((e: { id: string }) => e.id), ['e000', 'e001', 'e003', 'e004']);
  });

  test('stock=0 -> matches the number 0 by its JSON text', async () => {
    const s = await startItems(catalogue());
    const body = await (await s.request('/items?stock=0')).json();
    assert.deepEqual(body._embedded.items.map((e: { id: string }) => e.id), ['e000', 'e002', 'e004']);
  });

  test('filter on a field nobody has -> empty page 1', async () => {
    const s = await startItems(catalogue());
    const body = await (await s.request('/items?colour=red')).json();
    assert.equal(body.total, 0);
    assert.equal(body.pages, 1);
    assert.deepEqual(body._embedded.items, []);
  });

  test('sort=price -> ascending, ties in creation order', async () => {
    const s = await startItems(catalogue());
    const body = await (await s.request('/items?sort=price')).json();
    assert.deepEqual(body._embedded.items.map((e: { id: string }) => e.id), ['e004', 'e001', 'e003', 'e000', 'e005', 'e002']);
  });

  test('sort=-price,name -> descending, then by name', async () => {
    const s = await startItems(catalogue());
    const body = await (await s.request('/items?sort=-price,name&status=active,paused')).json();
    assert.deepEqual(body._embedded.items.map((e: { id: string }) => e.id), ['e000', 'e001', 'e003', 'e004']);
    assert.equal(body._links.self.href, '/items?page=1&limit=20&sort=-price,name&status=active,paused');
  });
});

describe('GET /<name>/<id>', () => {
  test('known id -> 200 entity with self link', async () => {
    const s = await startItems(records(3));
    const res = await s.request('/items/e002');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/hal+json');
    assert.deepEqual(await res.json(), entity(2));
  });

  test('/v1/<name>/<id> -> same entity', async () => {
    const s = await startItems(records(3));
    assert.deepEqual(await (await s.request('/v1/items/e001')).json(), entity(1));
  });

  test('unknown id -> 404 problem', async () => {
    const s = await startItems(records(3));
    const res = await s.request('/items/nope');
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { type: RFC2616, title: 'Not Found', detail: 'There is no items entity with id "nope"', status: 404 });
  });

  test('id with percent-encoding -> decoded id, href re-encoded', async () => {
    const s = await startItems([{ id: 'a b', createdAt: 1, updatedAt: 1 }]);
    const res = await s.request('/items/a%20b');
    assert.deepEqual(await res.json(), { id: 'a b', createdAt: 1, updatedAt: 1, _links: { self: { href: '/items/a%20b' } } });
  });

  test('a record written with _links and _embedded of its own (a copy of another HAL API) -> one _links, halserve\'s, in the entity and in pages', async () => {
    const s = await startItems([{ id: 'a', createdAt: 1, updatedAt: 1, _links: { self: { href: '/elsewhere/a' } }, _embedded: { x: [1] }, n: 1 }]);
    const expected = { id: 'a', createdAt: 1, updatedAt: 1, n: 1, _links: { self: { href: '/items/a' } } };
    const text = await (await s.request('/items/a')).text();
    assert.equal(text.split('"_links"').length, 2, text);
    assert.deepEqual(JSON.parse(text), expected);
    const page = await (await s.request('/items')).text();
    assert.equal(page.split('"_embedded"').length, 2, page);
    assert.deepEqual(JSON.parse(page)._embedded.items, [expected]);
  });

  test('malformed percent-encoding -> 400', async () => {
    const s = await startItems();
    const res = await s.request('/items/%E0%A4%A');
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), { type: RFC2616, title: 'Bad Request', detail: 'The request path has malformed percent-encoding', status: 400 });
  });
});

describe('HEAD', () => {
  for (const path of ['/', '/items', '/items/e000', '/healthz']) {
    test(`HEAD ${path} -> GET's status and headers, no body`, async () => {
      const s = await startItems(records(2));
      const get = await s.request(path);
      const getBody = await get.text();
      const head = await s.request(path, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-type'), get.headers.get('content-type'));
      assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(getBody)));
      assert.equal(await head.text(), '');
    });
  }
});

describe('content negotiation (docs/conventions.md §5)', () => {
  for (const [accept, expected] of [
    [undefined, 'application/hal+json'],
    ['*/*', 'application/hal+json'],
    ['application/*', 'application/hal+json'],
    ['application/hal+json', 'application/hal+json'],
    ['application/json', 'application/json'],
    ['application/json, application/hal+json;q=0.5', 'application/json'],
    ['text/html;q=0.5, application/json', 'application/json'],
    ['text/html, application/json', 'application/json'],
  ] as const) {
    test(`Accept: ${accept ?? '(none)'} -> ${expected}`, async () => {
      const s = await startItems(records(1));
      const res = await s.request('/items/e000', accept === undefined ? {} : { headers: { accept } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), expected);
      assert.deepEqual(await res.json(), entity(0));
    });
  }

  for (const accept of ['image/png', 'application/json;q=0, application/hal+json;q=0']) {
    test(`Accept: ${accept} -> 406 problem, Vary: Accept`, async () => {
      const s = await startItems(records(1));
      const res = await s.request('/items', { headers: { accept } });
      assert.equal(res.status, 406);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.equal(res.headers.get('vary'), 'Accept');
      assert.deepEqual(await res.json(), {
        type: RFC2616,
        title: 'Not Acceptable',
        detail: 'Expecting an Accept header that allows one of the application/hal+json, application/json',
        status: 406,
      });
    });
  }
});
