import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileSchema } from '../../src/conventions/schema.js';
import type { ServedResource } from '../../src/http/app.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord, LocalStore, Store, StoredEntity } from '../../src/store/store.js';
import type { LinkIntegrity } from '../../src/store/integrity.js';
import { RFC2616, startServer, type TestResponse } from '../helpers/server.js';

/*
 * docs/relations.md through HTTP: links and reverse links, `embed` on entities and pages, conditional
 * GETs of representations that show other resources, and the integrity of links on every write.
 */

const T = 1_700_000_000;
const rec = (id: string, n: number, fields: Record<string, unknown>): EntityRecord => ({ id, createdAt: T + n, updatedAt: T + n, ...fields });

const PRODUCT_SCHEMA = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    category: { type: 'string', 'x-link': 'categories' },
    related: { type: 'array', items: { type: 'string' }, 'x-link': 'products' },
  },
};
const ORDER_SCHEMA = {
  type: 'object',
  properties: { buyer: { type: 'string', 'x-link': 'people' }, seller: { type: 'string', 'x-link': 'people' } },
};

const CATEGORIES = [rec('c1', 0, { name: 'Lamps' }), rec('c2', 1, { name: 'Desks' }), rec('c3', 2, { name: 'Empty' })];
const PRODUCTS = [
  rec('p1', 10, { name: 'Desk lamp', category: 'c1', related: ['p2', 'p3'] }),
  rec('p2', 11, { name: 'Floor lamp', category: 'c1' }),
  rec('p3', 12, { name: 'Oak desk', category: 'c2', related: [] }),
  // Loaded from a file as it was: a link to a category that is not there.
  rec('p4', 13, { name: 'Orphan', category: 'gone', related: ['p1', 'missing'] }),
];

interface Fixture {
  readonly request: (path: string, init?: RequestInit) => Promise<TestResponse>;
  readonly categories: LocalStore;
  readonly products: LocalStore;
}

async function start(basePath = ''): Promise<Fixture> {
  const categories = createMemoryStore(CATEGORIES);
  const products = createMemoryStore(PRODUCTS);
  const resources: ServedResource[] = [
    { name: 'categories', store: categories },
    { name: 'products', store: products, schema: PRODUCT_SCHEMA, validate: compileSchema(PRODUCT_SCHEMA, 'products.schema.json') },
    { name: 'notes', store: createMemoryStore() },
  ];
  const s = await startServer({ resources, basePath });
  return { request: s.request, categories, products };
}

const JSON_BODY = { 'content-type': 'application/json' };
const byId = new Map([...CATEGORIES, ...PRODUCTS].map((r) => [r.id, r]));
const category = (id: string, base = ''): Record<string, unknown> => ({ ...byId.get(id), _links: { self: { href: `${base}/categories/${id}` }, products: { href: `${base}/products?category=${id}` } } });
const product = (id: string, base = '', self = ''): Record<string, unknown> => {
  const r = byId.get(id) as EntityRecord;
  const related = r['related'] as string[] | undefined;
  return {
    ...r,
    _links: {
      self: { href: `${base}/products/${id}${self}` },
      category: { href: `${base}/categories/${String(r['category'])}` },
      ...(related ? { related: related.map((p) => ({ href: `${base}/products/${p}` })) } : {}),
      products: { href: `${base}/products?related=${id}` },
    },
  };
};

async function expectJson(res: TestResponse, status: number, body: unknown): Promise<void> {
  assert.equal(res.status, status);
  assert.equal(res.headers.get('content-type'), status < 300 ? 'application/hal+json' : 'application/problem+json');
  assert.deepEqual(await res.json(), body);
}

const problem = (status: number, title: string, detail: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ type: RFC2616, title, detail, status, ...extra });
const unknownRel = (rel: string): Record<string, unknown> => problem(400, 'Bad Request', `Query parameter embed names an unknown relation: ${rel}`);

