import type { Filter, SortKey } from '../../conventions/query.js';
import type { FieldIndex } from './field-index.js';
import { compareCells } from './row-sort.js';

// Tests of rows against a query's filters, and the order of its sort keys, over indexed values.

type RangeFilter = Extract<Filter, { bound: number | string }>;

/**
 * Tests of rows against filters. The bounds of one numeric field without arrays become one test
 * of two comparisons (`price[gte]=10&price[lt]=500`), the common case checked on every candidate.
 */
export function predicates(filters: readonly Filter[], field: (path: readonly string[]) => FieldIndex): ((row: number) => boolean)[] {
  const tests: ((row: number) => boolean)[] = [];
  const numeric = new Map<FieldIndex, { low: number; lowIn: boolean; high: number; highIn: boolean }>();
  for (const filter of filters) {
    const index = field(filter.path);
    if (isRange(filter) && typeof filter.bound === 'number' && index.arrays === 0) {
      const range = numeric.get(index) ?? { low: -Infinity, lowIn: true, high: Infinity, highIn: true };
      const { op, bound } = filter;
      if ((op === 'gt' || op === 'gte') && (bound > range.low || (bound === range.low && op === 'gt'))) Object.assign(range, { low: bound, lowIn: op === 'gte' });
      if ((op === 'lt' || op === 'lte') && (bound < range.high || (bound === range.high && op === 'lt'))) Object.assign(range, { high: bound, highIn: op === 'lte' });
      numeric.set(index, range);
    } else {
      tests.push(index.predicate(filter));
    }
  }
  for (const [index, { low, lowIn, high, highIn }] of numeric) tests.push(index.numberTest(low, lowIn, high, highIn));
  return tests;
}

export function isRange(filter: Filter): filter is RangeFilter {
  return filter.op === 'gt' || filter.op === 'gte' || filter.op === 'lt' || filter.op === 'lte';
}

/** A membership mark over rows `[0, slots)`. */
export function rowSet(rows: Int32Array, slots: number): Uint8Array {
  const member = new Uint8Array(slots);
  for (let i = 0; i < rows.length; i++) member[rows[i]!] = 1;
  return member;
}

/** The order of a sort's keys over indexed values, ties in creation order. */
export function comparator(keys: readonly SortKey[], field: (path: readonly string[]) => FieldIndex): (a: number, b: number) => number {
  const columns = keys.map((key) => ({ column: field(key.path).column, sign: key.descending ? -1 : 1 }));
  return (a, b) => {
    for (const { column, sign } of columns) {
      const x = column.number(a);
      const y = column.number(b);
      // NaN: not a number; compare the values themselves.
      const order = x === x && y === y ? (x < y ? -1 : x > y ? 1 : 0) : compareCells(column.get(a), column.get(b));
      if (order !== 0) return sign * order;
    }
    return a - b;
  };
}

/** The order of the sort keys after the first (undefined when there are none). */
export function restComparator(keys: readonly SortKey[], field: (path: readonly string[]) => FieldIndex): ((a: number, b: number) => number) | undefined {
  return keys.length > 1 ? comparator(keys.slice(1), field) : undefined;
}
