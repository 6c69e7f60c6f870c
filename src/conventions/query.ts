import { badRequest } from './problem.js';
import type { EntityRecord } from '../store/store.js';

/** Query parameters with a meaning of their own; every other one filters (contract §3a). */
export const RESERVED_PARAMETERS: ReadonlySet<string> = new Set(['page', 'limit', 'sort']);

/** One sort key: a top-level field, ascending or descending. */
export interface SortKey {
  readonly field: string;
  readonly descending: boolean;
}

/** A collection query beyond pagination: filters (field → accepted JSON texts) and sort keys. */
export interface CollectionQuery {
  readonly filters: ReadonlyMap<string, readonly string[]>;
  /** The `sort` parameter as given, for the links; undefined when absent. */
  readonly sort: string | undefined;
  readonly sortKeys: readonly SortKey[];
}

/**
 * Reads filters and sort from a query string (contract §3a). Repeating `page`, `limit` or `sort`
 * is ambiguous and refused; repeating a filter adds alternatives, as a comma does.
 */
export function parseCollectionQuery(params: URLSearchParams): CollectionQuery {
  const filters = new Map<string, string[]>();
  for (const [name, value] of params) {
    if (RESERVED_PARAMETERS.has(name)) {
      if (params.getAll(name).length > 1) throw badRequest(`Query parameter ${name} must be given once`);
      continue;
    }
    const values = filters.get(name) ?? [];
    values.push(...value.split(','));
    filters.set(name, values);
  }
  const sort = params.get('sort') ?? undefined;
  return { filters, sort, sortKeys: sort === undefined ? [] : parseSort(sort) };
}

/** `sort=-price,name` → price descending, then name ascending. An empty key is a 400 problem. */
export function parseSort(sort: string): SortKey[] {
  return sort.split(',').map((key) => {
    const descending = key.startsWith('-');
    const field = descending ? key.slice(1) : key;
    if (field === '') throw badRequest('Query parameter sort must list field names, each optionally prefixed with -');
    return { field, descending };
  });
}

/** The JSON text a field is compared by: strings as they are, anything else as JSON (`?stock=0`). */
function filterText(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** True when the record passes every filter: some accepted value equals the field's JSON text. */
export function matchesFilters(record: EntityRecord, filters: ReadonlyMap<string, readonly string[]>): boolean {
  for (const [field, accepted] of filters) {
    const text = Object.hasOwn(record, field) ? filterText(record[field]) : undefined;
    if (text === undefined || !accepted.includes(text)) return false;
  }
  return true;
}

/** Order of JSON kinds when a field holds values of different kinds; an absent field sorts first. */
function kindRank(value: unknown): number {
  if (value === undefined) return 0;
  if (value === null) return 1;
  switch (typeof value) {
    case 'boolean':
      return 2;
    case 'number':
      return 3;
    case 'string':
      return 4;
    default:
      return 5;
  }
}

/** Compares two field values: by kind first, then numbers numerically and text by code unit. */
export function compareValues(a: unknown, b: unknown): number {
  const rankA = kindRank(a);
  const rankB = kindRank(b);
  if (rankA !== rankB) return rankA - rankB;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const textA = typeof a === 'string' ? a : JSON.stringify(a) ?? '';
  const textB = typeof b === 'string' ? b : JSON.stringify(b) ?? '';
  return textA < textB ? -1 : textA > textB ? 1 : 0;
}

/** A comparator for the sort keys. Array.prototype.sort is stable, so ties keep creation order. */
export function sortComparator(keys: readonly SortKey[]): (a: EntityRecord, b: EntityRecord) => number {
  return (a, b) => {
    for (const { field, descending } of keys) {
      const order = compareValues(Object.hasOwn(a, field) ? a[field] : undefined, Object.hasOwn(b, field) ? b[field] : undefined);
      if (order !== 0) return descending ? -order : order;
    }
    return 0;
  };
}
