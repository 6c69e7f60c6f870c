import { filterText, inRange, kindRank, valueAt, type Filter, type RangeOperator } from '../../conventions/query.js';
import { OrderedRows } from './ordered-rows.js';
import { Postings } from './postings.js';
import { columnComparator, compareCells, orderRows } from './row-sort.js';
import { CHECK_EVERY, type Slice, type Work } from './slices.js';
import { NO_ROW, ValueColumn, type Cell } from './value-column.js';

export { NO_ROW, type Cell } from './value-column.js';

type RangeFilter = Extract<Filter, { bound: number | string }>;

/** Arrays up to this long are posted without a Set of their element texts (`#post`). */
const SMALL_ARRAY = 8;

/** The element texts an `eq` filter finds an array by, without repeats. */
function elementKeys(value: readonly Cell[]): string[] {
  const keys = new Set<string>();
  for (const element of value) keys.add(filterText(element));
  return [...keys];
}

/** Whether an array holds an element other than a string. */
function holdsOther(value: readonly Cell[]): boolean {
  for (let i = 0; i < value.length; i++) if (typeof value[i] !== 'string') return true;
  return false;
}

/**
 * The values other than arrays whose text (`filterText`) is `text`: the string itself, and the
 * number, literal or object that JSON writes that way (`?stock=0` finds the number 0).
 */
function valuesWithText(text: string): Cell[] {
  const out: Cell[] = [text];
  const number = Number(text);
  if (Number.isFinite(number) && JSON.stringify(number) === text) out.push(number);
  if (text === 'null') out.push(null, Infinity, -Infinity); // JSON.stringify writes ±Infinity as null
  else if (text === 'true') out.push(true);
  else if (text === 'false') out.push(false);
  else if (text.startsWith('{')) {
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === 'object' && value !== null && !Array.isArray(value) && JSON.stringify(value) === text) out.push(value);
    } catch {
      // not JSON: the string alone
    }
  }
  return out;
}

/** The rows an `eq` filter matches: ranks of the value order (rows in creation order within each) and array rows. */
export interface EqualRows {
  readonly ranges: readonly (readonly [number, number])[];
  /** Rows whose value is an array with a matching element, in creation order. */
  readonly lists: readonly Int32Array[];
  readonly count: number;
}

/**
 * The index of one field path: each row's value (a typed column), and the order of rows by value
 * (ties by creation order). The order answers `sort`, ranges and `eq` too: rows of one value are
 * contiguous in it and in creation order there, so an `eq` page is a position in the order and
 * its `total` the width of a range, with no list per value to keep. Rows whose value is an array
 * are also found by element (`elements`), as `eq` tests each element. Built from the entities on
 * first use, then kept current by every write.
 */
export class FieldIndex {
  readonly path: readonly string[];
  readonly column = new ValueColumn();
  readonly order: OrderedRows;
  /** Element text → rows whose value is an array holding it. */
  readonly elements = new Postings();
  /** Live rows whose value is an array: range filters on such a field cannot use the order. */
  arrays = 0;
  /**
   * Live rows whose value is an array holding something other than a string. While there are
   * none, each key of `elements` is one value (a string), not the text that `0` and `"0"` share,
   * and its rows are the entities holding it: a facet over every entity counts them from there
   * (facet-counts.ts).
   */
  otherArrays = 0;

  constructor(path: readonly string[]) {
    this.path = path;
    this.order = new OrderedRows(columnComparator(this.column));
  }

  /** Appends the next row's value (or `NO_ROW`) while the index is being built: the order comes after. */
  fill(value: Cell): void {
    this.column.push(value);
  }

  /** The row's value at the path (`NO_ROW` for a hole or past the end). */
  value(row: number): Cell {
    return this.column.get(row);
  }

  /** Sets a row's value (`NO_ROW` removes the row), keeping the order and element lists current. */
  apply(row: number, record: unknown): void {
    const old = this.column.get(row);
    const next = record === NO_ROW ? NO_ROW : valueAt(record, this.path);
    if (old !== NO_ROW) {
      this.order.remove(row);
      if (Array.isArray(old)) this.#unpost(row, old);
    }
    this.column.set(row, next);
    if (next !== NO_ROW) {
      if (Array.isArray(next)) this.#post(row, next);
      this.order.insert(row);
    }
  }

