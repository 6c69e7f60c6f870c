import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { randomId } from '../../src/conventions/id.js';

describe('randomId', () => {
  const ids = Array.from({ length: 20_000 }, () => randomId());

  test('16 base64url characters that decode to 12 bytes and encode back the same (RFC 4648 §5)', () => {
    for (const id of ids) {
      assert.match(id, /^[A-Za-z0-9_-]{16}$/);
      const bytes = Buffer.from(id, 'base64url');
      assert.equal(bytes.length, 12, id);
      assert.equal(bytes.toString('base64url'), id);
    }
  });

  test('20,000 ids across many refills of the pool -> all distinct', () => {
    assert.equal(new Set(ids).size, ids.length);
  });

  test('every one of the 96 bits is set in about half of them (a bit stuck or shifted would be 0% or 100%)', () => {
    const set = new Array<number>(96).fill(0);
    for (const id of ids) {
      const bytes = Buffer.from(id, 'base64url');
      for (let bit = 0; bit < 96; bit++) if ((bytes[bit >> 3]! >> (7 - (bit & 7))) & 1) set[bit]!++;
    }
    // 20,000 fair coins land within 45–55% except with a probability far below 1e-40.
    for (let bit = 0; bit < 96; bit++) assert.ok(set[bit]! > 9_000 && set[bit]! < 11_000, `bit ${bit}: ${set[bit]} of 20,000`);
  });
});
