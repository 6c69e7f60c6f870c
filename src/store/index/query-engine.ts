import { matchesSearch, valueAt, type Filter } from '../../conventions/query.js';
import type { FacetCount, StoreQuery, StoredEntity } from '../store.js';
import { facetCounts } from './facet-counts.js';
import { FieldIndex, NO_ROW, type EqualRows } from './field-index.js';
import { SCAN_BLOCK, scanBlock, scanRange, walk } from './order-scan.js';
import { anyOf } from './row-lists.js';
import { rowOrder, sortRows } from './row-sort.js';
import { comparator, isRange, predicates, restComparator, rowSet } from './row-tests.js';
import { CHECK_EVERY, runSliced, type Slice, type Work } from './slices.js';
import { TextIndex } from './text-index.js';

/** What the engine reads of the creation order: rows are its slots. */
export interface Rows<E> {
  readonly size: number;
  readonly slotCount: number;
  readonly layout: number;
  /** The store's revision: a result is kept only if no write landed while it was computed. */
  readonly revision: string;
  at(row: number): E | undefined;
  /** Live entities at positions `[offset, offset + limit)` of the creation order. */
  page(offset: number, limit: number): E[];
}

/** A text index being built. */
interface TextFill<E> {
  readonly text: TextIndex;
  /** Rows below it have been indexed. */
  cursor: number;
  /** For rows written after the build indexed them: the entity it indexed (undefined: none). */
  readonly seen: Map<number, E | undefined>;
}

/** A query's answer before its rows become entities. */
interface Answer {
  readonly total: number;
  readonly rows: ArrayLike<number>;
  readonly facets?: FacetCount[][];
}

type RangeFilter = Extract<Filter, { bound: number | string }>;
/** A search's candidate rows; `member` marks them by row, made when first needed and kept with them. */
type Candidates = { rows: Int32Array; exact: boolean; member?: Uint8Array };

/** Where a query's candidate rows come from. */
type Driver =
  /** Rows in creation order; `covers` are the filters they satisfy exactly. */
  | { kind: 'rows'; rows: Int32Array; covers: ReadonlySet<Filter>; searched: boolean; merged: boolean }
  /** Ranks `[lo, hi)` of a field's order; `creation`: its rows are in creation order (an `eq` range: one value). */
  | { kind: 'range'; field: FieldIndex; lo: number; hi: number; covers: ReadonlySet<Filter>; creation: boolean }
  | { kind: 'all' };

/** What the engine answers: a page of entities, how many match, and the facets asked for. */
export interface EngineAnswer<E> {
  readonly total: number;
  readonly entities: E[];
  readonly facets?: FacetCount[][];
}

/** Matches kept per query while the revision stays the same: later pages cost their length. */
const RESULT_CACHE_BYTES = 64 * 1024 * 1024;
/** Below this many matches a sorted query sorts them all (and keeps them) rather than walking an order. */
const SORT_ALL_BELOW = 20_000;
/** Rows a walk may be expected to look at before sorting all the matches (and keeping them) is cheaper. */
const MAX_WALK = 20_000;
/** Searches whose candidates are kept per revision (each up to 4 bytes a row). */
const MAX_SEARCHES = 16;

/**
 * The query engine over the materialised index (contract §3a). Indexes are built per field on
 * first use (in slices, the event loop free between them) and kept current by every write. A
 * query picks its most selective indexed filter as the driver, checks the other filters against
 * the indexed values (never parsing a record), and for a sort either walks the first key's order
 * (early pages) or sorts the matches once and keeps them for the following pages.
 */
export class QueryEngine<E extends StoredEntity> {
  readonly #rows: Rows<E>;
  readonly #fields = new Map<string, FieldIndex>();
  /** Fields being built, and the rows written meanwhile (to refresh once the build ends). */
  readonly #building = new Map<string, Promise<void>>();
  #touched: Set<number> | undefined;
  #text: TextIndex | undefined;
  #textBuilding: Promise<void> | undefined;
  /** The text index being filled: how far, and what it indexed for rows written after it passed them. */
  #textFill: TextFill<E> | undefined;
  readonly #results = new Map<string, Int32Array>();
  /** Search candidates of this revision, by words. */
  readonly #searches = new Map<string, Candidates>();
  #resultsRevision = '';
  #resultsBytes = 0;

