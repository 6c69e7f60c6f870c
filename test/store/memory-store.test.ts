import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { record, storeSuite } from './store-suite.js';

storeSuite('memory store', { open: async () => createMemoryStore() });

test('memory store with initial records -> holds them in order', () => {
  const store = createMemoryStore([record('b'), record('a')]);
  assert.deepEqual(
    [...store.values()].map((e) => e.id),
    ['b', 'a'],
  );
});
