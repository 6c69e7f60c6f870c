import { objectMembers } from './json-members.js';
import type { PageRange } from './pagination.js';
import { encodeComponent } from './uri-component.js';

/** A HAL link object (docs/conventions.md §2, 2.2). */
export interface Link {
  readonly href: string;
}

/** Collection relations in the order they are written (docs/conventions.md §2; docs/conventions.md §2). */
export type CollectionRelation = 'self' | 'first' | 'prev' | 'next' | 'last';
/** A page's links (docs/conventions.md §2): `self`, `first` and `last` always; `prev` and `next` where there is such a page. */
export interface CollectionLinks {
  readonly self: Link;
  readonly first: Link;
  readonly prev?: Link;
  readonly next?: Link;
  readonly last: Link;
}

/**
 * Path of an entity: the collection's path followed by `/<id>` (docs/conventions.md §2 rule 1).
 * The id may be a link's stored value, dangling and holding anything: it is encoded totally.
 */
export function entityHref(collectionPath: string, id: string): string {
  return `${collectionPath}/${encodeComponent(id)}`;
}

/** Href of one page: `/<resource>?page=<n>&limit=<m>` then the carried-over query (docs/conventions.md §2; docs/conventions.md §2). */
export function pageHref(collectionPath: string, page: number, limit: number, carried = ''): string {
  return `${collectionPath}?page=${page}&limit=${limit}${carried}`;
}

/**
 * The query parameters a collection's links carry after `page` and `limit` (docs/conventions.md §2, §3a), in a
 * stable order — `sort` first, then filters by name — as a string starting with `&`, or ''.
 */
export function carriedQuery(sort: string | undefined, filters: ReadonlyMap<string, readonly string[]>): string {
  let out = sort === undefined ? '' : `&sort=${encodeQueryValue(sort)}`;
  for (const name of [...filters.keys()].sort()) {
    // A comma inside a value is sent as %2C: a literal one separates alternatives.
    out += `&${encodeURIComponent(name)}=${(filters.get(name) ?? []).map((value) => encodeURIComponent(value)).join(',')}`;
  }
  return out;
}

/** Percent-encodes a value but keeps the commas that separate alternatives readable. */
function encodeQueryValue(value: string): string {
  return encodeURIComponent(value).replaceAll('%2C', ',');
}

/** `self`, `first`, `last` always; `prev` only after page 1; `next` only before the last page (docs/conventions.md §2). */
export function collectionLinks(collectionPath: string, range: PageRange, carried = ''): CollectionLinks {
  const href = (page: number): Link => ({ href: pageHref(collectionPath, page, range.limit, carried) });
  return {
    self: href(range.page),
    first: href(1),
    ...(range.page > 1 ? { prev: href(range.page - 1) } : {}),
    ...(range.page < range.pages ? { next: href(range.page + 1) } : {}),
    last: href(range.pages),
  };
}

/**
 * An entity's HAL representation (docs/conventions.md §2) from its stored JSON text: the stored members, then
 * `_links` (`self`, then `links`: more `,"rel":…` members, docs/relations.md), then `embedded` (an
 * `,"_embedded":{…}` member, or ''). Built by splicing text, so the entity is never parsed or
 * serialised again.
 */
export function entityJson(storedText: string, selfHref: string, links = '', embedded = ''): string {
  const storedJson = withoutServerMembers(storedText);
  const tail = `"_links":{"self":{"href":${JSON.stringify(selfHref)}}${links}}${embedded}}`;
  // The usual case, text as JSON.stringify writes it: `{…}` with at least one member.
  if (storedJson.endsWith('}') && !storedJson.endsWith('{}')) return `${storedJson.slice(0, -1)},${tail}`;
  const close = storedJson.lastIndexOf('}');
  const body = storedJson.slice(0, close).trimEnd();
  const separator = body.endsWith('{') ? '' : ',';
  return `${body}${separator}${tail}`;
}

/** The members of an entity's representation that only the server writes (docs/conventions.md §2, docs/forms.md). */
const SERVER_MEMBERS: ReadonlySet<string> = new Set(['_links', '_embedded', '_templates']);

/**
 * `storedJson` without its top-level `_links`, `_embedded` and `_templates` members, every other byte as it is.
 * halserve never stores them (a request body's are dropped), but a line written by hand — a copy
 * of another HAL API's output — may hold them, and the representation's own would then sit beside
 * them: two `_links` members, which I-JSON forbids (RFC 7493 §2.3) and strict parsers refuse. The
 * quick test looks for the names as written: a key that spells one with escapes (`"\u005flinks"`)
 * is found only when the text also holds one of them as written.
 */
export function withoutServerMembers(storedJson: string): string {
  if (!storedJson.includes('_links') && !storedJson.includes('_embedded') && !storedJson.includes('_templates')) return storedJson;
  const members = objectMembers(storedJson);
  if (members === undefined || !members.some((m) => SERVER_MEMBERS.has(m.name))) return storedJson;
  return `{${members
    .filter((m) => !SERVER_MEMBERS.has(m.name))
    .map((m) => storedJson.slice(m.start, m.end))
    .join(',')}}`;
}

/**
 * A collection page's HAL representation (docs/conventions.md §2) around already-serialised entities; `links` may
 * add `changes`; `facets` is the JSON of its `facets` member, or ''.
 */
export function collectionJson(name: string, range: PageRange, links: CollectionLinks & { readonly changes?: Link }, entities: readonly string[], facets = ''): string {
  const members = `{"total":${range.total},"count":${entities.length},"pages":${range.pages},"page":${range.page},"limit":${range.limit}`;
  const head = facets === '' ? members : `${members},"facets":${facets}`;
  return `${head},"_links":${JSON.stringify(links)},"_embedded":{${JSON.stringify(name)}:[${entities.join(',')}]}}`;
}

/** The same links as an RFC 8288 `Link` header (docs/conventions.md §2). */
export function linkHeader(links: CollectionLinks & { readonly changes?: Link }): string {
  return Object.entries(links)
    .map(([rel, link]) => `<${link.href}>; rel="${rel}"`)
    .join(', ');
}

/**
 * The root document: the hypermedia entry point, a link to every collection (docs/conventions.md §4), keyed
 * by resource name. It has no `self` link, so that no resource name can collide with one.
 */
export function indexDocument(basePath: string, names: readonly string[]): { _links: Record<string, Link> } {
  const links: Record<string, Link> = {};
  for (const name of names) links[name] = { href: `${basePath}/${name}` };
  return { _links: links };
}
