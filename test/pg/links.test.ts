import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import postgres from 'postgres';
import { relationGraph } from '../../src/conventions/relations.js';
import { compileSchema } from '../../src/conventions/schema.js';
import type { ServedResource } from '../../src/http/app.js';
import { StillLinkedError } from '../../src/store/integrity.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { SCHEMA } from '../../src/store/pg/layout.js';
import { linkIndex } from '../../src/store/pg/link-layout.js';
import type { EntityRecord, Store } from '../../src/store/store.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { freshDatabase, openStores, pgMissing, type Opened } from './helpers.js';

/*
 * docs/relations.md over the PostgreSQL store: links checked in the database. The conversation of the
 * relations tests, once over memory stores (the in-process guard) and once over PostgreSQL (the
 * write function): every answer the same, byte for byte — the 400s naming each missing link, the
 * 409s with their referencedBy counts and hrefs, a dangling link loaded from the data left alone.
 */

const T = 1_700_000_000;
const rec = (id: string, n: number, fields: Record<string, unknown>): EntityRecord => ({ id, createdAt: T + n, updatedAt: T + n, ...fields });
const PRODUCT_SCHEMA = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string' },
    category: { type: 'string', 'x-link': 'categories' },
    related: { type: 'array', items: { type: 'string' }, 'x-link': 'products' },
  },
};
const CATEGORIES = [rec('c1', 0, { name: 'Lamps' }), rec('c2', 1, { name: 'Desks' }), rec('c3', 2, { name: 'Empty' })];
const PRODUCTS = [
  rec('p1', 10, { name: 'Desk lamp', category: 'c1', related: ['p2', 'p3'] }),
  rec('p2', 11, { name: 'Floor lamp', category: 'c1' }),
  rec('p3', 12, { name: 'Oak desk', category: 'c2', related: [] }),
  // As loaded from data written without the schema: links to a category and a product that are not there.
  rec('p4', 13, { name: 'Orphan', category: 'gone', related: ['p1', 'missing'] }),
];
const JSON_BODY = { 'content-type': 'application/json' };
const MERGE = { 'content-type': 'application/merge-patch+json' };

function resources(categories: Store, products: Store): ServedResource[] {
  return [
    { name: 'categories', store: categories },
    { name: 'products', store: products, schema: PRODUCT_SCHEMA, validate: compileSchema(PRODUCT_SCHEMA, 'products.schema.json') },
  ];
}
const GRAPH = relationGraph(resources(createMemoryStore(), createMemoryStore()));

/** A server whose clock and new ids are the same sequence on every run. */
function serve(served: ServedResource[], extra: Parameters<typeof startServer>[0] extends infer O ? Partial<O> : never = {}): Promise<TestServer> {
  let ids = 0;
  let clock = 1_800_000_000;
  return startServer({ resources: served, now: () => clock++, newId: () => `n${String(++ids).padStart(15, '0')}`, ...extra });
}

/** The PostgreSQL stores of a fresh database holding the fixture (written before the checks exist, dangling links included). */
async function seeded(url?: string): Promise<{ opened: Opened; url: string }> {
  const at = url ?? (await freshDatabase());
  const opened = await openStores(at, ['categories', 'products']);
  if (url === undefined) {
    for (const r of CATEGORIES) await opened.stores.get('categories')!.create(r);
    for (const r of PRODUCTS) await opened.stores.get('products')!.create(r);
  }
  return { opened, url: at };
}

async function pgServer(opened: Opened): Promise<TestServer> {
  const integrity = await opened.keepLinks(GRAPH);
  return serve(resources(opened.stores.get('categories')!, opened.stores.get('products')!), { linkIntegrity: () => integrity });
}

interface Exchange {
  readonly request: string;
  readonly status: number;
  readonly body: string;
}

async function converse(s: TestServer): Promise<Exchange[]> {
  const out: Exchange[] = [];
  const tags = new Map<string, string>();
  const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = JSON_BODY): Promise<void> => {
    const res = await s.request(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const etag = res.headers.get('etag');
    if (etag) tags.set(path, etag);
    out.push({ request: `${method} ${path}`, status: res.status, body: await res.text() });
  };
  await send('POST', '/products', { name: 'Lamp', category: 'nope', related: ['p1', 'zz'] });
  await send('POST', '/products', { name: 'Lamp', category: 'c2', related: ['p1'] });
  await send('PUT', '/products/p2', { name: 'Floor lamp', category: 'nope' });
  // A PUT that restates a stored dangling link is refused as the in-process guard refuses it.
  await send('PUT', '/products/p4', { name: 'Orphan', category: 'c1', related: ['p1', 'missing'] });
  // A PUT to a missing id linking nowhere: the 404 before the 400 (docs/relations.md §4), as for a PATCH.
  await send('PUT', '/products/none', { name: 'x', category: 'nope' });
  await send('PATCH', '/products/p1', { related: ['p2', 'nope'] }, MERGE);
  await send('PATCH', '/products/p4', { name: 'Renamed' }, MERGE);
  await send('PATCH', '/products/none', { category: 'c1' }, MERGE);
  await send('DELETE', '/categories/c1');
  await send('DELETE', '/products/p2');
  await send('DELETE', '/products/p3');
  await send('GET', '/categories/c3');
  await send('DELETE', '/categories/c3', undefined, { 'if-match': '"stale"' });
  await send('PATCH', '/products/p1', { category: 'c3' }, MERGE);
  await send('DELETE', '/categories/c3');
  await send('PATCH', '/products/p1', { category: null, related: [] }, MERGE);
  await send('DELETE', '/categories/c3', undefined, { 'if-match': tags.get('/categories/c3')! });
  await send('PATCH', '/products/p2', { category: 'c3' }, MERGE);
  // An entity that links to itself does not keep itself alive.
  await send('PATCH', '/products/p3', { related: ['p3'] }, MERGE);
  await send('DELETE', '/products/p3');
  await send('PUT', '/products/p2', { name: 'Floor lamp', category: 'c2', related: ['n000000000000001'] });
  await send('DELETE', '/products/n000000000000001');
  await send('DELETE', '/categories/c2');
  await send('GET', '/products?limit=50');
  await send('GET', '/categories');
  return out;
}