  constructor(rows: Rows<E>) {
    this.#rows = rows;
  }

  /** True when a write must tell the engine (some index exists or is being built). */
  get active(): boolean {
    return this.#fields.size > 0 || this.#building.size > 0 || this.#text !== undefined || this.#textBuilding !== undefined;
  }


  // ---- keeping indexes current ----

  /** A row's entity changes from `old` (undefined: new row) to `next` (undefined: deleted); `nextRecord` saves parsing it. */
  write(row: number, old: E | undefined, next: E | undefined, nextRecord?: unknown): void {
    this.#touched?.add(row);
    const fill = this.#textFill;
    if (fill && row < fill.cursor && !fill.seen.has(row)) fill.seen.set(row, old);
    const record = next === undefined ? NO_ROW : this.#fields.size > 0 || this.#text ? (nextRecord ?? next.record) : NO_ROW;
    for (const field of this.#fields.values()) field.apply(row, record);
    if (this.#text) {
      if (old !== undefined) this.#text.remove(row, old.record);
      if (record !== NO_ROW) this.#text.add(row, record);
    }
  }

  /** Slots were renumbered: every index follows. */
  remap(moved: Int32Array): void {
    const slots = this.#rows.slotCount;
    for (const field of this.#fields.values()) field.remap(moved, slots);
    this.#text?.remap(moved);
    this.#results.clear();
    this.#searches.clear();
    this.#resultsBytes = 0;
    if (this.#touched) this.#touched = new Set([...this.#touched].map((row) => moved[row]!));
  }

  // ---- building ----

  #key(path: readonly string[]): string {
    return path.join('.');
  }

  /** Resolves once every path has a live index; builds the missing ones together (one parse per record). */
  #ensure(paths: readonly (readonly string[])[]): Promise<void> | undefined {
    const missing = new Map<string, readonly string[]>();
    const waits: Promise<void>[] = [];
    for (const path of paths) {
      const key = this.#key(path);
      if (this.#fields.has(key)) continue;
      const building = this.#building.get(key);
      if (building) waits.push(building);
      else missing.set(key, path);
    }
    if (missing.size > 0) {
      const build = this.#build([...missing.values()]);
      for (const key of missing.keys()) this.#building.set(key, build);
      waits.push(build);
    }
    return waits.length === 0 ? undefined : Promise.all(waits).then(() => undefined);
  }

  async #build(paths: readonly (readonly string[])[]): Promise<void> {
    const keys = paths.map((path) => this.#key(path));
    this.#touched ??= new Set();
    try {
      // Fresh indexes on every start: a re-pack while the build waits starts it over.
      const built = await runSliced(
        (slice) => this.#fill(paths.map((path) => new FieldIndex(path)), slice),
        Infinity,
        () => this.#rows.layout,
      );
      for (const field of built) {
        // Writes that landed during the build: their rows are brought up to date from the value
        // the build gave them.
        for (const row of this.#touched) {
          const entity = this.#rows.at(row);
          field.apply(row, entity === undefined ? NO_ROW : entity.record);
        }
        this.#fields.set(this.#key(field.path), field);
      }
    } finally {
      for (const key of keys) this.#building.delete(key);
      if (this.#building.size === 0 && this.#textBuilding === undefined) this.#touched = undefined;
    }
  }

  *#fill(fields: FieldIndex[], slice: Slice): Work<FieldIndex[]> {
    const slots = this.#rows.slotCount;
    const paths = fields.map((field) => field.path);
    for (let row = 0; row < slots; row++) {
      const entity = this.#rows.at(row);
      if (entity === undefined) {
        for (const field of fields) field.fill(NO_ROW);
      } else if (entity.valuesAt) {
        const values = entity.valuesAt(paths);
        for (let f = 0; f < fields.length; f++) fields[f]!.fill(values[f]);
      } else {
        const record = entity.record;
        for (const field of fields) field.fill(valueAt(record, field.path));
      }
      if (row % CHECK_EVERY === 0 && slice.due) yield;
    }
    for (const field of fields) yield* field.build(slice);
    return fields;
  }

  #ensureText(): Promise<void> | undefined {
    if (this.#text) return undefined;
    this.#textBuilding ??= this.#buildText().finally(() => {
      this.#textBuilding = undefined;
      if (this.#building.size === 0) this.#touched = undefined;
    });
    return this.#textBuilding;
  }

  async #buildText(): Promise<void> {
    this.#touched ??= new Set();
    const fill = await runSliced((slice) => this.#fillText(slice), Infinity, () => this.#rows.layout);
    for (const row of this.#touched) {
      // What the build indexed for a row written after it passed; adding the current state is
      // idempotent for a row it reached after its writes.
      const before = fill.seen.get(row);
      if (before) fill.text.remove(row, before.record);
      const entity = this.#rows.at(row);
      if (entity) fill.text.add(row, entity.record);
    }
    this.#text = fill.text;
    this.#textFill = undefined;
  }

  *#fillText(slice: Slice): Work<TextFill<E>> {
    const fill: TextFill<E> = { text: new TextIndex(), cursor: 0, seen: new Map() };
    this.#textFill = fill;
    const slots = this.#rows.slotCount;
    for (let row = 0; row < slots; row++) {
      const entity = this.#rows.at(row);
      if (entity !== undefined) fill.text.add(row, entity.record);
      fill.cursor = row + 1;
      // A record is parsed and split into tokens here (a few microseconds): look at the clock often.
      if (row % 128 === 0 && slice.due) yield;
    }
    return fill;
  }

