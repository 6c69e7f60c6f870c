import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHandler } from '../../src/http/app.js';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { LIVENESS_MS, tempDir } from '../helpers/process.js';
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
      new Error('a store\'s changes are named "items", which no resource is served as ("products"): make each store with the name it is served under, e.g. createMemoryStore([], { resource: "products" }) or openJsonlStore({ file, resource: "products" })'),
    );
  });

  test('a JSON-lines store of data.jsonl served as things -> createHandler refuses, saying how to name a JSON-lines store', async () => {
    const store = await openJsonlStore({ file: join(await tempDir(), 'data.jsonl') });
    assert.throws(() => createHandler({ resources: [{ name: 'things', store }] }), /openJsonlStore\(\{ file, resource: "things" \}\)/);
    await store.close();
  });

  test('a memory store sharing a change log without its name -> refused when made (two such would mix their changes)', () => {
    const first = createMemoryStore([], { resource: 'products' });
    assert.throws(() => createMemoryStore([], { changes: first.changes }), /needs its name: createMemoryStore\(initial, \{ resource, changes \}\)/);
  });
});

describe("createHandler's options: what the CLI refuses in its flags is refused here, naming the option", () => {
  const store = () => createMemoryStore([], { resource: 'products' });
  const cases: [string, Parameters<typeof createHandler>[0], RegExp][] = [
    ['two resources of one name (the first would never be served)', { resources: [{ name: 'products', store: store() }, { name: 'products', store: store() }] }, /resource name "products" is given twice/],
    ['a reserved name (the feed would shadow the resource)', { resources: [{ name: 'changes', store: createMemoryStore() }] }, /resource name "changes" is reserved/],
    ['a name with a space (links no client can follow)', { resources: [{ name: 'my items', store: createMemoryStore() }] }, /invalid resource name "my items"/],
    ['basePath /商店 (no Link header can carry it)', { resources: [{ name: 'products', store: store() }], basePath: '/商店' }, /base path "\/商店" is not a URL path/],
    ['basePath /a?b', { resources: [{ name: 'products', store: store() }], basePath: '/a?b' }, /base path "\/a\?b" is not a URL path/],
    ['corsOrigin with a trailing slash (no Origin a browser sends matches it)', { resources: [{ name: 'products', store: store() }], corsOrigin: 'https://app.example/' }, /corsOrigin must be \* or an origin .* did you mean "https:\/\/app.example"\?/],
    ['maxBodyBytes -1', { resources: [{ name: 'products', store: store() }], maxBodyBytes: -1 }, /maxBodyBytes must be a whole number of at least 1, not -1/],
    ['maxBodyBytes NaN (every body taken, however large)', { resources: [{ name: 'products', store: store() }], maxBodyBytes: NaN }, /maxBodyBytes must be a whole number of at least 1, not NaN/],
    ['maxBodyValues 0', { resources: [{ name: 'products', store: store() }], maxBodyValues: 0 }, /maxBodyValues must be/],
    ['queryBudgetMs -5 (every sorted query a 503)', { resources: [{ name: 'products', store: store() }], queryBudgetMs: -5 }, /queryBudgetMs must be a number of milliseconds greater than 0, not -5/],
    ['rateLimitBurst 0.5 (no request ever let in)', { resources: [{ name: 'products', store: store() }], rateLimit: 5, rateLimitBurst: 0.5 }, /rateLimitBurst must be a number of requests of at least 1, not 0.5/],
    ['rateLimitBurst without rateLimit', { resources: [{ name: 'products', store: store() }], rateLimitBurst: 5 }, /rateLimitBurst needs rateLimit/],
    ['rateLimit NaN', { resources: [{ name: 'products', store: store() }], rateLimit: NaN }, /rateLimit must be a number of requests per second greater than 0, not NaN/],
  ];
  for (const [what, options, message] of cases) {
    test(`${what} -> createHandler throws`, () => {
      assert.throws(() => createHandler(options), message);
    });
  }

  test('an authenticator that is a function, not an object with authenticate -> createHandler throws, not a 500 per request', () => {
    const authenticator = (() => undefined) as unknown as Parameters<typeof createHandler>[0]['authenticator'];
    assert.throws(() => createHandler({ resources: [{ name: 'products', store: store() }], ...(authenticator ? { authenticator } : {}) }), /authenticator must be an object with an authenticate\(headers\) method/);
  });
});

describe('stopping an embedded server (README, "Embedding")', () => {
  test('closing signal, server.close(), the data directory closed -> the process exits by itself, after a stream, a rate limit and an Idempotency-Key', async () => {
    const dir = await tempDir();
    const index = fileURLToPath(new URL('../../src/index.ts', import.meta.url));
    // As an embedder writes it: no process.exit anywhere.
    const script = `
      import { createHalServer, openDataDir } from ${JSON.stringify(index)};
      const data = await openDataDir({ dir: ${JSON.stringify(dir)}, resources: ['products'], durability: 'full', repair: false, warn: () => {} });
      const closing = new AbortController();
      const server = createHalServer({ resources: [{ name: 'products', store: data.stores.get('products') }], tokens: ['secret'], rateLimit: 100, streams: { closing: closing.signal } });
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = 'http://127.0.0.1:' + server.address().port;
      const headers = { authorization: 'Bearer secret', 'content-type': 'application/json' };
      const created = await fetch(url + '/products', { method: 'POST', headers: { ...headers, 'idempotency-key': '"k"' }, body: '{}' });
      await created.text();
      const stream = await fetch(url + '/changes?since=0', { headers: { ...headers, accept: 'text/event-stream' } });
      const reader = stream.body.getReader();
      await reader.read();
      closing.abort();
      await new Promise((resolve) => server.close(resolve));
      await data.close();
      while (!(await reader.read()).done);
      console.log('closed', created.status);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), LIVENESS_MS);
    const code = await new Promise<number | string>((resolve) => child.once('exit', (exitCode, signal) => resolve(exitCode ?? signal ?? -1)));
    clearTimeout(timer);
    assert.equal(out.trim(), 'closed 201');
    assert.equal(code, 0);
  });
});
