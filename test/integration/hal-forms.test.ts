import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Ketting } from 'ketting';
import { compileSchema, declaredPaths } from '../../src/conventions/schema.js';
import type { HandlerOptions, ServedResource } from '../../src/http/app.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord } from '../../src/store/store.js';
import { RFC2616, startServer, type TestResponse } from '../helpers/server.js';

/*
 * HAL-FORMS through HTTP: `_templates` generated from the schema for a client that
 * prefers `application/prs.hal-forms+json`, the same bytes as before for every other client, a
 * 406 where there are no templates, and Ketting 8 (an independent HAL-FORMS client) creating and
 * replacing entities through the templates' actions.
 */

const HAL_FORMS = 'application/prs.hal-forms+json';
const T = 1_700_000_000;

const PRODUCT_SCHEMA = {
  type: 'object',
  required: ['name', 'price'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', title: 'Product name', minLength: 1, maxLength: 80, examples: ['Desk lamp'] },
    sku: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{4}$', description: 'Three letters, a dash, four digits' },
    price: { type: 'number', minimum: 0, maximum: 10000 },
    stock: { type: 'integer', minimum: 0 },
    status: { type: 'string', enum: ['active', 'paused', 'archived'] },
    featured: { type: 'boolean' },
    category: { type: 'string', 'x-link': 'categories' },
    related: { type: 'array', items: { type: 'string' }, maxItems: 5, 'x-link': 'products' },
    tags: { type: 'array', items: { type: 'string' } },
    dimensions: { type: 'object', properties: { weight: { type: 'number' } } },
  },
};

const CATEGORIES: EntityRecord[] = [{ id: 'c1', createdAt: T, updatedAt: T, name: 'Lamps' }];
const PRODUCTS: EntityRecord[] = [
  { id: 'p1', createdAt: T + 1, updatedAt: T + 1, name: 'Desk lamp', price: 25, stock: 3, status: 'active', category: 'c1', tags: ['usb-c'], dimensions: { weight: 1.5 } },
];

const PROPERTIES = [
  { name: 'name', prompt: 'Product name', required: true, type: 'text', minLength: 1, maxLength: 80, placeholder: 'Desk lamp' },
  { name: 'sku', prompt: 'sku', type: 'text', regex: '^[A-Z]{3}-[0-9]{4}$', placeholder: 'Three letters, a dash, four digits' },
  { name: 'price', prompt: 'price', required: true, type: 'number', min: 0, max: 10000 },
  { name: 'stock', prompt: 'stock', type: 'number', min: 0, step: 1 },
  { name: 'status', prompt: 'status', type: 'text', options: { inline: ['active', 'paused', 'archived'], maxItems: 1 } },
  { name: 'featured', prompt: 'featured', type: 'checkbox' },
  { name: 'category', prompt: 'category', type: 'text', options: { link: { href: '/categories', type: 'application/hal+json' }, valueField: 'id', maxItems: 1 } },
  { name: 'related', prompt: 'related', type: 'text', options: { link: { href: '/products', type: 'application/hal+json' }, valueField: 'id', maxItems: 5 } },
  { name: 'tags', prompt: 'tags', type: 'textarea' },
  { name: 'dimensions', prompt: 'dimensions', type: 'textarea' },
];

async function start() {
  const resources: ServedResource[] = [
    { name: 'categories', store: createMemoryStore(CATEGORIES) },
    {
      name: 'products',
      store: createMemoryStore(PRODUCTS),
      schema: PRODUCT_SCHEMA,
      validate: compileSchema(PRODUCT_SCHEMA, 'products.schema.json'),
      declared: declaredPaths(PRODUCT_SCHEMA),
    },
  ];
  return startServer({ resources, now: () => T + 100 });
}

const forms = { accept: HAL_FORMS };

async function expectForms(res: TestResponse): Promise<Record<string, unknown>> {
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), HAL_FORMS);
  assert.match(res.headers.get('vary') ?? '', /^Accept(, Accept-Encoding)?$/);
  return res.json();
}

