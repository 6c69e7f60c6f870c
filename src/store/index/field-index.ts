import { compareValues, filterText, inRange, kindRank, valueAt, type Filter, type RangeOperator } from '../../conventions/query.js';
import { OrderedRows } from './ordered-rows.js';
import { Postings } from './postings.js';
import { CHECK_EVERY, type Slice, type Work } from './slices.js';

/** Strings interned per field at most: past that the field is mostly distinct values anyway. */
const MAX_INTERNED = 65_536;

/** The value of a row that holds no entity (a hole of the creation order): in no index. */
export const NO_ROW: unique symbol = Symbol('no row');
export type Cell = unknown;

/** Compares two field values as `sort` does (contract §3a), with the common kinds first. */
export function compareCells(a: Cell, b: Cell): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
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

/** The texts an `eq` filter compares a value by: one per element for an array, without repeats. */
function keysOf(value: Cell): string[] {
  if (!Array.isArray(value)) return [filterText(value)];
  const keys = new Set<string>();
  for (const element of value) keys.add(filterText(element));
  return [...keys];
}

/**
 * The index of one field path: each row's value, equality postings (value text → rows in creation
 * order) and the order of rows by value (ties by creation order). Built from the entities on first
 * use, then kept current by every write.
 */
export class FieldIndex {
  readonly path: readonly string[];
  /** By row: the value at the path, `undefined` when absent, `NO_ROW` for a hole. */
  values: Cell[] = [];
  readonly postings = new Postings();
  /** Equal strings share one copy (a status field holds three strings, not a million). */
  readonly #intern = new Map<string, string>();
  readonly order: OrderedRows;
  /** Live rows whose value is an array: range filters on such a field cannot use the order. */
  arrays = 0;

  constructor(path: readonly string[]) {
    this.path = path;
    const values = (): Cell[] => this.values;
    this.order = new OrderedRows((a, b) => {
      const v = values();
      return compareCells(v[a], v[b]) || a - b;
    });
  }

  /** Appends the next row's value (or `NO_ROW`) while the index is being built: postings and order come after. */
  fill(value: Cell): void {
    this.values.push(this.#canonical(value));
  }

  #canonical(value: Cell): Cell {
    if (typeof value !== 'string') return value;
    const known = this.#intern.get(value);
    if (known !== undefined) return known;
    if (this.#intern.size < MAX_INTERNED) this.#intern.set(value, value);
    return value;
  }

  /** The row's value at the path (`NO_ROW` past the end). */
  value(row: number): Cell {
    return row < this.values.length ? this.values[row] : NO_ROW;
  }

  /** Sets a row's value (`NO_ROW` removes the row), keeping postings and order current. */
  apply(row: number, record: unknown): void {
    const old = this.value(row);
    const next = record === NO_ROW ? NO_ROW : this.#canonical(valueAt(record, this.path));
    if (old !== NO_ROW) {
      this.order.remove(row);
      if (old !== undefined) this.#unpost(row, old);
    }
    while (this.values.length < row) this.values.push(NO_ROW);
    this.values[row] = next;
    if (next !== NO_ROW) {
      if (next !== undefined) this.#post(row, next);
      this.order.insert(row);
    }
  }

  #post(row: number, value: Cell): void {
    if (Array.isArray(value)) this.arrays++;
    for (const key of keysOf(value)) this.postings.add(key, row);
  }

