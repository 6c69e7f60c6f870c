import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_BACKOFF, retryDelay } from '../../src/webhooks/backoff.js';

describe('retryDelay (exponential backoff with equal jitter)', () => {
  for (const [retry, low, high] of [
    [1, 2_500, 5_000],
    [2, 5_000, 10_000],
    [3, 10_000, 20_000],
    [7, 150_000, 300_000],
    [8, 150_000, 300_000],
    [100, 150_000, 300_000],
  ] as const) {
    test(`retry ${retry} -> between ${low} and ${high} ms`, () => {
      assert.equal(retryDelay(retry, () => 0), low);
      assert.equal(retryDelay(retry, () => 0.999999), high);
      assert.equal(retryDelay(retry, () => 0.5), Math.round(low + (high - low) / 2));
    });
  }

  test('the first retry comes within 5 s and no wait exceeds 5 minutes, whatever the random draw', () => {
    let seed = 1;
    const random = (): number => ((seed = (seed * 48271) % 2147483647) / 2147483647);
    for (let i = 0; i < 1000; i++) {
      assert.ok(retryDelay(1, random) <= DEFAULT_BACKOFF.firstMs);
      assert.ok(retryDelay(1 + (i % 40), random) <= DEFAULT_BACKOFF.capMs);
    }
  });

  test('a policy of its own (tests) -> the same shape at its scale', () => {
    assert.deepEqual([1, 2, 3, 4].map((n) => retryDelay(n, () => 0, { firstMs: 20, capMs: 50 })), [10, 20, 25, 25]);
  });

  test('retry 0 or below -> treated as the first', () => assert.equal(retryDelay(0, () => 0), 2_500));
});
