import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chooseDriver, readPath, walkOrSort, type DriverChoice, type DriverInputs, type ReadInputs, type ReadPath, type SortedInputs } from '../../src/store/index/query-plan.js';

// The planner's rules (src/store/index/query-plan.ts) as tables: each case is a name that reads
// `input -> outcome`, the plain inputs the indexes would give, and the outcome.

/** An `eq` filter's sizes: `values` ranges of the order, `elements` lists of array rows. */
const eq = (count: number, values = 1, elements = 0): DriverInputs['equal'][number] => ({
  count,
  ranges: { length: values },
  lists: { length: elements },
});
const inputs = (given: Partial<DriverInputs>): DriverInputs => ({ rows: 1000, equal: [], ranges: [], search: undefined, ...given });

describe('chooseDriver: the fewest rows drive', () => {
  const cases: [string, DriverInputs, DriverChoice][] = [
    ['no filter, no search -> every row', inputs({}), { kind: 'all' }],
    ['one eq of one value -> that value, a range of its order', inputs({ equal: [eq(10)] }), { kind: 'value', at: 0 }],
    ['one eq spelling two values (5 and "5") -> their union', inputs({ equal: [eq(10, 2)] }), { kind: 'values', at: 0 }],
    ['one eq matching array elements -> their union', inputs({ equal: [eq(10, 1, 1)] }), { kind: 'values', at: 0 }],
    ['one eq matching only array elements -> their rows', inputs({ equal: [eq(10, 0, 1)] }), { kind: 'values', at: 0 }],
    ['an eq matching nothing -> it drives (no row to read)', inputs({ equal: [eq(0, 0)] }), { kind: 'values', at: 0 }],
    ['an eq matching every row -> every row (a tie keeps the earlier)', inputs({ equal: [eq(1000)] }), { kind: 'all' }],
    ['two eqs -> the smaller', inputs({ equal: [eq(300), eq(20)] }), { kind: 'value', at: 1 }],
    ['two eqs of one size -> the first', inputs({ equal: [eq(20), eq(20)] }), { kind: 'value', at: 0 }],
    ['a range narrower than the eq -> the range', inputs({ equal: [eq(300)], ranges: [[100, 150]] }), { kind: 'range', at: 0 }],
    ['a range as wide as the eq -> the eq', inputs({ equal: [eq(50)], ranges: [[100, 150]] }), { kind: 'value', at: 0 }],
    ['two fields with ranges -> the narrower', inputs({ ranges: [[0, 500], [10, 20]] }), { kind: 'range', at: 1 }],
    ['a range covering every row -> every row', inputs({ ranges: [[0, 1000]] }), { kind: 'all' }],
    ['a range the order cannot tell (arrays) -> never drives', inputs({ ranges: [undefined], equal: [eq(900)] }), { kind: 'value', at: 0 }],
    ['an exact search with fewer candidates -> the search', inputs({ equal: [eq(300)], ranges: [[0, 200]], search: 40 }), { kind: 'search' }],
    ['an exact search as large as the best filter -> the filter', inputs({ equal: [eq(40)], search: 40 }), { kind: 'value', at: 0 }],
    ['an exact search alone -> the search', inputs({ search: 999 }), { kind: 'search' }],
    ['a search whose candidates must be checked (undefined) -> every row', inputs({ search: undefined }), { kind: 'all' }],
    ['no live row -> every row (nothing is fewer)', inputs({ rows: 0, equal: [eq(0, 0)] }), { kind: 'all' }],
  ];
  for (const [name, given, outcome] of cases) {
    test(name, () => assert.deepEqual(chooseDriver(given), outcome));
  }
});

const read = (given: Partial<ReadInputs>): ReadInputs => ({ sorted: false, tested: false, driver: 'all', creation: false, onFirst: false, ...given });

describe('readPath: positions in an index first', () => {
  const cases: [string, ReadInputs, ReadPath][] = [
    ['unsorted, rows driver, nothing to test -> the driver rows', read({ driver: 'rows' }), 'driver rows'],
    ['unsorted, one eq value, nothing to test -> a position in its range', read({ driver: 'range', creation: true }), 'driver range'],
    ['unsorted, range filters alone -> collect (value order to creation order)', read({ driver: 'range' }), 'collect'],
    ['unsorted, every row, nothing to test -> collect', read({ driver: 'all' }), 'collect'],
    ['unsorted, rows driver, filters left -> collect', read({ driver: 'rows', tested: true }), 'collect'],
    ['unsorted, one eq value, filters left -> collect', read({ driver: 'range', creation: true, tested: true }), 'collect'],
    ['sorted, every row, nothing to test -> a position in the first key order', read({ sorted: true }), 'order'],
    ['sorted, range on the first key, nothing to test -> a position in it', read({ sorted: true, driver: 'range', onFirst: true }), 'order'],
    ['sorted, eq of one value on the first key, nothing to test -> a position in it', read({ sorted: true, driver: 'range', creation: true, onFirst: true }), 'order'],
    ['sorted, range on another key -> count, then walk or sort', read({ sorted: true, driver: 'range' }), 'count'],
    ['sorted, rows driver, nothing to test -> count, then walk or sort', read({ sorted: true, driver: 'rows' }), 'count'],
    ['sorted, every row, filters left -> count, then walk or sort', read({ sorted: true, tested: true }), 'count'],
    ['sorted, range on the first key, filters left -> count, then walk or sort', read({ sorted: true, driver: 'range', onFirst: true, tested: true }), 'count'],
  ];
  for (const [name, given, outcome] of cases) {
    test(name, () => assert.equal(readPath(given), outcome));
  }
});

describe('walkOrSort: walk only early pages of many matches', () => {
  const cases: [string, SortedInputs, 'walk' | 'sort'][] = [
    ['19,999 matches -> sort (few: sorted once, kept)', { total: 19_999, offset: 0, limit: 20, span: 1_000_000 }, 'sort'],
    ['20,000 matches, first page of the whole order -> walk', { total: 20_000, offset: 0, limit: 20, span: 1_000_000 }, 'walk'],
    ['half the rows match, page 1 -> walk (about 40 rows looked at)', { total: 500_000, offset: 0, limit: 20, span: 1_000_000 }, 'walk'],
    ['half the rows match, offset 9,980 -> sort (a walk would look at 20,000 rows)', { total: 500_000, offset: 9_980, limit: 20, span: 1_000_000 }, 'sort'],
    ['half the rows match, offset 9,979 -> walk (19,998 rows)', { total: 500_000, offset: 9_979, limit: 20, span: 1_000_000 }, 'walk'],
    ['2% match over a million, page 1 -> walk (1,000 rows)', { total: 20_000, offset: 0, limit: 20, span: 1_000_000 }, 'walk'],
    ['2% match over a million, offset 400 -> sort (21,000 rows)', { total: 20_000, offset: 400, limit: 20, span: 1_000_000 }, 'sort'],
    ['a range on the first key narrows the span -> walk deeper', { total: 20_000, offset: 400, limit: 20, span: 40_000 }, 'walk'],
    ['a walk costing more than the matches -> sort', { total: 20_000, offset: 19_990, limit: 20, span: 20_000 }, 'sort'],
  ];
  for (const [name, given, outcome] of cases) {
    test(name, () => assert.equal(walkOrSort(given), outcome));
  }
});