describe('links (docs/relations.md)', () => {
  test('GET a product -> self, its category, its related products (an array), and the reverse link of products.related', async () => {
    const s = await start();
    await expectJson(await s.request('/products/p1'), 200, product('p1'));
  });

  test('GET a category -> self and the reverse link /products?category=<id>', async () => {
    const s = await start();
    await expectJson(await s.request('/categories/c1'), 200, category('c1'));
  });

  test('the reverse link -> the products that link to the category, nothing else', async () => {
    const s = await start();
    const body = await (await s.request('/products?category=c1')).json();
    assert.deepEqual(body._embedded.products, [product('p1'), product('p2')]);
    const empty = await (await s.request((await (await s.request('/categories/c3')).json())._links.products.href)).json();
    assert.equal(empty.total, 0);
  });

  test('under /v1 and under a base path -> links as the existing ones are: unprefixed, under the base path', async () => {
    const s = await start();
    await expectJson(await s.request('/v1/products/p1'), 200, product('p1'));
    const based = await start('/api');
    await expectJson(await based.request('/api/v1/products/p1'), 200, product('p1', '/api'));
    await expectJson(await based.request('/api/categories/c2'), 200, category('c2', '/api'));
  });

  test('a page -> every entity with its links; a resource nothing links to keeps self alone', async () => {
    const s = await start();
    const body = await (await s.request('/categories?limit=2')).json();
    assert.deepEqual(body._embedded.categories, [category('c1'), category('c2')]);
    const created = await (await s.request('/notes', { method: 'POST', headers: JSON_BODY, body: '{"category":"c1"}' })).json();
    assert.deepEqual(created._links, { self: { href: `/notes/${created.id}` } });
  });

  test('one source linking a target through two fields -> reverse rels <source>.<field>; each embeds', async () => {
    const people = createMemoryStore([rec('ann', 0, {}), rec('bob', 1, {})]);
    const orders = createMemoryStore([rec('o1', 2, { buyer: 'ann', seller: 'bob' })]);
    const s = await startServer({ resources: [{ name: 'people', store: people }, { name: 'orders', store: orders, schema: ORDER_SCHEMA }] });
    const ann = await (await s.request('/people/ann?embed=orders.buyer,orders.seller')).json();
    assert.deepEqual(ann._links, {
      self: { href: '/people/ann?embed=orders.buyer,orders.seller' },
      'orders.buyer': { href: '/orders?buyer=ann' },
      'orders.seller': { href: '/orders?seller=ann' },
    });
    assert.deepEqual(ann._embedded['orders.buyer']._embedded.orders.map((o: { id: string }) => o.id), ['o1']);
    assert.equal(ann._embedded['orders.seller'].total, 0);
  });

  test('a target id holding a comma ("a,b") -> its reverse link says %2C, and following it finds exactly its sources', async () => {
    const people = createMemoryStore([rec('a,b', 0, {}), rec('a', 1, {}), rec('b', 2, {})]);
    const orders = createMemoryStore([rec('o1', 3, { buyer: 'a,b' }), rec('o2', 4, { buyer: 'a' }), rec('o3', 5, { buyer: 'b' })]);
    const s = await startServer({ resources: [{ name: 'people', store: people }, { name: 'orders', store: orders, schema: ORDER_SCHEMA }] });
    const person = await (await s.request('/people/a%2Cb?embed=orders.buyer')).json();
    assert.equal(person._links['orders.buyer'].href, '/orders?buyer=a%2Cb');
    assert.deepEqual(person._embedded['orders.buyer']._links.self, { href: '/orders?page=1&limit=20&buyer=a%2Cb' });
    const page = await (await s.request(person._links['orders.buyer'].href)).json();
    assert.deepEqual(page._embedded.orders.map((o: { id: string }) => o.id), ['o1']);
    assert.equal(page._links.self.href, '/orders?page=1&limit=20&buyer=a%2Cb');
  });

  test('a link field named like a reserved parameter (page) -> every link filtering on it says page[eq]=, and following it finds exactly its sources', async () => {
    const pages = createMemoryStore([rec('p1', 0, {}), rec('p2', 1, {})]);
    const comments = createMemoryStore([rec('c1', 2, { page: 'p1' }), rec('c2', 3, { page: 'p2' })]);
    const schema = { type: 'object', properties: { page: { type: 'string', 'x-link': 'pages' } } };
    const s = await startServer({ resources: [{ name: 'pages', store: pages }, { name: 'comments', store: comments, schema }] });
    const p1 = await (await s.request('/pages/p1?embed=comments')).json();
    assert.equal(p1._links.comments.href, '/comments?page[eq]=p1');
    assert.equal(p1._embedded.comments._links.self.href, '/comments?page=1&limit=20&page[eq]=p1');
    for (const href of [p1._links.comments.href, p1._embedded.comments._links.self.href]) {
      const res = await s.request(href);
      assert.equal(res.status, 200, href);
      const page = await res.json();
      assert.deepEqual(page._embedded.comments.map((c: { id: string }) => c.id), ['c1'], href);
      assert.equal(page._links.self.href, '/comments?page=1&limit=20&page[eq]=p1');
    }
    const refused = await s.request('/pages/p1', { method: 'DELETE' });
    assert.equal(refused.status, 409);
    assert.deepEqual((await refused.json()).referencedBy.links, [{ rel: 'comments', count: 1, href: '/comments?page[eq]=p1' }]);
    // A facet's link narrows the same way.
    const faceted = await (await s.request('/comments?facets=page')).json();
    assert.deepEqual(faceted.facets.page.map((f: { _links: { self: { href: string } } }) => f._links.self.href), ['/comments?page=1&limit=20&facets=page&page[eq]=p1', '/comments?page=1&limit=20&facets=page&page[eq]=p2']);
  });

  test('a dangling link loaded from a file whose value holds a lone surrogate -> 200, its href carries U+FFFD (it leads nowhere, as any dangling link)', async () => {
    const orders = createMemoryStore([rec('o1', 3, { buyer: 'x\ud800', seller: '\udc00' })]);
    const s = await startServer({ resources: [{ name: 'people', store: createMemoryStore() }, { name: 'orders', store: orders, schema: ORDER_SCHEMA }] });
    for (const path of ['/orders/o1', '/orders']) {
      const res = await s.request(path);
      assert.equal(res.status, 200, path);
      const body = await res.json();
      const order = path === '/orders' ? body._embedded.orders[0] : body;
      assert.deepEqual([order._links.buyer, order._links.seller], [{ href: '/people/x%EF%BF%BD' }, { href: '/people/%EF%BF%BD' }]);
    }
  });
});

