import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OrderedRows } from '../../src/store/index/ordered-rows.js';
import { Postings } from '../../src/store/index/postings.js';
import { RowSet } from '../../src/store/index/row-set.js';
import { RESTARTS_BEFORE_WHOLE, runSliced, Slice, WHOLE_MAX_MS, type Work } from '../../src/store/index/slices.js';
import { FieldIndex } from '../../src/store/index/field-index.js';
import { facetCounts } from '../../src/store/index/facet-counts.js';
import { anyOf, intersection } from '../../src/store/index/row-lists.js';
import { CodeTally, NO_ROW, ValueColumn } from '../../src/store/index/value-column.js';
import { compareCells, orderRows, rankStarts } from '../../src/store/index/row-sort.js';
import { CHECK_EVERY } from '../../src/store/index/slices.js';
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
    const block = new Int32Array(700);
    assert.equal(order.copyInto(block, 1000), 700);
    assert.deepEqual([...block], model.slice(1000, 1700));
    assert.equal(order.copyInto(block, order.size - 5), 5);
    assert.deepEqual([...block.subarray(0, 5)], model.slice(-5));
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

describe('ValueColumn: values by row in typed arrays', () => {
  test('every kind of value -> read back as it was set; holes and absent paths apart', () => {
    const column = new ValueColumn();
    const object = { a: 1 };
    const array = [1, 'x'];
    const values = [3.25, -0, 'active', null, true, false, undefined, object, array, NO_ROW, 'active', 1e21];
    for (const value of values) column.push(value);
    values.forEach((value, row) => assert.equal(column.get(row), value, `row ${row}`));
    assert.equal(Object.is(column.get(1), -0), true);
    assert.equal(column.get(values.length), NO_ROW);
    assert.equal(column.number(0), 3.25);
    assert.ok(Number.isNaN(column.number(2)));
    assert.deepEqual([0, 3, 6, 9].map((row) => column.present(row)), [true, true, false, false]);
    assert.equal(column.live, values.length - 1);
    assert.equal(column.numeric, false);
  });
  test('rewrites past the interned strings -> cells reused, values stay right', () => {
    const column = new ValueColumn();
    const model: unknown[] = [];
    for (let i = 0; i < 70_000; i++) {
      column.push(`s${i}`);
      model.push(`s${i}`);
    }
    for (let i = 0; i < 50_000; i++) {
      const row = rnd(70_000);
      const value = rnd(4) === 0 ? rnd(1000) : rnd(4) === 0 ? { k: i } : `t${rnd(100_000)}`;
      column.set(row, value);
      model[row] = value;
    }
    model.forEach((value, row) => assert.deepEqual(column.get(row), value, `row ${row}`));
  });
  test('equal arrays and objects -> one shared copy; a rewrite leaves the others as they were', () => {
    const column = new ValueColumn();
    column.push(['usb-c', 'eco']);
    column.push(['usb-c', 'eco']);
    column.push({ w: 1 });
    column.push({ w: 1 });
    assert.equal(column.get(0), column.get(1));
    assert.equal(column.get(2), column.get(3));
    column.set(0, ['eco']);
    assert.deepEqual(column.get(1), ['usb-c', 'eco']);
    assert.deepEqual(column.get(0), ['eco']);
  });
  test('numbers only -> numeric; remap moves every value to its new row', () => {
    const column = new ValueColumn();
    for (const value of [5, 7, NO_ROW, 9]) column.push(value);
    assert.equal(column.numeric, true);
    column.remap(Int32Array.of(0, 1, 0, 2), 3);
    assert.deepEqual([0, 1, 2].map((row) => column.get(row)), [5, 7, 9]);
    assert.equal(column.length, 3);
  });
  test('a tally of 100,000 distinct strings -> its values given one at a time: the first read after a few counts, not after all of them', () => {
    const column = new ValueColumn();
    for (let i = 0; i < 100_000; i++) column.push(`code-${i}`);
    column.push(7);
    const tally = new CodeTally();
    column.tally(tally, undefined, 0, column.length);
    // Every count the listing reads (a facet of a unique field at a million rows read them all,
    // and made an entry of each, before it could give up the loop).
    let reads = 0;
    const counts = tally.counts;
    tally.counts = new Proxy(counts, {
      get(target, key) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const entries = column.tallied(tally)[Symbol.iterator]();
    assert.deepEqual(entries.next().value, ['code-0', 1]);
    assert.ok(reads <= 8, `${reads} counts read for the first value`);
    let rest = 1;
    let last: unknown;
    for (let next = entries.next(); next.done !== true; next = entries.next()) {
      rest++;
      last = next.value;
    }
    assert.equal(rest, 100_001);
    assert.deepEqual(last, [7, 1]);
  });
});

describe('FieldIndex: eq from the value order', () => {
  test('scalars and arrays -> the rows of each text, in creation order', () => {
    const field = new FieldIndex(['v']);
    const values = [0, '0', -0, [0, 'a'], 'a', null, Infinity, { b: 1 }, true, 'true', [true]];
    for (const v of values) field.fill(v);
    const slice = new Slice(1e9);
    for (const _ of field.build(slice));
    const rowsOf = (text: string): number[] => {
      const { ranges, lists, count } = field.equalRows([text]);
      const rows = [...ranges.flatMap(([lo, hi]) => [...field.order.copy(lo, hi)]), ...lists.flatMap((l) => [...l])].sort((a, b) => a - b);
      assert.equal(rows.length, count);
      return rows;
    };
    assert.deepEqual(rowsOf('0'), [0, 1, 2, 3]);
    assert.deepEqual(rowsOf('a'), [3, 4]);
    assert.deepEqual(rowsOf('null'), [5, 6]);
    assert.deepEqual(rowsOf('{"b":1}'), [7]);
    assert.deepEqual(rowsOf('true'), [8, 9, 10]);
    assert.deepEqual(rowsOf('{"b": 1}'), []);
  });
});

describe('facetCounts: a field of arrays over every row', () => {
  /** Each value's count (an array's distinct elements once each), by count descending, then null before strings, then by text: at most 50. */
  const naive = (values: readonly unknown[]): { value: unknown; count: number }[] => {
    const counts = new Map<unknown, number>();
    for (const value of values) {
      if (value === undefined || value === NO_ROW) continue;
      for (const element of new Set(Array.isArray(value) ? value : [value])) counts.set(element, (counts.get(element) ?? 0) + 1);
    }
    const rank = (v: unknown): string => (v === null ? '0' : `1${String(v)}`);
    return [...counts].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || (rank(a.value) < rank(b.value) ? -1 : 1)).slice(0, 50);
  };
  const counted = (field: FieldIndex): { value: unknown; count: number }[] => {
    const work = facetCounts(field, undefined, field.column.length, new Slice(1e9));
    for (let step = work.next(); ; step = work.next()) if (step.done === true) return step.value;
  };

  test('arrays of strings only, strings and null beside them, holes -> each value counted from the element postings, no array read; an array holding a number -> counted from the arrays again', () => {
    let reads = 0;
    // Counts every element read of the arrays the column holds.
    const watched = (array: unknown[]): unknown[] =>
      new Proxy(array, {
        get(target, key, receiver) {
          if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
    const values: unknown[] = [];
    for (let i = 0; i < 3000; i++) {
      if (i % 50 === 0) values.push(NO_ROW);
      else if (i % 20 === 0) values.push(i % 40 === 0 ? 'red' : null);
      else if (i % 17 === 0) values.push(undefined);
      else if (i % 13 === 0) values.push(watched([]));
      // Repeats within an array, more than 50 values, many ties.
      else values.push(watched([`t${(i * 7) % 90}`, i % 3 === 0 ? 'red' : 'blue', `t${(i * 7) % 90}`, `u${i % 400}`]));
    }
    const field = new FieldIndex(['tags']);
    for (const value of values) field.fill(value);
    for (const _ of field.build(new Slice(1e9)));
    const before = naive(values);
    reads = 0;
    assert.deepEqual(counted(field), before);
    assert.equal(reads, 0, 'elements read while counting');
    // A number among the elements: a posting's key no longer tells "3" from 3.
    field.apply(1, { tags: watched(['3', 3, 'red']) });
    values[1] = ['3', 3, 'red'];
    const mixed = naive(values);
    reads = 0;
    assert.deepEqual(counted(field), mixed);
    assert.ok(reads > 0);
    // Gone again: counted from the postings, and the same counts as before it came.
    field.apply(1, { tags: watched(['3', 'red']) });
    values[1] = ['3', 'red'];
    const after = naive(values);
    reads = 0;
    assert.deepEqual(counted(field), after);
    assert.equal(reads, 0, 'elements read while counting');
  });
});

describe('orderRows: the rows of a column in (value, row) order', () => {
  const reference = (column: ValueColumn): number[] => {
    const rows: number[] = [];
    for (let row = 0; row < column.length; row++) if (column.get(row) !== NO_ROW) rows.push(row);
    return rows.sort((a, b) => compareCells(column.get(a), column.get(b)) || a - b);
  };
  const order = (column: ValueColumn): number[] => {
    const work = orderRows(column, new Slice(1e9));
    for (;;) {
      const step = work.next();
      if (step.done) return [...step.value];
    }
  };

  test('strings, arrays, objects, literals, absent values and holes, with equal values past the interning bound -> as compareCells orders them, ties by row', () => {
    const column = new ValueColumn();
    // Past 65,536 distinct strings and arrays, a value gets a cell of its own, so equal values
    // set later hold other cells: they must still sort as one value, their rows mixed by row.
    const array = (m: number): unknown[] => [`e${m}`, (4 * m + 1) % 3];
    const other = [{ k: 1 }, null, true, false, undefined, NO_ROW, 'a', ['a'], { k: [2] }];
    for (let j = 0; j < 280_000; j++) column.push(j % 2 === 0 ? `s${j >> 1}` : j % 4 === 1 ? array(j >> 2) : other[(j >> 2) % other.length]);
    for (let i = 0; i < 6000; i++) {
      const row = rnd(column.length);
      column.set(row, i % 3 === 0 ? `s${100_000 + rnd(40_000)}` : i % 3 === 1 ? array(66_000 + rnd(4000)) : other[rnd(other.length)]);
    }
    assert.deepEqual(order(column), reference(column));
  });

  test('the places of 100,000 values in value order -> the clock looked at every CHECK_EVERY values, and yielded to when due: never all in one slice', () => {
    // At a million distinct arrays (tags) this loop ran whole after the sort: ~250 ms in one slice.
    const n = 100_000;
    const sorted = Int32Array.from({ length: n }, (_, i) => i);
    const rowsByCode = new Uint32Array(n).fill(2);
    let compared = 0;
    // Codes 2k and 2k + 1 hold one value (equal texts past the interning bound).
    const sameValue = (a: number, b: number): boolean => {
      compared++;
      return a >> 1 === b >> 1;
    };
    // A slice due at every look at the clock: it yields at each one.
    let now = 0;
    const work = rankStarts(sorted, rowsByCode, sameValue, new Slice(0, () => now++));
    let most = 0;
    let step = work.next();
    let before = 0;
    for (; step.done !== true; step = work.next()) {
      most = Math.max(most, compared - before);
      before = compared;
    }
    most = Math.max(most, compared - before);
    assert.ok(most <= CHECK_EVERY, `${most} values compared in one slice`);
    const [first, starts, at] = step.value;
    assert.equal(at, 2 * n);
    for (let code = 0; code < n; code++) {
      assert.equal(first[code], code & ~1);
      if (code % 2 === 0) assert.equal(starts[code], 2 * code);
    }
  });

  test('20,000 distinct numbers -> their rows gathered for the sort with the clock looked at every CHECK_EVERY rows, not all in one slice', () => {
    let reads = 0;
    class Counted extends ValueColumn {
      override get(row: number): unknown {
        reads++;
        return super.get(row);
      }
    }
    const column = new Counted();
    for (let i = 0; i < 20_000; i++) column.push(i % 7 === 0 ? NO_ROW : (i * 7919) % 20_011);
    let now = 0;
    const work = orderRows(column, new Slice(0, () => now++));
    let most = 0;
    let before = 0;
    let step = work.next();
    for (; step.done !== true; step = work.next()) {
      most = Math.max(most, reads - before);
      before = reads;
    }
    most = Math.max(most, reads - before);
    assert.ok(most <= CHECK_EVERY + 1, `${most} rows read in one slice`);
    assert.deepEqual([...step.value], reference(column));
  });

  test('numbers among other values, and numbers alone -> the same order as the reference', () => {
    const mixed = new ValueColumn();
    const only = new ValueColumn();
    for (let i = 0; i < 20_000; i++) {
      mixed.push([rnd(100), `n${rnd(100)}`, null, [rnd(3)], NO_ROW][i % 5]);
      only.push(i % 9 === 0 ? NO_ROW : rnd(1000) - 500);
    }
    assert.deepEqual(order(mixed), reference(mixed));
    assert.deepEqual(order(only), reference(only));
  });
});

describe('row lists: unions and intersections of sorted rows', () => {
  const sortedSample = (count: number, slots: number): Int32Array => Int32Array.from(new Set(Array.from({ length: count }, () => rnd(slots)))).sort();
  for (const [lists, size, slots] of [
    [3, 100, 1000],
    [40, 200, 5000],
    [5, 40_000, 100_000],
  ] as const) {
    test(`${lists} lists of up to ${size} rows over ${slots} slots -> every row once, in order`, () => {
      const parts = Array.from({ length: lists }, () => sortedSample(size, slots));
      const total = parts.reduce((n, p) => n + p.length, 0);
      const expected = [...new Set(parts.flatMap((p) => [...p]))].sort((a, b) => a - b);
      const work = anyOf(parts, total, slots, new Slice(1e9));
      let step = work.next();
      while (!step.done) step = work.next();
      assert.deepEqual([...step.value], expected);
      const both = new Set(parts[1]);
      assert.deepEqual([...intersection(parts[0]!, parts[1]!)], [...parts[0]!].filter((row) => both.has(row)));
    });
  }
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
    // A clock that stands still: the slice is never used up, however busy the machine.
    assert.equal(runSliced((slice) => count(1000, slice), Infinity, () => 0, () => 0), 1000);
  });
  /** A clock that moves 1 ms each time it is read: every slice is due at its first check. */
  const ticking = (): (() => number) => {
    let now = 0;
    return () => ++now;
  };
  test('work that yields -> a Promise, and callbacks queued meanwhile run between its slices', async () => {
    const order: string[] = [];
    // A callback that queues itself again on every turn of the event loop, until the work is done.
    let done = false;
    const turn = (): void => {
      order.push('turn');
      if (!done) setImmediate(turn);
    };
    setImmediate(turn);
    const result = runSliced(
      function* (slice): Work<number> {
        for (let i = 0; i < 4; i++) {
          order.push(`slice ${i}`);
          while (!slice.due);
          yield;
        }
        return 1;
      },
      Infinity,
      () => 0,
      ticking(),
    );
    assert.ok(result instanceof Promise);
    assert.equal(await result, 1);
    done = true;
    const slices = order.filter((step) => step !== 'turn');
    assert.deepEqual(slices, ['slice 0', 'slice 1', 'slice 2', 'slice 3']);
    // Between any two slices, the other callback had its turn.
    for (let i = 1; i < slices.length; i++) {
      const between = order.slice(order.indexOf(slices[i - 1]!) + 1, order.indexOf(slices[i]!));
      assert.ok(between.includes('turn'), `nothing ran between ${slices[i - 1]} and ${slices[i]}: ${order.join(', ')}`);
    }
  });
  test('past the deadline -> QueryTimeoutError', async () => {
    const result = runSliced(
      function* (slice): Work<number> {
        for (;;) if (slice.due) yield;
      },
      20,
      () => 0,
      ticking(),
    );
    await assert.rejects(Promise.resolve(result), QueryTimeoutError);
  });
  /** A work of `slices` slices, each one a step named `name i` in `order`. */
  const named = (order: string[], name: string, slices: number) =>
    function* (slice: Slice): Work<string> {
      for (let i = 0; i < slices; i++) {
        order.push(`${name} ${i}`);
        while (!slice.due);
        if (i < slices - 1) yield;
      }
      return name;
    };
  /**
   * A work of `slices` slices of 1 ms each (a clock only the slices move) under `revision`, each
   * attempt's steps named `attempt <n> <i>`; `started` hears the revision each attempt begins on.
   */
  const attempted = (order: string[], slices: number, revision: () => string, started: (revision: string) => void = () => {}): string | Promise<string> => {
    let attempts = 0;
    let now = 0;
    const work = function* (name: string): Work<string> {
      for (let i = 0; i < slices; i++) {
        order.push(`${name} ${i}`);
        now += 1;
        if (i < slices - 1) yield;
      }
      return name;
    };
    return runSliced(() => work(`attempt ${++attempts}`), Infinity, () => 0, () => now, 'foreground', revision, started);
  };
  /** A write in every turn of the event loop from turn `after` on: the revision it moves, and how to stop. */
  const writesEveryTurn = (after = 0): { revision: () => string; stop: () => void } => {
    let revision = 0;
    let turns = 0;
    let writing = true;
    const write = (): void => {
      if (++turns > after) revision++;
      if (writing) setImmediate(write);
    };
    setImmediate(write);
    return { revision: () => String(revision), stop: () => (writing = false) };
  };
  test('a revision that moves between two slices -> the work starts over; once it holds through a whole attempt, that attempt\'s value', async () => {
    const order: string[] = [];
    let revision = 1;
    // A write lands in the turn after the first attempt's first slice (queued before it), then none.
    setImmediate(() => revision++);
    assert.equal(await attempted(order, 3, () => String(revision)), 'attempt 2');
    assert.deepEqual(order, ['attempt 1 0', 'attempt 2 0', 'attempt 2 1', 'attempt 2 2']);
  });
  test(`writes between every two slices -> started over ${RESTARTS_BEFORE_WHOLE} times, then run whole in one turn: it ends`, async () => {
    const order: string[] = [];
    const writes = writesEveryTurn();
    const value = await attempted(order, 4, writes.revision);
    writes.stop();
    assert.equal(value, `attempt ${RESTARTS_BEFORE_WHOLE + 1}`);
    // The last attempt's four slices ran with no turn between them: one revision throughout.
    const last = order.slice(order.indexOf(`attempt ${RESTARTS_BEFORE_WHOLE + 1} 0`));
    assert.deepEqual(last, [0, 1, 2, 3].map((i) => `attempt ${RESTARTS_BEFORE_WHOLE + 1} ${i}`));
  });
  test(`writes between every two slices, an attempt longer than ${WHOLE_MAX_MS} ms -> whole for ${WHOLE_MAX_MS} ms, then turns again and no restart: it ends, and its revision moved from the one it began on`, async () => {
    const order: string[] = [];
    const writes = writesEveryTurn();
    const begun: string[] = [];
    const slices = WHOLE_MAX_MS * 3;
    const value = await attempted(order, slices, writes.revision, (r) => begun.push(r));
    writes.stop();
    const last = `attempt ${RESTARTS_BEFORE_WHOLE + 1}`;
    assert.equal(value, last);
    // Every slice of the last attempt ran, in order, once: it was not started over.
    assert.deepEqual(order.slice(order.indexOf(`${last} 0`)), Array.from({ length: slices }, (_, i) => `${last} ${i}`));
    assert.equal(begun.length, RESTARTS_BEFORE_WHOLE + 1);
    assert.notEqual(writes.revision(), begun.at(-1), 'writes landed during the last attempt: its caller knows the answer names no revision');
  });
  test(`an attempt overtaken after more than ${WHOLE_MAX_MS} ms of work -> not started over (it would not end on one state whole either): it goes on, its revision moved`, async () => {
    const order: string[] = [];
    // Writes from the 13th turn on: the attempt has run 12 slices of 1 ms by then.
    const writes = writesEveryTurn(12);
    const begun: string[] = [];
    const value = await attempted(order, 20, writes.revision, (r) => begun.push(r));
    writes.stop();
    assert.equal(value, 'attempt 1');
    assert.deepEqual(order, Array.from({ length: 20 }, (_, i) => `attempt 1 ${i}`));
    assert.deepEqual(begun, ['0']);
    assert.notEqual(writes.revision(), '0');
  });
  test('a background work -> never synchronous; a turn goes to it only when no other work waits', async () => {
    const order: string[] = [];
    const back = runSliced(named(order, 'back', 3), Infinity, () => 0, ticking(), 'background');
    assert.ok(back instanceof Promise);
    assert.deepEqual(order, [], 'its first slice waits for a turn');
    const front = runSliced(named(order, 'front', 4), Infinity, () => 0, ticking());
    assert.deepEqual(await Promise.all([back, front]), ['back', 'front']);
    // The foreground work ran its first slice at once and then had every turn while it waited.
    assert.deepEqual(order, ['front 0', 'front 1', 'front 2', 'front 3', 'back 0', 'back 1', 'back 2']);
  });
  test('a background work promoted (its priority read before each turn) -> it takes turns with the others from then on', async () => {
    const order: string[] = [];
    let priority: 'foreground' | 'background' = 'background';
    const back = runSliced(named(order, 'back', 4), Infinity, () => 0, ticking(), () => priority);
    const front = runSliced(named(order, 'front', 20), Infinity, () => 0, ticking());
    // Nine turns of the other work first (background: one in nine), then the promotion.
    await new Promise<void>((resolve) => {
      const check = (): void => (order.length >= 5 ? resolve() : void setImmediate(check));
      check();
    });
    priority = 'foreground';
    await Promise.all([back, front]);
    const at = (step: string): number => order.indexOf(step);
    // Promoted, it gets every other turn: its later slices are at most two steps apart.
    assert.ok(at('back 3') - at('back 1') <= 4, order.join(', '));
    assert.ok(at('back 3') < at('front 19'), order.join(', '));
  });
  test('a background work under works that never stop coming -> one turn in every 9', async () => {
    const order: string[] = [];
    const back = runSliced(named(order, 'back', 2), Infinity, () => 0, ticking(), 'background');
    // Foreground works, each of 30 slices, three at once: the queue never empties before back is done.
    const fronts = [0, 1, 2].map((n) => runSliced(named(order, `front${n}`, 30), Infinity, () => 0, ticking()));
    await back;
    const firstBack = order.indexOf('back 0');
    const secondBack = order.indexOf('back 1');
    assert.ok(firstBack > 0 && secondBack > firstBack, order.join(', '));
    // Between two background turns, exactly BACKGROUND_EVERY (8) turns of the others.
    assert.equal(secondBack - firstBack - 1, 8, order.join(', '));
    await Promise.all(fronts);
  });
});
