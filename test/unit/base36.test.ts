import assert from 'node:assert/strict';
import { test } from 'node:test';
import { base36 } from '../../src/structures/base36.js';

test('base36 writes the digits toString(36) writes, at the edges of its split and of 2^53', () => {
  const edges = [0, 1, 35, 36, 1295, 1296, 60_466_175, 60_466_176, 60_466_177, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 36 ** 6, 36 ** 10 - 1, 36 ** 10, 2 ** 53 - 1];
  for (const n of edges) assert.equal(base36(n), n.toString(36), String(n));
});

test('base36 writes the digits toString(36) writes for seeded 53-bit integers', () => {
  // A fixed sequence (xorshift), so a failure names a value that reproduces.
  let x = 0x2545f491;
  const next = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  for (let i = 0; i < 20_000; i++) {
    const n = 4294967296 * (next() & 0x1fffff) + next();
    assert.equal(base36(n), n.toString(36), String(n));
  }
});