describe('links over the PostgreSQL store (docs/relations.md, §8a)', { skip: pgMissing }, () => {
  test('the relations conversation -> the same answers as over memory stores (400 naming each missing link, 409 with referencedBy, stored dangling links left alone)', async () => {
    const expected = await converse(await serve(resources(createMemoryStore(CATEGORIES), createMemoryStore(PRODUCTS))));
    const { opened } = await seeded();
    const actual = await converse(await pgServer(opened));
    assert.equal(actual.length, expected.length);
    actual.forEach((exchange, i) => assert.deepEqual(exchange, expected[i], `exchange ${i}: ${exchange.request}`));
    // The conversation did what it says.
    assert.deepEqual(
      actual.map((e) => e.status),
      [400, 201, 400, 400, 404, 400, 200, 404, 409, 409, 409, 200, 412, 200, 409, 200, 204, 400, 200, 204, 200, 409, 409, 200, 200],
    );
  });

  test('a category another process created a moment ago -> a link to it is accepted before this process has seen it', async () => {
    const { opened, url } = await seeded();
    const other = await openStores(url, ['categories', 'products']);
    await other.keepLinks(GRAPH);
    const s = await pgServer(opened);
    await other.stores.get('categories')!.create(rec('fresh', 20, { name: 'Fresh' }));
    const res = await s.request('/products', { method: 'POST', headers: JSON_BODY, body: '{"name":"x","category":"fresh"}' });
    assert.equal(res.status, 201);
  });

  test('a delete on one process while another holds a link to the category -> 409 from the database, counted there', async () => {
    const { opened, url } = await seeded();
    const other = await openStores(url, ['categories', 'products']);
    await other.keepLinks(GRAPH);
    await pgServer(opened);
    // Written through the other process's store: this process's index has not seen it.
    await other.stores.get('products')!.create(rec('p9', 30, { name: 'Late', category: 'c3' }));
    await assert.rejects(opened.stores.get('categories')!.delete('c3'), (error: unknown) => {
      assert.ok(error instanceof StillLinkedError);
      assert.deepEqual(error.referrers, [{ source: 'products', field: 'category', count: 1 }]);
      return true;
    });
  });

  test('the checks\' indexes -> created once per link field, used by the delete\'s count', async () => {
    const { opened, url } = await seeded();
    await pgServer(opened);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const names = [linkIndex({ source: 'products', field: 'category', many: false }).name, linkIndex({ source: 'products', field: 'related', many: true }).name];
      const found = await sql<{ indexname: string }[]>`SELECT indexname FROM pg_indexes WHERE schemaname = ${SCHEMA} AND indexname IN ${sql(names)}`;
      assert.deepEqual(found.map((r) => r.indexname).sort(), [...names].sort());
      // Enough products that a scan would cost more than the index: the planner's choice shows it can use them.
      await sql.unsafe(`INSERT INTO ${SCHEMA}.entities (resource, id, pos, rev, body)
        SELECT 'products', 'bulk' || i, 1000 + i, 1, json_build_object('id', 'bulk' || i, 'name', 'n', 'category', 'c' || (i % 500), 'related', json_build_array('r' || i))::text
        FROM generate_series(1, 20000) i`);
      await sql.unsafe(`ANALYZE ${SCHEMA}.entities`);
      const plan = await sql.unsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN SELECT count(*) FROM ${SCHEMA}.entities WHERE resource = 'products' AND body IS NOT NULL AND (body::json ->> 'category') = 'c1'`);
      assert.match(plan.map((r) => r['QUERY PLAN']).join('\n'), new RegExp(names[0]!));
      const many = await sql.unsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN SELECT count(*) FROM ${SCHEMA}.entities WHERE resource = 'products' AND body IS NOT NULL AND ((body::json -> 'related')::jsonb) @> jsonb_build_array('p2'::text)`);
      assert.match(many.map((r) => r['QUERY PLAN']).join('\n'), new RegExp(names[1]!));
    } finally {
      await sql.end();
    }
  });
});
