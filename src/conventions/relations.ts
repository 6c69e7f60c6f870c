import { entityHref } from './hal.js';
import { badRequest } from './problem.js';
import { equalityParameter } from './query.js';
import { LINK_KEYWORD } from './schema.js';

/**
 * Relations between resources (docs/relations.md): which fields link where, the rels each resource's
 * entities carry, their links as HAL text, and `embed`. Pure: schemas and values in, text out.
 */

/** A top-level field whose values are ids of `target`'s entities (`"x-link": "<target>"`). */
export interface LinkField {
  readonly field: string;
  readonly target: string;
  /** True for an array of ids: the link is an array of link objects. */
  readonly many: boolean;
}

/** The reverse of a link, carried by the target's entities: `<source>?<field>=<id>`. */
export interface ReverseLink {
  /** `<source>`, or `<source>.<field>` when the source links the target through more than one field. */
  readonly rel: string;
  readonly source: string;
  readonly field: string;
}

/** What the entities of one resource link to, and what links to them. */
export interface ResourceRelations {
  readonly forward: readonly LinkField[];
  readonly reverse: readonly ReverseLink[];
}

/** The relations of every resource, by name. */
export type RelationGraph = ReadonlyMap<string, ResourceRelations>;

/**
 * The relations among `names` only: the forward links to, and the reverse links from, a resource
 * outside them left out (what a token that may read only those resources is described).
 */
export function relationsAmong(graph: RelationGraph, names: ReadonlySet<string>): RelationGraph {
  const among = new Map<string, ResourceRelations>();
  for (const [name, relations] of graph) {
    if (!names.has(name)) continue;
    among.set(name, { forward: relations.forward.filter((link) => names.has(link.target)), reverse: relations.reverse.filter((link) => names.has(link.source)) });
  }
  return among;
}

/** A relation that cannot be served; the message is the one line a user sees at start-up. */
export class RelationError extends Error {
  override readonly name = 'RelationError';
  /** The resource whose schema declares it: the CLI names its file (`<data>/<resource>.schema.json`). */
  readonly resource: string | undefined;

  constructor(message: string, resource?: string) {
    super(message);
    this.resource = resource;
  }
}

/** Served names a message lists at most: a server of 200 resources would make a line of 1,300 characters. */
const NAMES_SAID = 10;

/** The served names, the first `NAMES_SAID` of them and how many more. */
function servedNames(names: ReadonlySet<string>): string {
  const said = [...names].slice(0, NAMES_SAID).join(', ');
  return names.size > NAMES_SAID ? `${said} and ${names.size - NAMES_SAID} more` : said;
}

const NONE: ResourceRelations = { forward: [], reverse: [] };

/** The `x-link` fields of a schema already checked by `compileSchema`, in the schema's order. */
export function linkFields(schema: unknown): LinkField[] {
  const properties = (schema as { properties?: unknown } | undefined)?.properties;
  if (typeof properties !== 'object' || properties === null) return [];
  const out: LinkField[] = [];
  for (const [field, property] of Object.entries(properties as Record<string, Record<string, unknown>>)) {
    const target = property[LINK_KEYWORD];
    if (typeof target === 'string') out.push({ field, target, many: property['type'] === 'array' || (Array.isArray(property['type']) && property['type'].includes('array')) });
  }
  return out;
}

/**
 * Every resource's forward and reverse links, from the `x-link`s of their schemas. A link to a
 * resource that is not served, a link field no query can filter on (its name empty or holding
 * `.`, `[` or `]`), or two rels of one resource with the same name, is a
 * `RelationError`: a link that could never be followed is refused at start-up, like an unknown
 * schema keyword.
 */
export function relationGraph(resources: readonly { readonly name: string; readonly schema?: unknown }[]): RelationGraph {
  const names = new Set(resources.map((r) => r.name));
  const forward = new Map<string, LinkField[]>();
  for (const { name, schema } of resources) {
    const links = linkFields(schema);
    for (const link of links) {
      if (!names.has(link.target)) {
        throw new RelationError(`resource ${name}: property ${link.field} has "${LINK_KEYWORD}": "${link.target}", but no resource is named ${JSON.stringify(link.target)} (served: ${servedNames(names)})`, name);
      }
      if (link.field === 'self') throw new RelationError(`resource ${name}: property self cannot be a link: the rel self is the entity's own`, name);
      // The reverse link is the source's collection filtered on the field: a filter reads `.` as a
      // path into an object and `[…]` as an operator, so no query could name such a field.
      if (link.field === '' || /[.[\]]/.test(link.field)) {
        throw new RelationError(`resource ${name}: property ${JSON.stringify(link.field)} cannot be a link: its reverse link filters on it, and a query reads . in a name as a nested path and [ ] as an operator; rename it`, name);
      }
    }
    if (links.length > 0) forward.set(name, links);
  }
  const reverse = new Map<string, ReverseLink[]>();
  for (const [source, links] of forward) {
    for (const link of links) {
      const twice = links.filter((other) => other.target === link.target).length > 1;
      const list = reverse.get(link.target) ?? [];
      list.push({ rel: twice ? `${source}.${link.field}` : source, source, field: link.field });
      reverse.set(link.target, list);
    }
  }
  const graph = new Map<string, ResourceRelations>();
  for (const { name } of resources) {
    const relations = { forward: forward.get(name) ?? [], reverse: reverse.get(name) ?? [] };
    const seen = new Set(['self']);
    for (const rel of [...relations.forward.map((l) => l.field), ...relations.reverse.map((l) => l.rel)]) {
      if (seen.has(rel)) throw new RelationError(`resource ${name}: two links would both be named ${JSON.stringify(rel)}; rename the property that makes one of them`, name);
      seen.add(rel);
    }
    graph.set(name, relations.forward.length + relations.reverse.length === 0 ? NONE : relations);
  }
  return graph;
}

