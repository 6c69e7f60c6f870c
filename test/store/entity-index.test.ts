import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EntityIndex, hashId, hashIdBytes } from '../../src/store/index/entity-index.js';

interface Item {
  id: string;
  n: number;
}

/** A tiny deterministic PRNG, so that a failure reproduces. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

test('20000 random sets, replaces, deletes and re-adds -> page, get and values match an array model', () => {
  const index = new EntityIndex<Item>();
  const model: Item[] = [];
  const rand = random(42);
  let next = 0;
  const deleted: string[] = [];
  for (let step = 0; step < 20_000; step++) {
    const r = rand();
    if (r < 0.5 || model.length === 0) {
      // Sometimes an id comes back after its delete: it goes to the end.
      const reuse = deleted.length > 0 && rand() < 0.2;
      const item = { id: reuse ? deleted.splice(Math.floor(rand() * deleted.length), 1)[0]! : `i${next++}`, n: 0 };
      assert.equal(index.has(item.id), false);
      index.set(item);
      model.push(item);
    } else if (r < 0.7) {
      const at = Math.floor(rand() * model.length);
      const item = { id: model[at]!.id, n: step };
      index.set(item);
      model[at] = item;
    } else {
      // Deletes cluster at the front sometimes, so that long runs of holes form.
      const at = rand() < 0.5 ? 0 : Math.floor(rand() * model.length);
      assert.equal(index.delete(model[at]!.id), true);
      assert.equal(index.delete(model[at]!.id), false);
      deleted.push(model[at]!.id);
      model.splice(at, 1);
    }
    if (step % 997 === 0) {
      assert.equal(index.size, model.length);
      for (let offset = 0; offset <= model.length; offset += 13) {
        assert.deepEqual(index.page(offset, 17), model.slice(offset, offset + 17));
      }
    }
  }
  assert.deepEqual([...index.values()], model);
  for (const item of model) assert.equal(index.get(item.id), item);
  for (const id of deleted) assert.equal(index.get(id), undefined);
  assert.equal(index.delete('absent'), false);
});

test('offset past the end, negative offset or non-positive limit -> empty page', () => {
  const index = new EntityIndex<Item>();
  for (let i = 0; i < 5; i++) index.set({ id: `x${i}`, n: i });
  assert.deepEqual(index.page(5, 10), []);
  assert.deepEqual(index.page(-1, 10), []);
  assert.deepEqual(index.page(0, 0), []);
  assert.deepEqual(index.page(Number.NaN, 3), []);
});

test('delete all but the last of 5000 -> page 0 is that one, after a re-pack', () => {
  const index = new EntityIndex<Item>();
  for (let i = 0; i < 5000; i++) index.set({ id: `y${i}`, n: i });
  for (let i = 0; i < 4999; i++) index.delete(`y${i}`);
  assert.deepEqual(index.page(0, 3), [{ id: 'y4999', n: 4999 }]);
  // The id table was rebuilt with the moved slots.
  assert.deepEqual(index.get('y4999'), { id: 'y4999', n: 4999 });
  assert.equal(index.get('y17'), undefined);
  index.set({ id: 'y4999', n: -1 });
  index.set({ id: 'z', n: 0 });
  assert.deepEqual(index.page(0, 3), [{ id: 'y4999', n: -1 }, { id: 'z', n: 0 }]);
  index.clear();
  assert.equal(index.size, 0);
  assert.deepEqual(index.page(0, 3), []);
});

test('ASCII id bytes -> the same hash as the string; non-ASCII -> undefined (hash the string)', () => {
  for (const id of ['a', 'AbC-_09xyzXYZ1234', '']) {
    const bytes = Buffer.from(`"${id}"`);
    assert.equal(hashIdBytes(bytes, 1, bytes.length - 1), hashId(id));
  }
  assert.equal(hashIdBytes(Buffer.from('é'), 0, 2), undefined);
});

test('set with a precomputed hash -> found by get, replaced in place by a later set', () => {
  const index = new EntityIndex<Item>();
  for (let i = 0; i < 3000; i++) index.set({ id: `h${i}`, n: i }, hashId(`h${i}`));
  index.set({ id: 'h5', n: -5 }, hashId('h5'));
  assert.equal(index.size, 3000);
  assert.deepEqual(index.get('h5'), { id: 'h5', n: -5 });
  assert.deepEqual(index.page(5, 1), [{ id: 'h5', n: -5 }]);
});

test('an entity that tells its own id (hasId) is asked instead of building .id, and is told apart from one of the same hash', () => {
  /** An entity whose `id` getter must never run on a lookup: it counts the calls. */
  class Telling {
    readonly #id: string;
    built = 0;
    constructor(id: string) {
      this.#id = id;
    }
    get id(): string {
      this.built++;
      return this.#id;
    }
    hasId(id: string): boolean {
      return id === this.#id;
    }
  }
  const index = new EntityIndex<Telling>();
  const entities = Array.from({ length: 2000 }, (_, i) => new Telling(`t${i}`));
  for (const e of entities) index.set(e);
  for (const e of entities) e.built = 0;
  for (let i = 0; i < 2000; i++) assert.equal(index.get(`t${i}`), entities[i]);
  assert.equal(index.get('t2000'), undefined);
  assert.equal(entities.reduce((n, e) => n + e.built, 0), 0);
  // Two ids of one hash (found by search: 32 bits collide within ~100,000 ids) share a probe run,
  // and only the id comparison tells them apart.
  const seen = new Map<number, string>();
  let pair: [string, string] | undefined;
  for (let i = 0; pair === undefined; i++) {
    const id = `c${i}`;
    const other = seen.get(hashId(id));
    if (other !== undefined) pair = [other, id];
    else seen.set(hashId(id), id);
  }
  const twins = new EntityIndex<Telling>();
  const [first, second] = pair.map((id) => new Telling(id)) as [Telling, Telling];
  twins.set(first);
  assert.equal(twins.get(pair[1]), undefined);
  twins.set(second);
  assert.equal(twins.size, 2);
  assert.equal(twins.get(pair[0]), first);
  assert.equal(twins.get(pair[1]), second);
});
