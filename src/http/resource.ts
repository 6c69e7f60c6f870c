import { checkIfMatch, checkIfNoneMatch, entityTag, variantTag, versionTags } from '../conventions/conditional.js';
import { checkIfUnmodifiedSince, modificationDate } from '../conventions/last-modified.js';
import { createdRecord, mergePatch, patchedText, replacedRecord, SERVER_MANAGED, withoutManaged, withText, type ClientFields } from '../conventions/entity.js';
import { collectionChangesHref } from '../conventions/changes.js';
import { collectionJson, collectionLinks, entityHref, entityJson, linkHeader, pageHref } from '../conventions/hal.js';
import { facetsJson } from '../conventions/facets.js';
import type { ChangeFeed } from '../store/changes/change-feed.js';
import { pageRange, parsePageRequest, type PageRequest } from '../conventions/pagination.js';
import { type HttpProblem, notFound, QUERY_RETRY_AFTER_SECONDS, serviceUnavailable, validationFailed } from '../conventions/problem.js';
import { decodeQueryComponent, parseCollectionQuery, type CollectionQuery, type PathCheck } from '../conventions/query.js';
import { checkEmbed, embedQuery } from '../conventions/relations.js';
import type { Validator } from '../conventions/schema.js';
import { StillLinkedError, type LinkIntegrity } from '../store/integrity.js';
import type { KeyedWrite } from '../store/idempotency.js';
import { IndexLimitError, QueryTimeoutError, StoreConflictError, type MaybePromise, type QueryResult, type Store, type StoredEntity } from '../store/store.js';
import { collectionTemplates, entityTemplates, NO_TEMPLATES, templateProperties, withTemplates, type TemplateProperty } from '../representations/hal-forms.js';
import type { JsonSchema } from '../representations/openapi.js';
import { LruMap } from '../structures/lru-map.js';
import { HAL_FORMS, HAL_JSON } from './negotiation.js';
import { allMaybe, mapMaybe } from './maybe-promise.js';
import { checkMergedLimits, type BodyLimits } from './body.js';
import type { Related } from './related.js';
import type { Reply } from './reply.js';
import { DEFAULT_QUERY_BUDGET_MS } from '../conventions/limits.js';

/** One resource served by the handler. */
export interface ResourceOptions {
  /** Collection name, by the naming rule of docs/conventions.md §1 (`createHandler` checks it). */
  readonly name: string;
  readonly store: Store;
  /** Checks the client's fields of a new or changed entity; see `compileSchema`. */
  readonly validate?: Validator;
  /** The field paths a schema declares; filters and sorts on others are refused (docs/queries.md). */
  readonly declared?: PathCheck;
  /** The JSON schema of its client fields: the HAL-FORMS templates' properties come from it. */
  readonly schema?: JsonSchema | undefined;
  /** The values and members an entity a merge patch makes may hold (`checkMergedLimits`); bodies are counted as they arrive. */
  readonly mergedLimits?: BodyLimits | undefined;
}

/** A resource's relations as served, and what keeps its links from dangling. */
export interface ResourceLinks {
  readonly related: Related;
  readonly integrity: LinkIntegrity;
}

/** A collection page, ready to send. */
export interface Page {
  /** The HAL text as UTF-8, encoded once. */
  readonly body: Buffer;
  /** The body's links as an RFC 8288 `Link` header (docs/conventions.md §2), made once with the page. */
  readonly link: string;
  /** Same for every request of the same page while the collection does not change; none when the page spans writes. */
  readonly etag: string | undefined;
  /** The revisions of the other stores an embedding page shows ('' for none): a kept page is good while they hold. */
  readonly depends: string;
  /** The rels it embeds. */
  readonly embed: readonly string[];
  /** Its 200 answer, made by the first request that gets it (resource-routes.ts `pageReply`) and sent as it is by the next. */
  ok: Reply | undefined;
}

/** What is sent for one version of an entity. */
export interface Representation {
  readonly body: Buffer;
  readonly version: string;
  /**
   * Its 200 answers in HAL and in plain JSON, each made by the first unconditional GET that wants
   * it (resource-routes.ts `entityRead`) and sent as it is while this version stays the one served.
   * Two fields rather than a map: a representation is kept for each of up to 131,072 entities.
   */
  okHal: Reply | undefined;
  okJson: Reply | undefined;
}

