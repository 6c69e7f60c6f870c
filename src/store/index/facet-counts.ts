import { compareValues } from '../../conventions/query.js';
import type { FacetCount } from '../store.js';
import type { FieldIndex } from './field-index.js';
import { compareCells } from './row-sort.js';
import { SCAN_BLOCK } from './order-scan.js';
import { CHECK_EVERY, type Slice, type Work } from './slices.js';
import { CodeTally, NUMBER_CODE, type Cell } from './value-column.js';

/** Most values one facet lists. */
export const MAX_FACET_VALUES = 50;

/**
 * The facet of one field over a set of rows: every value's exact count, then the
 * `MAX_FACET_VALUES` most frequent, ties by value. The rows are counted by the column's codes (a
 * typed array read per row, never a record parsed); values are looked at once per distinct code.
 * An array counts each of its distinct elements once; an absent value is not counted; `null` is.
 *
 * `rows`: the matching rows, or undefined for every live row. Yields between blocks of rows.
 */
export function* facetCounts(field: FieldIndex, rows: Int32Array | undefined, slots: number, slice: Slice): Work<FacetCount[]> {
  const counts = new Map<string, { value: Cell; count: number }>();
  const add = (value: Cell, count: number): void => {
    const key = valueKey(value);
    const known = counts.get(key);
    if (known === undefined) counts.set(key, { value, count });
    else known.count += count;
  };
  // Every row, and no array among the values: each value's rows are one range of the field's
  // order, found by two binary searches; a field of few values is counted without reading its rows.
  if (rows === undefined && field.arrays === 0) {
    if (byOrder(field, add)) return yield* mostFrequent(counts.values(), MAX_FACET_VALUES, slice);
    return yield* byRuns(field, slice);
  }
  // Every row, and every array holds strings only: the elements are counted by their postings.
  if (rows === undefined && field.otherArrays === 0) return yield* byElements(field, slots, slice);
  const tally = new CodeTally();
  const column = field.column;
  const end = rows === undefined ? slots : rows.length;
  for (let from = 0; from < end; from += SCAN_BLOCK) {
    column.tally(tally, rows, from, Math.min(end, from + SCAN_BLOCK));
    if (slice.due) yield;
  }
  let step = 0;
  for (const [value, count] of column.tallied(tally)) {
    if (Array.isArray(value)) {
      // Each distinct element once per entity: `count` entities hold this very array.
      const seen = new Set<string>();
      for (const element of value as readonly Cell[]) {
        const key = valueKey(element);
        if (seen.has(key)) continue;
        seen.add(key);
        add(element, count);
      }
    } else {
      add(value, count);
    }
    if (++step % CHECK_EVERY === 0 && slice.due) yield;
  }
  return yield* mostFrequent(counts.values(), MAX_FACET_VALUES, slice);
}

/** Distinct values counted from the order before counting row by row is cheaper. */
const MAX_ORDER_VALUES = 256;

/**
 * Counts every value of a field without arrays from its order (ties of one value are contiguous):
 * false, having counted part, when the field has more than `MAX_ORDER_VALUES` distinct values.
 * Synchronous: at most that many pairs of binary searches.
 */
function byOrder(field: FieldIndex, add: (value: Cell, count: number) => void): boolean {
  const { order, column } = field;
  const size = order.size;
  let values = 0;
  for (let lo = 0; lo < size; values++) {
    if (values === MAX_ORDER_VALUES) return false;
    const value = column.get(order.at(lo));
    const hi = order.rankWhere((row) => (compareCells(column.get(row), value) <= 0 ? -1 : 1));
    // An absent field is in the order (first) but is no value.
    if (value !== undefined) add(value, hi - lo);
    lo = Math.max(hi, lo + 1);
  }
  return true;
}

/**
 * Counts every value of a field without arrays by walking its whole order once: each value's rows
 * are one run of it, told apart by their codes (a typed array read per row), and the runs come in
 * value order, so a run that only ties the least frequent of those kept has a greater value and is
 * left out with one comparison of counts. No value is keyed or kept: a unique field of a million
 * values (`code`) costs a walk of its order, not a map of a million keys (~1 s a request).
 */