describe('HAL-FORMS templates', () => {
  test('GET /products with Accept: HAL-FORMS -> the HAL page plus _templates.default, a POST with the schema\'s properties', async () => {
    const s = await start();
    const hal = await (await s.request('/products')).json();
    const body = await expectForms(await s.request('/products', { headers: forms }));
    const { _templates, ...rest } = body;
    assert.deepEqual(rest, hal);
    assert.deepEqual(_templates, { default: { title: 'Create', method: 'POST', contentType: 'application/json', target: '/products', properties: PROPERTIES } });
  });

  test('GET /products/p1 with Accept: HAL-FORMS -> default (PUT) and update (PATCH) with the current values, delete', async () => {
    const s = await start();
    const hal = await (await s.request('/products/p1')).json();
    const body = await expectForms(await s.request('/products/p1', { headers: forms }));
    const { _templates, ...rest } = body;
    assert.deepEqual(rest, hal);
    const values: Record<string, unknown> = { name: 'Desk lamp', price: 25, stock: 3, status: 'active', category: 'c1', tags: ['usb-c'], dimensions: { weight: 1.5 } };
    const valued = PROPERTIES.map((p) => (p.name in values ? { ...p, value: values[p.name] } : p));
    assert.deepEqual(_templates, {
      default: { title: 'Replace', method: 'PUT', contentType: 'application/json', target: '/products/p1', properties: valued },
      update: { title: 'Update', method: 'PATCH', contentType: 'application/merge-patch+json', target: '/products/p1', properties: valued.map(({ required: _r, ...p }) => p) },
      delete: { title: 'Delete', method: 'DELETE', target: '/products/p1', properties: [] },
    });
  });

  test('a resource without a schema -> templates with no properties (any JSON object)', async () => {
    const s = await start();
    const page = await expectForms(await s.request('/categories', { headers: forms }));
    assert.deepEqual(page['_templates'], { default: { title: 'Create', method: 'POST', contentType: 'application/json', target: '/categories', properties: [] } });
    const entity = await expectForms(await s.request('/categories/c1', { headers: forms }));
    assert.deepEqual(Object.keys(entity['_templates'] as object), ['default', 'update', 'delete']);
  });

  test('HAL-FORMS ETag -> its own, never the hal+json one; If-None-Match with it -> 304', async () => {
    const s = await start();
    for (const path of ['/products', '/products/p1', '/products?status=active&facets=status', '/products/p1?embed=category']) {
      const hal = await s.request(path);
      const form = await s.request(path, { headers: forms });
      const tag = form.headers.get('etag');
      assert.ok(tag, path);
      assert.notEqual(tag, hal.headers.get('etag'), path);
      assert.equal((await s.request(path, { headers: { ...forms, 'if-none-match': tag } })).status, 304, path);
    }
  });

  test('other clients -> exactly the bytes and content type they got before (no _templates)', async () => {
    const s = await start();
    const cases: [Record<string, string>, string][] = [
      [{}, 'application/hal+json'],
      [{ accept: '*/*' }, 'application/hal+json'],
      [{ accept: 'application/*' }, 'application/hal+json'],
      [{ accept: 'application/hal+json' }, 'application/hal+json'],
      [{ accept: 'application/json' }, 'application/json'],
      // A tie: HAL first, as before.
      [{ accept: `application/hal+json, ${HAL_FORMS}` }, 'application/hal+json'],
    ];
    for (const path of ['/products', '/products/p1']) {
      const plain = await (await s.request(path)).text();
      assert.ok(!plain.includes('_templates'));
      for (const [headers, type] of cases) {
        const res = await s.request(path, { headers });
        assert.equal(res.headers.get('content-type'), type, JSON.stringify(headers));
        assert.equal(await res.text(), plain, JSON.stringify(headers));
      }
    }
  });

  test('POST, PUT, PATCH with Accept: HAL-FORMS -> the entity with its templates, the new values in them', async () => {
    const s = await start();
    const res = await s.request('/products/p1', { method: 'PATCH', headers: { ...forms, 'content-type': 'application/merge-patch+json' }, body: '{"stock":9}' });
    const body = await expectForms(res);
    const templates = body['_templates'] as Record<string, { properties: { name: string; value?: unknown }[] }>;
    assert.equal(templates['default']?.properties.find((p) => p.name === 'stock')?.value, 9);
    const created = await s.request('/products', { method: 'POST', headers: { ...forms, 'content-type': 'application/json' }, body: '{"name":"Lamp","price":3}' });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get('content-type'), HAL_FORMS);
    const entity = await created.json();
    assert.equal(entity._templates.default.target, `/products/${entity.id}`);
  });
});

