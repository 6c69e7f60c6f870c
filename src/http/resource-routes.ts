import type { IncomingMessage } from 'node:http';
import { checkIfMatch, notModified } from '../conventions/conditional.js';
import { checkIfUnmodifiedSince, httpDate, unmodifiedSince, unmodifiedSinceCondition } from '../conventions/last-modified.js';
import { CHANGES_PATH, streamEventType, type EventType } from '../conventions/changes.js';
import { wantsEventStream } from '../conventions/event-stream.js';
import { HttpProblem, notFound } from '../conventions/problem.js';
import { matches } from '../conventions/query.js';
import type { ChangeFeed } from '../store/changes/change-feed.js';
import { streamChanges } from './change-stream.js';
import { changeJson, LAST_EVENT_ID, lastEventId, startsAt } from './changes-routes.js';
import type { Streams } from './event-stream.js';
import type { ServerMetrics, QueryKind } from '../metrics/server-metrics.js';
import { embedOf } from '../conventions/relations.js';
import type { MaybePromise, StoreChange, StoredEntity } from '../store/store.js';
import type { BodyLimits } from './body.js';
import type { RouteHandler } from './context.js';
import { HAL_FORMS, HAL_JSON, JSON_TYPE, MERGE_PATCH_JSON } from './negotiation.js';
import { jsonReply, notModifiedReply, prepared, type Reply } from './reply.js';
import { accepted, readJsonBody, readJsonRequest, type JsonRequestBody } from './request.js';
import { mapMaybe } from './maybe-promise.js';
import { keyedWrite, requestKey } from './idempotent-write.js';
import { entityHeadersJson, type EntityAnswerHeaders } from './answer-headers.js';
import { ledgerTarget } from '../conventions/idempotency-key.js';
import { clientKey, permits, type Principal } from './auth.js';
import type { KeyedWrite } from '../store/idempotency.js';
import { NO_CONDITIONS, type EmbeddedRepresentation, type Page, type Resource, type WriteConditions } from './resource.js';
import type { Params, Router } from './router.js';

/** docs/conventions.md §5: PUT and POST take JSON; PATCH also takes a merge patch (RFC 7396). */
const JSON_BODY_TYPES: readonly string[] = [JSON_TYPE];
const PATCH_BODY_TYPES: readonly string[] = [JSON_TYPE, MERGE_PATCH_JSON];

/** Longest `Link` header sent: nginx's default proxy buffer is 4 KiB for all of them together. */
const MAX_LINK_HEADER = 2048;

/** Query parameters that are not filters (docs/queries.md). */
const NOT_FILTERS: ReadonlySet<string> = new Set(['page', 'limit', 'embed', 'facets']);

export interface ResourceRouteOptions {
  readonly resources: ReadonlyMap<string, Resource>;
  readonly maxBody: BodyLimits;
  readonly now: () => number;
  readonly newId: () => string;
  readonly metrics: ServerMetrics;
  readonly streams: Streams;
  /** The data set's change feed: collection URLs stream from it; none, and they cannot. */
  readonly feed: ChangeFeed | undefined;
  /**
   * The headers the boundary adds to a request without `Origin` (`Cors.headers(undefined)`: `Vary:
   * Origin` for one allowed origin): a reply made once is made with them, so that sent as it is
   * (reply.ts `send`, kept-replies.ts) it says what the full path would.
   */
  readonly originless?: Readonly<Record<string, string>> | undefined;
}

/**
 * Whether the principal may write the resource: its HAL-FORMS answers offer templates only then
 * (docs/forms.md §2). No principal: authentication is off, and every client may write.
 */
export function mayWrite(principal: Principal | undefined, resource: Resource): boolean {
  return principal === undefined || permits(principal, resource.name, 'write');
}

/**
 * Whether the principal may read a resource other than the one a route names: a delete's 409 says
 * only of those which entities link to the one kept (docs/relations.md §5).
 */
export function mayRead(principal: Principal | undefined, name: string): boolean {
  return principal === undefined || permits(principal, name, 'read');
}

/** The resource a route names, or a 404 problem. */
export function resourceOf(resources: ReadonlyMap<string, Resource>, params: Params): Resource {
  const resource = resources.get(params['name'] ?? '');
  if (!resource) throw notFound(`There is no resource named ${JSON.stringify(params['name'])}`);
  return resource;
}