describe('embed (docs/relations.md)', () => {
  test('entity ?embed=category -> the category in full, with its links; self keeps embed; tagged', async () => {
    const s = await start();
    const res = await s.request('/products/p2?embed=category');
    assert.match(res.headers.get('etag') ?? '', /^"[^"]+"$/);
    await expectJson(res, 200, { ...product('p2', '', '?embed=category'), _embedded: { category: category('c1') } });
  });

  test('entity ?embed=related -> an array of the products, each with its own links; an id that names none is left out', async () => {
    const s = await start();
    await expectJson(await s.request('/products/p4?embed=related,category'), 200, {
      ...product('p4', '', '?embed=category,related'),
      _embedded: { category: null, related: [product('p1')] },
    });
  });

  test('category ?embed=products -> the first page (default size) of the products that link to it, a collection with its links', async () => {
    const s = await start();
    const many = Array.from({ length: 21 }, (_, i) => rec(`q${String(i).padStart(2, '0')}`, 100 + i, { name: 'Many', category: 'c2' }));
    for (const r of many) await s.products.create(r);
    const body = await (await s.request('/categories/c2?embed=products')).json();
    const page = body._embedded.products;
    assert.deepEqual(Object.keys(body), ['id', 'createdAt', 'updatedAt', 'name', '_links', '_embedded']);
    assert.deepEqual({ ...page, _embedded: undefined }, {
      total: 22,
      count: 20,
      pages: 2,
      page: 1,
      limit: 20,
      _links: {
        self: { href: '/products?page=1&limit=20&category=c2' },
        first: { href: '/products?page=1&limit=20&category=c2' },
        next: { href: '/products?page=2&limit=20&category=c2' },
        last: { href: '/products?page=2&limit=20&category=c2' },
      },
      _embedded: undefined,
    });
    assert.deepEqual(page._embedded.products[0], product('p3'));
    assert.equal(page._embedded.products.length, 20);
  });

  test('collection ?embed=category -> each entity embeds its category; every page link and the Link header keep embed', async () => {
    const s = await start();
    const res = await s.request('/products?limit=2&page=2&embed=category');
    const body = await res.json();
    assert.deepEqual(body._links, {
      self: { href: '/products?page=2&limit=2&embed=category' },
      first: { href: '/products?page=1&limit=2&embed=category' },
      prev: { href: '/products?page=1&limit=2&embed=category' },
      last: { href: '/products?page=2&limit=2&embed=category' },
    });
    assert.match(res.headers.get('link') ?? '', /<\/products\?page=1&limit=2&embed=category>; rel="first"/);
    assert.deepEqual(body._embedded.products, [
      { ...product('p3', '', '?embed=category'), _embedded: { category: category('c2') } },
      { ...product('p4', '', '?embed=category'), _embedded: { category: null } },
    ]);
  });

  test('embed=b,a and embed=a&embed=b -> the same links (a set, sorted)', async () => {
    const s = await start();
    const a = await (await s.request('/products?limit=1&embed=related,category')).json();
    const b = await (await s.request('/products?limit=1&embed=category&embed=related&embed=category')).json();
    assert.deepEqual(a, b);
    assert.equal(a._links.self.href, '/products?page=1&limit=1&embed=category,related');
  });

  for (const [path, rel] of [
    ['/products/p1?embed=nope', 'nope'],
    ['/products?embed=category,nope', 'nope'],
    ['/categories/c1?embed=category', 'category'],
    ['/notes?embed=anything', 'anything'],
    ['/v1/categories?embed=products.category', 'products.category'],
  ] as const) {
    test(`${path} -> 400 naming embed and the rel`, async () => {
      const s = await start();
      await expectJson(await s.request(path), 400, unknownRel(rel));
    });
  }

  test('an unknown rel on a missing entity -> 400 (the request is bad whatever exists)', async () => {
    const s = await start();
    await expectJson(await s.request('/products/none?embed=nope'), 400, unknownRel('nope'));
  });

  test('HEAD and application/json with embed -> the same headers; the same body as plain JSON, its own tag', async () => {
    const s = await start();
    const hal = await s.request('/products/p1?embed=category');
    const json = await s.request('/products/p1?embed=category', { headers: { accept: 'application/json' } });
    assert.equal(json.headers.get('content-type'), 'application/json');
    assert.deepEqual(await json.json(), await hal.json());
    assert.equal(json.headers.get('etag'), `${(hal.headers.get('etag') ?? '').slice(0, -1)}-json"`);
    const head = await s.request('/products/p1?embed=category', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('etag'), hal.headers.get('etag'));
  });
});

