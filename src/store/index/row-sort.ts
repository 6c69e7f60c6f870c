import { compareValues } from '../../conventions/query.js';
import { CHECK_EVERY, type Slice, type Work } from './slices.js';
import type { Cell, ValueColumn } from './value-column.js';
import { NO_ROW } from './value-column.js';

/** Compares two field values as `sort` does (docs/queries.md), with the common kinds first. */
export function compareCells(a: Cell, b: Cell): number {
  // Not `a - b`: Infinity - Infinity is NaN (JSON.parse gives Infinity for 1e400).
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null) {
    // Arrays and objects compare by their JSON text: made once per value, not per comparison.
    const textA = jsonText(a);
    const textB = jsonText(b);
    return textA < textB ? -1 : textA > textB ? 1 : 0;
  }
  return compareValues(a, b);
}

/** JSON texts of the indexed arrays and objects, for as long as they are indexed. */
const texts = new WeakMap<object, string>();

function jsonText(value: object): string {
  let text = texts.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    texts.set(value, text);
  }
  return text;
}

/** The order of rows by (value in `column`, row): numbers compared without boxing them. */
export function columnComparator(column: ValueColumn): (a: number, b: number) => number {
  return (a, b) => {
    const x = column.number(a);
    const y = column.number(b);
    // NaN: not a number; compare the values themselves.
    if (x === x && y === y) return x < y ? -1 : x > y ? 1 : a - b;
    return compareCells(column.get(a), column.get(b)) || a - b;
  };
}

/** Past this many distinct values, grouping rows by value costs more than sorting them. */
const GROUP_AT_MOST = 4096;

/**
 * The live rows of a column in (value, row) order. A column of few distinct primitive values (a
 * status, a category, a stock count) is grouped in two passes (count each value, then place each
 * row after the rows of smaller values): O(n + k log k), no comparison sort and no array per
 * value. Otherwise the rows are sorted, in slices.
 */
export function* orderRows(column: ValueColumn, slice: Slice): Work<Int32Array> {
  const grouped = yield* groupByValue(column, slice);
  if (grouped) return grouped;
  const rows = new Int32Array(column.live);
  let k = 0;
  for (let row = 0; row < column.length; row++) if (column.get(row) !== NO_ROW) rows[k++] = row;
  return yield* sortRows(rows, columnComparator(column), slice);
}

function* groupByValue(column: ValueColumn, slice: Slice): Work<Int32Array | undefined> {
  // Pass 1: how many rows hold each value.
  const starts = new Map<Cell, number>();
  const length = column.length;
  for (let row = 0; row < length; row++) {
    const value = column.get(row);
    if (value === NO_ROW) continue;
    if (typeof value === 'object' && value !== null) return undefined;
    const count = starts.get(value);
    if (count === undefined) {
      if (starts.size >= GROUP_AT_MOST) return undefined;
      starts.set(value, 1);
    } else starts.set(value, count + 1);
    if (row % CHECK_EVERY === 0 && slice.due) yield;
  }
  // Where each value's rows start. Array.prototype.sort puts undefined last without asking the
  // comparator: absent sorts first.
  const values: Cell[] = [...starts.keys()].filter((value) => value !== undefined).sort(compareCells);
  if (starts.has(undefined)) values.unshift(undefined);
  let at = 0;
  for (const value of values) {
    const count = starts.get(value)!;
    starts.set(value, at);
    at += count;
  }
  // Pass 2: each row at its value's next place; rows come in order, so each group is in row order.
  const out = new Int32Array(at);
  for (let row = 0; row < length; row++) {
    const value = column.get(row);
    if (value === NO_ROW) continue;
    const place = starts.get(value)!;
    out[place] = row;
    starts.set(value, place + 1);
    if (row % CHECK_EVERY === 0 && slice.due) yield;
  }
  return out;
}

/** Runs of this many rows are sorted at once (a few hundred microseconds); merging them is done in slices. */
const RUN = 1024;

/**
 * A stable sort of rows by `compare`, in slices: runs sorted at once, then merged pairwise, each
 * merge step checking the clock. Sorts `rows` itself when it can (the result may be another array).
 */
export function* sortRows(rows: Int32Array, compare: (a: number, b: number) => number, slice: Slice): Work<Int32Array> {
  const n = rows.length;
  for (let start = 0; start < n; start += RUN) {
    // Int32Array.prototype.sort is not guaranteed stable with a comparator; ours breaks ties itself.
    rows.subarray(start, Math.min(n, start + RUN)).sort(compare);
    if (slice.due) yield;
  }
  if (n <= RUN) return rows;
  let from: Int32Array = rows;
  let to: Int32Array = new Int32Array(n);
  for (let width = RUN; width < n; width *= 2) {
    for (let left = 0; left < n; left += 2 * width) {
      const mid = Math.min(n, left + width);
      const right = Math.min(n, left + 2 * width);
      let i = left;
      let j = mid;
      let k = left;
      while (i < mid && j < right) {
        to[k++] = compare(from[i]!, from[j]!) <= 0 ? from[i++]! : from[j++]!;
        if (k % CHECK_EVERY === 0 && slice.due) yield;
      }
      while (i < mid) to[k++] = from[i++]!;
      while (j < right) to[k++] = from[j++]!;
    }
    [from, to] = [to, from];
  }
  return from;
}

/** Rows in creation order: a few sorted at once, many by marking them over `[0, slots)` (in slices). */
export function* rowOrder(rows: Int32Array, slots: number, slice: Slice): Work<Int32Array> {
  if (rows.length <= RUN) return rows.sort();
  const marked = new Uint8Array(slots);
  for (let i = 0; i < rows.length; i++) {
    marked[rows[i]!] = 1;
    if (i % (16 * CHECK_EVERY) === 0 && slice.due) yield;
  }
  let k = 0;
  for (let row = 0; row < slots; row++) {
    if (marked[row] === 1) rows[k++] = row;
    if (row % (16 * CHECK_EVERY) === 0 && slice.due) yield;
  }
  return rows;
}
