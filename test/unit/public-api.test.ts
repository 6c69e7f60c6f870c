import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import * as halserve from '../../src/index.js';
// The types of what HandlerOptions and createMemoryStore take and give (README, "Embedding"): an
// embedder names them, so the package exports them (a missing one fails the type check).
import type { ChangeFeed, FeedPage, HandlerOptions, IdempotencyLedger, KeyedWrite, MemoryStoreOptions, StoredAnswer, StoreFs, StreamSettings, Validator, WriteOutcome } from '../../src/index.js';

test("the values README's Embedding section names -> exported by the package's entry point", () => {
  const named = [
    'createHandler', 'createHalServer', 'createMemoryStore', 'LocalChangeLog', 'compileSchema', 'collectionLinks', 'pageRange',
    'parsePageRequest', 'negotiate', 'problemDocument', 'HttpProblem', 'mergePatch', 'parseCollectionQuery', 'openDataDir',
    'openJsonlStore', 'declaredPaths', 'RelationError', 'localLinkIntegrity', 'composeAuthenticators', 'staticTokenAuthenticator',
  ];
  const missing = named.filter((name) => !(name in halserve));
  assert.deepEqual(missing, []);
});

test('a change log shared by two memory stores, typed with the exported names -> a ChangeFeed the handler takes', async () => {
  const changes: halserve.LocalChangeLog = new halserve.LocalChangeLog();
  const options: MemoryStoreOptions = { resource: 'products', changes };
  const products = halserve.createMemoryStore([], options);
  const orders = halserve.createMemoryStore([], { resource: 'orders', changes });
  const feed: ChangeFeed = changes;
  const streams: StreamSettings = {};
  const handler: HandlerOptions = { resources: [{ name: 'products', store: products }, { name: 'orders', store: orders }], changes: feed, streams };
  assert.equal(typeof halserve.createHandler(handler), 'function');
  const page: FeedPage = await feed.read(undefined, 10);
  assert.deepEqual(page.changes, []);
  const unused: StoreFs | Validator | undefined = undefined;
  assert.equal(unused, undefined);
});

test("an embedder's own store keeping Idempotency-Key answers (store.ts: the port's idempotency), from the package's names alone -> replays, and a reused key is a 422", async () => {
  const { createMemoryStore, KeyReusedError, KeyInFlightError, ReplayedAnswer } = halserve;
  const inner = createMemoryStore([], { resource: 'notes' });
  const answers = new Map<string, { fingerprint: string; answer: StoredAnswer }>();
  const held = new Set<string>();
  const record = (keyed: KeyedWrite, outcome: WriteOutcome): void => {
    const answer = keyed.answer(outcome);
    if (answer !== undefined) answers.set(keyed.key, { fingerprint: keyed.fingerprint, answer });
  };
  const idempotency: IdempotencyLedger = {
    claim(key, fingerprint) {
      const known = answers.get(key);
      if (known !== undefined) {
        if (known.fingerprint !== fingerprint()) throw new KeyReusedError('another body');
        return { kind: 'replay', answer: known.answer };
      }
      if (held.has(key)) throw new KeyInFlightError('in flight');
      held.add(key);
      return { kind: 'fresh', release: () => held.delete(key) };
    },
    async remember(keyed) {
      const known = answers.get(keyed.key);
      if (known !== undefined) throw new ReplayedAnswer(known.answer);
      record(keyed, { entity: undefined });
    },
  };
  const store: halserve.Store = {
    get size() {
      return inner.size;
    },
    get revision() {
      return inner.revision;
    },
    get ready() {
      return inner.ready;
    },
    get: (id) => inner.get(id),
    query: (query) => inner.query(query),
    async create(entity, keyed) {
      const created = await inner.create(entity);
      if (keyed !== undefined) record(keyed, { entity: created });
      return created;
    },
    update: (id, change) => inner.update(id, change),
    delete: (id, check) => inner.delete(id, check),
    follow: (listener) => inner.follow(listener),
    idempotency,
    close: () => inner.close(),
  };
  const server = createServer(halserve.createHandler({ resources: [{ name: 'notes', store }] }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/notes`;
    const post = (body: string): Promise<Response> => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': '"k"' }, body });
    const first = await post('{"n":1}');
    assert.equal(first.status, 201);
    const again = await post('{"n":1}');
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.equal(again.headers.get('location'), first.headers.get('location'));
    assert.equal((await post('{"n":2}')).status, 422);
    assert.equal(inner.size, 1);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