describe('a _templates member a client sends', () => {
  test('POST with _templates of its own -> dropped (server-managed): the HAL-FORMS answer has one _templates, the server\'s; HAL none', async () => {
    const s = await start();
    const created = await s.request('/categories', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'x', _templates: { default: { method: 'DELETE', target: '/categories/other', properties: [] } } }) });
    assert.equal(created.status, 201);
    const href = created.headers.get('location')!;
    const text = await (await s.request(href, { headers: forms })).text();
    assert.equal(text.split('"_templates"').length, 2, text);
    assert.equal(JSON.parse(text)._templates.default.method, 'PUT');
    assert.equal(JSON.parse(text)._templates.default.target, href);
    const hal = await (await s.request(href)).json();
    assert.equal(hal._templates, undefined);
  });
});

describe('HAL-FORMS asked where there are no templates', () => {
  for (const [path, served] of [
    ['/', 'application/hal+json or application/json'],
    ['/ping', 'application/hal+json or application/json'],
    ['/me', 'application/hal+json or application/json'],
    ['/metrics', 'text/plain'],
    ['/openapi.json', 'application/json'],
    ['/healthz', 'application/hal+json or application/json'],
  ] as const) {
    test(`GET ${path} with Accept: ${HAL_FORMS} alone -> 406 problem saying where forms are, and what ${path} serves`, async () => {
      const s = await start();
      const res = await s.request(path, { headers: forms });
      assert.equal(res.status, 406);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.equal(res.headers.get('vary'), 'Accept');
      assert.deepEqual(await res.json(), {
        type: RFC2616,
        title: 'Not Acceptable',
        status: 406,
        detail: `HAL-FORMS (application/prs.hal-forms+json) is served on collections and entities only; ask this route for ${served}`,
      });
    });
  }
  test(`GET / with Accept: ${HAL_FORMS}, application/hal+json;q=0.5 -> 200 HAL`, async () => {
    const s = await start();
    const res = await s.request('/', { headers: { accept: `${HAL_FORMS}, application/hal+json;q=0.5` } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/hal+json');
  });
});

describe('HAL-FORMS templates offer only what the principal may do', () => {
  /** A per-resource grant, as a JWT's `products:read categories:write` scopes give (docs/auth.md §2). */
  const scoped = { authenticate: () => ({ key: 'scoped', access: undefined, grants: new Map([['products', 'read' as const], ['categories', 'write' as const]]) }) };

  async function startWithTokens(extra: Partial<HandlerOptions>) {
    const resources: ServedResource[] = [
      { name: 'categories', store: createMemoryStore(CATEGORIES) },
      { name: 'products', store: createMemoryStore(PRODUCTS), schema: PRODUCT_SCHEMA, validate: compileSchema(PRODUCT_SCHEMA, 'products.schema.json'), declared: declaredPaths(PRODUCT_SCHEMA) },
    ];
    return startServer({ resources, now: () => T + 100, ...extra });
  }

  test('a read-only token -> _templates is empty on pages and entities (a write would be 403), with its own ETag', async () => {
    const s = await startWithTokens({ tokens: ['writer', 'read:reader'] });
    const as = (token: string, path: string, headers: Record<string, string> = {}) => s.request(path, { headers: { ...forms, authorization: `Bearer ${token}`, ...headers } });
    for (const path of ['/products', '/products/p1', '/products?status=active&facets=status', '/products/p1?embed=category']) {
      const written = await expectForms(await as('writer', path));
      assert.ok(Object.keys(written['_templates'] as object).length > 0, path);
      const readOnly = await as('reader', path);
      const body = await expectForms(readOnly);
      assert.deepEqual(body['_templates'], {}, path);
      const { _templates: _w, ...writerRest } = written;
      const { _templates: _r, ...readerRest } = body;
      assert.deepEqual(readerRest, writerRest, path);
      // Other bytes, another tag: a client that changes tokens never gets a 304 for the other variant.
      const tag = readOnly.headers.get('etag');
      assert.ok(tag, path);
      assert.notEqual(tag, (await as('writer', path)).headers.get('etag'), path);
      assert.equal((await as('reader', path, { 'if-none-match': tag })).status, 304, path);
      // And a writer after a reader still gets the templates (nothing cached across them).
      assert.ok(Object.keys((await expectForms(await as('writer', path)))['_templates'] as object).length > 0, path);
    }
  });

  test('a per-resource grant -> templates where it may write, none where it may only read', async () => {
    const s = await startWithTokens({ authenticator: scoped });
    const get = (path: string) => s.request(path, { headers: { ...forms, authorization: 'Bearer any' } });
    assert.deepEqual((await expectForms(await get('/products')))['_templates'], {});
    assert.deepEqual((await expectForms(await get('/products/p1')))['_templates'], {});
    assert.deepEqual(Object.keys((await expectForms(await get('/categories')))['_templates'] as object), ['default']);
    assert.deepEqual(Object.keys((await expectForms(await get('/categories/c1')))['_templates'] as object), ['default', 'update', 'delete']);
  });
});

describe('Ketting 8, an independent HAL-FORMS client', () => {
  test('its default action on /products creates; its default action on the entity replaces', async () => {
    const s = await start();
    const client = new Ketting(`${s.url}/`);
    const collection = await client.go('/products').get();
    const create = collection.action('default');
    assert.equal(create.method, 'POST');
    assert.deepEqual(
      create.fields.map((f) => [f.name, f.type, f.required]),
      PROPERTIES.map((p) => [p.name, p.options ? 'select' : p.type, p.required === true]),
    );
    await create.submit({ name: 'Floor lamp', price: 120, status: 'paused', category: 'c1' });
    const page = await (await s.request('/products?name=Floor%20lamp')).json();
    assert.equal(page.total, 1);
    const id = page._embedded.products[0].id as string;
    assert.deepEqual(page._embedded.products[0], {
      id,
      createdAt: T + 100,
      updatedAt: T + 100,
      name: 'Floor lamp',
      price: 120,
      status: 'paused',
      category: 'c1',
      _links: { self: { href: `/products/${id}` }, category: { href: '/categories/c1' }, products: { href: `/products?related=${id}` } },
    });

    const entity = await client.go(`/products/${id}`).get();
    const replace = entity.action('default');
    assert.equal(replace.method, 'PUT');
    assert.equal(replace.field('price')?.value, 120);
    // Fields not given are sent with the template's values, as Ketting does.
    await replace.submit({ name: 'Floor lamp XL', price: 150 });
    const replaced = await (await s.request(`/products/${id}`)).json();
    assert.equal(replaced.name, 'Floor lamp XL');
    assert.equal(replaced.price, 150);
    assert.equal(replaced.status, 'paused');
    assert.equal(replaced.category, 'c1');
  });

  test('a create the schema refuses -> Ketting throws the 400 problem with validationMessages', async () => {
    const s = await start();
    const client = new Ketting(`${s.url}/`);
    const create = (await client.go('/products').get()).action('default');
    await assert.rejects(create.submit({ name: 'x', price: -1 }), (error: unknown) => {
      const problem = error as { status?: number; response?: Response };
      assert.equal(problem.status, 400);
      return true;
    });
    assert.equal((await (await s.request('/products')).json()).total, 1);
  });
});
