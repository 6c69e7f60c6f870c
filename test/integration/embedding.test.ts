import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createHandler } from '../../src/http/app.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { startServer } from '../helpers/server.js';

/**
 * README, "Embedding": memory stores served by `createHandler`, and the change feed they make
 * (docs/changes.md): list, then watch must meet the collection's own writes.
 */

const json = { 'content-type': 'application/json' };

describe('memory stores served by createHandler: their changes name the resource they are served as', () => {
  test("createMemoryStore() served as products (README's example) -> its events name products; the collection's changes link finds its writes", async () => {
    const s = await startServer({ resources: [{ name: 'products', store: createMemoryStore() }] });
    const listed = await (await s.request('/products')).json();
    const changes = listed._links.changes.href as string;
    assert.match(changes, /^\/changes\?since=0&resource=products$/);
    assert.equal((await s.request('/products', { method: 'POST', headers: json, body: '{"name":"a"}' })).status, 201);
    const page = await (await s.request(changes)).json();
    assert.deepEqual(
      page._embedded.changes.map((c: { resource: string; type: string }) => [c.resource, c.type]),
      [['products', 'created']],
    );
    const all = await (await s.request('/changes')).json();
    assert.deepEqual(all._embedded.changes.map((c: { resource: string }) => c.resource), ['products']);
  });

  test('two memory stores sharing one change log, each made with its name -> one feed of both', async () => {
    const products = createMemoryStore([], { resource: 'products' });
    const orders = createMemoryStore([], { resource: 'orders', changes: products.changes });
    const s = await startServer({ resources: [{ name: 'products', store: products }, { name: 'orders', store: orders }] });
    await s.request('/products', { method: 'POST', headers: json, body: '{"name":"a"}' });
    await s.request('/orders', { method: 'POST', headers: json, body: '{"n":1}' });
    const all = await (await s.request('/changes')).json();
    assert.deepEqual(all._embedded.changes.map((c: { resource: string }) => c.resource), ['products', 'orders']);
  });

  test('a store named for its changes as one resource and served as another -> createHandler refuses, saying how to name it', () => {
    assert.throws(
      () => createHandler({ resources: [{ name: 'products', store: createMemoryStore([], { resource: 'items' }) }] }),
      new Error('a store\'s changes are named "items", which no resource is served as ("products"): make each store with the name it is served under, e.g. createMemoryStore([], { resource: "products" })'),
    );
  });

  test('a memory store sharing a change log without its name -> refused when made (two such would mix their changes)', () => {
    const first = createMemoryStore([], { resource: 'products' });
    assert.throws(() => createMemoryStore([], { changes: first.changes }), /needs its name: createMemoryStore\(initial, \{ resource, changes \}\)/);
  });
});
