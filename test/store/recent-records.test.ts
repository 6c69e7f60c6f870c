import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RecentRecords, type RecordHolder } from '../../src/store/log/recent-records.js';
import { WrittenEntity } from '../../src/store/log/jsonl-entity.js';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import type { EntityRecord } from '../../src/store/store.js';

/** A holder that notes when it lets go. */
class Holder implements RecordHolder {
  released = false;
  constructor(readonly n: number, readonly weight: number) {}
  releaseRecord(): void {
    assert.equal(this.released, false, `holder ${this.n} released twice`);
    this.released = true;
  }
}

/** Deterministic pseudo-random numbers (mulberry32). */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('RecentRecords', () => {
  test('any sequence of weights: the bounds in entries and bytes hold, the oldest let go first, each once', () => {
    for (const seed of [1, 2, 3]) {
      const random = prng(seed);
      const maxEntries = 1 + Math.floor(random() * 16);
      const maxBytes = 1 + Math.floor(random() * 400);
      const ring = new RecentRecords(maxEntries, maxBytes);
      const holders: Holder[] = [];
      for (let n = 0; n < 2000; n++) {
        const holder = new Holder(n, Math.floor(random() * random() * 500));
        assert.equal(ring.hold(holder, holder.weight), holder);
        holders.push(holder);
        assert.ok(ring.size <= maxEntries, `${ring.size} held, bound ${maxEntries}`);
        assert.ok(ring.bytes <= maxBytes, `${ring.bytes} bytes held, bound ${maxBytes}`);
        // Exactly the newest still-held ones hold: nobody newer than a released one was released earlier.
        const held = holders.filter((h) => !h.released);
        assert.equal(held.length, ring.size);
        assert.equal(held.reduce((sum, h) => sum + h.weight, 0), ring.bytes);
        const firstHeld = holders.findIndex((h) => !h.released);
        if (firstHeld >= 0) {
          for (const h of holders.slice(firstHeld)) assert.ok(!h.released || h.weight > maxBytes, `holder ${h.n} released before an older one`);
        }
      }
    }
  });

  test('an entity heavier than the byte bound is never held, and pushes nobody out', () => {
    const ring = new RecentRecords(4, 100);
    const light = ring.hold(new Holder(0, 60), 60);
    const heavy = ring.hold(new Holder(1, 101), 101);
    assert.equal(heavy.released, true);
    assert.equal(light.released, false);
    assert.equal(ring.size, 1);
    assert.equal(ring.bytes, 60);
  });

  test('no room at all: every holder lets go at once', () => {
    const ring = new RecentRecords(0, 100);
    assert.equal(ring.hold(new Holder(0, 1), 1).released, true);
    assert.equal(ring.size, 0);
  });
});

describe('WrittenEntity with its record', () => {
  const record: EntityRecord = { id: 'a', createdAt: 1, updatedAt: 2, name: 'x', nested: { deep: [1, { k: 'v' }] }, n: 3.5, flag: false };
  const json = JSON.stringify(record);

  test('record and valuesAt read the held record without a parse, the same values after it is released', () => {
    const entity = new WrittenEntity('a', json, undefined, record);
    const paths = [['name'], ['nested', 'deep'], ['nested', 'missing'], ['n', 'x'], ['flag'], ['constructor']];
    assert.equal(entity.record, record, 'held: the record written, not a copy');
    const held = entity.valuesAt(paths);
    assert.equal(held[1], record['nested'] && (record['nested'] as { deep: unknown }).deep);
    entity.releaseRecord();
    const parsed = entity.record;
    assert.notEqual(parsed, record);
    assert.deepEqual(parsed, record);
    assert.deepEqual(entity.valuesAt(paths), held);
    assert.deepEqual(held, ['x', [1, { k: 'v' }], undefined, undefined, false, undefined]);
  });
});

describe('the JSON-lines store holds the records it wrote', () => {
  const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const read = (store: { get(id: string): unknown }, id: string): EntityRecord => {
    const entity = store.get(id) as { record: EntityRecord } | undefined;
    assert.ok(entity !== undefined);
    return entity.record;
  };

  test('a created entity holds its record for its answer, until the next batch is applied', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-recent-'));
    const store = await openJsonlStore({ file: path.join(dir, 'items.jsonl'), durability: 'none' });
    try {
      const record: EntityRecord = { id: 'a', createdAt: 1, updatedAt: 1, tags: ['x'] };
      const entity = await store.create(record);
      assert.equal(entity.record, record, 'the answer reads the record written');
      await turn();
      assert.equal(entity.record, record, 'no batch since');
      await store.create({ id: 'b', createdAt: 1, updatedAt: 1 });
      assert.notEqual(entity.record, record, 'then released: parsed from its JSON');
      assert.deepEqual(entity.record, record);
    } finally {
      await store.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  test('an updated entity holds its record for its next update, until 1,024 later updates push it out', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-recent-'));
    const store = await openJsonlStore({ file: path.join(dir, 'items.jsonl'), durability: 'none' });
    try {
      await store.create({ id: 'hot', createdAt: 1, updatedAt: 1, stock: 0 });
      for (let n = 0; n < 1030; n++) await store.create({ id: `e${n}`, createdAt: 1, updatedAt: 1 });
      await turn();
      let made: EntityRecord | undefined;
      await store.update('hot', (current) => (made = { ...current.record, stock: 1 }));
      await turn();
      // The next update of the hot entity merges into the very record the last one wrote.
      await store.update('hot', (current) => {
        assert.equal(current.record, made);
        return (made = { ...current.record, stock: 2 });
      });
      await turn();
      assert.equal(read(store, 'hot'), made);
      for (let n = 0; n < 1024; n++) await store.update(`e${n}`, (current) => ({ ...current.record, updatedAt: 2 }));
      assert.notEqual(read(store, 'hot'), made, 'pushed out: parsed from its JSON');
      assert.deepEqual(read(store, 'hot'), made);
    } finally {
      await store.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