  #unpost(row: number, value: Cell): void {
    if (Array.isArray(value)) this.arrays--;
    for (const key of keysOf(value)) this.postings.remove(key, row);
  }

  /**
   * Builds postings and order from `values` (filled by the caller, one per row), yielding between
   * slices. The field is not yet in use: nothing reads it meanwhile.
   */
  *build(slice: Slice): Work<void> {
    const values = this.values;
    const live = new Int32Array(values.length);
    let count = 0;
    for (let row = 0; row < values.length; row++) {
      const value = values[row];
      if (value === NO_ROW) continue;
      live[count++] = row;
      if (value !== undefined) this.#post(row, value);
      if (row % CHECK_EVERY === 0 && slice.due) yield;
    }
    const rows = live.subarray(0, count);
    const sorted = (yield* groupByValue(values, rows, slice)) ?? (yield* sortRows(rows, (a, b) => compareCells(values[a], values[b]) || a - b, slice));
    this.order.load(sorted);
  }

  /** Renumbers rows after a re-pack of the creation order. */
  remap(moved: Int32Array, slotCount: number): void {
    // Grown by push: V8 keeps `new Array(n)` past 100,000 elements as a slow dictionary.
    const values: Cell[] = [];
    for (let row = 0; row < slotCount; row++) values.push(NO_ROW);
    for (let row = 0; row < this.values.length; row++) {
      const value = this.values[row];
      if (value !== NO_ROW) values[moved[row]!] = value;
    }
    this.values = values;
    this.postings.remap(moved);
    this.order.remap(moved);
  }

  /**
   * Ranks `[lo, hi)` of the order that hold exactly the rows passing these range filters, or
   * undefined when the order cannot tell (an array-valued field: ranges apply per element).
   */
  rangeOf(filters: readonly Extract<Filter, { bound: number | string }>[]): [number, number] | undefined {
    if (this.arrays > 0) return undefined;
    const values = this.values;
    const order = this.order;
    let lo = 0;
    let hi = order.size;
    for (const { op, bound } of filters) {
      const kind = kindRank(bound);
      // The bound's kind is one block of the order: values of other kinds match nothing.
      lo = Math.max(lo, order.rankWhere((row) => (kindRank(values[row]) < kind ? -1 : 1)));
      hi = Math.min(hi, order.rankWhere((row) => (kindRank(values[row]) <= kind ? -1 : 1)));
      const below = (strict: boolean) => (row: number) => {
        const order = compareCells(values[row], bound);
        return order < 0 || (strict && order === 0) ? -1 : 1;
      };
      if (op === 'gte') lo = Math.max(lo, order.rankWhere(below(false)));
      else if (op === 'gt') lo = Math.max(lo, order.rankWhere(below(true)));
      else if (op === 'lt') hi = Math.min(hi, order.rankWhere(below(false)));
      else hi = Math.min(hi, order.rankWhere(below(true)));
    }
    return [lo, Math.max(lo, hi)];
  }

  /** A test of one filter against a row's value (the reference meaning, on the indexed value). */
  predicate(filter: Filter): (row: number) => boolean {
    const values = this.values;
    switch (filter.op) {
      case 'exists': {
        const present = filter.present;
        return (row) => (values[row] !== undefined) === present;
      }
      case 'eq':
      case 'ne': {
        const texts = new Set(filter.values);
        const want = filter.op === 'eq';
        const test = (e: Cell): boolean => texts.has(typeof e === 'string' ? e : filterText(e)) === want;
        return (row) => {
          const v = values[row];
          if (v === undefined) return false;
          return Array.isArray(v) ? v.some(test) : test(v);
        };
      }
      default: {
        const { op, bound } = filter as { op: RangeOperator; bound: number | string };
        const test = (e: Cell): boolean => inRange(e, op, bound);
        return (row) => {
          const v = values[row];
          return Array.isArray(v) ? v.some(test) : test(v);
        };
      }
    }
  }
}

/** Past this many distinct values, grouping rows by value costs more than sorting them. */
const GROUP_AT_MOST = 4096;

/**
 * The order of rows by (value, row) for a field of few distinct primitive values (a status, a
 * category, a stock count): rows grouped by value in one pass, already in row order within each
 * group, then the groups in value order. O(n + k log k) instead of a comparison sort of n rows.
 * Undefined (a value the field cannot group) gives way to the sort.
 */
function* groupByValue(values: readonly Cell[], rows: Int32Array, slice: Slice): Work<Int32Array | undefined> {
  const groups = new Map<Cell, number[]>();
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    const value = values[row];
    if (typeof value === 'object' && value !== null) return undefined;
    let group = groups.get(value);
    if (group === undefined) {
      if (groups.size >= GROUP_AT_MOST) return undefined;
      group = [];
      groups.set(value, group);
    }
    group.push(row);
    if (i % CHECK_EVERY === 0 && slice.due) yield;
  }
  const out = new Int32Array(rows.length);
  let k = 0;
  // Array.prototype.sort puts undefined last without asking the comparator: absent sorts first.
  const order: Cell[] = [...groups.keys()].filter((value) => value !== undefined).sort(compareCells);
  if (groups.has(undefined)) order.unshift(undefined);
  for (const value of order) {
    for (const row of groups.get(value)!) out[k++] = row;
  }
  return out;
}

/** Runs of this many rows are sorted at once; merging them is done in slices. */
const RUN = 4096;

/**
 * A stable sort of rows by `compare`, in slices: runs sorted at once, then merged pairwise, each
 * merge step checking the clock.
 */
export function* sortRows(rows: Int32Array, compare: (a: number, b: number) => number, slice: Slice): Work<Int32Array> {
  rows = Int32Array.from(rows);
  const n = rows.length;
  for (let start = 0; start < n; start += RUN) {
    // Int32Array.prototype.sort is not guaranteed stable with a comparator; ours breaks ties itself.
    rows.subarray(start, Math.min(n, start + RUN)).sort(compare);
    if (slice.due) yield;
  }
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
