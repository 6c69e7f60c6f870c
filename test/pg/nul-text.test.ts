import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { relationGraph } from '../../src/conventions/relations.js';
import { compileSchema } from '../../src/conventions/schema.js';
import type { ServedResource } from '../../src/http/app.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { NUL_REFUSED } from '../../src/store/pg/nul-text.js';
import { StoreOpenError, type Store } from '../../src/store/store.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { freshDatabase, openStores, pgMissing } from './helpers.js';

/*
 * U+0000 over the PostgreSQL store (docs/storage.md §2, src/store/pg/nul-text.ts). PostgreSQL's text
 * cannot hold it, and its json operators refuse the escape `\u0000`: an id, a link or a linking
 * resource's body holding one failed the statement of the whole write batch, so the request and
 * every write batched with it were answered 500 or 503 ("try again later", which never helps).
 */

const SCHEMA_WITH_LINK = {
  type: 'object',
  properties: { category: { type: 'string', 'x-link': 'categories' }, tags: { type: 'array', items: { type: 'string' }, 'x-link': 'categories' } },
};
const JSON_BODY = { 'content-type': 'application/json' };

function resources(categories: Store, products: Store): ServedResource[] {
  return [
    { name: 'categories', store: categories },
    { name: 'products', store: products, schema: SCHEMA_WITH_LINK, validate: compileSchema(SCHEMA_WITH_LINK, 'products.schema.json') },
  ];
}
const GRAPH = relationGraph(resources(createMemoryStore(), createMemoryStore()));

/** A server over fresh PostgreSQL stores with the links kept, and one over memory stores (the in-process guard). */
async function servers(): Promise<{ pg: TestServer; memory: TestServer; url: string }> {
  const url = await freshDatabase();
  const opened = await openStores(url, ['categories', 'products']);
  const integrity = await opened.keepLinks(GRAPH);
  let ids = 0;
  const pg = await startServer({ resources: resources(opened.stores.get('categories')!, opened.stores.get('products')!), newId: () => `n${++ids}`, linkIntegrity: () => integrity });
  let memoryIds = 0;
  const memory = await startServer({ resources: resources(createMemoryStore(), createMemoryStore()), newId: () => `n${++memoryIds}` });
  return { pg, memory, url };
}

const post = (s: TestServer, path: string, body: string) => s.request(path, { method: 'POST', headers: JSON_BODY, body });