/** The ids a link field holds: a string, or the strings of an array; anything else links nowhere. */
export function linkedIds(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (!Array.isArray(value)) return [];
  return value.filter((v): v is string => typeof v === 'string');
}

/** One id a write links to, and the field path its validation message names (`tags.2`). */
export interface LinkTarget {
  readonly resource: string;
  readonly id: string;
  readonly path: string;
}

/**
 * The ids the given client fields link to. A PATCH passes only its patch: a link it leaves alone
 * is already stored, and kept from dangling since it was made.
 */
export function linkTargets(forward: readonly LinkField[], fields: Readonly<Record<string, unknown>>): LinkTarget[] {
  const out: LinkTarget[] = [];
  for (const { field, target, many } of forward) {
    if (!Object.hasOwn(fields, field)) continue;
    const value = fields[field];
    if (many) {
      if (!Array.isArray(value)) continue;
      value.forEach((id, i) => {
        if (typeof id === 'string') out.push({ resource: target, id, path: `${field}.${i}` });
      });
    } else if (typeof value === 'string') {
      out.push({ resource: target, id: value, path: field });
    }
  }
  return out;
}

/** The validation message of a link to no entity (docs/relations.md, §7), under the rule `x-link`. */
export function danglingMessage(target: string, id: string): string {
  return `must be the id of an entity of ${target}; there is none with id ${JSON.stringify(id)}`;
}

/**
 * The href of a reverse link: the source's collection filtered on the field (docs/relations.md);
 * `<field>[eq]=` for a field named like a reserved parameter (`page`).
 */
export function reverseHref(sourcePath: string, field: string, id: string): string {
  return `${sourcePath}?${equalityParameter(encodeURIComponent(field))}=${encodeURIComponent(id)}`;
}

/**
 * The links an entity carries besides `self`, as HAL text to follow `"self":{…}`: each forward
 * link whose field holds an id (an array of link objects for an array field), then each reverse
 * link. `valueOf` reads a field of the entity; paths are under `basePath`.
 */
export function relationLinks(relations: ResourceRelations, basePath: string, id: string, valueOf: (field: string) => unknown): string {
  let out = '';
  for (const { field, target, many } of relations.forward) {
    const value = valueOf(field);
    if (many ? !Array.isArray(value) : typeof value !== 'string') continue;
    const hrefs = linkedIds(value).map((linked) => `{"href":${JSON.stringify(entityHref(`${basePath}/${target}`, linked))}}`);
    out += `,${JSON.stringify(field)}:${many ? `[${hrefs.join(',')}]` : hrefs[0]}`;
  }
  for (const { rel, source, field } of relations.reverse) {
    out += `,${JSON.stringify(rel)}:{"href":${JSON.stringify(reverseHref(`${basePath}/${source}`, field, id))}}`;
  }
  return out;
}

/** The rels a resource's entities carry, for `embed`. */
export function relNames(relations: ResourceRelations): Set<string> {
  return new Set([...relations.forward.map((l) => l.field), ...relations.reverse.map((l) => l.rel)]);
}

/** Refuses a rel of `embed` that the resource's entities do not carry: a 400 naming the parameter. */
export function checkEmbed(embed: readonly string[], known: ReadonlySet<string>): void {
  for (const rel of embed) if (!known.has(rel)) throw badRequest(`Query parameter embed names an unknown relation: ${rel}`);
}

/**
 * The rels of `embed` in a query string (comma-separated, the parameter repeatable), once each and
 * sorted as `parseCollectionQuery` gives them; none without one.
 */
export function embedOf(query: string): string[] {
  // `emb%65d=` is `embed=` once decoded (as every route decodes names): a query with an escape is parsed.
  if (!query.includes('embed') && !query.includes('%')) return [];
  const rels = new URLSearchParams(query)
    .getAll('embed')
    .flatMap((value) => value.split(','))
    .filter((rel) => rel !== '');
  return [...new Set(rels)].sort();
}

/** What a link to a representation with embeds carries: `?embed=a,b` (or `&…` after a query). */
export function embedQuery(rels: readonly string[], separator: '?' | '&'): string {
  return rels.length === 0 ? '' : `${separator}embed=${rels.map(encodeURIComponent).join(',')}`;
}