  // ---- answering ----

  /** The matching entities of a query and their count (and its facets); synchronous when the work fits in one slice. */
  query(query: StoreQuery): EngineAnswer<E> | Promise<EngineAnswer<E>> {
    const answer = runSliced((slice) => this.#answerWithFacets(query, slice), query.deadline ?? Infinity, () => this.#rows.layout);
    return answer instanceof Promise ? answer.then((a) => this.#entities(a)) : this.#entities(answer);
  }

  /** The facets of a query without its page: for a store that answers the page of a plain query itself. */
  facets(query: StoreQuery): FacetCount[][] | Promise<FacetCount[][]> {
    return runSliced((slice) => this.#facets(query, slice), query.deadline ?? Infinity, () => this.#rows.layout);
  }

  #entities(answer: Answer): EngineAnswer<E> {
    const entities: E[] = [];
    for (let i = 0; i < answer.rows.length; i++) {
      // A row deleted while a sliced query waited is left out (that answer carries no revision).
      const entity = this.#rows.at(answer.rows[i]!);
      if (entity !== undefined) entities.push(entity);
    }
    return answer.facets === undefined ? { total: answer.total, entities } : { total: answer.total, entities, facets: answer.facets };
  }

  *#answerWithFacets(query: StoreQuery, slice: Slice): Work<Answer> {
    const answer = yield* this.#answer(query, slice);
    if (query.facets === undefined || query.facets.length === 0) return answer;
    return { ...answer, facets: yield* this.#facets(query, slice) };
  }

  // ---- facets (docs/queries.md, Facets) ----

  /** Each facet field's most frequent values over every match of the query's filters and search. */
  *#facets(query: StoreQuery, slice: Slice): Work<FacetCount[][]> {
    const paths = query.facets ?? [];
    for (;;) {
      const wait = this.#ensure([...query.filters.map((f) => f.path), ...paths]) ?? (query.search.length > 0 ? this.#ensureText() : undefined);
      if (wait === undefined) break;
      yield wait;
    }
    const rows = yield* this.#matches(query, slice);
    const out: FacetCount[][] = [];
    for (const path of paths) out.push(yield* facetCounts(this.#fields.get(this.#key(path))!, rows, this.#rows.slotCount, slice));
    return out;
  }

  /**
   * Every row matching the query's filters and search, in no particular order, or undefined for
   * every live row (no filter, no search). Indexes must be built. A kept result is reused.
   */
  *#matches(query: StoreQuery, slice: Slice): Work<Int32Array | undefined> {
    const { filters, search } = query;
    if (filters.length === 0 && search.length === 0) return undefined;
    const kept = this.#results.get(resultKey(query));
    if (kept) return kept;
    const field = (path: readonly string[]): FieldIndex => this.#fields.get(this.#key(path))!;
    const searched = search.length > 0 ? yield* this.#searched(search, slice) : undefined;
    const driver = yield* this.#driver(filters, searched, field, slice);
    const tests = this.#tests(filters, search, searched, driver, field);
    if (tests.length === 0) {
      if (driver.kind === 'rows') return driver.rows;
      if (driver.kind === 'range') return driver.field.order.copy(driver.lo, driver.hi);
      if (search.length === 0) return undefined;
    }
    return yield* this.#collect(driver, tests, slice);
  }

  /** The search's candidate rows, kept per revision. */
  *#searched(search: readonly string[], slice: Slice): Work<Candidates> {
    const revision = this.#rows.revision;
    const key = search.join(' ');
    let searched = this.#searches.get(key);
    if (searched === undefined) {
      searched = yield* this.#text!.candidates(search, this.#rows.slotCount, slice);
      if (this.#rows.revision === revision && this.#searches.size < MAX_SEARCHES) this.#searches.set(key, searched);
    }
    return searched;
  }

  *#answer(query: StoreQuery, slice: Slice): Work<Answer> {
    const { filters, sort, search, offset, limit } = query;
    const paths = [...filters.map((f) => f.path), ...sort.map((k) => k.path), ...(query.facets ?? [])];
    for (;;) {
      const wait = this.#ensure(paths) ?? (search.length > 0 ? this.#ensureText() : undefined);
      if (wait === undefined) break;
      yield wait;
    }
    const revision = this.#rows.revision;
    const cacheKey = resultKey(query);
    const window = (rows: ArrayLike<number>, total = rows.length): Answer => ({
      total,
      rows: Array.prototype.slice.call(rows, offset, offset + limit) as number[],
    });
    const cached = this.#results.get(cacheKey);
    if (cached) return window(cached);
    const keep = (rows: Int32Array): Answer => {
      if (this.#rows.revision === revision) this.#keep(cacheKey, rows);
      return window(rows);
    };
    const field = (path: readonly string[]): FieldIndex => this.#fields.get(this.#key(path))!;
    const searched = search.length > 0 ? yield* this.#searched(search, slice) : undefined;
    const driver = yield* this.#driver(filters, searched, field, slice);
    const tests = this.#tests(filters, search, searched, driver, field);
    const first = sort.length > 0 ? field(sort[0]!.path) : undefined;
    const onFirst = driver.kind === 'range' && driver.field === first;
    // Range filters on the first sort key bound the part of its order worth walking.
    const firstRanges = filters.filter((f): f is RangeFilter => isRange(f) && first !== undefined && field(f.path) === first);
    const span: [number, number] | undefined = onFirst ? [driver.lo, driver.hi] : first && firstRanges.length > 0 ? first.rangeOf(firstRanges) : undefined;
    const [lo, hi] = span ?? [0, first?.order.size ?? 0];

    // Answers that are positions in one index: no row needs looking at.
    if (tests.length === 0) {
      // A union of several values' postings was built for this query: keep it for the next pages.
      if (first === undefined && driver.kind === 'rows') return driver.merged ? keep(driver.rows) : window(driver.rows);
      if (first === undefined && driver.kind === 'range' && driver.creation) {
        const from = Math.min(driver.hi, driver.lo + offset);
        return { total: driver.hi - driver.lo, rows: driver.field.order.copy(from, Math.min(driver.hi, from + limit)) };
      }
      if (first !== undefined && (driver.kind === 'all' || onFirst)) {
        const rows = yield* walk(first, lo, hi, sort[0]!.descending, restComparator(sort, field), offset, limit, undefined, slice);
        return { total: hi - lo, rows };
      }
    }
    if (first === undefined) {
      const matches = yield* this.#collect(driver, tests, slice);
      return keep(driver.kind === 'range' && !driver.creation ? yield* rowOrder(matches, this.#rows.slotCount, slice) : matches);
    }
    const total = yield* this.#count(driver, tests, slice);
    // Walking the first key's order costs about (offset + limit) × span / total rows, on every
    // request; sorting the matches costs total × log(total) once, and every page of the query is
    // then a slice of the kept result. Walk only when it is cheap: early pages of many matches.
    const walkCost = ((offset + limit) * (hi - lo)) / Math.max(1, total);
    if (total >= SORT_ALL_BELOW && walkCost < Math.min(total, MAX_WALK)) {
      const every = [...predicates(filters, field), ...this.#searchTests(search, searched)];
      const pass = (row: number): boolean => every.every((test) => test(row));
      const rows = yield* walk(first, lo, hi, sort[0]!.descending, restComparator(sort, field), offset, limit, pass, slice);
      return { total, rows };
    }
    const matches = yield* this.#collect(driver, tests, slice);
    return keep(yield* sortRows(matches, comparator(sort, field), slice));
  }

  /** The most selective source of candidates among the indexed filters and the search. */
  *#driver(filters: readonly Filter[], searched: Candidates | undefined, field: (path: readonly string[]) => FieldIndex, slice: Slice): Work<Driver> {
    let best: Driver = { kind: 'all' };
    let bestSize = this.#rows.size;
    let bestEq: { filter: Filter; index: FieldIndex; equal: EqualRows } | undefined;
    const ranges = new Map<FieldIndex, RangeFilter[]>();
    for (const filter of filters) {
      const index = field(filter.path);
      if (filter.op === 'eq') {
        const equal = index.equalRows(filter.values);
        if (equal.count < bestSize) {
          bestEq = { filter, index, equal };
          bestSize = equal.count;
        }
      } else if (isRange(filter)) {
        ranges.set(index, [...(ranges.get(index) ?? []), filter]);
      }
    }
    for (const [index, group] of ranges) {
      const span = index.rangeOf(group);
      if (span && span[1] - span[0] < bestSize) {
        best = { kind: 'range', field: index, lo: span[0], hi: span[1], covers: new Set(group), creation: false };
        bestSize = span[1] - span[0];
        bestEq = undefined;
      }
    }
    if (bestEq) {
      const { filter, index, equal } = bestEq;
      const [range, ...more] = equal.ranges;
      if (range !== undefined && more.length === 0 && equal.lists.length === 0) {
        // One value: its rows are a range of the order, in creation order.
        best = { kind: 'range', field: index, lo: range[0], hi: range[1], covers: new Set([filter]), creation: true };
      } else {
        const lists = [...equal.ranges.map(([lo, hi]) => index.order.copy(lo, hi)), ...equal.lists];
        const rows = yield* anyOf(lists, equal.count, this.#rows.slotCount, slice);
        best = { kind: 'rows', rows, covers: new Set([filter]), searched: false, merged: lists.length > 1 };
      }
    }
    if (searched && searched.exact && searched.rows.length < bestSize) {
      best = { kind: 'rows', rows: searched.rows, covers: new Set(), searched: true, merged: false };
    }
    return best;
  }

  /** Tests for what the driver does not already guarantee. */
  #tests(
    filters: readonly Filter[],
    search: readonly string[],
    searched: Candidates | undefined,
    driver: Driver,
    field: (path: readonly string[]) => FieldIndex,
  ): ((row: number) => boolean)[] {
    const covered = driver.kind === 'all' ? new Set<Filter>() : driver.covers;
    const tests = predicates(filters.filter((f) => !covered.has(f)), field);
    if (!(driver.kind === 'rows' && driver.searched)) tests.push(...this.#searchTests(search, searched));
    return tests;
  }

  /** Tests of a row against the search: among the candidates, and (for words with other characters than letters and digits) in the record. */
  #searchTests(search: readonly string[], searched: Candidates | undefined): ((row: number) => boolean)[] {
    if (searched === undefined) return [];
    searched.member ??= rowSet(searched.rows, this.#rows.slotCount);
    const member = searched.member;
    const tests = [(row: number): boolean => member[row] === 1];
    if (!searched.exact) {
      tests.push((row) => {
        const entity = this.#rows.at(row);
        return entity !== undefined && matchesSearch(entity.record, search);
      });
    }
    return tests;
  }

  /** How many of the driver's rows pass every test. */
  *#count(driver: Driver, tests: readonly ((row: number) => boolean)[], slice: Slice): Work<number> {
    if (tests.length === 0 && driver.kind === 'rows') return driver.rows.length;
    if (tests.length === 0 && driver.kind === 'range') return driver.hi - driver.lo;
    let count = 0;
    yield* this.#scan(driver, tests, slice, () => count++);
    return count;
  }

  /** The driver's rows that pass every test, in creation order (range drivers: in value order). */
  *#collect(driver: Driver, tests: readonly ((row: number) => boolean)[], slice: Slice): Work<Int32Array> {
    let out = new Int32Array(1024);
    let count = 0;
    yield* this.#scan(driver, tests, slice, (row) => {
      if (count === out.length) {
        const grown = new Int32Array(out.length * 2);
        grown.set(out);
        out = grown;
      }
      out[count++] = row;
    });
    return out.slice(0, count);
  }

  *#scan(driver: Driver, tests: readonly ((row: number) => boolean)[], slice: Slice, match: (row: number) => void): Work<void> {
    const pass = tests.length === 1 ? tests[0]! : (row: number): boolean => tests.every((test) => test(row));
    if (driver.kind === 'all') {
      // Every live row, a block of slots at a time.
      const slots = this.#rows.slotCount;
      const live = (row: number): boolean => this.#rows.at(row) !== undefined && pass(row);
      for (let from = 0; from < slots; from += SCAN_BLOCK) {
        for (let row = from; row < Math.min(slots, from + SCAN_BLOCK); row++) if (live(row)) match(row);
        if (slice.due) yield;
      }
      return;
    }
    // The loops run in a plain function, a block at a time: V8 optimises it better than a generator.
    if (driver.kind === 'rows') {
      const rows = driver.rows;
      for (let from = 0; from < rows.length; from += SCAN_BLOCK) {
        scanBlock(rows, from, Math.min(rows.length, from + SCAN_BLOCK), pass, match);
        if (slice.due) yield;
      }
      return;
    }
    yield* scanRange(driver.field.order, driver.lo, driver.hi, pass, match, slice);
  }

  // ---- the result cache ----

  /** Called with the revision before each query: results of another revision are dropped. */
  revise(revision: string): void {
    if (revision === this.#resultsRevision) return;
    this.#results.clear();
    this.#searches.clear();
    this.#resultsBytes = 0;
    this.#resultsRevision = revision;
  }

  #keep(key: string, rows: Int32Array): void {
    if (rows.byteLength > RESULT_CACHE_BYTES / 4) return;
    if (this.#resultsBytes + rows.byteLength > RESULT_CACHE_BYTES) {
      this.#results.clear();
      this.#resultsBytes = 0;
    }
    this.#results.set(key, rows);
    this.#resultsBytes += rows.byteLength;
  }
}

/** The query without its window: the key its sorted matches are kept under. */
function resultKey(query: StoreQuery): string {
  return JSON.stringify([query.filters, query.sort, query.search]);
}