describe('conditional GET with embeds: a 304 never hides a changed embedded entity', () => {
  test('entity: If-None-Match -> 304; the embedded category changes -> 200 with the change and a new tag', async () => {
    const s = await start();
    const first = await s.request('/products/p1?embed=category');
    const etag = first.headers.get('etag') ?? '';
    assert.equal((await s.request('/products/p1?embed=category', { headers: { 'if-none-match': etag } })).status, 304);
    // The entity's own tag does not stand for the representation with embeds.
    const own = (await s.request('/products/p1')).headers.get('etag') ?? '';
    assert.notEqual(own, etag);
    assert.equal((await s.request('/products/p1?embed=category', { headers: { 'if-none-match': own } })).status, 200);
    assert.equal((await s.request('/categories/c1', { method: 'PATCH', headers: JSON_BODY, body: '{"name":"Lights"}' })).status, 200);
    const after = await s.request('/products/p1?embed=category', { headers: { 'if-none-match': etag } });
    assert.equal(after.status, 200);
    assert.notEqual(after.headers.get('etag'), etag);
    assert.equal((await after.json())._embedded.category.name, 'Lights');
  });

  test('entity: If-Match with the entity\'s own tag or the embed tag -> 200; another -> 412', async () => {
    const s = await start();
    const own = (await s.request('/products/p1')).headers.get('etag') ?? '';
    const embedded = (await s.request('/products/p1?embed=category')).headers.get('etag') ?? '';
    assert.equal((await s.request('/products/p1?embed=category', { headers: { 'if-match': own } })).status, 200);
    assert.equal((await s.request('/products/p1?embed=category', { headers: { 'if-match': embedded } })).status, 200);
    assert.equal((await s.request('/products/p1?embed=category', { headers: { 'if-match': '"other"' } })).status, 412);
  });

  test('category with its reverse page: a new product linking it -> 200 with it, new tag', async () => {
    const s = await start();
    const first = await s.request('/categories/c3?embed=products');
    const etag = first.headers.get('etag') ?? '';
    assert.equal((await first.json())._embedded.products.total, 0);
    assert.equal((await s.request('/products', { method: 'POST', headers: JSON_BODY, body: '{"name":"Stool","category":"c3"}' })).status, 201);
    const after = await s.request('/categories/c3?embed=products', { headers: { 'if-none-match': etag } });
    assert.equal(after.status, 200);
    assert.equal((await after.json())._embedded.products.total, 1);
  });

  test('page: If-None-Match -> 304; an embedded category changes -> the page is built again (not the kept one), new tag', async () => {
    const s = await start();
    const path = '/products?limit=3&embed=category';
    const first = await s.request(path);
    const etag = first.headers.get('etag') ?? '';
    assert.equal((await first.json())._embedded.products[0]._embedded.category.name, 'Lamps');
    assert.equal((await s.request(path, { headers: { 'if-none-match': etag } })).status, 304);
    const plainTag = (await s.request('/products?limit=3')).headers.get('etag');
    assert.equal((await s.request('/categories/c1', { method: 'PATCH', headers: JSON_BODY, body: '{"name":"Lights"}' })).status, 200);
    const after = await s.request(path, { headers: { 'if-none-match': etag } });
    assert.equal(after.status, 200);
    assert.notEqual(after.headers.get('etag'), etag);
    assert.equal((await after.json())._embedded.products[0]._embedded.category.name, 'Lights');
    // The page without embeds shows only products: its tag did not move.
    assert.equal((await s.request('/products?limit=3')).headers.get('etag'), plainTag);
  });
});

