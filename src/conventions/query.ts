import { badRequest } from './problem.js';
import { encodeComponent } from './uri-component.js';

/**
 * The query language of collections (docs/queries.md): parsing a query string into filters, sort keys
 * and search words, the canonical text links carry, and the reference semantics (`matches`,
 * `compareValues`) that every store's engine must agree with. Pure: no I/O, no indexes.
 */

/** Query parameters with a meaning of their own; every other one filters (docs/queries.md; README, Relations). */
export const RESERVED_PARAMETERS: ReadonlySet<string> = new Set(['page', 'limit', 'sort', 'q', 'embed', 'facets']);

/**
 * The parameter of an equality filter on `field` as links write it: the bare name, or
 * `<field>[eq]` for a field named like a reserved parameter (`page`, `sort`…), which the bare
 * name would not filter. The reserved names need no escape, so an encoded name may be passed.
 */
export function equalityParameter(field: string): string {
  return RESERVED_PARAMETERS.has(field) ? `${field}[eq]` : field;
}

/** A field path as written (`dimensions.weight`) and as segments (`['dimensions', 'weight']`). */
export interface FieldPath {
  readonly field: string;
  readonly path: readonly string[];
}

export type RangeOperator = 'gt' | 'gte' | 'lt' | 'lte';
export type FilterOperator = 'eq' | 'ne' | RangeOperator | 'exists';
const OPERATORS: ReadonlySet<string> = new Set<FilterOperator>(['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'exists']);

/** One filter: every filter of a query must hold (AND). */
export type Filter =
  /** Some value (an array's element) has one of these JSON texts (`eq`), or one of none of them (`ne`). */
  | (FieldPath & { readonly op: 'eq' | 'ne'; readonly values: readonly string[] })
  /** Some value of the bound's kind lies beyond the bound. */
  | (FieldPath & { readonly op: RangeOperator; readonly bound: number | string })
  /** The field is present (`null` counts) or absent. */
  | (FieldPath & { readonly op: 'exists'; readonly present: boolean });

/** One sort key. */
export interface SortKey extends FieldPath {
  readonly descending: boolean;
}

/** A collection query beyond pagination (docs/queries.md). */
export interface CollectionQuery {
  readonly filters: readonly Filter[];
  readonly sort: readonly SortKey[];
  /** Case-folded words of `q`, each of which must occur in some string of the entity. */
  readonly search: readonly string[];
  /** Relations to embed (docs/relations.md), once each, sorted. */
  readonly embed: readonly string[];
  /** Fields to count the values of, once each, sorted. */
  readonly facets: readonly FieldPath[];
  /** What links carry after `page` and `limit`: `''` or `&…`, the same for every spelling of one query. */
  readonly carried: string;
  /** `carried` before its filters (sort, search, embeds, facets). */
  readonly head: string;
  /** `carried`'s filters, sorted by key. */
  readonly carriedFilters: readonly CarriedFilter[];
}

/** Is this path one the resource declares? Without a schema every path is allowed (and may match nothing). */
export type PathCheck = (path: readonly string[]) => boolean;

const SINGLE_USE = ['page', 'limit', 'sort', 'q'] as const;

/**
 * Most sort keys and filters one query may have: each is an index to build and keep, and a step of
 * every comparison; no catalogue needs more (PostgreSQL's default limit on an index's columns is 32).
 */
export const MAX_SORT_KEYS = 32;
export const MAX_FILTERS = 64;

/** One parameter of a raw query string: its name and value decoded, and the value's comma-separated pieces each decoded. */
interface QueryPair {
  readonly name: string;
  readonly value: string;
  /** Split on the literal commas of the raw text, then decoded: `a%2Cb,c` → `a,b` and `c`. */
  readonly pieces: readonly string[];
}

/**
 * Decodes one component of `application/x-www-form-urlencoded` text as `URLSearchParams` does
 * (WHATWG URL §5.1): `+` is a space, and a malformed escape stays as it is.
 */
export function decodeQueryComponent(text: string): string {
  if (!text.includes('%') && !text.includes('+')) return text;
  const spaced = text.replaceAll('+', ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return new URLSearchParams(`v=${text.replaceAll('&', '%26').replaceAll('#', '%23')}`).get('v') ?? spaced;
  }
}

/**
 * The parameters of a raw query string (without `?`), in order. Alternatives are split on the
 * literal commas of the raw text before decoding, so that a comma sent as `%2C` stays part of its
 * value: `name=a%2Cb` is the one string "a,b", `name=a,b` two alternatives.
 */
export function queryPairs(query: string): QueryPair[] {
  const pairs: QueryPair[] = [];
  if (query === '') return pairs;
  for (const part of query.split('&')) {
    if (part === '') continue;
    const equals = part.indexOf('=');
    const rawName = equals === -1 ? part : part.slice(0, equals);
    const rawValue = equals === -1 ? '' : part.slice(equals + 1);
    pairs.push({ name: decodeQueryComponent(rawName), value: decodeQueryComponent(rawValue), pieces: rawValue.split(',').map(decodeQueryComponent) });
  }
  return pairs;
}

/**
 * Reads filters, sort, search, embeds and facets from a raw query string (docs/queries.md).
 * Repeating `page`, `limit`, `sort`, `q`, a range bound or `[exists]` is ambiguous and refused;
 * repeating an `eq` or `ne` filter adds alternatives, as a literal comma does. Every refusal is a
 * 400 problem naming the parameter.
 */
export function parseCollectionQuery(query: string, declared?: PathCheck): CollectionQuery {
  const pairs = queryPairs(query);
  for (const name of SINGLE_USE) {
    if (pairs.filter((pair) => pair.name === name).length > 1) throw badRequest(`Query parameter ${name} must be given once`);
  }
  const groups = new Map<string, { path: FieldPath; op: FilterOperator; values: string[] }>();
  const embed: string[] = [];
  const facetNames: string[] = [];
  let sortText: string | undefined;
  let qText = '';
  for (const { name, value, pieces } of pairs) {
    if (name === 'embed') {
      embed.push(...value.split(',').filter((rel) => rel !== ''));
      continue;
    }
    if (name === 'facets') {
      facetNames.push(...value.split(','));
      continue;
    }
    if (name === 'sort') sortText = value;
    if (name === 'q') qText = value;
    if (RESERVED_PARAMETERS.has(name)) continue;
    const { field, op } = splitFilterName(name);
    const key = op === 'eq' ? equalityParameter(field) : `${field}[${op}]`;
    let group = groups.get(key);
    if (group === undefined) {
      group = { path: fieldPath(field, name, declared), op, values: [] };
      groups.set(key, group);
    } else if (op !== 'eq' && op !== 'ne') {
      throw badRequest(`Query parameter ${name} must be given once`);
    }
    if (op === 'eq' || op === 'ne') group.values.push(...pieces);
    else group.values.push(value);
  }
  if (groups.size > MAX_FILTERS) throw badRequest(`A query may have at most ${MAX_FILTERS} filters`);
  const filters: Filter[] = [];
  const carriedFilters: CarriedFilter[] = [];
  for (const [key, { path, op, values }] of groups) {
    filters.push(makeFilter(path, op, values, key));
    // Alternatives are a set: links list them sorted, once, so that `a=2&a=1` and `a=1,2` link alike;
    // a comma inside one of them is sent as %2C, so that it stays part of its value.
    const carriedValues = op === 'eq' || op === 'ne' ? [...new Set(values)].sort() : values;
    carriedFilters.push({ key, field: path.field, text: carriedValues.map(encodeFilterValue).join(',') });
  }
  const sort = sortText === undefined ? [] : parseSort(sortText, declared);
  const search = searchWords(qText);
  const facets = parseFacets(facetNames, facetNames.length > 0, declared);
  let head = sortText === undefined ? '' : `&sort=${encodeQueryValue(sortText)}`;
  if (search.length > 0) head += `&q=${encodeQueryValue(qText.trim())}`;
  // Rels are a set too: `embed=b,a` and `embed=a&embed=b` link alike.
  const rels = [...new Set(embed)].sort();
  if (rels.length > 0) head += `&embed=${encodeQueryValue(rels.join(','))}`;
  if (facets.length > 0) head += `&facets=${encodeQueryValue(facets.map((f) => f.field).join(','))}`;
  carriedFilters.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { filters, sort, search, embed: rels, facets, carried: head + carriedFiltersText(carriedFilters), head, carriedFilters };
}

/** A filter as links carry it: `&<key>=<text>`, the key and text already encoded but for the key. */
interface CarriedFilter {
  readonly key: string;
  /** The field (or dotted path) it filters, whatever its operator. */
  readonly field: string;
  readonly text: string;
}

function carriedFiltersText(filters: readonly CarriedFilter[]): string {
  let out = '';
  for (const { key, text } of filters) out += `&${encodeQueryValue(key)}=${text}`;
  return out;
}

/**
 * What a facet value's link carries: the query's own parameters with every filter
 * on `field` (whatever its operator) replaced by `field=<value>`, the value as its filter text
 * with a comma in it percent-encoded.
 */
export function narrowedCarried(query: CollectionQuery, field: string, value: unknown): string {
  const filters = query.carriedFilters.filter((f) => f.field !== field);
  filters.push({ key: equalityParameter(field), field, text: encodeFilterValue(filterText(value)) });
  filters.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return query.head + carriedFiltersText(filters);
}

/** Most fields one request may ask facets of. */
export const MAX_FACETS = 8;

/**
 * The fields of `facets=a,b.c`: each a field name or dotted path, at most `MAX_FACETS`, once each
 * and sorted (so that every spelling of one request links alike); anything else is a 400 problem
 * naming `facets`.
 */
function parseFacets(names: readonly string[], given: boolean, declared: PathCheck | undefined): FieldPath[] {
  if (!given) return [];
  const fields = [...new Set(names)].sort();
  if (fields.length > MAX_FACETS) throw badRequest(`Query parameter facets may list at most ${MAX_FACETS} fields`);
  return fields.map((field) => {
    if (/[[\]]/.test(field)) throw badRequest('Query parameter facets must list field names (or dotted paths), with no operator');
    return fieldPath(field, 'facets', declared);
  });
}

/** `price[gte]` → price, gte; `status` → status, eq. */
function splitFilterName(name: string): { field: string; op: FilterOperator } {
  const open = name.indexOf('[');
  if (open === -1) return { field: name, op: 'eq' };
  const op = name.endsWith(']') ? name.slice(open + 1, -1) : '';
  if (!OPERATORS.has(op)) {
    throw badRequest(`Query parameter ${name} has an unknown operator; use one of [eq], [ne], [gt], [gte], [lt], [lte], [exists]`);
  }
  return { field: name.slice(0, open), op: op as FilterOperator };
}

function fieldPath(field: string, parameter: string, declared: PathCheck | undefined): FieldPath {
  const path = field.split('.');
  if (path.some((segment) => segment === '')) {
    throw badRequest(`Query parameter ${parameter} needs a field name, with no empty segment in its dotted path`);
  }
  if (declared && !declared(path)) throw badRequest(`Query parameter ${parameter} names a field the schema does not declare`);
  return { field, path };
}

function makeFilter(path: FieldPath, op: FilterOperator, values: string[], parameter: string): Filter {
  if (op === 'eq' || op === 'ne') return { ...path, op, values };
  const value = values[0] ?? '';
  if (op === 'exists') {
    if (value !== 'true' && value !== 'false') throw badRequest(`Query parameter ${parameter} must be true or false`);
    return { ...path, op, present: value === 'true' };
  }
  return { ...path, op, bound: rangeBound(value, parameter) };
}

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * A range bound: a JSON number is a number; a JSON string in double quotes is that string (so that
 * `sku[gte]="100"` compares text); any other non-empty text not starting with `"` is itself a string.
 */
export function rangeBound(text: string, parameter: string): number | string {
  if (JSON_NUMBER.test(text)) {
    const n = Number(text);
    if (Number.isFinite(n)) return n;
  } else if (text.startsWith('"')) {
    try {
      const s: unknown = JSON.parse(text);
      if (typeof s === 'string') return s;
    } catch {
      // Not a JSON string: refused below.
    }
  } else if (text !== '') {
    return text;
  }
  throw badRequest(`Query parameter ${parameter} needs a number or a string as its bound`);
}

/** `sort=-price,name` → price descending, then name ascending. An empty key is a 400 problem. */
export function parseSort(sort: string, declared?: PathCheck): SortKey[] {
  const keys = sort.split(',');
  if (keys.length > MAX_SORT_KEYS) throw badRequest(`Query parameter sort may list at most ${MAX_SORT_KEYS} fields`);
  return keys.map((key) => {
    const descending = key.startsWith('-');
    const field = descending ? key.slice(1) : key;
    if (field === '') throw badRequest('Query parameter sort must list field names, each optionally prefixed with -');
    return { ...fieldPath(field, 'sort', declared), descending };
  });
}

/** Percent-encodes a value but keeps the commas, brackets and dots of the query language readable. */
function encodeQueryValue(value: string): string {
  return encodeComponent(value).replace(/%2C|%5B|%5D/g, (m) => (m === '%2C' ? ',' : m === '%5B' ? '[' : ']'));
}

/** Percent-encodes one alternative of a filter: a comma in it is sent as %2C, so it stays part of the value. */
export function encodeFilterValue(value: string): string {
  return encodeComponent(value).replace(/%5B|%5D/g, (m) => (m === '%5B' ? '[' : ']'));
}

// ---- the reference semantics ----

/**
 * Case folding for search: lower, upper, lower again maps ß and ẞ to ss, and final sigma (which
 * lower-casing writes at the end of a word) is then folded to σ, as Unicode default (full) case
 * folding does for the characters a catalogue holds; dotless ı stays ı.
 */
export function fold(text: string): string {
  // Dotless ı has no case folding: upper-casing it would make it an i.
  if (text.includes('ı')) return text.split('ı').map(fold).join('ı');
  return text.toLowerCase().toUpperCase().toLowerCase().replaceAll('ς', 'σ');
}

/** The words of `q`: separated by white space, case-folded; none for an empty `q`. */
export function searchWords(q: string): string[] {
  return q
    .split(/\s+/)
    .filter((word) => word !== '')
    .map(fold);
}

const isPlainObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The value at a dotted path: each segment an own member of a plain object. A path that passes
 * through anything else (an array, a string) reaches nothing: `undefined`.
 */
export function valueAt(record: unknown, path: readonly string[]): unknown {
  let value = record;
  for (const segment of path) {
    if (!isPlainObject(value) || !Object.hasOwn(value, segment)) return undefined;
    value = value[segment];
  }
  return value;
}

/** The JSON text a value is compared by in `eq` and `ne`: strings as they are, anything else as JSON (`?stock=0`). */
export function filterText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** What an operator applies to: an array's elements, or the value itself. */
function elements(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [value];
}

/** Does a single value (never an array) satisfy a range bound? Numbers numerically, strings by code unit. */
export function inRange(value: unknown, op: RangeOperator, bound: number | string): boolean {
  if (typeof value !== typeof bound) return false;
  const v = value as number | string;
  switch (op) {
    case 'gt':
      return v > bound;
    case 'gte':
      return v >= bound;
    case 'lt':
      return v < bound;
    case 'lte':
      return v <= bound;
  }
}

/** The reference meaning of one filter (docs/queries.md). */
export function matchesFilter(record: unknown, filter: Filter): boolean {
  const value = valueAt(record, filter.path);
  if (filter.op === 'exists') return (value !== undefined) === filter.present;
  if (value === undefined) return false;
  switch (filter.op) {
    case 'eq':
      return elements(value).some((e) => filter.values.includes(filterText(e)));
    case 'ne':
      return elements(value).some((e) => !filter.values.includes(filterText(e)));
    default:
      return elements(value).some((e) => inRange(e, filter.op as RangeOperator, (filter as { bound: number | string }).bound));
  }
}

/** Calls `visit` with every string value in a record, nested ones included, until it returns true. */
export function someString(value: unknown, visit: (text: string) => boolean): boolean {
  if (typeof value === 'string') return visit(value);
  if (typeof value !== 'object' || value === null) return false;
  for (const child of Object.values(value)) if (someString(child, visit)) return true;
  return false;
}

/** The reference meaning of `q`: every word occurs, case-folded, in some string of the record. */
export function matchesSearch(record: unknown, words: readonly string[]): boolean {
  return words.every((word) => someString(record, (text) => fold(text).includes(word)));
}

/** The reference meaning of a whole query's filters and search. */
export function matches(record: unknown, filters: readonly Filter[], search: readonly string[]): boolean {
  return filters.every((filter) => matchesFilter(record, filter)) && (search.length === 0 || matchesSearch(record, search));
}

/** Order of JSON kinds when a field holds values of different kinds; an absent field sorts first. */
export function kindRank(value: unknown): number {
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
  if (rankA <= 1) return 0;
  const textA = typeof a === 'string' ? a : (JSON.stringify(a) ?? '');
  const textB = typeof b === 'string' ? b : (JSON.stringify(b) ?? '');
  return textA < textB ? -1 : textA > textB ? 1 : 0;
}

/**
 * The reference order of a sort: keys in turn, each ascending or descending; the caller's stable
 * sort over creation order makes ties end in creation order.
 */
export function sortComparator(keys: readonly SortKey[]): (a: unknown, b: unknown) => number {
  return (a, b) => {
    for (const { path, descending } of keys) {
      const order = compareValues(valueAt(a, path), valueAt(b, path));
      if (order !== 0) return descending ? -order : order;
    }
    return 0;
  };
}