/** What a collection query does, for the query-duration metric: the costliest part decides. */
export function queryKind(query: string): QueryKind {
  if (query === '') return 'plain';
  const params = new URLSearchParams(query);
  if (params.has('q')) return 'search';
  if (params.has('sort')) return 'sort';
  for (const name of params.keys()) if (!NOT_FILTERS.has(name)) return 'filter';
  return 'plain';
}

/** docs/conventions.md §4: the collection and entity routes, reads and writes. */
export function addResourceRoutes(router: Router<RouteHandler>, options: ResourceRouteOptions): void {
  const { resources, maxBody, now, newId, metrics, streams, feed, originless } = options;
  const prepare = (reply: Reply): Reply => prepared(reply, originless);
  const of = (params: Params): Resource => resourceOf(resources, params);
  /** Pages served before: the resource hands out the same object again when its cache answers. */
  const served = new WeakSet<Page>();
  /** The page-cache counters of each resource, looked up once. */
  const cacheCounters = new Map<string, { hit: { value: number }; miss: { value: number } }>();
  const countersOf = (name: string): { hit: { value: number }; miss: { value: number } } => {
    let counters = cacheCounters.get(name);
    if (counters === undefined) cacheCounters.set(name, (counters = { hit: metrics.pageCache.series(name, 'hit'), miss: metrics.pageCache.series(name, 'miss') }));
    return counters;
  };
  /** One function for every collection stream: each change's message is made once for all of them (change-stream.ts). */
  const streamJson = (change: StoreChange, type: EventType): string => changeJson(resources, change, type);

  router.add('GET', '/:name', ({ req, params, query, principal }) => {
    if (wantsEventStream(req.headers.accept)) return collectionStream(req, principal, of(params), query);
    const mediaType = accepted(req, true);
    const resource = of(params);
    const started = performance.now();
    const counted = (page: Page): Reply => {
      if (served.has(page)) countersOf(resource.name).hit.value++;
      else {
        served.add(page);
        countersOf(resource.name).miss.value++;
        metrics.queries.observe((performance.now() - started) / 1000, resource.name, queryKind(query));
      }
      return pageReply(req, page, mediaType, prepare);
    };
    const page = resource.page(query, mediaType, mediaType !== HAL_FORMS || mayWrite(principal, resource));
    return page instanceof Promise ? page.then(counted) : counted(page);
  });

  /**
   * A collection URL as an event stream: its filters and `q` select (the `removed` rule of
   * `streamEventType`); `page`, `limit`, `sort`, `embed` and `facets` are ignored. Only
   * `Last-Event-ID` gives the start (`since` is a filter like any other); without it, from now on.
   */
  const collectionStream = (req: IncomingMessage, principal: Principal | undefined, resource: Resource, query: string): MaybePromise<Reply> => {
    if (feed === undefined) throw new HttpProblem(406, 'This server keeps no change feed, so its collections cannot be streamed');
    const { filters, search } = resource.watchQuery(query);
    const lastId = lastEventId(req.headers[LAST_EVENT_ID]);
    const from = typeof lastId === 'string' ? lastId : feed.latest;
    const only = new Set([resource.name]);
    return mapMaybe(startsAt(feed, from, 'Last-Event-ID'), () =>
      streams.reply({}, (out) =>
        streamChanges(out, {
          feed,
          after: from,
          resources: only,
          select: (change) => streamEventType(change.type, change.entity !== undefined && matches(change.entity.record, filters, search)),
          json: streamJson,
        }),
        clientKey(req, principal),
        principal?.until,
      ),
    );
  };

  // The writes hang their steps off the body's promise, without an async frame per request.
  router.add('POST', '/:name', ({ req, res, params, principal }) => {
    const resource = of(params);
    const mediaType = accepted(req, true);
    // A malformed key is refused before the body is read (docs/conventions.md).
    const key = requestKey(req);
    const reply = (entity: StoredEntity): Reply => entityReply(201, mediaType, resource, entity, { location: resource.href(entity.id) });
    if (key === undefined) return readJsonBody(req, res, JSON_BODY_TYPES, maxBody).then((body) => resource.create(body, now(), newId, undefined, writeConditions(req)).then(reply));
    const answer = (entity: StoredEntity): Reply => answerReply(reply(entity), resource);
    return readJsonRequest(req, res, JSON_BODY_TYPES, maxBody).then((body) =>
      keyed({ req, principal, key, body, resource, reply: answer, id: '' }, (keyedWrite) => resource.create(body.value, now(), newId, keyedWrite, writeConditions(req))),
    );
  });

  router.add('GET', '/:name/:id', ({ req, params, query, principal }) => {
    if (wantsEventStream(req.headers.accept)) {
      const name = of(params).name;
      throw new HttpProblem(406, `An entity has no event stream; watch ${CHANGES_PATH}?resource=${name} and keep the events of this id`);
    }
    const mediaType = accepted(req, true);
    const resource = of(params);
    // docs/relations.md: `embed` is the one query parameter an entity takes.
    const embed = embedOf(query);
    resource.checkEmbed(embed);
    // Only a HAL-FORMS answer depends on it: the other media types skip the check.
    const writable = mediaType !== HAL_FORMS || mayWrite(principal, resource);
    const read = (entity: StoredEntity): MaybePromise<Reply> =>
      embed.length === 0
        ? entityRead(req, mediaType, resource, entity, writable, prepare)
        : mapMaybe(resource.embeddedRepresentation(entity, embed, mediaType, writable), (shown) => embeddedRead(req, mediaType, resource, entity, shown, writable));
    return mapMaybe(resource.entity(params['id'] ?? ''), read);
  });

  router.add('PUT', '/:name/:id', ({ req, res, params }) => {
    const resource = of(params);
    const mediaType = accepted(req, true);
    return readJsonBody(req, res, JSON_BODY_TYPES, maxBody).then((body) =>
      resource.replace(params['id'] ?? '', body, now(), writeConditions(req)).then((entity) => entityReply(200, mediaType, resource, entity)),
    );
  });

  router.add('PATCH', '/:name/:id', ({ req, res, params, principal }) => {
    const resource = of(params);
    const mediaType = accepted(req, true);
    const key = requestKey(req);
    const id = params['id'] ?? '';
    const reply = (entity: StoredEntity): Reply => entityReply(200, mediaType, resource, entity);
    if (key === undefined) return readJsonBody(req, res, PATCH_BODY_TYPES, maxBody).then((body) => resource.patch(id, body, now(), writeConditions(req)).then(reply));
    const answer = (entity: StoredEntity): Reply => answerReply(reply(entity), resource);
    return readJsonRequest(req, res, PATCH_BODY_TYPES, maxBody).then((body) =>
      keyed({ req, principal, key, body, resource, reply: answer, id }, (keyedWrite) => resource.patch(id, body.value, now(), writeConditions(req), keyedWrite)),
    );
  });

  router.add('DELETE', '/:name/:id', async ({ req, params, principal }) => {
    await of(params).remove(params['id'] ?? '', writeConditions(req), (name) => mayRead(principal, name));
    return { status: 204 };
  });
}

