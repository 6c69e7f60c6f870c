import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OrderedRows } from '../../src/store/index/ordered-rows.js';
import { Postings } from '../../src/store/index/postings.js';
import { RowSet } from '../../src/store/index/row-set.js';
import { runSliced, type Slice, type Work } from '../../src/store/index/slices.js';
import { QueryTimeoutError } from '../../src/store/store.js';

let seed = 99;
const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) >>> 8) % n;

describe('RowSet: sorted rows', () => {
  test('random adds and removes -> same members, in order, as a model Set', () => {
    const set = new RowSet();
    const model = new Set<number>();
    for (let i = 0; i < 20_000; i++) {
      const row = rnd(3000);
      if (rnd(3) === 0) {
        set.remove(row);
        model.delete(row);
      } else {
        set.add(row);
        model.add(row);
      }
    }
    assert.deepEqual([...set.view()], [...model].sort((a, b) => a - b));
    assert.equal(set.size, model.size);
    const sorted = [...model].sort((a, b) => a - b);
    assert.equal(set.rank(sorted[10]!), 10);
    assert.equal(set.has(sorted[10]!), true);
  });
  test('remap with a monotone map -> renumbered, still sorted', () => {
    const set = RowSet.fromSorted(Int32Array.of(2, 5, 9));
    set.remap(Int32Array.of(0, 0, 0, 0, 0, 1, 0, 0, 0, 2));
    assert.deepEqual([...set.view()], [0, 1, 2]);
  });
});

describe('OrderedRows: rows in a comparator order, in chunks', () => {
  test('20,000 inserts and removes -> same order, ranks and rankWhere as a sorted model', () => {
    const values = new Map<number, number>();
    const compare = (a: number, b: number): number => values.get(a)! - values.get(b)! || a - b;
    const order = new OrderedRows(compare);
    const model: number[] = [];
    for (let row = 0; row < 20_000; row++) {
      if (rnd(4) === 0 && model.length > 0) {
        const gone = model.splice(rnd(model.length), 1)[0]!;
        assert.equal(order.remove(gone), true);
        values.delete(gone);
      } else {
        values.set(row, rnd(100));
        order.insert(row);
        model.push(row);
      }
    }
    assert.ok(model.length > 5000, 'enough rows to split chunks many times');
    model.sort(compare);
    assert.equal(order.size, model.length);
    assert.deepEqual([...order.ranks(0, order.size)], model);
    assert.deepEqual([...order.ranks(order.size, 0)], [...model].reverse());
    assert.deepEqual([...order.copy(10, 300)], model.slice(10, 300));
    assert.deepEqual([...order.copy(10, order.size + 50)], model.slice(10));
    assert.equal(order.at(4321), model[4321]);
    const below50 = model.filter((row) => values.get(row)! < 50).length;
    assert.equal(order.rankWhere((row) => (values.get(row)! < 50 ? -1 : 1)), below50);
  });
  test('load a sorted array -> the same rows at every rank', () => {
    const order = new OrderedRows((a, b) => a - b);
    order.load(Int32Array.from({ length: 2000 }, (_, i) => i));
    assert.equal(order.at(1999), 1999);
    order.insert(5000);
    assert.equal(order.at(2000), 5000);
  });
});

describe('Postings: a bare number for one row, a set for more', () => {
  test('add, count, rows, remove -> counts follow, a key with no rows disappears', () => {
    const postings = new Postings();
    postings.add('a', 5);
    assert.deepEqual([...postings.rows('a')!], [5]);
    postings.add('a', 2);
    postings.add('a', 9);
    assert.equal(postings.count('a'), 3);
    assert.deepEqual([...postings.rows('a')!], [2, 5, 9]);
    postings.remove('a', 5);
    postings.remove('a', 2);
    assert.deepEqual([...postings.rows('a')!], [9]);
    postings.remove('a', 9);
    assert.equal(postings.count('a'), 0);
    assert.equal(postings.rows('a'), undefined);
    assert.equal(postings.distinct, 0);
  });
});

describe('runSliced: long work in turns of the event loop', () => {
  function* count(to: number, slice: Slice): Work<number> {
    let n = 0;
    for (let i = 0; i < to; i++) {
      n++;
      if (i % 100 === 0 && slice.due) yield;
    }
    return n;
  }
  test('work that fits one slice -> the value, synchronously', () => {
    assert.equal(runSliced((slice) => count(10, slice)), 10);
  });
  test('work that yields -> a Promise, and a timer fires between its slices', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const result = runSliced(function* (slice): Work<number> {
      const end = performance.now() + 60;
      while (performance.now() < end) if (slice.due) yield;
      return 1;
    });
    assert.ok(result instanceof Promise);
    assert.equal(await result, 1);
    clearInterval(timer);
    assert.ok(ticks > 3, `${ticks} timer ticks during 60 ms of sliced work`);
  });
  test('past the deadline -> QueryTimeoutError', async () => {
    const result = runSliced(function* (slice): Work<number> {
      for (;;) if (slice.due) yield;
    }, performance.now() + 20);
    await assert.rejects(Promise.resolve(result), QueryTimeoutError);
  });
});
