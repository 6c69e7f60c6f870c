import { compareValues, kindRank } from '../../conventions/query.js';
import { CHECK_EVERY, type Slice, type Work } from './slices.js';
import type { Cell, ValueColumn } from './value-column.js';
import { HOLE_CODE, NO_ROW } from './value-column.js';

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
 * The live rows of a column in (value, row) order. A column without numbers is ranked by value
 * (`rankByValue`); one of few distinct primitive values (a stock count) is grouped in two passes
 * (count each value, then place each row after the rows of smaller values): O(n + k log k), no
 * comparison sort and no array per value. Otherwise the rows are sorted, in slices.
 */
export function* orderRows(column: ValueColumn, slice: Slice): Work<Int32Array> {
  if (!column.hasNumbers) return yield* rankByValue(column, slice);
  const grouped = yield* groupByValue(column, slice);
  if (grouped) return grouped;
  const rows = new Int32Array(column.live);
  let k = 0;
  for (let row = 0; row < column.length; row++) {
    if (column.get(row) !== NO_ROW) rows[k++] = row;
    // ~13 ms whole at a million rows of distinct numbers (a price).
    if (row % CHECK_EVERY === 0 && slice.due) yield;
  }
  return yield* sortRows(rows, columnComparator(column), slice);
}

/**
 * The live rows of a column without numbers in (value, row) order, comparing each distinct value
 * once rather than each pair of rows: the column's codes are counted, the codes in use sorted by
 * value (an array's or object's JSON text made once here, never per comparison), equal values
 * given one rank, and the rows placed by rank in row order (a counting sort). O(n + k log k) for
 * k codes; comparing rows instead cost a WeakMap look-up of two JSON texts per comparison, about
 * 12 s for a million rows of mostly distinct arrays (`tags`), and kept a million texts after.
 */
function* rankByValue(column: ValueColumn, slice: Slice): Work<Int32Array> {
  const codes = column.codeCount;
  const length = column.length;
  const rows = new Uint32Array(codes);
  for (let row = 0; row < length; row++) {
    rows[column.code(row)]!++;
    if (row % CHECK_EVERY === 0 && slice.due) yield;
  }
  let used = 0;
  for (let code = 0; code < codes; code++) if (rows[code]! > 0 && code !== HOLE_CODE) used++;
  const inUse = new Int32Array(used);
  // Each value's kind (the first key of the order) and, for strings, arrays and objects, its text.
  const kinds = new Uint8Array(codes);
  const texts: string[] = new Array<string>(codes);
  for (let code = 0, k = 0; code < codes; code++) {
    if (rows[code] === 0 || code === HOLE_CODE) continue;
    inUse[k++] = code;
    const value = column.valueOf(code);
    kinds[code] = kindRank(value);
    if (typeof value === 'string') texts[code] = value;
    else if (typeof value === 'object' && value !== null) texts[code] = JSON.stringify(value);
    // A JSON text costs about a microsecond: the clock is read more often than in plain loops.
    if (k % 256 === 0 && slice.due) yield;
  }
  const [high, low] = yield* prefixKeys(inUse, kinds, texts, slice);
  // Booleans (kind 2) are codes 4 (false) and 5 (true): ties of kind and text compare by code.
  // Texts compare by their first code units as numbers, then whole: most comparisons of a million
  // texts end in the numbers, at half the cost of comparing strings.
  const byValue = (a: number, b: number): number => {
    const kind = kinds[a]! - kinds[b]!;
    if (kind !== 0) return kind;
    if (high[a] !== high[b]) return high[a]! < high[b]! ? -1 : 1;
    if (low[a] !== low[b]) return low[a]! < low[b]! ? -1 : 1;
    const x = texts[a];
    const y = texts[b];
    return x !== undefined && x !== y ? (x < y! ? -1 : 1) : a - b;
  };
  const sorted = yield* sortRows(inUse, byValue, slice);
  // Equal texts have equal kinds and prefix numbers: the texts themselves (a million strings read
  // in value order, each a cache miss) are compared only when those agree.
  const sameValue = (a: number, b: number): boolean =>
    kinds[a] === kinds[b] && high[a] === high[b] && low[a] === low[b] && texts[b] !== undefined && texts[a] === texts[b];
  const [first, starts, at] = yield* rankStarts(sorted, rows, sameValue, slice);
  const out = new Int32Array(at);
  for (let row = 0; row < length; row++) {
    const code = column.code(row);
    if (code !== HOLE_CODE) out[starts[first[code]!]!++] = row;
    if (row % CHECK_EVERY === 0 && slice.due) yield;
  }
  return out;
}