/** A POST's or PATCH's request with an `Idempotency-Key`, as far as its keyed write needs it. */
interface KeyedWriteRequest {
  readonly req: IncomingMessage;
  readonly principal: Principal | undefined;
  /** The `Idempotency-Key` (`requestKey`). */
  readonly key: string;
  readonly body: JsonRequestBody;
  readonly resource: Resource;
  readonly reply: (entity: StoredEntity) => Reply;
  /** The id written ('' for a POST), for the 404 of a keyed write that found none. */
  readonly id: string;
}

/**
 * Runs `run` through the idempotency ledger, under the resource's own path (`ledgerTarget`: the
 * collection's for a POST, the entity's for a PATCH, without the base path): `/api/v1/items`,
 * `/api/items` and `/items`, or an id spelled with escapes and without, are one target, so a retry
 * sent to any of them replays, and so does one after a restart with another `--base-path`.
 */
function keyed({ req, principal, key, body, resource, reply, id }: KeyedWriteRequest, run: (keyed: KeyedWrite) => Promise<StoredEntity>): Promise<Reply> {
  const target = ledgerTarget(resource.name, id === '' ? undefined : id);
  return keyedWrite({ req, principal, key, target, body: body.value, bytes: body.bytes, ledger: resource.store.idempotency, write: run, reply, missing: () => resource.missing(id) });
}

