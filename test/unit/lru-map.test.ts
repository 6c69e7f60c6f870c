import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LruMap, type LruMapOptions } from '../../src/structures/lru-map.js';
import { prng } from '../helpers/prng.js';

/**
 * The eviction rule, written the naive way: a `Map` in order of use (a hit deletes and re-adds its
 * key), the oldest out first from the start. Slow on V8, but obviously right.
 */
class ReferenceLru<V> {
  readonly entries = new Map<string, { value: V; weight: number }>();
  weight = 0;
  readonly #maxEntries: number;
  readonly #maxWeight: number;
  readonly #maxEntryWeight: number;

  constructor(options: LruMapOptions) {
    this.#maxEntries = options.maxEntries;
    this.#maxWeight = options.maxWeight ?? Infinity;
    this.#maxEntryWeight = Math.min(options.maxEntryWeight ?? this.#maxWeight, this.#maxWeight);
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V, weight: number): boolean {
    this.delete(key);
    if (weight > this.#maxEntryWeight) return false;
    this.entries.set(key, { value, weight });
    this.weight += weight;
    for (const [oldest] of this.entries) {
      if (this.entries.size <= this.#maxEntries && this.weight <= this.#maxWeight) break;
      this.delete(oldest);
    }
    return true;
  }

  delete(key: string): boolean {
    const entry = this.entries.get(key);
    if (entry === undefined) return false;
    this.entries.delete(key);
    this.weight -= entry.weight;
    return true;
  }
}

const keysOf = (m: LruMap<unknown>, candidates: readonly string[]): string[] => candidates.filter((k) => m.peek(k) !== undefined);

describe('LruMap', () => {
  test('entries within both bounds -> all kept, weight counted', () => {
    const m = new LruMap<string>({ maxEntries: 10, maxWeight: 100 });
    assert.equal(m.set('a', 'x', 4), true);
    m.set('b', 'y', 6);
    assert.equal(m.get('a'), 'x');
    assert.equal(m.size, 2);
    assert.equal(m.weight, 10);
    assert.deepEqual(m.keys(), ['b', 'a']);
  });

  test('oldestKey, oldestValue and entries -> the order from the least recently used, unchanged by reading them or by peek', () => {
    const m = new LruMap<number>({ maxEntries: 10 });
    assert.equal(m.oldestKey(), undefined);
    assert.equal(m.oldestValue(), undefined);
    assert.deepEqual([...m.entries()], []);
    for (const [i, k] of ['a', 'b', 'c'].entries()) m.set(k, i);
    m.get('a');
    m.peek('b');
    assert.equal(m.oldestKey(), 'b');
    assert.equal(m.oldestValue(), 1);
    assert.equal(m.oldestKey(), 'b');
    assert.deepEqual([...m.entries()], [['b', 1], ['c', 2], ['a', 0]]);
    m.delete('b');
    assert.equal(m.oldestKey(), 'c');
    assert.equal(m.oldestValue(), 2);
    assert.deepEqual(m.keys(), ['c', 'a']);
  });

  test('past the weight bound -> the least recently used go first, until it fits', () => {
    const m = new LruMap<string>({ maxEntries: 100, maxWeight: 20 });
    for (const k of ['a', 'b', 'c', 'd']) m.set(k, k, 10);
    assert.deepEqual(m.keys(), ['c', 'd']);
    assert.equal(m.weight, 20);
  });

  test('past the entry bound -> the least recently used goes', () => {
    const m = new LruMap<number>({ maxEntries: 3 });
    for (const [i, k] of ['a', 'b', 'c', 'd'].entries()) m.set(k, i);
    assert.deepEqual(m.keys(), ['b', 'c', 'd']);
    assert.equal(m.size, 3);
  });

  test('get of an old entry -> it outlives the entries unused since', () => {
    const m = new LruMap<string>({ maxEntries: 2 });
    m.set('a', 'A');
    m.set('b', 'B');
    assert.equal(m.get('a'), 'A');
    m.set('c', 'C');
    assert.deepEqual(keysOf(m, ['a', 'b', 'c']), ['a', 'c']);
  });

  test('peek -> the order stays as it was', () => {
    const m = new LruMap<string>({ maxEntries: 2 });
    m.set('a', 'A');
    m.set('b', 'B');
    assert.equal(m.peek('a'), 'A');
    m.set('c', 'C');
    assert.deepEqual(keysOf(m, ['a', 'b', 'c']), ['b', 'c']);
  });

  test('set of a held key -> replaced in place, newest, weight follows', () => {
    const m = new LruMap<string>({ maxEntries: 3, maxWeight: 100 });
    m.set('a', '1', 1);
    m.set('b', '1', 1);
    m.set('a', '12345', 5);
    assert.deepEqual(m.keys(), ['b', 'a']);
    assert.equal(m.get('a'), '12345');
    assert.equal(m.weight, 6);
  });

  test('an entry heavier than maxEntryWeight -> not kept, and it drops the old value of its key', () => {
    const m = new LruMap<string>({ maxEntries: 10, maxWeight: 100, maxEntryWeight: 10 });
    m.set('b', 'kept', 4);
    m.set('a', 'short', 5);
    assert.equal(m.set('a', 'far too long a value', 20), false);
    assert.equal(m.peek('a'), undefined);
    assert.deepEqual(m.keys(), ['b']);
    assert.equal(m.weight, 4);
  });

  test('an entry as heavy as the whole bound -> kept alone', () => {
    const m = new LruMap<string>({ maxEntries: 10, maxWeight: 10 });
    m.set('a', 'a', 3);
    m.set('b', 'b', 10);
    assert.deepEqual(m.keys(), ['b']);
  });

  test('delete and clear -> size and weight follow; freed slots are reused', () => {
    const m = new LruMap<string>({ maxEntries: 3, maxWeight: 100 });
    m.set('a', 'A', 1);
    m.set('b', 'B', 2);
    assert.equal(m.delete('a'), true);
    assert.equal(m.delete('missing'), false);
    assert.equal(m.weight, 2);
    m.set('c', 'C', 3);
    m.set('d', 'D', 4);
    assert.deepEqual(m.keys(), ['b', 'c', 'd']);
    m.clear();
    assert.equal(m.size, 0);
    assert.equal(m.weight, 0);
    assert.equal(m.get('b'), undefined);
    m.set('e', 'E', 1);
    assert.deepEqual(m.keys(), ['e']);
  });

  test('maxEntries 0 -> RangeError', () => assert.throws(() => new LruMap({ maxEntries: 0 }), RangeError));

  test('one hot key read 100,000 times among 1,000 -> still one entry per key, the same value every time', () => {
    const m = new LruMap<{ n: number }>({ maxEntries: 1000 });
    const values = Array.from({ length: 1000 }, (_, n) => ({ n }));
    for (const [n, v] of values.entries()) m.set(`k${n}`, v);
    for (let i = 0; i < 100_000; i++) assert.equal(m.get('k500'), values[500]);
    assert.equal(m.size, 1000);
    assert.deepEqual(m.keys().at(-1), 'k500');
    assert.deepEqual(m.keys().slice(0, 2), ['k0', 'k1']);
  });

  // The rule against its naive statement, over random sequences of every operation: the same keys in
  // the same order after every step, bounds held after every step, and every read answering the
  // value last set under its key (a hit never changes what a reader gets).
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    test(`seed ${seed}: 5,000 random gets, sets (adds of keys not held), deletes -> the same order as the reference LRU, bounds held`, () => {
      const random = prng(seed);
      const options = { maxEntries: 1 + Math.floor(random() * 40), maxWeight: 10 + Math.floor(random() * 300), maxEntryWeight: 5 + Math.floor(random() * 60) };
      const m = new LruMap<{ key: string; version: number }>(options);
      const reference = new ReferenceLru<{ key: string; version: number }>(options);
      const lastSet = new Map<string, { key: string; version: number }>();
      const keyCount = 1 + Math.floor(random() * 80);
      for (let step = 0; step < 5_000; step++) {
        const key = `k${Math.floor(random() * keyCount)}`;
        const op = random();
        if (op < 0.5) {
          const got = m.get(key);
          assert.equal(got, reference.get(key));
          if (got !== undefined) assert.equal(got, lastSet.get(key));
        } else if (op < 0.9) {
          const value = { key, version: step };
          const weight = Math.floor(random() * 70);
          // A key not held is added either way: `add` (one look-up fewer) must do what `set` does.
          const absent = m.peek(key) === undefined;
          assert.equal(absent && random() < 0.5 ? m.add(key, value, weight) : m.set(key, value, weight), reference.set(key, value, weight));
          lastSet.set(key, value);
        } else if (op < 0.99) {
          assert.equal(m.delete(key), reference.delete(key));
        } else {
          assert.equal(m.peek(key), reference.entries.get(key)?.value);
        }
        assert.deepEqual(m.keys(), [...reference.entries.keys()]);
        assert.equal(m.weight, reference.weight);
        assert.ok(m.size <= options.maxEntries, `size ${m.size} over ${options.maxEntries}`);
        assert.ok(m.weight <= options.maxWeight, `weight ${m.weight} over ${options.maxWeight}`);
      }
    });
  }
});