describe('U+0000 over the PostgreSQL store', { skip: pgMissing }, () => {
  test('an id holding U+0000: PUT, PATCH and DELETE are 404s as on files, and a write batched with one is made', async () => {
    const { pg, memory } = await servers();
    for (const s of [pg, memory]) assert.equal((await post(s, '/categories', '{"name":"lamps"}')).status, 201);
    for (const s of [memory, pg]) {
      // Sent together, so that on PostgreSQL they share a write batch.
      const answers = await Promise.all([
        s.request('/categories/a%00b', { method: 'PUT', headers: JSON_BODY, body: '{"name":"x"}' }),
        post(s, '/categories', '{"name":"desks"}'),
        s.request('/categories/n1', { method: 'PATCH', headers: JSON_BODY, body: '{"name":"Lamps"}' }),
        s.request('/categories/a%00b', { method: 'PATCH', headers: JSON_BODY, body: '{"name":"x"}' }),
        s.request('/categories/a%00b', { method: 'DELETE' }),
      ]);
      assert.deepEqual(
        answers.map((r) => r.status),
        [404, 201, 200, 404, 404],
      );
      assert.match(await answers[0]!.text(), /There is no categories entity with id \\"a\\\\u0000b\\"/);
    }
  });

  test('a link to an id holding U+0000 is refused with the 400 naming the field, as by the in-process guard', async () => {
    const { pg, memory } = await servers();
    for (const s of [pg, memory]) assert.equal((await post(s, '/categories', '{"name":"lamps"}')).status, 201);
    for (const body of ['{"category":"a\\u0000b"}', '{"tags":["n1","\\u0000"]}']) {
      const expected = await post(memory, '/products', body);
      const actual = await post(pg, '/products', body);
      assert.equal(expected.status, 400);
      assert.deepEqual({ status: actual.status, body: await actual.text() }, { status: 400, body: await expected.text() }, body);
    }
  });

  test('a linking resource’s body holding U+0000 or a lone surrogate: that write alone is a 400 naming the field; elsewhere the value is kept as acknowledged', async () => {
    const { pg, url } = await servers();
    const [refused, key, made] = await Promise.all([
      post(pg, '/products', '{"note":"a\\u0000b"}'),
      post(pg, '/products', '{"x":{"k\\u0000":1}}'),
      post(pg, '/products', '{"note":"fine, and a literal \\\\u0000 is no U+0000"}'),
    ]);
    assert.deepEqual({ status: refused.status, body: await refused.json() }, {
      status: 400,
      body: { type: 'http://www.w3.org/Protocols/rfc2616/rfc2616-sec10.html', title: 'Bad Request', detail: 'Validation failed', status: 400, validationMessages: { note: { type: NUL_REFUSED } } },
    });
    assert.deepEqual(((await key.json()) as { validationMessages: unknown }).validationMessages, { 'x.k\u0000': { type: NUL_REFUSED } });
    assert.equal(made.status, 201);
    // A lone surrogate is refused the same way (json's 22P02); a pair is a character like any other.
    const [lone, pair] = await Promise.all([post(pg, '/products', '{"note":["ok","\\udc00"]}'), post(pg, '/products', '{"note":"\\ud83d\\ude00"}')]);
    assert.deepEqual({ status: lone.status, messages: ((await lone.json()) as { validationMessages: unknown }).validationMessages }, { status: 400, messages: { 'note.1': { type: NUL_REFUSED } } });
    assert.equal(pair.status, 201);
    // A resource no link field reads stores the character, and a process loading the table reads it back as acknowledged.
    const created = await post(pg, '/categories', '{"name":"a\\u0000b","k\\u0000":"\\ud800"}');
    assert.equal(created.status, 201);
    const acknowledged = await created.text();
    const other = await openStores(url, ['categories', 'products']);
    const loaded = other.stores.get('categories')!.get(JSON.parse(acknowledged).id as string);
    assert.deepEqual(loaded?.record, JSON.parse(acknowledged, (k, v: unknown) => (k === '_links' ? undefined : v)));
  });

  test('a linking resource’s body holding U+0000 stored before its schema made the field a link: start-up refuses naming the entity, makes nothing; once it is removed, it starts', async () => {
    const url = await freshDatabase();
    const plain = await openStores(url, ['categories', 'products']);
    let ids = 0;
    const unlinked = await startServer({ resources: [{ name: 'categories', store: plain.stores.get('categories')! }, { name: 'products', store: plain.stores.get('products')! }], newId: () => `n${++ids}` });
    assert.equal((await post(unlinked, '/categories', '{"name":"lamps"}')).status, 201);
    assert.equal((await post(unlinked, '/products', '{"category":"n1"}')).status, 201);
    assert.equal((await post(unlinked, '/products', '{"category":"n1","note":"a\\u0000b"}')).status, 201);
    assert.equal((await post(unlinked, '/products', '{"category":"n1","x":["\\ud800"]}')).status, 201);
    // The schema now makes `category` a link: the index build reads every products body.
    const linked = await openStores(url, ['categories', 'products']);
    await assert.rejects(linked.keepLinks(GRAPH), (error: unknown) => {
      assert.ok(error instanceof StoreOpenError);
      assert.match(error.message, /^cannot prepare the relations' checks in PostgreSQL at .*: products "n3" holds U\+0000 at "note" \(and 1 more of products\), which PostgreSQL's json cannot read, so the index of the link field "category" cannot be built: remove it from the entity \(a PUT or PATCH through a server whose schema of products has no x-link yet\), then start again$/);
      assert.doesNotMatch(error.message, /\n/);
      return true;
    });
    const [made] = await linked.database.sql.unsafe<{ n: string }[]>(`SELECT count(*)::text AS n FROM pg_indexes WHERE schemaname = 'halserve' AND indexname LIKE 'link\\_%'`);
    assert.equal(made?.n, '0');
    // Removed as the message says, through the server whose schema has no link yet: the next start keeps the links.
    for (const id of ['n3', 'n4']) assert.equal((await unlinked.request(`/products/${id}`, { method: 'PUT', headers: JSON_BODY, body: '{"category":"n1"}' })).status, 200);
    const mended = await openStores(url, ['categories', 'products']);
    await mended.keepLinks(GRAPH);
  });
});
