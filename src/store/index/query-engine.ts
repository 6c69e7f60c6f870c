import type { FacetCount, StoreQuery, StoredEntity } from '../store.js';
import { facetCounts } from './facet-counts.js';
import { IndexBuilds } from './index-builds.js';
import { walk } from './order-scan.js';
import { readPath, walkOrSort } from './query-plan.js';
import { collectRows, countRows, openDriver, rowTests, searchTests, sortSpan, type Candidates } from './query-scans.js';
import { facetKey, ResultCache, resultKey, searchKey } from './result-cache.js';
import { rowOrder, sortRows } from './row-sort.js';
import { comparator, predicates, restComparator } from './row-tests.js';
import type { Rows } from './rows.js';
import { runSliced, type Clock, type Slice, type Work } from './slices.js';
import { SpareRows } from './spare-rows.js';
import { scanCandidates, scanPlan } from './text-scan.js';

export type { Rows } from './rows.js';

/** Rows copied for a facet count (`#matches`); two wait at most, shared by every engine of the process. */
const spareRows = new SpareRows(2);

/** A query's answer before its rows become entities. */
interface RowAnswer {
  readonly total: number;
  readonly rows: ArrayLike<number>;
  readonly facets?: FacetCount[][];
}

/** What the engine answers: a page of entities, how many match, and the facets asked for. */
export interface EngineAnswer<E> {
  readonly total: number;
  readonly entities: E[];
  readonly facets?: FacetCount[][];
  /**
   * On an answer that came later (sliced): the revision it describes, absent when writes landed
   * during its last attempt (`Settled`). An answer given at once is of the current revision.
   */
  readonly revision?: string;
}

/**
 * What a sliced work ended with, and the revision it describes: undefined when writes landed during
 * its last attempt (one too costly to start over, slices.ts `WHOLE_MAX_MS`), so that it describes none.
 */
export interface Settled<T> {
  readonly value: T;
  readonly revision: string | undefined;
}

/**
 * The query engine over the materialised index (docs/queries.md), the one face the stores use.
 * It joins four parts, each in a file of its own:
 *
 * - `index-builds.ts`: field and text indexes, built on first use in slices and kept current by
 *   every write and re-pack;
 * - `query-plan.ts`: the plan, pure — the most selective indexed filter (or range, or search, or
 *   every row) drives, and a sorted page walks the first key's order or sorts the matches;
 * - `query-scans.ts` (with `order-scan.ts`, `row-tests.ts`): the plan carried out on the rows;
 * - `result-cache.ts`: matches kept per query, and search candidates, while the revision stays.
 *
 * Every step that can take long runs in slices (`slices.ts`); a query that fits in one is
 * answered synchronously.
 */
export class QueryEngine<E extends StoredEntity> {
  readonly #rows: Rows<E>;
  readonly #builds: IndexBuilds<E>;
  readonly #cache = new ResultCache();

  /** `clock`: the time a query's slices are measured in (slices.ts); tests drive it. */
  readonly #clock: Clock | undefined;

  constructor(rows: Rows<E>, clock?: Clock) {
    this.#rows = rows;
    this.#builds = new IndexBuilds(rows);
    this.#clock = clock;
  }

  /** True once `q` is answered from the text index (until then, by a scan: text-scan.ts). */
  get searchIndexed(): boolean {
    return this.#builds.text !== undefined;
  }

  /** True when a write must tell the engine (some index exists or is being built). */
  get active(): boolean {
    return this.#builds.active;
  }

  /** A row's entity changes from `old` (undefined: new row) to `next` (undefined: deleted); `nextRecord` saves parsing it. */
  write(row: number, old: E | undefined, next: E | undefined, nextRecord?: unknown): void {
    this.#builds.write(row, old, next, nextRecord);
  }

  /** Slots were renumbered: every index follows, and kept results (rows of the old layout) go. */
  remap(moved: Int32Array): void {
    this.#builds.remap(moved);
    this.#cache.clear();
  }

  /** Called with the revision before each query: results of another revision are dropped. */
  revise(revision: string): void {
    this.#cache.revise(revision);
  }

