import type { FacetCount, StoreQuery } from '../store.js';
import type { Candidates } from './query-scans.js';

/** Matches kept per query while the revision stays the same: later pages cost their length. */
const RESULT_CACHE_BYTES = 64 * 1024 * 1024;
/** What a kept result costs beyond its rows and key: the map's entry and the array's object. */
const ENTRY_BYTES = 160;
/** Searches whose candidates are kept per revision (each up to 4 bytes a row). */
const MAX_SEARCHES = 16;
/**
 * Facets kept per revision, each at most `MAX_FACET_VALUES` values (the values themselves are the
 * index's, not copies): a few kilobytes each, short of values of large objects.
 */
const MAX_FACETS = 256;

/**
 * What the query engine keeps between queries of one revision: the matches of a query (sorted,
 * or in creation order) under the query without its window, so that its following pages are
 * slices of them, the candidates of a search under its words, and a facet's counts under its
 * field and the query's filters and search (paging does not count them again). Rows are slots, so a re-pack
 * (`clear`) empties it as a new revision (`revise`) does. Bounded in bytes: past the bound the
 * kept matches are dropped all at once, and a result over a quarter of it is not kept.
 */
export class ResultCache {
  readonly #results = new Map<string, Int32Array>();
  /** Search candidates of this revision, by words. */
  readonly #searches = new Map<string, Candidates>();
  /** Facets of this revision, by `facetKey`. */
  readonly #facets = new Map<string, FacetCount[]>();
  #revision = '';
  #bytes = 0;

  /** Called with the revision before each query: results of another revision are dropped. */
  revise(revision: string): void {
    if (revision === this.#revision) return;
    this.clear();
    this.#revision = revision;
  }

  /** Rows were renumbered: no kept row means what it meant. */
  clear(): void {
    this.#results.clear();
    this.#searches.clear();
    this.#facets.clear();
    this.#bytes = 0;
  }

  /** The matches kept for a query's `resultKey`. */
  matches(key: string): Int32Array | undefined {
    return this.#results.get(key);
  }

  /**
   * Keeps a query's matches, computed in this revision with no write landing meanwhile. Weighed
   * with its key (two bytes a character) and an entry's own cost: an empty result under a long key
   * is not free, and thousands of them would otherwise be kept past the bound.
   */
  keep(key: string, rows: Int32Array): void {
    const weight = rows.byteLength + 2 * key.length + ENTRY_BYTES;
    if (weight > RESULT_CACHE_BYTES / 4) return;
    if (this.#bytes + weight > RESULT_CACHE_BYTES) {
      this.#results.clear();
      this.#bytes = 0;
    }
    this.#results.set(key, rows);
    this.#bytes += weight;
  }

  /** The candidates kept for a search's `searchKey`. */
  search(key: string): Candidates | undefined {
    return this.#searches.get(key);
  }

  /** Keeps a search's candidates (computed in this revision), while fewer than `MAX_SEARCHES` are kept. */
  keepSearch(key: string, candidates: Candidates): void {
    if (this.#searches.size < MAX_SEARCHES) this.#searches.set(key, candidates);
  }

  /** The counts kept for a facet's `facetKey`. */
  facet(key: string): FacetCount[] | undefined {
    return this.#facets.get(key);
  }

  /**
   * Keeps a facet's counts (computed in this revision, no write landing meanwhile); past
   * `MAX_FACETS` the kept ones go all at once. Callers never change a kept array.
   */
  keepFacet(key: string, counts: FacetCount[]): void {
    if (this.#facets.size >= MAX_FACETS) this.#facets.clear();
    this.#facets.set(key, counts);
  }
}

/** What a facet counts over (the query's filters and search; not its sort or window) and its field. */
export function facetKey(query: StoreQuery, path: readonly string[]): string {
  return JSON.stringify([query.filters, query.search, path]);
}

/** The query without its window: the key its matches are kept under. */
export function resultKey(query: StoreQuery): string {
  return JSON.stringify([query.filters, query.sort, query.search]);
}

/** A search's words: the key its candidates are kept under. */
export function searchKey(search: readonly string[]): string {
  return search.join(' ');
}
