import { collectionJson, collectionLinks } from '../conventions/hal.js';
import { DEFAULT_LIMIT, pageRange } from '../conventions/pagination.js';
import { HttpProblem, validationFailed } from '../conventions/problem.js';
import { equalityParameter } from '../conventions/query.js';
import { danglingMessage, linkedIds, linkTargets, relationLinks, relNames, reverseHref, type LinkField, type LinkTarget, type ResourceRelations, type ReverseLink } from '../conventions/relations.js';
import { DanglingLinkError, type LinkIntegrity, type StillLinkedError } from '../store/integrity.js';
import type { MaybePromise, QueryResult, Store, StoredEntity } from '../store/store.js';
import { allMaybe, mapMaybe } from './maybe-promise.js';

/** What embedding reads of a linked resource: its store, its collection path and its entities' HAL text (`Resource` is one). */
export interface RelatedResource {
  readonly name: string;
  readonly path: string;
  readonly store: Store;
  json(entity: StoredEntity): string;
}

/**
 * One resource's relations as the HTTP layer serves them (docs/relations.md): the links its entities
 * carry and the `_embedded` member a request's `embed` asks for. Embedding reads only what a page
 * shows: `get` for each forward link, an equality query (an index) for each reverse one, so its
 * cost grows with the page, never the collection.
 */
export class Related {
  readonly #relations: ResourceRelations;
  readonly #basePath: string;
  readonly #resources: ReadonlyMap<string, RelatedResource>;
  /** Each forward field as a path, for `valuesAt`. */
  readonly #paths: readonly (readonly string[])[];
  /** Every rel an entity carries: `embed` may name these. */
  readonly names: ReadonlySet<string>;

  constructor(relations: ResourceRelations, basePath: string, resources: ReadonlyMap<string, RelatedResource>) {
    this.#relations = relations;
    this.#basePath = basePath;
    this.#resources = resources;
    this.#paths = relations.forward.map((l) => [l.field]);
    this.names = relNames(relations);
  }

  /** True when some resource links to this one: its deletes must be checked. */
  get linkedTo(): boolean {
    return this.#relations.reverse.length > 0;
  }

  /** The links of an entity besides `self`, as `,"rel":…` text. */
  links(entity: StoredEntity): string {
    const values = this.#values(entity);
    let i = 0;
    // relationLinks asks for the forward fields in their order, once each.
    return relationLinks(this.#relations, this.#basePath, entity.id, () => values[i++]);
  }

  /** The entity and its forward fields' values, last read: a page reads them for the embeds, then for the links. */
  #last: { entity: StoredEntity; values: readonly unknown[] } | undefined;

  /** The values of the forward fields, read once from the stored bytes when the store can (no parse). */
  #values(entity: StoredEntity): readonly unknown[] {
    const forward = this.#relations.forward;
    if (forward.length === 0) return [];
    if (this.#last?.entity === entity) return this.#last.values;
    const values = entity.valuesAt ? entity.valuesAt(this.#paths) : forward.map((l) => entity.record[l.field]);
    this.#last = { entity, values };
    return values;
  }

  /** The ids the fields of a write link to. */
  targets(fields: Readonly<Record<string, unknown>>): LinkTarget[] {
    return this.#relations.forward.length === 0 ? [] : linkTargets(this.#relations.forward, fields);
  }

  /** Runs a write under the link guard when its fields set links: a link to no entity is a 400 (docs/relations.md, §7). */
  async linking<T>(integrity: LinkIntegrity, fields: Readonly<Record<string, unknown>>, write: () => Promise<T>): Promise<T> {
    const targets = this.targets(fields);
    if (targets.length === 0) return write();
    try {
      return await integrity.linking(targets, write);
    } catch (error) {
      if (!(error instanceof DanglingLinkError)) throw error;
      const messages: Record<string, Record<string, string>> = {};
      for (const { path, resource, id } of error.missing) messages[path] = { 'x-link': danglingMessage(resource, id) };
      throw validationFailed(messages);
    }
  }

  /**
   * docs/relations.md: the 409 of a delete refused, saying how many entities link to the one kept,
   * through which rel, and where they are. Only of the resources `mayRead` admits: of the others,
   * that entities the principal may not read link to it, and no more (no rel, count or href). That
   * some do is what the refusal itself says, and cannot be kept from a client that may delete (the
   * covert channel every foreign key has); how many, and of which resource, is their data, which a
   * token without their read scope is never shown elsewhere either (a facet, an embed, `/`).
   */
  stillLinked(name: string, error: StillLinkedError, mayRead: (resource: string) => boolean = () => true): HttpProblem {
    const shown = error.referrers.filter(({ source }) => mayRead(source));
    const hidden = shown.length < error.referrers.length;
    const links = shown.map(({ source, field, count }) => ({
      rel: this.#relations.reverse.find((l) => l.source === source && l.field === field)?.rel ?? source,
      count,
      href: reverseHref(`${this.#basePath}/${source}`, field, error.id),
    }));
    const total = links.reduce((sum, l) => sum + l.count, 0);
    const unreadable = 'entities this credential may not read';
    let by: string;
    if (hidden) {
      const each = links.map((l) => `${l.count} ${l.count === 1 ? 'entity' : 'entities'} of ${l.rel}, `).join('');
      by = `by ${each}${links.length > 0 ? 'and by ' : ''}${unreadable}; they must be changed or deleted first`;
    } else if (links.length === 1) {
      by = `by ${total} ${total === 1 ? 'entity' : 'entities'}; change or delete ${total === 1 ? 'it' : 'them'} first`;
    } else {
      // Counts are per (resource, field): summed over several fields they may count an entity that
      // links through two of them twice, so the detail then says links, not entities.
      by = `${total} times (${links.map((l) => `${l.rel} ${l.count}`).join(', ')}); change or delete the entities that link first`;
    }
    return new HttpProblem(409, `The ${name} entity ${JSON.stringify(error.id)} is still linked to ${by}`, {
      referencedBy: { count: total, links, ...(hidden ? { unreadable: true } : {}) },
    });
  }

  #resource(name: string): RelatedResource {
    const resource = this.#resources.get(name);
    if (resource === undefined) throw new Error(`no resource ${name}`);
    return resource;
  }

  /**
   * What the representation with `rels` embedded depends on besides the entity itself: the
   * revisions of the stores those rels read. Read before and after a build: when they differ, a
   * write landed meanwhile and the answer is neither tagged nor kept.
   */
  revisions(rels: readonly string[]): string {
    return rels.map((rel) => this.#resource(this.#storeOf(rel)).store.revision).join('~');
  }

  #storeOf(rel: string): string {
    return this.#relations.forward.find((l) => l.field === rel)?.target ?? this.#reverse(rel).source;
  }

  #reverse(rel: string): ReverseLink {
    const found = this.#relations.reverse.find((l) => l.rel === rel);
    if (found === undefined) throw new Error(`no rel ${rel}`);
    return found;
  }