/** An entity with embedded relations: its tag names its version and every state it shows, or none when writes landed while it was made. */
export interface EmbeddedRepresentation {
  readonly body: Buffer;
  readonly tag: string | undefined;
}

/**
 * The representation epochs of a resource (representation-epoch.ts), folded into its tags: its own,
 * and the one of a representation that embeds other resources' entities. '' for none.
 */
export interface ResourceEpochs {
  readonly own: string;
  readonly embedding: string;
}

const NO_EPOCHS: ResourceEpochs = Object.freeze({ own: '', embedding: '' });

/** A kept representation, and the entity object it was made from. */
interface CachedRepresentation extends Representation {
  readonly of: WeakRef<StoredEntity>;
}

/** The conditions of a write (RFC 9110 §13.1.1, §13.1.2), checked against the latest state in the store's write order. */
export interface WriteConditions {
  readonly ifMatch?: string | undefined;
  readonly ifNoneMatch?: string | undefined;
  /**
   * `If-Unmodified-Since` in Unix seconds (RFC 9110 §13.1.4), of a request without `If-Match` and
   * only when it is an HTTP-date (`unmodifiedSinceCondition`): an entity's write checks it against
   * the entity's `updatedAt`; a POST's ignores it (a collection has no modification date).
   */
  readonly ifUnmodifiedSince?: number | undefined;
}

/** The conditions of a write that names none: one shared object. */
export const NO_CONDITIONS: WriteConditions = Object.freeze({});
const NOTHING = (): void => undefined;
/** The path of the member a modification date is read from (docs/conventions.md §2). */
const UPDATED_AT: readonly (readonly string[])[] = [['updatedAt']];
/** The clock's second, as the `Date` of a response reads it: a `Last-Modified` is never later. */
const clockSecond = (): number => Math.floor(Date.now() / 1000);

/**
 * Pages kept per resource while its store's revision stays the same; any write empties them. The
 * bound is in bytes, since a page of 200 large entities can weigh megabytes; a page over a tenth
 * of it is not kept at all. The bound in entries caps the bookkeeping of many tiny pages (empty
 * results of distinct queries).
 */
const PAGE_CACHE_BYTES = 32 * 1024 * 1024;
const PAGE_CACHE_MAX_PAGE_BYTES = PAGE_CACHE_BYTES / 10;
const PAGE_CACHE_ENTRIES = 16_384;
/**
 * Recently served entities' HAL bytes, by id; bounded in bytes so that large entities cannot pile
 * up, and in entries so that tiny ones cannot make the bookkeeping (about 100 bytes an entry
 * beyond its text) outweigh the bound (16 MiB of 120-byte entities would be 140,000 entries).
 */
const ENTITY_CACHE_BYTES = 16 * 1024 * 1024;
const ENTITY_CACHE_MAX_ENTRY_BYTES = ENTITY_CACHE_BYTES / 16;
const ENTITY_CACHE_ENTRIES = 131_072;
/** Query parameters a stream of a collection ignores, unchecked: they shape pages, not the set. */
const STREAM_IGNORED: readonly string[] = ['page', 'limit', 'sort', 'embed', 'facets'];

/** One resource as the HTTP layer sees it: its representations, its pages, its writes and their checks. */
export class Resource {
  readonly name: string;
  readonly store: Store;
  readonly #validate: Validator | undefined;
  readonly #mergedLimits: BodyLimits | undefined;
  readonly #declared: PathCheck | undefined;
  readonly #path: string;
  readonly #budgetMs: number;
  /** The HAL-FORMS template properties of the schema, and the collection's templates: made once. */
  readonly #properties: readonly TemplateProperty[];
  readonly #collectionTemplates: string;
  /** Pages built at revision `#pagesRevision` with `changes` cursor `#pagesCursor`, by media type and query string; weighed in bytes (body and key), least recently used out first. */
  readonly #pages = new LruMap<Page>({ maxEntries: PAGE_CACHE_ENTRIES, maxWeight: PAGE_CACHE_BYTES, maxEntryWeight: PAGE_CACHE_MAX_PAGE_BYTES });
  #pagesRevision: string | undefined;
  #pagesCursor: string | undefined;
  /**
   * By id, each entry naming the version it describes, so a write can never be served stale and a
   * replaced version is dropped at once (the writes here evict it). A hit makes its entry the most
   * recently used; the least recently used go first (`LruMap`: O(1) per hit and per eviction).
   */
  readonly #entities = new LruMap<CachedRepresentation>({ maxEntries: ENTITY_CACHE_ENTRIES, maxWeight: ENTITY_CACHE_BYTES, maxEntryWeight: ENTITY_CACHE_MAX_ENTRY_BYTES });
  /** The data set's change feed, for the pages' `changes` link; none without one. */
  #feed: ChangeFeed | undefined;
  readonly #basePath: string;
  /** The last conditional POST under way (`create`): the next one's check waits for its write. */
  #conditionalCreates: Promise<void> = Promise.resolve();
  /** Links to and from other resources (docs/relations.md); none when the resource has no relations. */
  readonly #related: Related | undefined;
  readonly #integrity: LinkIntegrity | undefined;
  /** Folded into every tag, made once at start-up: the tags change when the bytes do for another reason than the data. */
  readonly #epochs: ResourceEpochs;

