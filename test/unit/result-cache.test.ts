import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ResultCache } from '../../src/store/index/result-cache.js';

test('empty results under long keys -> weighed by their keys: the first is let go before 6,000 of 6,000-character keys are kept', () => {
  const cache = new ResultCache();
  cache.revise('r1');
  const key = (i: number): string => `${i}:${'z'.repeat(6000)}`;
  const empty = new Int32Array(0);
  cache.keep(key(0), empty);
  assert.equal(cache.matches(key(0)), empty);
  for (let i = 1; i < 6000; i++) cache.keep(key(i), empty);
  // 64 MiB over (12,000 + entry) bytes each: about 5,500 fit.
  assert.equal(cache.matches(key(0)), undefined);
  assert.equal(cache.matches(key(5999)), empty);
});

test('a result of rows -> kept until the revision moves', () => {
  const cache = new ResultCache();
  cache.revise('r1');
  const rows = Int32Array.from([3, 1, 2]);
  cache.keep('q', rows);
  cache.revise('r1');
  assert.equal(cache.matches('q'), rows);
  cache.revise('r2');
  assert.equal(cache.matches('q'), undefined);
});
