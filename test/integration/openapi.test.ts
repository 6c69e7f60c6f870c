import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { compileSchema } from '../../src/conventions/schema.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { Conformance } from '../helpers/openapi.js';
import { startServer } from '../helpers/server.js';

/** The demo catalogue's schema: a real one, with required fields, enums, patterns and a nested object (read only). */
const SCHEMA = JSON.parse(readFileSync(new URL('../../data/products.schema.json', import.meta.url), 'utf8')) as Record<string, unknown>;
const PRODUCT = {
  sku: 'LMP-00001',
  name: 'Desk lamp',
  brand: 'Lumo',
  category: 'lighting',
  price: 39.9,
  currency: 'EUR',
  stock: 4,
  status: 'active',
  tags: ['desk'],
  dimensions: { width: 15, height: 40, depth: 15, weight: 1.2 },
  description: 'A lamp.',
};
const WRITE = { authorization: 'Bearer w' };
const READ = { authorization: 'Bearer r' };
const JSON_WRITE = { ...WRITE, 'content-type': 'application/json' };

const s = await startServer({
      resources: [
        { name: 'products', store: createMemoryStore(), validate: compileSchema(SCHEMA, 'products.schema.json'), schema: SCHEMA },
        { name: 'categories', store: createMemoryStore([{ id: 'lighting', createdAt: 1, updatedAt: 1, name: 'Lighting' }]) },
        { name: 'notes', store: createMemoryStore() },
      ],
      tokens: ['w', 'read:r'],
      rateLimit: 1000,
      maxBodyBytes: 4096,
    });
const first = await s.request('/openapi.json', { headers: READ });
assert.equal(first.status, 200);
const doc = (await first.json()) as Record<string, unknown>;
const conformance = new Conformance(doc);

