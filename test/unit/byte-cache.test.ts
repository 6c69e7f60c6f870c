import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ByteCache } from '../../src/http/byte-cache.js';

/** A cache of strings whose size is the key's length plus the value's. */
const cache = (maxBytes: number, maxEntryBytes = maxBytes): ByteCache<string> => new ByteCache<string>(maxBytes, maxEntryBytes, (k, v) => k.length + v.length);
const keys = (c: ByteCache<string>, candidates: readonly string[]): string[] => candidates.filter((k) => c.get(k) !== undefined);

describe('ByteCache', () => {
  test('entries within the bound -> all kept, bytes counted', () => {
    const c = cache(100);
    c.set('a', 'xxxx');
    c.set('b', 'yyyy');
    assert.equal(c.get('a'), 'xxxx');
    assert.equal(c.bytes, 10);
  });

  test('past the bound -> the oldest entries go first, until it fits', () => {
    const c = cache(20);
    for (const k of ['a', 'b', 'c', 'd']) c.set(k, '123456789'); // 10 bytes each
    assert.deepEqual(keys(c, ['a', 'b', 'c', 'd']), ['c', 'd']);
    assert.equal(c.bytes, 20);
  });

  test('touch -> that entry is evicted last', () => {
    const c = cache(20);
    c.set('a', '123456789');
    c.set('b', '123456789');
    c.touch('a', c.get('a')!);
    c.set('c', '123456789');
    assert.deepEqual(keys(c, ['a', 'b', 'c']), ['a', 'c']);
  });

  test('an entry larger than maxEntryBytes -> not kept, and it drops the old value of its key', () => {
    const c = cache(100, 10);
    c.set('a', 'short');
    c.set('a', 'far too long a value');
    assert.equal(c.get('a'), undefined);
    assert.equal(c.bytes, 0);
  });

  test('replace, delete, clear -> bytes follow', () => {
    const c = cache(100);
    c.set('a', '1');
    c.set('a', '12345');
    assert.equal(c.bytes, 6);
    c.set('b', '1');
    c.delete('a');
    c.delete('missing');
    assert.equal(c.bytes, 2);
    c.clear();
    assert.equal(c.bytes, 0);
    assert.equal(c.get('b'), undefined);
  });
});