/**
 * Where the rows of each code start in the order, codes taken in `sorted` (value) order: `first`
 * names the code whose place a code shares (codes of one value, equal texts past the interning
 * bound, are neighbours in `sorted`, and share the first one's place so that their rows mix in row
 * order), `starts` that place, and `at` the rows in all. In slices: at a million distinct values
 * this loop reads its arrays in value order, not code order, and held the loop for ~250 ms whole.
 */
export function* rankStarts(
  sorted: Int32Array,
  rowsByCode: Uint32Array,
  sameValue: (a: number, b: number) => boolean,
  slice: Slice,
): Work<[first: Int32Array, starts: Uint32Array, at: number]> {
  const first = new Int32Array(rowsByCode.length);
  const starts = new Uint32Array(rowsByCode.length);
  let at = 0;
  for (let i = 0; i < sorted.length; i++) {
    const code = sorted[i]!;
    const same = i > 0 && sameValue(sorted[i - 1]!, code);
    first[code] = same ? first[sorted[i - 1]!]! : code;
    if (!same) starts[code] = at;
    at += rowsByCode[code]!;
    if (i % CHECK_EVERY === CHECK_EVERY - 1 && slice.due) yield;
  }
  return [first, starts, at];
}

/** Code units packed per number of `prefixKeys`: three of 16 bits (plus one) fit a double exactly. */
const UNITS = 3;
const UNIT = 65_537;

/**
 * For each code in use with a text, two numbers that order like its text's code units after the
 * prefix every text of its kind shares (`["` of every array): units 0–2 and 3–5, a missing unit
 * below every unit. Equal numbers say nothing: the texts are then compared whole.
 */
function* prefixKeys(inUse: Int32Array, kinds: Uint8Array, texts: readonly (string | undefined)[], slice: Slice): Work<[Float64Array, Float64Array]> {
  const shared: (string | undefined)[] = [];
  for (let i = 0; i < inUse.length; i++) {
    const code = inUse[i]!;
    const text = texts[code];
    if (text === undefined) continue;
    const kind = kinds[code]!;
    const known = shared[kind];
    if (known === undefined) shared[kind] = text;
    else if (known.length > 0 && !text.startsWith(known)) {
      let n = 0;
      while (n < known.length && n < text.length && known.charCodeAt(n) === text.charCodeAt(n)) n++;
      shared[kind] = known.slice(0, n);
    }
    if (i % CHECK_EVERY === 0 && slice.due) yield;
  }
  const high = new Float64Array(kinds.length);
  const low = new Float64Array(kinds.length);
  const unit = (text: string, at: number): number => (at < text.length ? text.charCodeAt(at) + 1 : 0);
  for (let i = 0; i < inUse.length; i++) {
    const code = inUse[i]!;
    const text = texts[code];
    if (text === undefined) continue;
    const from = shared[kinds[code]!]!.length;
    let a = 0;
    let b = 0;
    for (let u = 0; u < UNITS; u++) {
      a = a * UNIT + unit(text, from + u);
      b = b * UNIT + unit(text, from + UNITS + u);
    }
    high[code] = a;
    low[code] = b;
    if (i % CHECK_EVERY === 0 && slice.due) yield;
  }
  return [high, low];
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