/** The conditions of a write (RFC 9110 §13.1.1, §13.1.2), checked by the resource: an entity's inside the store's write order. */
function writeConditions(req: IncomingMessage): WriteConditions {
  const ifMatch = req.headers['if-match'];
  const ifNoneMatch = req.headers['if-none-match'];
  // RFC 9110 §13.1.4: ignored beside If-Match, and when it is not an HTTP-date.
  const ifUnmodifiedSince = unmodifiedSinceCondition(ifMatch, req.headers['if-unmodified-since']);
  // The usual write names none: one shared object, no allocation.
  return ifMatch === undefined && ifNoneMatch === undefined && ifUnmodifiedSince === undefined ? NO_CONDITIONS : { ifMatch, ifNoneMatch, ifUnmodifiedSince };
}

/**
 * A collection page, or 304 when the client's copy is current; a long `Link` is left to the body.
 * `prepare` makes the answer of a kept page, sent again as it is.
 */
function pageReply(req: IncomingMessage, page: Page, mediaType: string, prepare: (reply: Reply) => Reply): Reply {
  if (page.etag !== undefined) {
    checkIfMatch(req.headers['if-match'], [page.etag]);
  } else if (req.headers['if-match'] !== undefined) {
    // The page spans writes: it matches no tag a client can hold.
    checkIfMatch(req.headers['if-match'], []);
  }
  // A kept page (the only kind with a tag) is asked for again: its answer is made once.
  if (page.ok !== undefined) return notModified(req.headers['if-none-match'], page.etag!) ? pageNotModified(page) : page.ok;
  const headers: Record<string, string> = {};
  if (page.etag !== undefined) headers['etag'] = page.etag;
  // A long filter makes five long links: past a size proxies take, the body alone carries them.
  if (page.link.length <= MAX_LINK_HEADER) headers['link'] = page.link;
  if (page.etag !== undefined && notModified(req.headers['if-none-match'], page.etag)) return pageNotModified(page);
  const reply = jsonReply(200, mediaType, page.body, headers);
  if (page.etag === undefined) return reply;
  return (page.ok = prepare(reply));
}

/** The 304 of a page with a tag. */
function pageNotModified(page: Page): Reply {
  const headers: Record<string, string> = { etag: page.etag! };
  if (page.link.length <= MAX_LINK_HEADER) headers['link'] = page.link;
  return notModifiedReply({ ...headers, vary: 'Accept' }, page.body);
}

/** The entity's body in `mediaType`: its HAL bytes, with its templates for HAL-FORMS (none for a principal that may not write). */
function entityBody<B extends Buffer | string>(mediaType: string, resource: Resource, entity: StoredEntity, hal: B, writable = true): B | Buffer {
  return mediaType === HAL_FORMS ? resource.withTemplates(entity, hal, writable) : hal;
}

/**
 * GET of one entity, with its tag, its `Last-Modified` and their conditions (RFC 9110 §13.2.2's
 * order: `If-Match`, else `If-Unmodified-Since`; `If-None-Match`, else `If-Modified-Since`); the
 * unconditional answer is made once per version and media type (by `prepare`), its `Last-Modified`
 * with it, so that sending it again formats no date.
 */
