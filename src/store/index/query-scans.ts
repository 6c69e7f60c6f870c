import { matchesSearch, type Filter } from '../../conventions/query.js';
import type { StoredEntity } from '../store.js';
import type { EqualRows, FieldIndex } from './field-index.js';
import { SCAN_BLOCK, scanBlock, scanRange } from './order-scan.js';
import { chooseDriver } from './query-plan.js';
import { anyOf } from './row-lists.js';
import { isRange, predicates, rowSet } from './row-tests.js';
import type { Rows } from './rows.js';
import type { Slice, Work } from './slices.js';

// Executing a query's plan against the rows: opening the chosen driver, testing its rows against
// what it does not guarantee, counting and collecting the rows that pass. Sorted pages are read by
// `order-scan.ts` (`walk`) and `row-sort.ts`; what to do is decided by `query-plan.ts`.

type RangeFilter = Extract<Filter, { bound: number | string }>;
/** A search's candidate rows; `member` marks them by row, made when first needed and kept with them. */
export type Candidates = { rows: Int32Array; exact: boolean; member?: Uint8Array };
/** A test of one row. */
export type RowTest = (row: number) => boolean;
/** The index of a path (built). */
export type FieldOf = (path: readonly string[]) => FieldIndex;

/** Where a query's candidate rows come from, open for reading; `covers` are the filters its rows satisfy exactly. */
export type Driver =
  /** Rows in creation order; `merged`: a union built for this query (worth keeping), not an index's own list. */
  | { kind: 'rows'; rows: Int32Array; covers: readonly Filter[]; searched: boolean; merged: boolean }
  /** Ranks `[lo, hi)` of a field's order; `creation`: its rows are in creation order (an `eq` range: one value). */
  | { kind: 'range'; field: FieldIndex; lo: number; hi: number; covers: readonly Filter[]; creation: boolean }
  | { kind: 'all' };

const ALL: Driver = { kind: 'all' };
const NONE: readonly never[] = [];

/**
 * Reads the sizes the plan weighs from the indexes (an `eq`'s ranges and lists, a field's range
 * of ranks: binary searches, no row read), lets `chooseDriver` pick, and opens its choice: the
 * union of several values' rows is built here, in slices.
 */
export function* openDriver(filters: readonly Filter[], searched: Candidates | undefined, field: FieldOf, rows: Rows<unknown>, slice: Slice): Work<Driver> {
  const equalFilters: Filter[] = [];
  const equal: EqualRows[] = [];
  // Range filters grouped by field (two paths may name one index), made only when there are some.
  let rangeFields: FieldIndex[] | undefined;
  let rangeGroups: RangeFilter[][] | undefined;
  for (const filter of filters) {
    const index = field(filter.path);
    if (filter.op === 'eq') {
      equalFilters.push(filter);
      equal.push(index.equalRows(filter.values));
    } else if (isRange(filter)) {
      rangeFields ??= [];
      rangeGroups ??= [];
      const at = rangeFields.indexOf(index);
      if (at === -1) {
        rangeFields.push(index);
        rangeGroups.push([filter]);
      } else {
        rangeGroups[at]!.push(filter);
      }
    }
  }
  const ranges = rangeFields === undefined ? NONE : rangeFields.map((index, i) => index.rangeOf(rangeGroups![i]!));
  const search = searched !== undefined && searched.exact ? searched.rows.length : undefined;
  const choice = chooseDriver({ rows: rows.size, equal, ranges, search });
  switch (choice.kind) {
    case 'all':
      return ALL;
    case 'search':
      return { kind: 'rows', rows: searched!.rows, covers: NONE, searched: true, merged: false };
    case 'range': {
      const [lo, hi] = ranges[choice.at]!;
      return { kind: 'range', field: rangeFields![choice.at]!, lo, hi, covers: rangeGroups![choice.at]!, creation: false };
    }
    case 'value': {
      // One value: its rows are a range of the order, in creation order.
      const [lo, hi] = equal[choice.at]!.ranges[0]!;
      return { kind: 'range', field: field(equalFilters[choice.at]!.path), lo, hi, covers: [equalFilters[choice.at]!], creation: true };
    }
    case 'values': {
      const filter = equalFilters[choice.at]!;
      const index = field(filter.path);
      const { ranges: values, lists: elements, count } = equal[choice.at]!;
      const lists = [...values.map(([lo, hi]) => index.order.copy(lo, hi)), ...elements];
      const union = yield* anyOf(lists, count, rows.slotCount, slice);
      return { kind: 'rows', rows: union, covers: [filter], searched: false, merged: lists.length > 1 };
    }
  }
}