  /** The matching entities of a query and their count (and its facets); synchronous when the work fits in one slice (of the current revision then). */
  query(query: StoreQuery): EngineAnswer<E> | Promise<EngineAnswer<E>> {
    const answer = this.#sliced((slice) => this.#answerWithFacets(query, slice), query);
    if (!(answer instanceof Promise)) return this.#entities(answer);
    // The entities are read in the turn the work ended in, with the revision (no write lands between).
    return this.#pinned(query, answer).then(({ value, revision }) => {
      const entities = this.#entities(value);
      return revision === undefined ? entities : { ...entities, revision };
    });
  }

  /** The facets of a query without its page: for a store that answers the page of a plain query itself. */
  facets(query: StoreQuery): FacetCount[][] | Promise<Settled<FacetCount[][]>> {
    const counts = this.#sliced((slice) => this.#facets(query, slice), query);
    return counts instanceof Promise ? this.#pinned(query, counts) : counts;
  }

  /**
   * Runs a query's work in slices, over one state of the data: started over when a write lands
   * between two of its slices (`runSliced`'s `revision`), against the kept results of the new
   * revision, so that its answer (and the entities read once it ends) describe the state it ends
   * in; `revision` says which, or that it describes none (slices.ts, `WHOLE_MAX_MS`).
   */
  #sliced<T>(work: (slice: Slice) => Work<T>, query: StoreQuery): T | Promise<Settled<T>> {
    const rows = this.#rows;
    let begun = rows.revision;
    const start = (slice: Slice): Work<T> => {
      this.#cache.revise(rows.revision);
      return work(slice);
    };
    const done = runSliced(start, query.deadline ?? Infinity, () => rows.layout, this.#clock, undefined, () => rows.revision, (revision) => (begun = revision));
    if (!(done instanceof Promise)) return done;
    return done.then((value) => ({ value, revision: rows.revision === begun ? begun : undefined }));
  }

  /**
   * A query that did not finish in its first turn holds the indexes of the fields it names until it
   * settles (`IndexBuilds.pin`). Pinned as soon as its first turn ends, before anything else runs.
   */
  #pinned<T>(query: StoreQuery, answer: Promise<T>): Promise<T> {
    const release = this.#builds.pin([...query.filters.map((f) => f.path), ...query.sort.map((k) => k.path), ...(query.facets ?? [])]);
    return answer.finally(release);
  }

  #entities(answer: RowAnswer): EngineAnswer<E> {
    const entities: E[] = [];
    for (let i = 0; i < answer.rows.length; i++) {
      // Read in the turn the work ended in; a row deleted during an attempt that was not started
      // over (one that ran past its bound whole) is left out, and that answer names no revision.
      const entity = this.#rows.at(answer.rows[i]!);
      if (entity !== undefined) entities.push(entity);
    }
    return answer.facets === undefined ? { total: answer.total, entities } : { total: answer.total, entities, facets: answer.facets };
  }

  *#answerWithFacets(query: StoreQuery, slice: Slice): Work<RowAnswer> {
    const answer = yield* this.#answer(query, slice);
    if (query.facets === undefined || query.facets.length === 0) return answer;
    return { ...answer, facets: yield* this.#facets(query, slice) };
  }

  *#answer(query: StoreQuery, slice: Slice): Work<RowAnswer> {
    const { filters, sort, search, offset, limit } = query;
    const builds = this.#builds;
    const paths = [...filters.map((f) => f.path), ...sort.map((k) => k.path), ...(query.facets ?? [])];
    // The text index is not waited for here: a search without it is answered by a scan (`#searched`).
    for (let wait = builds.wait(paths, false); wait !== undefined; wait = builds.wait(paths, false)) yield wait;
    const revision = this.#rows.revision;
    const key = resultKey(query);
    const cached = this.#cache.matches(key);
    if (cached) return window(cached, offset, limit);
    const field = builds.field;
    const searched = search.length > 0 ? yield* this.#searched(search, slice) : undefined;
    const driver = yield* openDriver(filters, searched, field, this.#rows, slice);
    const tests = rowTests(filters, search, searched, driver, field, this.#rows);
    const first = sort.length > 0 ? field(sort[0]!.path) : undefined;
    const [lo, hi] = first === undefined ? [0, 0] : sortSpan(first, driver, filters, field);
    const path = readPath({
      sorted: first !== undefined,
      tested: tests.length > 0,
      driver: driver.kind,
      creation: driver.kind === 'range' && driver.creation,
      onFirst: driver.kind === 'range' && driver.field === first,
    });
    switch (path) {
      case 'driver rows':
        if (driver.kind !== 'rows') break;
        // A union of several values' rows was built for this query: keep it for the next pages.
        return driver.merged ? this.#keep(revision, key, driver.rows, offset, limit) : window(driver.rows, offset, limit);
      case 'driver range': {
        if (driver.kind !== 'range') break;
        const from = Math.min(driver.hi, driver.lo + offset);
        return { total: driver.hi - driver.lo, rows: driver.field.order.copy(from, Math.min(driver.hi, from + limit)) };
      }
      case 'order': {
        const rows = yield* walk(first!, lo, hi, sort[0]!.descending, restComparator(sort, field), offset, limit, undefined, slice);
        return { total: hi - lo, rows };
      }
      case 'collect': {
        const matches = yield* collectRows(driver, tests, this.#rows, slice);
        const inCreation = driver.kind === 'range' && !driver.creation ? yield* rowOrder(matches, this.#rows.slotCount, slice) : matches;
        return this.#keep(revision, key, inCreation, offset, limit);
      }
      case 'count':
        break;
    }
    const total = yield* countRows(driver, tests, this.#rows, slice);
    if (walkOrSort({ total, offset, limit, span: hi - lo }) === 'walk') {
      // The walk is over the first key's order, not the driver's rows: every filter is tested.
      const every = [...predicates(filters, field), ...searchTests(search, searched, this.#rows)];
      const pass = (row: number): boolean => every.every((test) => test(row));
      const rows = yield* walk(first!, lo, hi, sort[0]!.descending, restComparator(sort, field), offset, limit, pass, slice);
      return { total, rows };
    }
    const matches = yield* collectRows(driver, tests, this.#rows, slice);
    return this.#keep(revision, key, yield* sortRows(matches, comparator(sort, field), slice), offset, limit);
  }

  /** The window of kept matches, kept only when no write landed since `revision` was read. */
  #keep(revision: string, key: string, rows: Int32Array, offset: number, limit: number): RowAnswer {
    if (this.#rows.revision === revision) this.#cache.keep(key, rows);
    return window(rows, offset, limit);
  }

  /**
   * The search's candidate rows, kept per revision: from the text index once it is built. The
   * first search, while the index is neither built nor being built, is answered by a scan of the
   * stored bytes (text-scan.ts) when its words' pieces are ASCII letters and digits, and the build
   * starts in the background once the scan has answered. A search that comes while the build runs
   * waits for it, and promotes it: a scan costs about a fifth of the build at a million entities,
   * so scanning for every new word under load would cost more than finishing the build.
   */
  *#searched(search: readonly string[], slice: Slice): Work<Candidates> {
    const key = searchKey(search);
    const kept = this.#cache.search(key);
    if (kept !== undefined) return kept;
    const builds = this.#builds;
    const plan = builds.text === undefined && !builds.textBuilding ? scanPlan(search) : undefined;
    if (plan === undefined) for (let wait = builds.wait([], true); wait !== undefined; wait = builds.wait([], true)) yield wait;
    const revision = this.#rows.revision;
    let searched: Candidates;
    if (plan === undefined) searched = yield* builds.text!.candidates(search, this.#rows.slotCount, slice);
    else {
      try {
        searched = yield* scanCandidates(search, plan, this.#rows, slice);
      } finally {
        // Also when the scan is cut off (past the query's budget, or started over after a re-pack):
        // the build begun then is what the retry waits for, as with any index.
        builds.startText();
      }
    }
    if (this.#rows.revision === revision) this.#cache.keepSearch(key, searched);
    return searched;
  }

  // ---- facets (docs/queries.md, Facets) ----

  /** Each facet field's most frequent values over every match of the query's filters and search. */
  *#facets(query: StoreQuery, slice: Slice): Work<FacetCount[][]> {
    const paths = query.facets ?? [];
    for (;;) {
      const wait = this.#builds.wait([...query.filters.map((f) => f.path), ...paths], false);
      if (wait === undefined) break;
      yield wait;
    }
    // Kept per revision (result-cache.ts): the next pages of a query, and other queries of its
    // filters and search whatever their sort, count nothing again.
    const revision = this.#rows.revision;
    const out: FacetCount[][] = [];
    let matches: { rows: Int32Array | undefined; lent: boolean } | undefined;
    try {
      for (const path of paths) {
        const key = facetKey(query, path);
        const kept = this.#cache.facet(key);
        if (kept !== undefined) {
          out.push(kept);
          continue;
        }
        matches ??= yield* this.#matches(query, slice);
        const counts = yield* facetCounts(this.#builds.field(path), matches.rows, this.#rows.slotCount, slice);
        if (this.#rows.revision === revision) this.#cache.keepFacet(key, counts);
        out.push(counts);
      }
      return out;
    } finally {
      if (matches?.lent) spareRows.give(matches.rows!);
    }
  }

  /**
   * Every row matching the query's filters and search, in no particular order, or undefined for
   * every live row (no filter, no search). Indexes must be built. A kept result is reused. The rows
   * of a range with nothing else to test (`status=paused`: one value's range of its order) are
   * copied at once, so that every facet counts the same rows, into a buffer `lent` from
   * `spareRows`, which the caller gives back.
   */
  *#matches(query: StoreQuery, slice: Slice): Work<{ rows: Int32Array | undefined; lent: boolean }> {
    const { filters, search } = query;
    if (filters.length === 0 && search.length === 0) return { rows: undefined, lent: false };
    const kept = this.#cache.matches(resultKey(query));
    if (kept) return { rows: kept, lent: false };
    const field = this.#builds.field;
    const searched = search.length > 0 ? yield* this.#searched(search, slice) : undefined;
    const driver = yield* openDriver(filters, searched, field, this.#rows, slice);
    const tests = rowTests(filters, search, searched, driver, field, this.#rows);
    if (tests.length === 0) {
      if (driver.kind === 'rows') return { rows: driver.rows, lent: false };
      if (driver.kind === 'range') {
        const rows = spareRows.borrow(driver.hi - driver.lo);
        driver.field.order.copyInto(rows, driver.lo);
        return { rows, lent: true };
      }
      if (search.length === 0) return { rows: undefined, lent: false };
    }
    return { rows: yield* collectRows(driver, tests, this.#rows, slice), lent: false };
  }
}

/** Rows `[offset, offset + limit)` of a result (its `total`: all of them). */
function window(rows: ArrayLike<number>, offset: number, limit: number): RowAnswer {
  return { total: rows.length, rows: Array.prototype.slice.call(rows, offset, offset + limit) as number[] };
}
