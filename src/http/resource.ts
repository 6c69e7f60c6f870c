import { randomBytes } from 'node:crypto';
import { entityTag } from '../conventions/conditional.js';
import type { ClientFields } from '../conventions/entity.js';
import { carriedQuery, collectionJson, collectionLinks, entityHref, entityJson, linkHeader } from '../conventions/hal.js';
import { HAL_JSON } from './negotiation.js';
import { pageRange, parsePageRequest, type PageRange } from '../conventions/pagination.js';
import { notFound, validationFailed } from '../conventions/problem.js';
import { matchesFilters, parseCollectionQuery, sortComparator } from '../conventions/query.js';
import type { Validator } from '../conventions/schema.js';
import type { Store, StoredEntity } from '../store/store.js';

/** One resource served by the handler. */
export interface ResourceOptions {
  /** Collection name, already checked against the naming rule (contract §1). */
  readonly name: string;
  readonly store: Store;
  /** Checks the client's fields of a new or changed entity; see `compileSchema`. */
  readonly validate?: Validator;
}

/** A collection page, ready to send. */
export interface Page {
  /** The HAL text as UTF-8, encoded once. */
  readonly body: Buffer;
  /** The body's links as an RFC 8288 `Link` header (contract §2), made once with the page. */
  readonly link: string;
  /** Same for every request of the same page while the collection does not change. */
  readonly etag: string;
}

/**
 * Pages kept per resource while its store's revision stays the same; any write empties them. The
 * bound is in bytes, since a page of 200 large entities can weigh megabytes; a page over a tenth
 * of it is not kept at all.
 */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;
const PAGE_CACHE_MAX_PAGE_BYTES = PAGE_CACHE_BYTES / 10;
/** Entities whose HAL bytes and version are kept (a store may decode and hash its line for them). */
const ENTITY_CACHE_SIZE = 10_000;

/** What is sent for one version of an entity. */
interface Representation {
  readonly body: Buffer;
  readonly version: string;
}

/** One resource as the HTTP layer sees it: its representations, its pages, and its validation. */
export class Resource {
  readonly name: string;
  readonly store: Store;
  readonly #validate: Validator | undefined;
  readonly #path: string;
  /** Tags of collection pages: a random epoch (new per handler, as revisions restart) and the store's revision. */
  readonly #epoch = randomBytes(6).toString('base64url');
  /** Pages built at revision `#pagesRevision`, by media type and query string. */
  readonly #pages = new Map<string, Page>();
  #pagesBytes = 0;
  #pagesRevision = -1;
  /**
   * By entity object, which a write replaces: an entry can never describe another version. Bounded,
   * and emptied when full, so memory stays flat at any size of store.
   */
  readonly #entities = new Map<StoredEntity, Representation>();

  constructor(options: ResourceOptions, basePath: string) {
    this.name = options.name;
    this.store = options.store;
    this.#validate = options.validate;
    this.#path = `${basePath}/${options.name}`;
  }

  href(id: string): string {
    return entityHref(this.#path, id);
  }

  /**
   * The entity's HAL text, spliced from its stored text. Not cached: splicing costs less than a
   * cache of every entity ever served would cost in memory at a million entities.
   */
  json(entity: StoredEntity): string {
    return entityJson(entity.json, this.href(entity.id));
  }

  /** The entity's HAL bytes and version, made once while the entity is among the recently served. */
  representation(entity: StoredEntity): Representation {
    let representation = this.#entities.get(entity);
    if (representation === undefined) {
      representation = { body: Buffer.from(this.json(entity)), version: entity.version };
      if (this.#entities.size >= ENTITY_CACHE_SIZE) this.#entities.clear();
      this.#entities.set(entity, representation);
    }
    return representation;
  }

  etag(version: string, mediaType: string): string {
    return entityTag(version, mediaType, HAL_JSON);
  }

  entity(id: string): StoredEntity {
    return this.store.get(id) ?? this.missing(id);
  }

  missing(id: string): never {
    throw notFound(`There is no ${this.name} entity with id ${JSON.stringify(id)}`);
  }

  /** Contract §7: a schema failure is a 400 with `validationMessages`. */
  check(fields: ClientFields): void {
    const messages = this.#validate?.(fields);
    if (messages) throw validationFailed(messages);
  }

  /**
   * A collection page (seed 2.2, contract §2, §3, §3a), its links and its tag. A page is built once
   * per store revision: the revision moves with every write the store applies, however it came, so
   * a kept page is byte for byte what a rebuild would give.
   */
  page(query: string, mediaType: string): Page {
    const revision = this.store.revision;
    if (revision !== this.#pagesRevision) {
      this.#emptyPages();
      this.#pagesRevision = revision;
    }
    const key = `${mediaType} ${query}`;
    let page = this.#pages.get(key);
    if (page === undefined) {
      page = this.#build(query, mediaType, revision);
      const bytes = page.body.length + key.length;
      if (bytes <= PAGE_CACHE_MAX_PAGE_BYTES) {
        if (this.#pagesBytes + bytes > PAGE_CACHE_BYTES) this.#emptyPages();
        this.#pages.set(key, page);
        this.#pagesBytes += bytes;
      }
    }
    return page;
  }

  #emptyPages(): void {
    this.#pages.clear();
    this.#pagesBytes = 0;
  }

  #build(query: string, mediaType: string, revision: number): Page {
    const params = new URLSearchParams(query);
    const request = parsePageRequest(params.get('page') ?? undefined, params.get('limit') ?? undefined);
    const { filters, sort, sortKeys } = parseCollectionQuery(params);
    let entities: readonly StoredEntity[];
    let range: PageRange;
    if (filters.size === 0 && sortKeys.length === 0) {
      // The common case reads one page straight from the store's creation order.
      range = pageRange(this.store.size, request);
      entities = this.store.page(range.offset, range.limit);
    } else {
      // Each record is read once: a store may parse it on every read, and a sort compares n log n times.
      const selected: { entity: StoredEntity; record: StoredEntity['record'] }[] = [];
      for (const entity of this.store.values()) {
        const record = entity.record;
        if (matchesFilters(record, filters)) selected.push({ entity, record });
      }
      if (sortKeys.length > 0) {
        const compare = sortComparator(sortKeys);
        selected.sort((a, b) => compare(a.record, b.record));
      }
      range = pageRange(selected.length, request);
      entities = selected.slice(range.offset, range.offset + range.limit).map((s) => s.entity);
    }
    const links = collectionLinks(this.#path, range, carriedQuery(sort, filters));
    const body = Buffer.from(collectionJson(this.name, range, links, entities.map((e) => this.json(e))));
    // The URL fixes the page and its query; the revision fixes the collection's state.
    const etag = `"c.${this.#epoch}.${revision.toString(36)}${mediaType === HAL_JSON ? '' : '-json'}"`;
    return { body, link: linkHeader(links), etag };
  }
}