  #post(row: number, value: readonly Cell[]): void {
    this.arrays++;
    if (holdsOther(value)) this.otherArrays++;
    if (value.length > SMALL_ARRAY) {
      for (const key of elementKeys(value)) this.elements.add(key, row);
      return;
    }
    // A few elements (tags): repeats found by looking back, without a Set and an array per row.
    outer: for (let i = 0; i < value.length; i++) {
      const key = filterText(value[i]);
      for (let j = 0; j < i; j++) if (filterText(value[j]) === key) continue outer;
      this.elements.add(key, row);
    }
  }

  #unpost(row: number, value: readonly Cell[]): void {
    this.arrays--;
    if (holdsOther(value)) this.otherArrays--;
    for (const key of elementKeys(value)) this.elements.remove(key, row);
  }

  /**
   * Builds the element lists and the order from the column (filled by the caller, one value per
   * row), yielding between slices. The field is not yet in use: nothing reads it meanwhile.
   */
  *build(slice: Slice): Work<void> {
    const column = this.column;
    for (let row = 0; row < column.length; row++) {
      const value = column.get(row);
      if (Array.isArray(value)) this.#post(row, value);
      if (row % CHECK_EVERY === 0 && slice.due) yield;
    }
    this.order.load(yield* orderRows(column, slice));
  }

  /** Renumbers rows after a re-pack of the creation order. */
  remap(moved: Int32Array, slotCount: number): void {
    this.column.remap(moved, slotCount);
    this.elements.remap(moved);
    this.order.remap(moved);
  }

  /** Ranks `[lo, hi)` of the order holding the rows whose value compares equal to `value`. */
  #equalRange(value: Cell): [number, number] {
    const column = this.column;
    const order = this.order;
    return [
      order.rankWhere((row) => (compareCells(column.get(row), value) < 0 ? -1 : 1)),
      order.rankWhere((row) => (compareCells(column.get(row), value) <= 0 ? -1 : 1)),
    ];
  }

  /** Where the rows of an `eq` filter with these texts are: O(log n) per text, nothing copied. */
  equalRows(texts: readonly string[]): EqualRows {
    const ranges: [number, number][] = [];
    const lists: Int32Array[] = [];
    let count = 0;
    for (const text of new Set(texts)) {
      for (const value of valuesWithText(text)) {
        const [lo, hi] = this.#equalRange(value);
        if (hi > lo) {
          ranges.push([lo, hi]);
          count += hi - lo;
        }
      }
      // An array is in the order too, but as a whole: its elements are found here.
      const rows = this.arrays > 0 ? this.elements.rows(text) : undefined;
      if (rows) {
        lists.push(rows);
        count += rows.length;
      }
    }
    return { ranges, lists, count };
  }

  /**
   * Ranks `[lo, hi)` of the order that hold exactly the rows passing these range filters, or
   * undefined when the order cannot tell (an array-valued field: ranges apply per element).
   */
  rangeOf(filters: readonly RangeFilter[]): [number, number] | undefined {
    if (this.arrays > 0) return undefined;
    const column = this.column;
    const order = this.order;
    let lo = 0;
    let hi = order.size;
    for (const { op, bound } of filters) {
      const kind = kindRank(bound);
      // The bound's kind is one block of the order: values of other kinds match nothing.
      lo = Math.max(lo, order.rankWhere((row) => (kindRank(column.get(row)) < kind ? -1 : 1)));
      hi = Math.min(hi, order.rankWhere((row) => (kindRank(column.get(row)) <= kind ? -1 : 1)));
      const below = (strict: boolean) => (row: number) => {
        const order = compareCells(column.get(row), bound);
        return order < 0 || (strict && order === 0) ? -1 : 1;
      };
      if (op === 'gte') lo = Math.max(lo, order.rankWhere(below(false)));
      else if (op === 'gt') lo = Math.max(lo, order.rankWhere(below(true)));
      else if (op === 'lt') hi = Math.min(hi, order.rankWhere(below(false)));
      else hi = Math.min(hi, order.rankWhere(below(true)));
    }
    return [lo, Math.max(lo, hi)];
  }

  /** One test of a row's number against numeric bounds (no array in the field). */
  numberTest(low: number, lowIn: boolean, high: number, highIn: boolean): (row: number) => boolean {
    const column = this.column;
    // NaN (not a number) fails every comparison.
    return (row) => {
      const v = column.number(row);
      return (lowIn ? v >= low : v > low) && (highIn ? v <= high : v < high);
    };
  }

  /** A test of one filter against a row's value (the reference meaning, on the indexed value). */
  predicate(filter: Filter): (row: number) => boolean {
    const column = this.column;
    switch (filter.op) {
      case 'exists': {
        const present = filter.present;
        return (row) => column.present(row) === present;
      }
      case 'eq':
      case 'ne': {
        const texts = new Set(filter.values);
        const want = filter.op === 'eq';
        const test = (e: Cell): boolean => texts.has(typeof e === 'string' ? e : filterText(e)) === want;
        return (row) => {
          const v = column.get(row);
          if (v === undefined || v === NO_ROW) return false;
          return Array.isArray(v) ? v.some(test) : test(v);
        };
      }
      default: {
        const { op, bound } = filter as { op: RangeOperator; bound: number | string };
        const test = (e: Cell): boolean => inRange(e, op, bound);
        return (row) => {
          const v = column.get(row);
          return Array.isArray(v) ? v.some(test) : test(v);
        };
      }
    }
  }
}