describe('links never dangle: writes (docs/relations.md, §7)', () => {
  const body = (fields: Record<string, unknown>): RequestInit => ({ method: 'POST', headers: JSON_BODY, body: JSON.stringify(fields) });
  const dangling = (messages: Record<string, string>): Record<string, unknown> =>
    problem(400, 'Bad Request', 'Validation failed', {
      validationMessages: Object.fromEntries(Object.entries(messages).map(([field, text]) => [field, { 'x-link': text }])),
    });

  test('POST linking an existing category and products -> 201 with the links', async () => {
    const s = await start();
    const res = await s.request('/products', body({ name: 'Lamp', category: 'c2', related: ['p1'] }));
    assert.equal(res.status, 201);
    const created = await res.json();
    assert.deepEqual(created._links, { self: { href: `/products/${created.id}` }, category: { href: '/categories/c2' }, related: [{ href: '/products/p1' }], products: { href: `/products?related=${created.id}` } });
  });

  test('POST linking a missing category and a missing product -> 400 Validation failed naming each field; nothing written', async () => {
    const s = await start();
    await expectJson(
      await s.request('/products', body({ name: 'Lamp', category: 'nope', related: ['p1', 'zz'] })),
      400,
      dangling({ category: 'must be the id of an entity of categories; there is none with id "nope"', 'related.1': 'must be the id of an entity of products; there is none with id "zz"' }),
    );
    assert.equal(s.products.size, PRODUCTS.length);
  });

  test('POST that breaks the schema and links nowhere -> the schema\'s 400 first', async () => {
    const s = await start();
    const res = await s.request('/products', body({ category: 'nope' }));
    assert.deepEqual((await res.json()).validationMessages, { name: { required: 'is required' } });
  });

  test('PUT to a missing category -> 400; to an existing one -> 200', async () => {
    const s = await start();
    const put = (category: string): Promise<TestResponse> => s.request('/products/p2', { method: 'PUT', headers: JSON_BODY, body: JSON.stringify({ name: 'Floor lamp', category }) });
    await expectJson(await put('nope'), 400, dangling({ category: 'must be the id of an entity of categories; there is none with id "nope"' }));
    assert.equal((await put('c2')).status, 200);
    assert.equal(s.products.get('p2')?.record['category'], 'c2');
  });

  test('PATCH setting a missing link -> 400; leaving a stored link alone -> 200 (even a dangling one loaded from a file); a missing entity -> 404', async () => {
    const s = await start();
    const patch = (id: string, fields: Record<string, unknown>): Promise<TestResponse> =>
      s.request(`/products/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify(fields) });
    await expectJson(await patch('p1', { related: ['p2', 'nope'] }), 400, dangling({ 'related.1': 'must be the id of an entity of products; there is none with id "nope"' }));
    assert.equal((await patch('p4', { name: 'Renamed' })).status, 200);
    assert.equal((await patch('p1', { category: 'c3' })).status, 200);
    assert.equal((await patch('p1', { category: null })).status, 200);
    await expectJson(await patch('none', { category: 'c1' }), 404, problem(404, 'Not Found', 'There is no products entity with id "none"'));
  });

  test('PUT or PATCH of a missing entity linking nowhere -> 404 before the link is looked at (docs/relations.md §4)', async () => {
    const s = await start();
    const missing = problem(404, 'Not Found', 'There is no products entity with id "none"');
    await expectJson(await s.request('/products/none', { method: 'PUT', headers: JSON_BODY, body: JSON.stringify({ name: 'x', category: 'nope' }) }), 404, missing);
    await expectJson(await s.request('/products/none', { method: 'PUT', headers: JSON_BODY, body: JSON.stringify({ name: 'x', category: 'c1' }) }), 404, missing);
    await expectJson(await s.request('/products/none', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ category: 'nope' }) }), 404, missing);
  });

  test('DELETE of a category products link to -> 409 with referencedBy (how many, and where); unlinked -> 204', async () => {
    const s = await start();
    await expectJson(
      await s.request('/categories/c1', { method: 'DELETE' }),
      409,
      problem(409, 'Conflict', 'The categories entity "c1" is still linked to by 2 entities; change or delete them first', {
        referencedBy: { count: 2, links: [{ rel: 'products', count: 2, href: '/products?category=c1' }] },
      }),
    );
    assert.ok(s.categories.get('c1'));
    for (const id of ['p1', 'p2']) assert.equal((await s.request(`/products/${id}`, { method: 'PATCH', headers: JSON_BODY, body: '{"category":"c2"}' })).status, 200);
    assert.equal((await s.request('/categories/c1', { method: 'DELETE' })).status, 204);
    assert.equal((await s.request('/categories/c1')).status, 404);
  });

  test('DELETE of a person one order links to through two fields -> 409 that counts 2 links, not 2 entities', async () => {
    const people = createMemoryStore([rec('ann', 0, {}), rec('bob', 1, {})]);
    const orders = createMemoryStore([rec('o1', 2, { buyer: 'ann', seller: 'ann' }), rec('o2', 3, { buyer: 'bob', seller: 'ann' })]);
    const s = await startServer({ resources: [{ name: 'people', store: people }, { name: 'orders', store: orders, schema: ORDER_SCHEMA }] });
    await expectJson(
      await s.request('/people/ann', { method: 'DELETE' }),
      409,
      problem(409, 'Conflict', 'The people entity "ann" is still linked to 3 times (orders.buyer 1, orders.seller 2); change or delete the entities that link first', {
        referencedBy: {
          count: 3,
          links: [
            { rel: 'orders.buyer', count: 1, href: '/orders?buyer=ann' },
            { rel: 'orders.seller', count: 2, href: '/orders?seller=ann' },
          ],
        },
      }),
    );
    await expectJson(
      await s.request('/people/bob', { method: 'DELETE' }),
      409,
      problem(409, 'Conflict', 'The people entity "bob" is still linked to by 1 entity; change or delete it first', {
        referencedBy: { count: 1, links: [{ rel: 'orders.buyer', count: 1, href: '/orders?buyer=bob' }] },
      }),
    );
  });

  test('DELETE of a product others relate to -> 409 counting one link; the last link gone -> 204', async () => {
    const s = await start('/api');
    const res = await s.request('/api/products/p2', { method: 'DELETE' });
    assert.equal(res.status, 409);
    assert.deepEqual((await res.json()).referencedBy, { count: 1, links: [{ rel: 'products', count: 1, href: '/api/products?related=p2' }] });
    assert.equal((await s.request('/api/products/p1', { method: 'PATCH', headers: JSON_BODY, body: '{"related":["p3"]}' })).status, 200);
    assert.equal((await s.request('/api/products/p2', { method: 'DELETE' })).status, 204);
  });

  test('DELETE of a missing category -> 404; with a stale If-Match -> 412 before 409', async () => {
    const s = await start();
    await expectJson(await s.request('/categories/none', { method: 'DELETE' }), 404, problem(404, 'Not Found', 'There is no categories entity with id "none"'));
    assert.equal((await s.request('/categories/c1', { method: 'DELETE', headers: { 'if-match': '"stale"' } })).status, 412);
    const etag = (await s.request('/categories/c3')).headers.get('etag') ?? '';
    assert.equal((await s.request('/categories/c3', { method: 'DELETE', headers: { 'if-match': etag } })).status, 204);
  });
});

describe('stores that answer later (a networked store: every read a Promise)', () => {
  /** The memory store, but every read answers through a Promise, as a networked store may. */
  const later = (store: LocalStore): Store =>
    Object.assign(Object.create(store) as Store, {
      get: (id: string) => Promise.resolve(store.get(id)),
      query: (query: Parameters<Store['query']>[0]) => Promise.resolve(store.query(query)),
    });

  test('links, embeds on entities and pages, a conditional GET, a dangling link and a delete refused -> as with a local store', async () => {
    const categories = createMemoryStore(CATEGORIES);
    const products = createMemoryStore(PRODUCTS);
    const s = await startServer({
      resources: [
        { name: 'categories', store: later(categories) },
        { name: 'products', store: later(products), schema: PRODUCT_SCHEMA, validate: compileSchema(PRODUCT_SCHEMA, 'products.schema.json') },
      ],
    });
    const entity = await s.request('/products/p2?embed=category');
    await expectJson(entity, 200, { ...product('p2', '', '?embed=category'), _embedded: { category: category('c1') } });
    assert.equal((await s.request('/products/p2?embed=category', { headers: { 'if-none-match': entity.headers.get('etag') ?? '' } })).status, 304);
    const page = await (await s.request('/products?limit=2&embed=category,related')).json();
    assert.deepEqual(page._embedded.products[0]._embedded, { category: category('c1'), related: [product('p2'), product('p3')] });
    const reverse = await (await s.request('/categories/c1?embed=products')).json();
    assert.deepEqual(reverse._embedded.products._embedded.products, [product('p1'), product('p2')]);
    assert.equal((await s.request('/products', { method: 'POST', headers: JSON_BODY, body: '{"name":"x","category":"nope"}' })).status, 400);
    assert.equal((await s.request('/categories/c1', { method: 'DELETE' })).status, 409);
    assert.equal((await s.request('/categories/c3', { method: 'DELETE' })).status, 204);
  });
});

describe('a store shared with other processes, whose copy here may be behind', () => {
  /**
   * Categories and products in memory stores standing for the shared database, one entity that
   * another process has just created (`fresh`, in `behind`'s resource) missing from this process's
   * copy, and a link guard that decides as the PostgreSQL store's does: every check of a delete in
   * the delete itself, an entity's existence in the shared stores.
   */
  async function sharedServer(behind: 'categories' | 'products', fresh: EntityRecord, guard: Pick<LinkIntegrity, 'removing' | 'exists'>) {
    const shared = new Map<string, Store>([['categories', createMemoryStore(CATEGORIES)], ['products', createMemoryStore(PRODUCTS)]]);
    const stale = shared.get(behind)!;
    await stale.create(fresh);
    const copy = Object.assign(Object.create(stale) as Store, { get: (id: string) => (id === fresh.id ? undefined : stale.get(id)) });
    const of = (name: string): Store => (name === behind ? copy : shared.get(name)!);
    const s = await startServer({
      resources: [
        { name: 'categories', store: of('categories') },
        { name: 'products', store: of('products'), schema: PRODUCT_SCHEMA, validate: compileSchema(PRODUCT_SCHEMA, 'products.schema.json') },
      ],
      linkIntegrity: () => ({ countsBeforeChecks: false, linking: (_targets, write) => write(), ...guard }),
    });
    return { s, shared };
  }

  test('DELETE of a linked-to entity this copy has not seen yet, with the If-Match the other process gave -> decided by the delete (204), not 404 or 412 from the copy', async () => {
    const decided: string[] = [];
    const { s, shared } = await sharedServer('categories', { id: 'c9', createdAt: 1, updatedAt: 1, name: 'Fresh' }, {
      removing: (resource, id, remove) => {
        decided.push(`${resource}/${id}`);
        return remove();
      },
      exists: () => Promise.reject(new Error('not asked by a delete')),
    });
    const categories = shared.get('categories')!;
    const tag = `"${(categories.get('c9') as StoredEntity).version}"`;
    const res = await s.request('/categories/c9', { method: 'DELETE', headers: { 'if-match': tag } });
    assert.equal(res.status, 204);
    assert.deepEqual(decided, ['categories/c9']);
    assert.equal(categories.get('c9'), undefined);
  });

  test('PATCH setting a link on an entity this copy has not seen yet -> asked of the shared database (200), not a 404 from the copy; one nowhere -> 404', async () => {
    const asked: string[] = [];
    const { s, shared } = await sharedServer('products', { id: 'p9', createdAt: 1, updatedAt: 1, name: 'Fresh', category: 'c1' }, {
      removing: (_resource, _id, remove) => remove(),
      exists: async (resource, id) => {
        asked.push(`${resource}/${id}`);
        return shared.get(resource)?.get(id) !== undefined;
      },
    });
    const patch = (id: string) => s.request(`/products/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ category: 'c2' }) });
    const moved = await patch('p9');
    assert.equal(moved.status, 200, await moved.text());
    assert.equal((shared.get('products')!.get('p9') as StoredEntity).record['category'], 'c2');
    assert.equal((await patch('p404')).status, 404);
    assert.deepEqual(asked, ['products/p9', 'products/p404']);
  });
});
