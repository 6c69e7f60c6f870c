import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as halserve from '../../src/index.js';
// The types of what HandlerOptions and createMemoryStore take and give (README, "Embedding"): an
// embedder names them, so the package exports them (a missing one fails the type check).
import type { ChangeFeed, FeedPage, HandlerOptions, MemoryStoreOptions, StoreFs, StreamSettings, Validator } from '../../src/index.js';

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
