// The plan of a query (docs/queries.md): which source of rows drives it, how its page is read,
// and for a sorted query whether to walk the first key's order or sort the matches. These are
// pure functions of sizes the indexes give in O(log n) (how many rows an `eq` matches, the width
// of a range) and of the query's window: no index, row or clock is read here. So the rules are
// stated and checked as tables of cases (test/store/query-plan.test.ts), and the scans
// (`query-scans.ts`) can change how they read rows without changing what is decided.

/** Below this many matches a sorted query sorts them all (and keeps them) rather than walking an order. */
export const SORT_ALL_BELOW = 20_000;
/** Rows a walk may be expected to look at before sorting all the matches (and keeping them) is cheaper. */
export const MAX_WALK = 20_000;

/** What choosing a driver knows of a query: sizes read from the indexes, no row looked at. */
export interface DriverInputs {
  /** Live rows: what reading every row costs. */
  readonly rows: number;
  /**
   * Per `eq` filter, in query order: how many rows match, and where they are — `ranges` of the
   * field's value order (one per value the filter's texts spell) and `lists` of array rows.
   */
  readonly equal: readonly { readonly count: number; readonly ranges: { readonly length: number }; readonly lists: { readonly length: number } }[];
  /**
   * Per field with range filters, in query order: the ranks `[lo, hi)` of its order that pass all
   * of them, or undefined when the order cannot tell (the field holds arrays).
   */
  readonly ranges: readonly (readonly [number, number] | undefined)[];
  /** How many candidates the search has when they are exactly its matches; undefined: no search, or candidates to check against the records. */
  readonly search: number | undefined;
}

/** The source of a query's candidate rows; `at` indexes `equal` or `ranges` of the inputs. */
export type DriverChoice =
  /** Every live row. */
  | { readonly kind: 'all' }
  /** An `eq` of one value: its rows are one range of the order, in creation order there. */
  | { readonly kind: 'value'; readonly at: number }
  /** An `eq` of several values or of array elements: the union of their rows. */
  | { readonly kind: 'values'; readonly at: number }
  /** The range filters of one field: ranks of its order, in value order. */
  | { readonly kind: 'range'; readonly at: number }
  /** The search's candidates. */
  | { readonly kind: 'search' };

const ALL: DriverChoice = { kind: 'all' };
const SEARCH: DriverChoice = { kind: 'search' };

/**
 * The source with the fewest rows drives: the others are then tested on its rows only. Candidates
 * are weighed in this order — every row, each `eq` filter, each field's ranges, the search — and
 * one must have strictly fewer rows than the best before it to win: on a tie the earlier stays
 * (every row beats a filter that matches them all; the first of two equal filters drives).
 */
export function chooseDriver({ rows, equal, ranges, search }: DriverInputs): DriverChoice {
  let kind: 'all' | 'equal' | 'range' = 'all';
  let at = -1;
  let best = rows;
  for (let i = 0; i < equal.length; i++) {
    const count = equal[i]!.count;
    if (count < best) {
      kind = 'equal';
      at = i;
      best = count;
    }
  }
  for (let i = 0; i < ranges.length; i++) {
    const span = ranges[i];
    if (span !== undefined && span[1] - span[0] < best) {
      kind = 'range';
      at = i;
      best = span[1] - span[0];
    }
  }
  if (search !== undefined && search < best) return SEARCH;
  if (kind === 'all') return ALL;
  if (kind === 'range') return { kind, at };
  const { ranges: values, lists } = equal[at]!;
  return { kind: values.length === 1 && lists.length === 0 ? 'value' : 'values', at };
}

/** How a query's rows are read once its driver is open. */
export type ReadPath =
  /** The driver's rows are the matches, in creation order (no sort, nothing left to test). */
  | 'driver rows'
  /** The driver's range of its order is the matches in creation order: the page is a position in it. */
  | 'driver range'
  /** The page is a position in the first sort key's order (within the driver's range on it, if any): no row tested. */
  | 'order'
  /** Every match is collected, then put in creation order and kept for the following pages. */
  | 'collect'
  /** The matches are counted, then `walkOrSort` decides with their number. */
  | 'count';

/** What deciding the read path knows of a query and its driver. */
export interface ReadInputs {
  /** The query has a sort. */
  readonly sorted: boolean;
  /** Some filter or search word is left to test on the driver's rows (the driver does not guarantee it). */
  readonly tested: boolean;
  /** The open driver: rows (an `eq` of several values, a search), a range of a field's order, or every row. */
  readonly driver: 'rows' | 'range' | 'all';
  /** A range driver's rows are in creation order within it (one value of an `eq`). */
  readonly creation: boolean;
  /** A range driver is on the first sort key's field. */
  readonly onFirst: boolean;
}

/**
 * Answers that are positions in one index come first: with nothing left to test, no row needs
 * looking at. Otherwise an unsorted query collects its matches (in creation order), and a sorted
 * one counts them before choosing how to read its page.
 */
export function readPath({ sorted, tested, driver, creation, onFirst }: ReadInputs): ReadPath {
  if (!tested) {
    if (!sorted && driver === 'rows') return 'driver rows';
    if (!sorted && driver === 'range' && creation) return 'driver range';
    if (sorted && (driver === 'all' || onFirst)) return 'order';
  }
  return sorted ? 'count' : 'collect';
}

/** What choosing between walking an order and sorting the matches knows of a sorted query. */
export interface SortedInputs {
  /** How many rows match. */
  readonly total: number;
  /** The query's window. */
  readonly offset: number;
  readonly limit: number;
  /** Ranks of the first key's order a walk may cover (its width: the whole order, or a range filter's part of it). */
  readonly span: number;
}

/**
 * Walking the first key's order costs about (offset + limit) × span / total rows, on every
 * request; sorting the matches costs total × log(total) once, and every page of the query is then
 * a slice of the kept result. Walk only when it is cheap: early pages of many matches.
 */
export function walkOrSort({ total, offset, limit, span }: SortedInputs): 'walk' | 'sort' {
  const walkCost = ((offset + limit) * span) / Math.max(1, total);
  return total >= SORT_ALL_BELOW && walkCost < Math.min(total, MAX_WALK) ? 'walk' : 'sort';
}
