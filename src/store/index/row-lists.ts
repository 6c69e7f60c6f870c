/** Sorted lists of rows (creation order): unions and intersections. */
import type { Slice, Work } from './slices.js';

/** Rows in any of the sorted lists, sorted, without repeats: merged pairwise, O(n log k). */
export function unionOf(lists: readonly (Int32Array | undefined)[]): Int32Array {
  let present = lists.filter((l): l is Int32Array => l !== undefined && l.length > 0);
  if (present.length === 0) return new Int32Array(0);
  while (present.length > 1) {
    const next: Int32Array[] = [];
    for (let i = 0; i < present.length; i += 2) next.push(i + 1 < present.length ? merge(present[i]!, present[i + 1]!) : present[i]!);
    present = next;
  }
  return present[0]!;
}

function merge(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x < y) out[k++] = a[i++]!;
    else if (y < x) out[k++] = b[j++]!;
    else {
      out[k++] = x;
      i++;
      j++;
    }
  }
  while (i < a.length) out[k++] = a[i++]!;
  while (j < b.length) out[k++] = b[j++]!;
  return out.subarray(0, k);
}

/** Rows in both sorted lists. */
export function intersection(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(Math.min(a.length, b.length));
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x < y) i++;
    else if (y < x) j++;
    else {
      out[k++] = x;
      i++;
      j++;
    }
  }
  return out.subarray(0, k);
}

/** Up to this many rows in all, lists are merged (a few) or gathered and sorted (many: the ids that happen to contain a short word). */
const GATHER_AT_MOST = 65_536;
const MERGE_AT_MOST = 8;

/**
 * Rows in any of the sorted lists (`total` rows in all), sorted, without repeats, over rows
 * `[0, slots)`: merged from a few short lists, gathered and sorted from many, marked over the
 * slots and swept (in slices) when they are many rows.
 */
export function* anyOf(lists: readonly Int32Array[], total: number, slots: number, slice: Slice): Work<Int32Array> {
  if (total > GATHER_AT_MOST) return yield* marked(lists, slots, slice);
  return lists.length <= MERGE_AT_MOST ? unionOf(lists) : gathered(lists, total);
}

function gathered(lists: readonly Int32Array[], total: number): Int32Array {
  const rows = new Int32Array(total);
  let k = 0;
  for (const list of lists) {
    rows.set(list, k);
    k += list.length;
  }
  rows.sort();
  let distinct = 0;
  for (let i = 0; i < rows.length; i++) if (i === 0 || rows[i] !== rows[i - 1]) rows[distinct++] = rows[i]!;
  return rows.subarray(0, distinct);
}

/** The rows of many lists, in order and without repeats: marked over the slots, then swept, in slices. */
function* marked(lists: readonly Int32Array[], slots: number, slice: Slice): Work<Int32Array> {
  const marks = new Uint8Array(slots);
  let count = 0;
  let since = 0;
  for (const list of lists) {
    count += mark(marks, list);
    since += list.length;
    if (since >= BLOCK) {
      since = 0;
      if (slice.due) yield;
    }
  }
  const rows = new Int32Array(count);
  let k = 0;
  for (let from = 0; from < slots; from += BLOCK) {
    k = sweep(marks, from, Math.min(slots, from + BLOCK), rows, k);
    if (slice.due) yield;
  }
  return rows;
}

/** Rows looked at between two looks at the clock. */
const BLOCK = 65_536;

/** Marks the rows of a list; returns how many were not marked before. */
function mark(marks: Uint8Array, rows: Int32Array): number {
  let added = 0;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (marks[row] === 0) {
      marks[row] = 1;
      added++;
    }
  }
  return added;
}

/** Appends the marked rows of `[from, to)` to `out` from `k`; returns the new `k`. */
function sweep(marks: Uint8Array, from: number, to: number, out: Int32Array, k: number): number {
  for (let row = from; row < to; row++) if (marks[row] === 1) out[k++] = row;
  return k;
}

