/** The value of a row that holds no entity (a hole of the creation order): in no index. */
export const NO_ROW: unique symbol = Symbol('no row');
export type Cell = unknown;

/** Strings interned per column at most: past that the field is mostly distinct values anyway. */
const MAX_INTERNED = 65_536;

// A row's code: one of these, or `FIRST_CELL + i` for the value in cell `i`.
const HOLE = 0;
const ABSENT = 1;
const NUMBER = 2;
const FIRST_CELL = 6;
export const HOLE_CODE = HOLE;
export const NUMBER_CODE = NUMBER;
/** The values of the fixed codes (`NUMBER` reads the numbers instead). */
const FIXED: readonly Cell[] = [NO_ROW, undefined, undefined, null, false, true];

/** A column's rows counted by value (`ValueColumn.tally`): what facets are made of. */
export class CodeTally {
  /** Rows by code: 0 and 1 (holes, absent values) name no value. */
  counts = new Uint32Array(64);
  /** Rows holding a number, by number. */
  readonly numbers = new Map<number, number>();
}

/**
 * One field's value by row, in typed arrays rather than a JS array of values: a code per row
 * (4 bytes), a number per row where numbers occur (8 bytes, never a boxed double), and a table of
 * the other values. Equal strings share one cell, and so do arrays and objects with equal JSON (up
 * to `MAX_INTERNED` of each: a status field holds three strings, not a million); past that a value
 * gets a cell of its own, given back when the row changes. A million rows of a status cost 4 MB, of a price 12 MB (a JS
 * array of boxed doubles: 24 MB and a million objects for the collector to trace).
 */
export class ValueColumn {
  #codes: Uint32Array;
  #numbers: Float64Array | undefined;
  #length = 0;
  readonly #cells: Cell[] = [];
  readonly #free: number[] = [];
  readonly #interned = new Map<string, number>();
  /** Arrays and objects by JSON text: equal ones share one cell (a million rows of tags hold a few hundred arrays). */
  readonly #internedJson = new Map<string, number>();
  /** Codes of the shared cells above: never given back. */
  readonly #shared = new Set<number>();
  readonly #elements = new Map<string, string>();
  /** Live rows holding a number, and live rows in all: a column of numbers only sorts faster. */
  #numberRows = 0;
  #liveRows = 0;

  constructor(capacity = 0) {
    this.#codes = new Uint32Array(capacity);
  }

  /** Rows `[0, length)` have been set (the rest are holes). */
  get length(): number {
    return this.#length;
  }

  get live(): number {
    return this.#liveRows;
  }

  /** True when every live row holds a number: `number(row)` is then the whole value. */
  get numeric(): boolean {
    return this.#numberRows === this.#liveRows;
  }

  /** True when some live row holds a number (numbers have no code of their own: `number(row)`). */
  get hasNumbers(): boolean {
    return this.#numberRows > 0;
  }

  /**
   * Codes are `[0, codeCount)`: `code(row)` names the row's value, which `valueOf(code)` gives
   * (equal codes, equal values; past the interning bound equal values may have other codes). A
   * hole's code is `HOLE_CODE`, a number's `NUMBER_CODE` (its value is `number(row)`).
   */
  get codeCount(): number {
    return FIRST_CELL + this.#cells.length;
  }

  code(row: number): number {
    return row < this.#length ? this.#codes[row]! : HOLE;
  }

  valueOf(code: number): Cell {
    return code >= FIRST_CELL ? this.#cells[code - FIRST_CELL] : FIXED[code];
  }

  /** The row's value: `NO_ROW` for a hole (or past the end), `undefined` when the path is absent. */
  get(row: number): Cell {
    if (row >= this.#length) return NO_ROW;
    const code = this.#codes[row]!;
    if (code === NUMBER) return this.#numbers![row]!;
    return code >= FIRST_CELL ? this.#cells[code - FIRST_CELL] : FIXED[code];
  }

  /** The row's number, or NaN when it holds anything else (JSON has no NaN). */
  number(row: number): number {
    return this.#codes[row] === NUMBER ? this.#numbers![row]! : NaN;
  }

  /** True when the row holds an entity whose path is present. */
  present(row: number): boolean {
    const code = this.#codes[row];
    return code !== undefined && code !== HOLE && code !== ABSENT;
  }

  /**
   * Counts rows by value into `tally`: the rows `rows[from, to)`, or without `rows` the rows
   * `[from, to)` themselves (holes and absent values are counted under codes that name no value).
   * One read of a typed array per row: the values are looked at once per distinct code, later.
   */
  tally(tally: CodeTally, rows: Int32Array | undefined, from: number, to: number): void {
    const need = FIRST_CELL + this.#cells.length;
    if (tally.counts.length < need) {
      const grown = new Uint32Array(Math.max(need, tally.counts.length * 2));
      grown.set(tally.counts);
      tally.counts = grown;
    }
    const counts = tally.counts;
    const codes = this.#codes;
    const length = this.#length;
    if (rows === undefined) {
      const end = Math.min(to, length);
      for (let row = from; row < end; row++) {
        const code = codes[row]!;
        if (code === NUMBER) this.#tallyNumber(tally, row);
        else counts[code]!++;
      }
      return;
    }
    for (let i = from; i < to; i++) {
      const row = rows[i]!;
      const code = row < length ? codes[row]! : HOLE;
      if (code === NUMBER) this.#tallyNumber(tally, row);
      else counts[code]!++;
    }
  }

  #tallyNumber(tally: CodeTally, row: number): void {
    const value = this.#numbers![row]!;
    tally.numbers.set(value, (tally.numbers.get(value) ?? 0) + 1);
  }