  /**
   * The `,"_embedded":{…}` member of an entity for `rels` (already checked): a forward rel embeds
   * the linked entity (an array of them for an array field; an id that names none is left out), a
   * reverse rel the first page of the entities that link to it. `memo` shares the representations
   * of linked entities between the entities of one page.
   */
  embedded(entity: StoredEntity, rels: readonly string[], memo: Map<string, string | undefined>): MaybePromise<string> {
    const parts = rels.map((rel): MaybePromise<string> => {
      const index = this.#relations.forward.findIndex((l) => l.field === rel);
      const member = index >= 0 ? this.#forward(entity, index, memo) : this.#firstPage(entity.id, this.#reverse(rel));
      return mapMaybe(member, (json) => `${JSON.stringify(rel)}:${json}`);
    });
    return mapMaybe(allMaybe(parts), (members) => (members.length === 0 ? '' : `,"_embedded":{${members.join(',')}}`));
  }

  #forward(entity: StoredEntity, index: number, memo: Map<string, string | undefined>): MaybePromise<string> {
    const link = this.#relations.forward[index] as LinkField;
    const target = this.#resource(link.target);
    const value = this.#values(entity)[index];
    const ids = link.many && Array.isArray(value) ? linkedIds(value) : typeof value === 'string' ? [value] : [];
    const shown = allMaybe(ids.map((id) => represent(target, id, memo)));
    return mapMaybe(shown, (list) => {
      const found = list.filter((json): json is string => json !== undefined);
      if (link.many) return `[${found.join(',')}]`;
      return found[0] ?? 'null';
    });
  }

  /** The first page (default size) of the source's entities that link to `id`, as a collection. */
  #firstPage(id: string, { source: name, field }: ReverseLink): MaybePromise<string> {
    const source = this.#resource(name);
    const answer = source.store.query({ filters: [{ field, path: [field], op: 'eq', values: [id] }], sort: [], search: [], offset: 0, limit: DEFAULT_LIMIT });
    return mapMaybe(answer, (result: QueryResult) => {
      const range = pageRange(result.total, { page: 1, limit: DEFAULT_LIMIT });
      const links = collectionLinks(source.path, range, `&${equalityParameter(encodeURIComponent(field))}=${encodeURIComponent(id)}`);
      return collectionJson(name, range, links, result.entities.map((e) => source.json(e)));
    });
  }
}

/** A linked entity's representation, once per page; undefined for an id that names none. */
function represent(target: RelatedResource, id: string, memo: Map<string, string | undefined>): MaybePromise<string | undefined> {
  const key = `${target.name}/${id}`;
  if (memo.has(key)) return memo.get(key);
  return mapMaybe(target.store.get(id), (found) => {
    const json = found === undefined ? undefined : target.json(found);
    memo.set(key, json);
    return json;
  });
}