/** Tests for what the driver does not already guarantee: the filters it does not cover, and the search unless it drives. */
export function rowTests(filters: readonly Filter[], search: readonly string[], searched: Candidates | undefined, driver: Driver, field: FieldOf, rows: Rows<StoredEntity>): RowTest[] {
  const covered = driver.kind === 'all' ? NONE : driver.covers;
  const tests = predicates(covered.length === 0 ? filters : filters.filter((f) => !covered.includes(f)), field);
  if (searched !== undefined && !(driver.kind === 'rows' && driver.searched)) tests.push(...searchTests(search, searched, rows));
  return tests;
}

/** Tests of a row against the search: among the candidates, and (for words with other characters than letters and digits) in the record. */
export function searchTests(search: readonly string[], searched: Candidates | undefined, rows: Rows<StoredEntity>): RowTest[] {
  if (searched === undefined) return [];
  searched.member ??= rowSet(searched.rows, rows.slotCount);
  const member = searched.member;
  const tests = [(row: number): boolean => member[row] === 1];
  if (!searched.exact) {
    tests.push((row) => {
      const entity = rows.at(row);
      return entity !== undefined && matchesSearch(entity.record, search);
    });
  }
  return tests;
}

/** How many of the driver's rows pass every test. */
export function* countRows(driver: Driver, tests: readonly RowTest[], rows: Rows<unknown>, slice: Slice): Work<number> {
  if (tests.length === 0 && driver.kind === 'rows') return driver.rows.length;
  if (tests.length === 0 && driver.kind === 'range') return driver.hi - driver.lo;
  let count = 0;
  yield* scan(driver, tests, rows, slice, () => count++);
  return count;
}

/** The driver's rows that pass every test, in creation order (range drivers: in value order). */
export function* collectRows(driver: Driver, tests: readonly RowTest[], rows: Rows<unknown>, slice: Slice): Work<Int32Array> {
  let out = new Int32Array(1024);
  let count = 0;
  yield* scan(driver, tests, rows, slice, (row) => {
    if (count === out.length) {
      const grown = new Int32Array(out.length * 2);
      grown.set(out);
      out = grown;
    }
    out[count++] = row;
  });
  return out.slice(0, count);
}

function* scan(driver: Driver, tests: readonly RowTest[], rows: Rows<unknown>, slice: Slice, match: (row: number) => void): Work<void> {
  const pass = tests.length === 1 ? tests[0]! : (row: number): boolean => tests.every((test) => test(row));
  if (driver.kind === 'all') {
    // Every live row, a block of slots at a time.
    const slots = rows.slotCount;
    const live = (row: number): boolean => rows.at(row) !== undefined && pass(row);
    for (let from = 0; from < slots; from += SCAN_BLOCK) {
      for (let row = from; row < Math.min(slots, from + SCAN_BLOCK); row++) if (live(row)) match(row);
      if (slice.due) yield;
    }
    return;
  }
  // The loops run in a plain function, a block at a time: V8 optimises it better than a generator.
  if (driver.kind === 'rows') {
    const list = driver.rows;
    for (let from = 0; from < list.length; from += SCAN_BLOCK) {
      scanBlock(list, from, Math.min(list.length, from + SCAN_BLOCK), pass, match);
      if (slice.due) yield;
    }
    return;
  }
  yield* scanRange(driver.field.order, driver.lo, driver.hi, pass, match, slice);
}

/**
 * The ranks of the first sort key's order a sorted page may come from: the driver's range when it
 * is on that field, else the range filters on it (they bound the part worth walking), else all.
 */
export function sortSpan(first: FieldIndex, driver: Driver, filters: readonly Filter[], field: FieldOf): readonly [number, number] {
  if (driver.kind === 'range' && driver.field === first) return [driver.lo, driver.hi];
  const firstRanges = filters.filter((f): f is RangeFilter => isRange(f) && field(f.path) === first);
  return (firstRanges.length > 0 ? first.rangeOf(firstRanges) : undefined) ?? [0, first.order.size];
}