  /** `links`: the resource's relations and the guard of its links, when it has relations (made where the server is assembled, `app.ts`). */
  constructor(options: ResourceOptions, basePath: string, budgetMs = DEFAULT_QUERY_BUDGET_MS, links?: ResourceLinks, epochs: ResourceEpochs = NO_EPOCHS) {
    this.name = options.name;
    this.store = options.store;
    this.#validate = options.validate;
    this.#mergedLimits = options.mergedLimits;
    this.#declared = options.declared;
    this.#path = `${basePath}/${options.name}`;
    this.#basePath = basePath;
    this.#budgetMs = budgetMs;
    this.#properties = templateProperties(options.schema, basePath);
    this.#collectionTemplates = collectionTemplates(this.#properties, this.#path);
    this.#related = links?.related;
    this.#integrity = links?.integrity;
    this.#epochs = epochs;
  }

  /**
   * An entity's HAL text (`hal`) as HAL-FORMS: with the templates to replace, patch and delete it,
   * holding its values; for a principal that may not write the resource (`writable` false), none.
   */
  withTemplates(entity: StoredEntity, hal: Buffer | string, writable = true): Buffer {
    return withTemplates(hal, writable ? entityTemplates(this.#properties, this.href(entity.id), entity.record) : NO_TEMPLATES);
  }

  /** The collection's path, under the base path. */
  get path(): string {
    return this.#path;
  }

  /** From now on, collection pages link to the changes after them (list, then watch). */
  linkChanges(feed: ChangeFeed): void {
    this.#feed = feed;
  }

  /** The filters and search words of a collection URL watched as a stream; its page, order and shape are ignored. */
  watchQuery(query: string): { filters: CollectionQuery['filters']; search: CollectionQuery['search'] } {
    // Left out of the raw query (not re-encoded, so that a literal comma still separates alternatives).
    const kept = query
      .split('&')
      .filter((pair) => {
        const equals = pair.indexOf('=');
        return !STREAM_IGNORED.includes(decodeQueryComponent(equals === -1 ? pair : pair.slice(0, equals)));
      })
      .join('&');
    const { filters, search } = parseCollectionQuery(kept, this.#declared);
    return { filters, search };
  }

  href(id: string): string {
    return entityHref(this.#path, id);
  }

  /**
   * The entity's HAL text, spliced from its stored text: its links, then `embedded` (the
   * `_embedded` member, or ''). Shown with embeds, its self link names that representation:
   * `selfQuery` is `?embed=…` (`embedQuery`).
   */
  json(entity: StoredEntity, embedded = '', selfQuery = ''): string {
    return entityJson(entity.json, this.href(entity.id) + selfQuery, this.#related?.links(entity) ?? '', embedded);
  }

  /** Refuses an `embed` that names a rel the entities do not carry (docs/relations.md). */
  checkEmbed(rels: readonly string[]): void {
    if (rels.length > 0) checkEmbed(rels, this.#related?.names ?? new Set());
  }

  /** The entity with `rels` embedded (already checked), tagged over its version and the stores the rels read. */
  embeddedRepresentation(entity: StoredEntity, rels: readonly string[], mediaType: string, writable = true): MaybePromise<EmbeddedRepresentation> {
    const related = this.#related;
    // `checkEmbed` refuses every rel of a resource without relations: none reaches here.
    if (related === undefined) throw new Error(`${this.name} has no relations to embed`);
    const before = related.revisions(rels);
    return mapMaybe(related.embedded(entity, rels, new Map()), (embedded) => {
      const body = Buffer.from(this.json(entity, embedded, embedQuery(rels, '?')));
      const tag = related.revisions(rels) === before ? variantTag(entityTag(`${entity.version}~${before}`, mediaType, HAL_JSON, this.#epochs.embedding), mediaType, writable) : undefined;
      return { body, tag };
    });
  }

  /**
   * The HAL text and version of an entity a write just made, for its answer: not kept. The entity
   * cache admits what is read (`representation`); a bulk load would otherwise fill it with entities
   * nobody reads yet, pushing out the ones that are, and pay for each insert and eviction.
   */
  written(entity: StoredEntity): { readonly body: string; readonly version: string } {
    // Text, not bytes: sent once, and node:http writes a text body in one piece with its headers.
    return { body: this.json(entity), version: entity.version };
  }

  /** The entity's HAL bytes and version, made once while the entity is among the recently served. */
  representation(entity: StoredEntity): Representation {
    const id = entity.id;
    const cached = this.#entities.get(id);
    // The same entity object is the same version, known without reading `version` (which a store
    // may compute by hashing the entity's text); the reference is weak, so it keeps nothing alive.
    if (cached !== undefined && (cached.of.deref() === entity || cached.version === entity.version)) return cached;
    const representation: CachedRepresentation = { body: Buffer.from(this.json(entity)), version: entity.version, of: new WeakRef(entity), okHal: undefined, okJson: undefined };
    this.#entities.set(id, representation, representation.body.length + id.length);
    return representation;
  }

  /**
   * True while the store serves this very entity object (so this version), asked without keeping
   * the entity alive: what makes a reply made from it `current` (reply.ts).
   */
  stillServes(entity: StoredEntity): () => boolean {
    const { id } = entity;
    const shown = new WeakRef(entity);
    const store = this.store;
    return () => {
      const served = store.get(id);
      return served !== undefined && served === shown.deref();
    };
  }

  /**
   * The entity's modification date in Unix seconds (`modificationDate`: its `updatedAt`, never later
   * than the clock's second), or undefined when its `updatedAt` is no date. Read without parsing
   * the record where the store can (`valuesAt`); it is read when an answer is made, which a kept
   * answer is once per version (resource-routes.ts `entityRead`).
   */
  lastModified(entity: StoredEntity, now = clockSecond()): number | undefined {
    const updatedAt = entity.valuesAt === undefined ? entity.record.updatedAt : entity.valuesAt(UPDATED_AT)[0];
    return modificationDate(updatedAt, now);
  }

  /** The tag of `version` in `mediaType` (for a principal that may, or may not, write). */
  etag(version: string, mediaType: string, writable = true): string {
    return variantTag(entityTag(version, mediaType, HAL_JSON, this.#epochs.own), mediaType, writable);
  }

  /** Every tag of `version` (checkIfMatch's `current`). */
  versionTags(version: string): string[] {
    return versionTags(version, HAL_JSON, this.#epochs.own);
  }

  /** The entity with this id, or a 404 problem. */
  entity(id: string): MaybePromise<StoredEntity> {
    const found = this.store.get(id);
    return found instanceof Promise ? found.then((entity) => entity ?? this.#missing(id)) : (found ?? this.#missing(id));
  }

  #missing(id: string): never {
    throw this.missing(id);
  }

  /** The 404 problem of an id that is not there. */
  missing(id: string): HttpProblem {
    return notFound(`There is no ${this.name} entity with id ${JSON.stringify(id)}`);
  }

  /** docs/conventions.md §7: a schema failure is a 400 with `validationMessages`. */
  #check(fields: ClientFields): void {
    const messages = this.#validate?.(fields);
    if (messages) throw validationFailed(messages);
  }

  // ---- writes (docs/conventions.md §4): each checks its body and conditions against the latest state ----

  /**
   * POST: a new entity with a fresh id; 96 random bits make a collision all but impossible, but
   * never fatal. `conditions` are the request's, about the collection it is sent to (RFC 9110
   * §13.1.1, §13.1.2): checked against the collection's current tag once the body is valid.
   */
  create(body: ClientFields, now: number, newId: () => string, keyed?: KeyedWrite, conditions: WriteConditions = NO_CONDITIONS): Promise<StoredEntity> {
    const fields = withoutManaged(body);
    this.#check(fields);
    // No async frame per POST for a retry that all but never happens: it hangs off the promise.
    const attempt = (n: number): Promise<StoredEntity> =>
      this.store.create(createdRecord(newId(), now, fields), keyed).catch((error: unknown) => {
        if (!(error instanceof StoreConflictError) || n >= 3) throw error;
        return attempt(n + 1);
      });
    if (conditions.ifMatch === undefined && conditions.ifNoneMatch === undefined) return this.#linking(fields, () => attempt(1));
    // One conditional POST at a time, each checked once the one before it has written: two sent at
    // once with the same If-Match would otherwise both pass, and both create.
    const created = this.#conditionalCreates.then(() =>
      this.#linking(fields, () => {
        try {
          this.#checkCollection(conditions);
        } catch (error) {
          return Promise.reject(error);
        }
        return attempt(1);
      }),
    );
    this.#conditionalCreates = created.then(NOTHING, NOTHING);
    return created;
  }

  /**
   * A POST's conditions against the collection as it stands: its tag is a page's without a query
   * (`#build`), in any representation. The collection always has a current representation, so
   * `If-None-Match: *` always fails. Checked as the write is about to be queued, after the conditional POSTs
   * before it have written (`#conditionalCreates`), not in the store's write order as an entity's
   * conditions are: a write without conditions landing in between is not seen.
   */
  #checkCollection(conditions: WriteConditions): void {
    const cursor = this.#feed?.latestOf(this.name);
    const tags = versionTags(`c.${this.store.revision}${cursor === undefined ? '' : `.${cursor}`}`, HAL_JSON, this.#epochs.own);
    checkIfMatch(conditions.ifMatch, tags);
    checkIfNoneMatch(conditions.ifNoneMatch, tags);
  }

  /** PUT: the client fields replaced. */
  replace(id: string, body: ClientFields, now: number, conditions: WriteConditions): Promise<StoredEntity> {
    const fields = withoutManaged(body);
    this.#check(fields);
    const write = (): Promise<StoredEntity> => this.#linking(fields, () => this.#change(id, conditions, (current) => replacedRecord(current.record, now, fields)));
    // As for PATCH: a missing entity is a 404 before any of its links is looked at.
    if ((this.#related?.targets(fields).length ?? 0) > 0) return this.#mustExist(id).then(write);
    return write();
  }

  /** PATCH: a JSON Merge Patch (RFC 7396) of the client fields, validated as merged. */
  patch(id: string, body: ClientFields, now: number, conditions: WriteConditions, keyed?: KeyedWrite): Promise<StoredEntity> {
    const patch = withoutManaged(body);
    const write = (): Promise<StoredEntity> =>
      this.#linking(patch, () =>
        this.#change(id, conditions, (current) => {
          // A store may parse the record on every access: once is enough.
          const record = current.record;
          // The patch holds no server-managed member (`withoutManaged`); the record's are left out.
          const merged = mergePatch(record, patch, SERVER_MANAGED) as ClientFields;
          if (this.#mergedLimits !== undefined) checkMergedLimits(merged, this.#mergedLimits);
          this.#check(merged);
          const patched = replacedRecord(record, now, merged);
          // Text halserve wrote is its record serialised, and so is the patched record's: nothing
          // the patch left alone changes. Other text (written by hand, imported: numbers past 2^53,
          // escapes, key order) is patched as text, so that its untouched members keep their bytes.
          const stored = current.json;
          if (current.serialised === true || JSON.stringify(record) === stored) return patched;
          const text = patchedText(stored, patch, now);
          return text === undefined ? patched : withText(patched, text);
        }, keyed),
      );
    // A link the patch sets is checked against its target; one it leaves alone is stored already.
    // A missing entity is a 404 before any of its links is looked at.
    if ((this.#related?.targets(patch).length ?? 0) > 0) return this.#mustExist(id).then(write);
    return write();
  }

  /**
   * A 404 problem unless the entity exists: in this process's store, or, asked of the link guard,
   * in a database another process shares, which may hold an entity it has just created that this
   * process's copy has not seen yet (the write itself then finds it there).
   */
  async #mustExist(id: string): Promise<void> {
    if ((await this.store.get(id)) !== undefined) return;
    if (this.#integrity === undefined || !(await this.#integrity.exists(this.name, id))) throw this.missing(id);
  }

  /**
   * DELETE; an entity something links to stays (409), checked in the same order as the links'
   * writes (docs/relations.md). The 409 details only the linking resources `mayRead` admits (the
   * principal's read scopes).
   */
  async remove(id: string, conditions: WriteConditions, mayRead?: (resource: string) => boolean): Promise<void> {
    const remove = (): Promise<boolean> => this.store.delete(id, (current) => this.#checkConditions(current, conditions));
    let deleted: boolean;
    if (this.#related?.linkedTo === true && this.#integrity !== undefined) {
      // 404 and 412 come before 409, as for an entity nothing links to; the delete checks them again in its write order.
      // Not against a copy that may be behind a shared database: there the delete decides them all.
      if (this.#integrity.countsBeforeChecks) this.#checkConditions(await this.entity(id), conditions);
      try {
        deleted = await this.#integrity.removing(this.name, id, remove);
      } catch (error) {
        throw error instanceof StillLinkedError ? this.#related.stillLinked(this.name, error, mayRead) : this.#timeout(error);
      }
    } else {
      deleted = await remove();
    }
    this.#entities.delete(id);
    if (!deleted) this.#missing(id);
  }

  /** Runs a write under the link guard when its fields set links (docs/relations.md). */
  #linking(fields: ClientFields, write: () => Promise<StoredEntity>): Promise<StoredEntity> {
    return this.#related === undefined || this.#integrity === undefined ? write() : this.#related.linking(this.#integrity, fields, write);
  }

  /**
   * The conditions and the change apply to the latest state, inside the store's write order, so a
   * concurrent update is never lost or overwritten unseen.
   */
  #change(id: string, conditions: WriteConditions, next: (current: StoredEntity) => ReturnType<typeof replacedRecord>, keyed?: KeyedWrite): Promise<StoredEntity> {
    const update = this.store.update(id, (current) => {
      this.#checkConditions(current, conditions);
      return next(current);
    }, keyed);
    return update.then((entity) => {
      this.#entities.delete(id);
      return entity ?? this.#missing(id);
    });
  }

  // ---- collection pages ----

  /**
   * A collection page (docs/conventions.md §2, docs/conventions.md §2, §3, §3a), its links and its tag. A page is built once
   * per store revision and `changes` cursor: the revision moves with every write the store applies,
   * however it came, so a kept page is byte for byte what a rebuild would give.
   */
  page(query: string, mediaType: string, writable = true): MaybePromise<Page> {
    const revision = this.store.revision;
    // Read before the query: a page may then show changes after its cursor (a client applies them
    // again, harmlessly), never miss one before it. The cursor moves without the revision when a
    // delete of another resource is forgotten (a kept page's link would then answer 410 however
    // often its client listed again), so a kept page is one of both.
    const cursor = this.#feed?.latestOf(this.name);
    if (revision !== this.#pagesRevision || cursor !== this.#pagesCursor) {
      this.#pages.clear();
      this.#pagesRevision = revision;
      this.#pagesCursor = cursor;
    }
    // HAL-FORMS for a principal that may not write is another body (no templates): kept apart.
    const key = `${mediaType}${mediaType === HAL_FORMS && !writable ? ';read' : ''} ${query}`;
    const cached = this.#pages.get(key);
    // A page that embeds shows other stores too: kept while their revisions hold as well.
    if (cached !== undefined && (cached.depends === '' || cached.depends === this.#revisions(cached.embed))) return cached;
    const params = new URLSearchParams(query);
    const request = parsePageRequest(params.get('page') ?? undefined, params.get('limit') ?? undefined);
    // The raw query: a comma sent as %2C is part of its value, a literal one separates alternatives.
    const collection = parseCollectionQuery(query, this.#declared);
    this.checkEmbed(collection.embed);
    const depends = this.#revisions(collection.embed);
    const offset = Math.max(0, (request.page - 1) * request.limit);
    const started = performance.now();
    let result: MaybePromise<QueryResult>;
    try {
      const facets = collection.facets.length === 0 ? {} : { facets: collection.facets.map((f) => f.path) };
      result = this.store.query({ filters: collection.filters, sort: collection.sort, search: collection.search, offset, limit: request.limit, deadline: started + this.#budgetMs, ...facets });
    } catch (error) {
      throw this.#timeout(error);
    }
    const finish = (answer: QueryResult): MaybePromise<Page> =>
      mapMaybe(this.#build(answer, collection, request, mediaType, depends, cursor, writable), (page) => {
        // An embedding page built again replaces the one its related stores have moved past.
        if (page.etag !== undefined && answer.revision === this.#pagesRevision && cursor === this.#pagesCursor) this.#pages.set(key, page, page.body.length + key.length);
        return page;
      });
    return result instanceof Promise ? result.then(finish, (error: unknown) => Promise.reject(this.#timeout(error))) : finish(result);
  }

  /** The revisions of the stores that `embed` reads ('' for none). */
  #revisions(rels: readonly string[]): string {
    return rels.length === 0 || this.#related === undefined ? '' : this.#related.revisions(rels);
  }

  #timeout(error: unknown): unknown {
    // Every index is read by a query under way: one goes once they are answered (index-builds.ts).
    if (error instanceof IndexLimitError) return serviceUnavailable(`The query names a field with no index yet, and ${error.message}: try again shortly`, QUERY_RETRY_AFTER_SECONDS);
    if (!(error instanceof QueryTimeoutError)) return error;
    // RFC 9110 §10.2.3: the index the query started keeps building; a retry soon may succeed.
    return serviceUnavailable(`The query could not be answered within ${this.#budgetMs} ms; narrow it with a filter on an indexed field, or try again shortly`, QUERY_RETRY_AFTER_SECONDS);
  }

  /** A write's conditions against the entity's current version (any epoch's tag of it names it: conditional.ts). */
  #checkConditions(current: StoredEntity, { ifMatch, ifNoneMatch, ifUnmodifiedSince }: WriteConditions): void {
    // Most writes carry no condition: then the current version (a hash a store may compute) is not needed.
    if (ifMatch === undefined && ifNoneMatch === undefined && ifUnmodifiedSince === undefined) return;
    // RFC 9110 §13.2.2's order: If-Match, else If-Unmodified-Since; then If-None-Match.
    if (ifUnmodifiedSince !== undefined) checkIfUnmodifiedSince(ifUnmodifiedSince, this.lastModified(current));
    if (ifMatch === undefined && ifNoneMatch === undefined) return;
    const tags = this.versionTags(current.version);
    checkIfMatch(ifMatch, tags);
    checkIfNoneMatch(ifNoneMatch, tags);
  }

  #build(result: QueryResult, collection: CollectionQuery, request: PageRequest, mediaType: string, depends: string, cursor: string | undefined, writable: boolean): MaybePromise<Page> {
    const range = pageRange(result.total, request);
    const links = collectionLinks(this.#path, range, collection.carried);
    const rels = collection.embed;
    const memo = new Map<string, string | undefined>();
    const related = this.#related;
    const selfQuery = embedQuery(rels, '?');
    const entities =
      rels.length === 0 || related === undefined
        ? result.entities.map((e) => this.json(e))
        : allMaybe(result.entities.map((e) => mapMaybe(related.embedded(e, rels, memo), (embedded) => this.json(e, embedded, selfQuery))));
    return mapMaybe(entities, (list) => {
      const facets = collection.facets.length === 0 ? '' : facetsJson(collection, result.facets ?? [], (carried) => pageHref(this.#path, 1, range.limit, carried));
      const changes = cursor === undefined ? undefined : { href: collectionChangesHref(this.#basePath, cursor, this.name) };
      const all = changes === undefined ? links : { ...links, changes };
      const hal = collectionJson(this.name, range, all, list, facets);
      const body = mediaType === HAL_FORMS ? withTemplates(hal, writable ? this.#collectionTemplates : NO_TEMPLATES) : Buffer.from(hal);
      // The URL fixes the page and its query; the revisions fix the state of every store it shows,
      // and the cursor the page's `changes` link (it may move on while the revision holds).
      const stable = result.revision !== undefined && this.#revisions(rels) === depends;
      const epoch = depends === '' ? this.#epochs.own : this.#epochs.embedding;
      const etag = stable ? variantTag(entityTag(`c.${result.revision}${cursor === undefined ? '' : `.${cursor}`}${depends === '' ? '' : `~${depends}`}`, mediaType, HAL_JSON, epoch), mediaType, writable) : undefined;
      // The same links as the body's, `changes` included (RFC 8288; docs/conventions.md §2).
      return { body, link: linkHeader(all), etag, depends, embed: rels, ok: undefined };
    });
  }
}