function entityRead(req: IncomingMessage, mediaType: string, resource: Resource, entity: StoredEntity, writable: boolean, prepare: (reply: Reply) => Reply): Reply {
  const representation = resource.representation(entity);
  const { body: hal, version } = representation;
  const ifMatch = req.headers['if-match'];
  if (ifMatch !== undefined) checkIfMatch(ifMatch, resource.versionTags(version));
  else {
    const ifUnmodifiedSince = unmodifiedSinceCondition(ifMatch, req.headers['if-unmodified-since']);
    if (ifUnmodifiedSince !== undefined) checkIfUnmodifiedSince(ifUnmodifiedSince, resource.lastModified(entity));
  }
  const ifNoneMatch = req.headers['if-none-match'];
  // A HAL-FORMS answer has no date: its templates depend on the principal's scopes and the schema
  // as much as on the entity (docs/forms.md), and its tag alone says when they change.
  const dated = mediaType !== HAL_FORMS;
  const ifModifiedSince = ifNoneMatch === undefined && dated ? req.headers['if-modified-since'] : undefined;
  if (ifNoneMatch === undefined) {
    const kept = mediaType === HAL_JSON ? representation.okHal : mediaType === JSON_TYPE ? representation.okJson : undefined;
    // A date condition is the one thing read here per request: its answer, if not a 304, is the kept one.
    if (kept !== undefined && (ifModifiedSince === undefined || !unmodifiedSince(ifModifiedSince, resource.lastModified(entity), clockSecond()))) return kept;
  }
  const etag = resource.etag(version, mediaType, writable);
  const body = entityBody(mediaType, resource, entity, hal, writable);
  const now = clockSecond();
  const modified = dated ? resource.lastModified(entity, now) : undefined;
  const headers: Record<string, string> = modified === undefined ? { etag } : { etag, 'last-modified': httpDate(modified) };
  if (notModified(ifNoneMatch, etag) || (ifModifiedSince !== undefined && unmodifiedSince(ifModifiedSince, modified, now))) return notModifiedReply({ ...headers, vary: 'Accept' }, body);
  const reply: Reply = { status: 200, headers: { 'content-type': mediaType, vary: 'Accept', ...headers }, body };
  // A HAL-FORMS body is other bytes than the ones the entity cache weighs: made each time, not kept.
  if (mediaType === HAL_FORMS) return reply;
  const ok: Reply = { ...prepare(reply), current: resource.stillServes(entity) };
  if (mediaType === HAL_JSON) representation.okHal = ok;
  else if (mediaType === JSON_TYPE) representation.okJson = ok;
  return ok;
}

/** The clock's second, as the `Date` of a response reads it (`Resource.lastModified`). */
function clockSecond(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * GET of an entity with embeds: its tag names every state it shows, so a 304 never hides a
 * changed embedded entity; `If-Match` also takes the entity's own tags.
 */
function embeddedRead(req: IncomingMessage, mediaType: string, resource: Resource, entity: StoredEntity, { body: hal, tag }: EmbeddedRepresentation, writable: boolean): Reply {
  const body = entityBody(mediaType, resource, entity, hal, writable);
  const ifMatch = req.headers['if-match'];
  if (ifMatch !== undefined) checkIfMatch(ifMatch, [...resource.versionTags(entity.version), ...(tag === undefined ? [] : [tag])]);
  if (tag === undefined) return jsonReply(200, mediaType, body);
  if (notModified(req.headers['if-none-match'], tag)) return notModifiedReply({ etag: tag, vary: 'Accept' }, body);
  return jsonReply(200, mediaType, body, { etag: tag });
}

/**
 * The answer of a write: the entity it made, with its tag and (but in HAL-FORMS, as `entityRead`)
 * its `Last-Modified`; `extra` adds headers such as `Location`.
 */
function entityReply(status: number, mediaType: string, resource: Resource, entity: StoredEntity, extra: Readonly<Record<string, string>> = {}): Reply {
  const { body, version } = resource.written(entity);
  const modified = mediaType === HAL_FORMS ? undefined : resource.lastModified(entity);
  const dated = modified === undefined ? extra : { 'last-modified': httpDate(modified), ...extra };
  return jsonReply(status, mediaType, entityBody(mediaType, resource, entity, body), { etag: resource.etag(version, mediaType), ...dated });
}

/** `entityReply`'s reply as a keyed write records it: with its headers' JSON (answer-headers.ts). */
function answerReply(reply: Reply, resource: Resource): Reply {
  // `entityReply`'s headers are `jsonReply`'s, then the tag, the date and the location; it has a
  // body. A literal of one shape: a spread of the reply cost 2 µs as deployed (its clone went
  // the runtime's slow way).
  const headers = reply.headers!;
  return { status: reply.status, headers, body: reply.body!, headersJson: entityHeadersJson(headers as unknown as EntityAnswerHeaders, resource.path) };
}