describe('GET /openapi.json (docs/conventions.md §4.1)', () => {
  test('the document -> valid OpenAPI 3.1 for an independent validator (@seriousme/openapi-schema-validator)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
    assert.equal(validator.version, '3.1');
  });

  test('the document -> every route and method, unprefixed and under /v1; filters with every operator; bearer scheme; seed 409 and 415 examples', () => {
    const paths = doc['paths'] as Record<string, Record<string, unknown>>;
    for (const path of ['/', '/products', '/products/{id}', '/categories', '/categories/{id}', '/notes', '/notes/{id}', '/ping', '/me', '/metrics', '/openapi.json', '/healthz', '/readyz']) {
      assert.ok(paths[path], path);
      assert.ok(paths[path === '/' ? '/v1' : `/v1${path}`], `/v1${path}`);
    }
    assert.deepEqual(Object.keys(paths['/products/{id}'] ?? {}).filter((k) => k !== 'parameters'), ['get', 'put', 'patch', 'delete', 'head', 'options']);
    assert.deepEqual(Object.keys(paths['/products'] ?? {}), ['get', 'post', 'head', 'options']);
    const names = ((paths['/products']?.['get'] as { parameters: { name?: string; $ref?: string }[] }).parameters).map((p) => p.name ?? p.$ref);
    for (const name of ['#/components/parameters/page', '#/components/parameters/limit', '#/components/parameters/sort', '#/components/parameters/q', 'price', 'price[eq]', 'price[ne]', 'price[gt]', 'price[gte]', 'price[lt]', 'price[lte]', 'description[exists]', 'dimensions.weight[lte]', 'createdAt[gte]']) {
      assert.ok(names.includes(name), name);
    }
    const components = doc['components'] as { securitySchemes: unknown; responses: Record<string, { content: Record<string, { example: unknown }> }> };
    assert.deepEqual(Object.keys(components.securitySchemes as object), ['bearer']);
    assert.deepEqual(components.responses['Problem409']?.content['application/problem+json']?.example, {
      type: 'http://www.w3.org/Protocols/rfc2616/rfc2616-sec10.html', title: 'Conflict', detail: 'requested page is out of range', status: 409, pages: 15, page: 999,
    });
    assert.deepEqual(components.responses['Problem415']?.content['application/problem+json']?.example, {
      type: 'http://www.w3.org/Protocols/rfc2616/rfc2616-sec10.html', title: 'Unsupported Media Type', detail: 'Expecting one of the application/json', status: 415,
    });
  });

  test('relations (docs/relations.md) -> embed on the entity and collection GETs of linked resources only; each rel in _links and _embedded', () => {
    const paths = doc['paths'] as Record<string, Record<string, { parameters?: { name?: string; description?: string }[] }>>;
    const embedOf = (path: string, method = 'get'): { name?: string; description?: string } | undefined => paths[path]?.[method]?.parameters?.find((p) => p.name === 'embed');
    assert.match(embedOf('/products')?.description ?? '', /`category`/);
    assert.match(embedOf('/products/{id}')?.description ?? '', /`category`/);
    assert.match(embedOf('/categories/{id}')?.description ?? '', /`products`/);
    assert.equal(embedOf('/notes'), undefined);
    const schemas = (doc['components'] as { schemas: Record<string, { properties: Record<string, { properties?: Record<string, unknown> }> }> }).schemas;
    assert.deepEqual(Object.keys(schemas['products.Entity']?.properties['_links']?.properties ?? {}), ['self', 'category']);
    assert.deepEqual(Object.keys(schemas['categories.Entity']?.properties['_links']?.properties ?? {}), ['self', 'products']);
    assert.deepEqual(schemas['products.Entity']?.properties['_embedded']?.properties, { category: { oneOf: [{ $ref: '#/components/schemas/categories.Entity' }, { type: 'null' }] } });
    assert.deepEqual(schemas['categories.Entity']?.properties['_embedded']?.properties, { products: { $ref: '#/components/schemas/products.Page' } });
  });

  test('a field named like a reserved parameter (page) -> filtered as page[eq] only: no operation lists two parameters of one name and location (OpenAPI 3.1, Operation Object)', async () => {
    const schema = { type: 'object', properties: { page: { type: 'string', 'x-link': 'pages' }, sort: { type: 'integer' } } };
    const wiki = await startServer({ resources: [{ name: 'pages', store: createMemoryStore() }, { name: 'comments', store: createMemoryStore(), schema }] });
    type Parameter = { name?: string; in?: string; $ref?: string };
    const document = (await (await wiki.request('/openapi.json')).json()) as { paths: Record<string, Record<string, { parameters?: Parameter[] }>>; components: { parameters: Record<string, Parameter> } };
    const resolve = (p: Parameter): Parameter => (p.$ref === undefined ? p : (document.components.parameters[p.$ref.split('/').pop() ?? ''] ?? {}));
    const names = (document.paths['/comments']?.['get']?.parameters ?? []).map((p) => `${resolve(p).in}:${resolve(p).name}`);
    assert.deepEqual(names.filter((n, i) => names.indexOf(n) !== i), []);
    assert.ok(names.includes('query:page[eq]') && names.includes('query:sort[eq]') && names.includes('query:page'));
  });

  test('resources whose names differ only in - and _ -> distinct components and operations, still valid', async () => {
    const twins = await startServer({ resources: [{ name: 'a-b', store: createMemoryStore() }, { name: 'a_b', store: createMemoryStore() }] });
    const document = (await (await twins.request('/openapi.json')).json()) as { components: { schemas: Record<string, unknown> } };
    assert.ok(document.components.schemas['a-b.Entity'] && document.components.schemas['a_b.Entity']);
    const result = await new Validator().validate(document as unknown as Record<string, unknown>);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
  });

  test('ETag -> If-None-Match gives 304', async () => {
    const res = await s.request('/openapi.json', { headers: READ });
    const etag = res.headers.get('etag') ?? '';
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
    assert.equal((await s.request('/v1/openapi.json', { headers: { ...READ, 'if-none-match': etag } })).status, 304);
  });

  test('responses of every kind -> status declared and body valid against the declared schema', async () => {
    const seen: string[] = [];
    const call = async (method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Response> => {
      const res = await s.request(path, { method, headers, ...(body === undefined ? {} : { body }) });
      const text = await res.text();
      conformance.check(method, path, res.status, res.headers.get('content-type'), text);
      seen.push(`${method} ${res.status}`);
      return new Response(text === '' ? null : text, { status: res.status, headers: res.headers });
    };
    const created = await call('POST', '/products', JSON_WRITE, JSON.stringify(PRODUCT));
    assert.equal(created.status, 201);
    const id = ((await created.json()) as { id: string }).id;
    await call('POST', '/v1/notes', JSON_WRITE, '{"text":"hi","nested":{"a":[1]}}');
    await call('GET', '/');
    await call('GET', '/', READ);
    await call('GET', '/products', READ);
    await call('GET', '/v1/products?limit=1&sort=-price&status=active,paused&price[gte]=1&q=lamp', READ);
    await call('GET', '/notes', { ...READ, accept: 'application/json' });
    await call('GET', `/products/${id}`, READ);
    // HAL-FORMS asked where there are no templates: the 406 is declared.
    for (const path of ['/metrics', '/openapi.json', '/healthz', '/readyz']) await call('GET', path, { ...READ, accept: 'application/prs.hal-forms+json' });
    // HAL-FORMS, for a resource whose schema allows no other member: _templates is declared.
    await call('GET', `/products/${id}`, { ...READ, accept: 'application/prs.hal-forms+json' });
    await call('GET', '/products', { ...READ, accept: 'application/prs.hal-forms+json' });
    // What a client read, sent back: the server-managed members are declared as ignored.
    const read = (await (await s.request(`/products/${id}`, { headers: READ })).json()) as Record<string, unknown>;
    conformance.checkRequest('PUT', `/products/${id}`, 'application/json', read);
    await call('PUT', `/products/${id}`, JSON_WRITE, JSON.stringify(read));
    const etag = (await s.request(`/products/${id}`, { headers: READ })).headers.get('etag') ?? '';
    await call('GET', `/products/${id}`, { ...READ, 'if-none-match': etag });
    await call('GET', '/products?page=999', READ);
    await call('GET', '/products?limit=x', READ);
    await call('GET', '/products/nope', READ);
    await call('GET', '/products', { ...READ, accept: 'image/png' });
    await call('POST', '/products', JSON_WRITE, JSON.stringify({ ...PRODUCT, price: -1, sku: 'bad' }));
    await call('POST', '/products', READ, '{}');
    await call('POST', '/products', { ...WRITE, 'content-type': '' }, '{}');
    await call('POST', '/products', JSON_WRITE, JSON.stringify({ pad: 'x'.repeat(5000) }));
    await call('PATCH', `/products/${id}`, { ...WRITE, 'content-type': 'application/merge-patch+json' }, '{"stock":3}');
    await call('PUT', `/products/${id}`, JSON_WRITE, JSON.stringify({ ...PRODUCT, stock: 1 }));
    await call('PUT', `/products/${id}`, { ...JSON_WRITE, 'if-match': '"nope"' }, JSON.stringify(PRODUCT));
    await call('GET', '/ping');
    await call('GET', '/me', READ);
    await call('GET', '/me');
    await call('GET', '/healthz');
    await call('GET', '/readyz');
    await call('GET', '/metrics', READ);
    // docs/relations.md: links, embeds (forward, reverse, on entities and pages), a dangling link, a delete refused.
    await call('GET', `/products/${id}?embed=category`, READ);
    await call('GET', '/products?embed=category&limit=2', READ);
    await call('GET', '/categories/lighting?embed=products', READ);
    await call('GET', '/v1/categories?embed=products', READ);
    await call('GET', '/categories?embed=nope', READ);
    await call('POST', '/products', JSON_WRITE, JSON.stringify({ ...PRODUCT, category: 'nowhere' }));
    await call('DELETE', '/categories/lighting', WRITE);
    await call('DELETE', `/products/${id}`, WRITE);
    await call('DELETE', `/products/${id}`, WRITE);
    await call('PATCH', '/products', JSON_WRITE, '{}');
    await call('HEAD', `/products?limit=2`, READ);
    await call('HEAD', '/v1/me', READ);
    await call('OPTIONS', '/products', READ);
    await call('OPTIONS', '/v1/products/x', READ);
    await call('OPTIONS', '/ping');
    for (const expected of ['POST 201', 'GET 200', 'GET 304', 'GET 409', 'GET 400', 'GET 404', 'GET 406', 'GET 401', 'POST 400', 'POST 403', 'POST 415', 'POST 413', 'PATCH 200', 'PUT 200', 'PUT 412', 'DELETE 204', 'DELETE 404', 'DELETE 409', 'PATCH 405', 'HEAD 200', 'OPTIONS 204']) {
      assert.ok(seen.includes(expected), `${expected} not exercised: ${seen.join(', ')}`);
    }
  });

  test('the conformance check itself -> refuses a body off its schema, an undeclared status and an undeclared media type', () => {
    assert.throws(() => conformance.check('GET', '/products/x', 200, 'application/hal+json', '{"id":1}'), /GET \/products\/x 200/);
    assert.throws(() => conformance.check('GET', '/ping', 404, 'application/problem+json', '{}'), /does not declare 404/);
    assert.throws(() => conformance.check('GET', '/products/x', 200, 'text/html', '<p>'), /does not declare text\/html/);
    assert.throws(() => conformance.check('GET', '/v1/notes/x', 404, 'application/problem+json', '{"title":"Not Found"}'), /404/);
  });

  test('over the rate limit -> 429 declared and conforming', async () => {
    const limited = await startServer({ resources: [{ name: 'notes', store: createMemoryStore() }], rateLimit: 1, rateLimitBurst: 1 });
    const document = (await (await limited.request('/openapi.json')).json()) as Record<string, unknown>;
    const res = await limited.request('/notes');
    assert.equal(res.status, 429);
    new Conformance(document).check('GET', '/notes', 429, res.headers.get('content-type'), await res.text());
  });
});