  /**
   * The values a tally counted and their counts, once per code or number: equal values past the
   * interning bound have cells of their own and come once per cell (the caller merges them).
   * One at a time, as the caller takes them: a field of a million distinct values is not listed
   * at once, so a caller that gives up the loop between entries holds it for no more than a few.
   */
  *tallied(tally: CodeTally): Generator<[Cell, number], void, undefined> {
    const counts = tally.counts;
    for (let code = 3; code < counts.length; code++) {
      const count = counts[code]!;
      if (count === 0 || code === NUMBER) continue;
      yield [code >= FIRST_CELL ? this.#cells[code - FIRST_CELL] : FIXED[code], count];
    }
    yield* tally.numbers;
  }

  /** Sets the row's value (`NO_ROW` makes it a hole). */
  set(row: number, value: Cell): void {
    if (row >= this.#codes.length) this.#grow(row + 1);
    if (row >= this.#length) this.#length = row + 1;
    this.#release(row);
    const code = this.#encode(row, value);
    this.#codes[row] = code;
    if (code !== HOLE) this.#liveRows++;
    if (code === NUMBER) this.#numberRows++;
  }

  /** Sets the next row (building). */
  push(value: Cell): void {
    this.set(this.#length, value);
  }

  /** Renumbers rows after a re-pack of the creation order: row `r` becomes `moved[r]`; `[0, slots)` afterwards. */
  remap(moved: Int32Array, slots: number): void {
    const codes = new Uint32Array(Math.max(slots, 16));
    const numbers = this.#numbers === undefined ? undefined : new Float64Array(codes.length);
    for (let row = 0; row < this.#length; row++) {
      const code = this.#codes[row]!;
      if (code === HOLE) continue;
      const to = moved[row]!;
      codes[to] = code;
      if (code === NUMBER) numbers![to] = this.#numbers![row]!;
    }
    this.#codes = codes;
    this.#numbers = numbers;
    this.#length = slots;
  }

  #encode(row: number, value: Cell): number {
    switch (typeof value) {
      case 'number':
        this.#numbers ??= new Float64Array(this.#codes.length);
        this.#numbers[row] = value;
        return NUMBER;
      case 'undefined':
        return ABSENT;
      case 'boolean':
        return value ? 5 : 4;
      case 'string': {
        const known = this.#interned.get(value);
        if (known !== undefined) return known;
        const code = this.#cell(value);
        if (this.#interned.size < MAX_INTERNED) {
          this.#interned.set(value, code);
          this.#shared.add(code);
        }
        return code;
      }
      default: {
        if (value === NO_ROW) return HOLE;
        if (value === null) return 3;
        // An array or an object: the index's own copy, never changed, so equal ones can be one.
        const text = JSON.stringify(value);
        const known = this.#internedJson.get(text);
        if (known !== undefined) return known;
        if (Array.isArray(value)) this.#internElements(value);
        const code = this.#cell(value);
        if (this.#internedJson.size < MAX_INTERNED) {
          this.#internedJson.set(text, code);
          this.#shared.add(code);
        }
        return code;
      }
    }
  }

  /**
   * Equal strings in arrays share one copy too (tags: a million arrays of a few of ten strings
   * would otherwise hold millions of strings for the collector to visit). The array is the index's
   * own copy of the value, and an equal string in its place changes nothing a reader can see.
   */
  #internElements(array: unknown[]): void {
    for (let i = 0; i < array.length; i++) {
      const element = array[i];
      if (typeof element !== 'string') continue;
      const known = this.#elements.get(element);
      if (known !== undefined) array[i] = known;
      else if (this.#elements.size < MAX_INTERNED) this.#elements.set(element, element);
    }
  }

  #cell(value: Cell): number {
    const free = this.#free.pop();
    if (free === undefined) return FIRST_CELL + this.#cells.push(value) - 1;
    this.#cells[free - FIRST_CELL] = value;
    return free;
  }

  /** Forgets the row's value: a cell of its own goes back to the free list. */
  #release(row: number): void {
    const code = row < this.#length ? this.#codes[row]! : HOLE;
    if (code === HOLE) return;
    this.#liveRows--;
    if (code === NUMBER) this.#numberRows--;
    if (code < FIRST_CELL || this.#shared.has(code)) return;
    this.#cells[code - FIRST_CELL] = undefined;
    this.#free.push(code);
  }

  #grow(minimum: number): void {
    const capacity = Math.max(minimum, Math.ceil(this.#codes.length * 1.5), 1024);
    const codes = new Uint32Array(capacity);
    codes.set(this.#codes.subarray(0, this.#length));
    this.#codes = codes;
    if (this.#numbers) {
      const numbers = new Float64Array(capacity);
      numbers.set(this.#numbers.subarray(0, this.#length));
      this.#numbers = numbers;
    }
  }
}