function* byRuns(field: FieldIndex, slice: Slice): Work<FacetCount[]> {
  const { order, column } = field;
  const size = order.size;
  const best: FacetCount[] = [];
  const block = new Int32Array(Math.min(SCAN_BLOCK, size));
  let runCode = -1;
  let runRow = -1;
  let runCount = 0;
  const close = (): void => {
    if (runCount === 0) return;
    const value = column.get(runRow);
    // An absent field is in the order (first) but is no value.
    if (value !== undefined) keep(best, value, runCount);
  };
  for (let from = 0; from < size; from += SCAN_BLOCK) {
    const count = order.copyInto(block, from);
    for (let i = 0; i < count; i++) {
      const row = block[i]!;
      const code = column.code(row);
      // Equal codes, equal values; past the interning bound equal values may hold other codes.
      const same =
        runCount > 0 &&
        (code === NUMBER_CODE ? runCode === NUMBER_CODE && column.number(row) === column.number(runRow) : code === runCode || (runCode !== NUMBER_CODE && compareCells(column.get(row), column.get(runRow)) === 0));
      if (same) {
        runCount++;
        continue;
      }
      close();
      runCode = code;
      runRow = row;
      runCount = 1;
    }
    if (slice.due) yield;
  }
  close();
  return best;
}

/**
 * Counts every value of a field whose arrays hold strings only: each element's entities are its
 * posting (`FieldIndex.elements`, one row per entity however often the array repeats it), so an
 * element is counted with one look at its posting's size, and its value is the posting's key.
 * Counting element by element instead keyed every element of every array in a map (3 million at
 * a million entities of three tags: ~3 s a request). The values other than arrays (a string also
 * written alone, null) are counted by code as any facet, and a string counted both ways is merged.
 */
function* byElements(field: FieldIndex, slots: number, slice: Slice): Work<FacetCount[]> {
  const column = field.column;
  const tally = new CodeTally();
  for (let from = 0; from < slots; from += SCAN_BLOCK) {
    column.tally(tally, undefined, from, Math.min(slots, from + SCAN_BLOCK));
    if (slice.due) yield;
  }
  const strings = new Map<string, number>();
  const others = new Map<string, { value: Cell; count: number }>();
  let step = 0;
  for (const [value, count] of column.tallied(tally)) {
    if (typeof value === 'string') strings.set(value, (strings.get(value) ?? 0) + count);
    else if (!Array.isArray(value)) {
      const key = valueKey(value);
      const known = others.get(key);
      if (known === undefined) others.set(key, { value, count });
      else known.count += count;
    }
    if (++step % CHECK_EVERY === 0 && slice.due) yield;
  }
  const best: FacetCount[] = [];
  for (const [element, count] of field.elements.counts()) {
    const alone = strings.size === 0 ? undefined : strings.get(element);
    if (alone !== undefined) strings.delete(element);
    offer(best, MAX_FACET_VALUES, element, count + (alone ?? 0));
    if (++step % CHECK_EVERY === 0 && slice.due) yield;
  }
  for (const [value, count] of strings) offer(best, MAX_FACET_VALUES, value, count);
  for (const { value, count } of others.values()) offer(best, MAX_FACET_VALUES, value, count);
  return best;
}

/**
 * Keeps `value` among the `MAX_FACET_VALUES` most frequent, given values in ascending order: one
 * tying the last kept comes after it.
 */
function keep(best: FacetCount[], value: Cell, count: number): void {
  if (best.length === MAX_FACET_VALUES && count <= best[MAX_FACET_VALUES - 1]!.count) return;
  let at = best.length;
  while (at > 0 && best[at - 1]!.count < count) at--;
  best.splice(at, 0, { value, count });
  if (best.length > MAX_FACET_VALUES) best.pop();
}

/** One key per distinct JSON value: a string and the number its text spells are two values. */
function valueKey(value: Cell): string {
  switch (typeof value) {
    case 'string':
      return `s${value}`;
    case 'number':
      return `n${value}`;
    default:
      return `j${JSON.stringify(value)}`;
  }
}

/** Count descending, then the value order of sorting. */
function byFrequency(a: FacetCount, b: FacetCount): number {
  return b.count - a.count || compareValues(a.value, b.value);
}

/** The `max` first entries in `byFrequency` order, keeping only those: one comparison for most entries. */
function* mostFrequent(entries: Iterable<FacetCount>, max: number, slice: Slice): Work<FacetCount[]> {
  const best: FacetCount[] = [];
  let step = 0;
  for (const entry of entries) {
    if (++step % CHECK_EVERY === 0 && slice.due) yield;
    offer(best, max, entry.value, entry.count);
  }
  return best;
}

/**
 * Keeps `value` among the `max` first in `byFrequency` order (`best`, in that order), given each
 * value once, in any order: nothing is made for a value that does not get in.
 */
function offer(best: FacetCount[], max: number, value: Cell, count: number): void {
  if (best.length === max) {
    const last = best[max - 1]!;
    if (count < last.count || (count === last.count && compareValues(value, last.value) >= 0)) return;
  }
  const entry = { value, count };
  let lo = 0;
  let hi = best.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (byFrequency(best[mid]!, entry) <= 0) lo = mid + 1;
    else hi = mid;
  }
  best.splice(lo, 0, entry);
  if (best.length > max) best.pop();
}
