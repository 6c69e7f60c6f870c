import type { FieldIndex } from './field-index.js';
import type { OrderedRows } from './ordered-rows.js';
import { compareCells, sortRows } from './row-sort.js';
import type { Slice, Work } from './slices.js';
import { NO_ROW } from './value-column.js';

// Reading rows out of a field's value order: a page of a sort (`walk`), a range's rows (`scanRange`).

/** Rows checked between two looks at the clock (a few hundred microseconds of work). */
export const SCAN_BLOCK = 16_384;
/** Groups of equal first-key values larger than this are sorted by the other keys in slices. */
const SORT_RUN_AT_ONCE = 2048;
/** Buffers of `SCAN_BLOCK` rows for scans of order ranges, reused: memory allocated per query brings on full collections. */
const spareBlocks: Int32Array[] = [];

export function scanBlock(rows: Int32Array, from: number, to: number, pass: (row: number) => boolean, match: (row: number) => void): void {
  for (let i = from; i < to; i++) {
    const row = rows[i]!;
    if (pass(row)) match(row);
  }
}

/**
 * Calls `match` with each row of ranks `[lo, hi)` of an order that passes, a block at a time
 * through one buffer: no copy of the whole range. (A write between two blocks would shift the
 * ranks: the query starts over then, slices.ts.)
 */
export function* scanRange(order: OrderedRows, lo: number, hi: number, pass: (row: number) => boolean, match: (row: number) => void, slice: Slice): Work<void> {
  const block = spareBlocks.pop() ?? new Int32Array(SCAN_BLOCK);
  try {
    for (let from = lo; from < hi; from += SCAN_BLOCK) {
      const count = order.copyInto(block.subarray(0, Math.min(SCAN_BLOCK, hi - from)), from);
      scanBlock(block, 0, count, pass, match);
      if (slice.due) yield;
    }
  } finally {
    if (spareBlocks.length < 4) spareBlocks.push(block);
  }
}

/**
 * Rows in sort order from ranks `[lo, hi)` of the first key's order: groups of equal first-key
 * values in ascending or descending order, each group in creation order or sorted by the other
 * keys (`restCompare`). Skips `skip` rows that `pass` and returns the next `take` of them.
 * Without `pass` the skip is a jump, not a walk.
 */
export function* walk(
  first: FieldIndex,
  lo: number,
  hi: number,
  descending: boolean,
  restCompare: ((a: number, b: number) => number) | undefined,
  skip: number,
  take: number,
  pass: ((row: number) => boolean) | undefined,
  slice: Slice,
): Work<number[]> {
  const column = first.column;
  const order = first.order;
  const out: number[] = [];
  if (take <= 0 || lo >= hi) return out;
  let start = descending ? hi : lo;
  if (pass === undefined && skip > 0) {
    // Jump to the group holding the skip-th row, and skip inside it.
    const at = descending ? hi - 1 - skip : lo + skip;
    if (at < lo || at >= hi) return out;
    const value = column.get(order.at(at));
    const groupStart = Math.max(lo, order.rankWhere((row) => (compareCells(column.get(row), value) < 0 ? -1 : 1)));
    const groupEnd = Math.min(hi, order.rankWhere((row) => (compareCells(column.get(row), value) <= 0 ? -1 : 1)));
    if (descending) {
      start = groupEnd;
      skip -= hi - groupEnd;
    } else {
      start = groupStart;
      skip -= groupStart - lo;
    }
  }
  let group: number[] = [];
  let groupValue: unknown = NO_ROW;
  /** Emits a group of equal first-key values in order; true once the page is full. */
  function* flush(): Work<boolean> {
    if (descending) group.reverse();
    let rows: ArrayLike<number> = group;
    // A large group (a sort by a status, then a name) is sorted in slices.
    if (restCompare && group.length > SORT_RUN_AT_ONCE) rows = yield* sortRows(Int32Array.from(group), restCompare, slice);
    else if (restCompare && group.length > 1) group.sort(restCompare);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      if (pass && !pass(row)) continue;
      if (skip > 0) skip--;
      else if (out.push(row) >= take) return true;
    }
    group = [];
    return false;
  }
  // Ranks come a block at a time through a buffer (small blocks first: most walks are short).
  const block = spareBlocks.pop() ?? new Int32Array(SCAN_BLOCK);
  try {
    const end = descending ? lo : hi;
    let size = 64;
    for (let at = start; at !== end; size = Math.min(SCAN_BLOCK, size * 4)) {
      const from = descending ? Math.max(end, at - size) : at;
      const to = descending ? at : Math.min(end, at + size);
      const count = order.copyInto(block.subarray(0, to - from), from);
      for (let i = 0; i < count; i++) {
        const row = block[descending ? count - 1 - i : i]!;
        const value = column.get(row);
        if (group.length > 0 && compareCells(value, groupValue) !== 0 && (yield* flush())) return out;
        if (group.length === 0) groupValue = value;
        group.push(row);
      }
      if (count < to - from) break; // the order shrank while the walk waited
      at = descending ? from : to;
      if (slice.due) yield;
    }
    yield* flush();
    return out;
  } finally {
    if (spareBlocks.length < 4) spareBlocks.push(block);
  }
}
