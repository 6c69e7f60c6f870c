import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createAuthenticator } from './auth.js';
import { DEFAULT_MAX_BODY_BYTES, parseJsonObject, readBody, type JsonObject } from './body.js';
import { clientFields, createdRecord, mergePatch, replacedRecord, type ClientFields } from './entity.js';
import { carriedQuery, collectionJson, collectionLinks, entityHref, entityJson, indexDocument, linkHeader } from './hal.js';
import { JSON_TYPE, MERGE_PATCH_JSON, isAcceptedContentType, negotiate, OFFERED_TYPES } from './negotiation.js';
import { pageRange, parsePageRequest } from './pagination.js';
import {
  badRequest,
  HttpProblem,
  internalError,
  methodNotAllowed,
  notAcceptable,
  notFound,
  PROBLEM_MEDIA_TYPE,
  serviceUnavailable,
  unsupportedMediaType,
  validationFailed,
} from './problem.js';
import { matchesFilters, parseCollectionQuery, sortComparator } from './query.js';
import { createRouter, splitPath, type Params } from './router.js';
import type { Validator } from './schema.js';
import { StoreConflictError, StoreWriteError, type Store, type StoredEntity } from './store/store.js';

/** One resource served by the handler. */
export interface ResourceOptions {
  /** Collection name, already checked against the naming rule (contract §1). */
  readonly name: string;
  readonly store: Store;
  /** Checks the client's fields of a new or changed entity; see `compileSchema`. */
  readonly validate?: Validator;
}

/** One line of the access log (contract §9). Never holds a token. */
export interface AccessLogEntry {
  readonly time: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly ms: number;
  readonly bytes: number;
}

export interface HandlerOptions {
  readonly resources: readonly ResourceOptions[];
  /** Bearer tokens, `read:`-prefixed for read-only ones (contract §6). None: no authentication. */
  readonly tokens?: readonly string[];
  /** Public path prefix the server is mounted under: links carry it, requests may or may not. */
  readonly basePath?: string;
  /** Largest accepted request body in bytes (contract §5; default 1 MiB). */
  readonly maxBodyBytes?: number;
  /** Called once per finished request. */
  readonly accessLog?: (entry: AccessLogEntry) => void;
  /** Called with every unexpected error (the 500s and failed writes), for the server's log. */
  readonly errorLog?: (error: unknown) => void;
  /** Extra readiness condition for `/readyz`, e.g. false while shutting down. */
  readonly ready?: () => boolean;
  /** Origin allowed to make cross-origin requests (`*` for any); no CORS headers when unset (contract §5). */
  readonly corsOrigin?: string;
  /** Current time in Unix seconds (tests pin it). */
  readonly now?: () => number;
  /** New entity ids (tests pin them). */
  readonly newId?: () => string;
}

/** A `node:http` request listener. */
export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** What a route handler answers; one writer sends it. */
interface Reply {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

interface Context {
  readonly req: IncomingMessage;
  readonly params: Params;
  readonly query: string;
}

type RouteHandler = (context: Context) => Reply | Promise<Reply>;

/** The version prefix every route is also served under (seed 9). */
export const VERSION_PREFIX = 'v1';
const HEALTH_PATHS: ReadonlySet<string> = new Set(['healthz', 'readyz']);
const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Contract §5: PUT and POST take JSON; PATCH also takes a merge patch (RFC 7396). */
const JSON_BODY_TYPES: readonly string[] = [JSON_TYPE];
const PATCH_BODY_TYPES: readonly string[] = [JSON_TYPE, MERGE_PATCH_JSON];

/** Fetch standard, CORS protocol: what a browser may send and read (contract §5). */
const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Accept, If-Match, If-None-Match';
const CORS_EXPOSE_HEADERS = 'Location, ETag, Link';
const CORS_MAX_AGE_SECONDS = '600';

const unixSeconds = (): number => Math.floor(Date.now() / 1000);
/** 16 URL-safe characters carrying 96 random bits. */
const randomId = (): string => randomBytes(12).toString('base64url');

/** Builds the request listener for a set of resources. Everything it uses comes from `options`. */
export function createHandler(options: HandlerOptions): Handler {
  const basePath = normaliseBasePath(options.basePath ?? '');
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const now = options.now ?? unixSeconds;
  const newId = options.newId ?? randomId;
  const auth = createAuthenticator(options.tokens ?? []);
  const resources = new Map(options.resources.map((r) => [r.name, new Resource(r, basePath)]));
  const indexBody = JSON.stringify(indexDocument(basePath, [...resources.keys()]));
  const router = createRouter<RouteHandler>();
  const cors = options.corsOrigin;
  /** CORS response headers for a request from `origin`, or none when CORS is off or the origin is not allowed. */
  const corsHeaders = (origin: string | undefined): Record<string, string> | undefined => {
    if (cors === undefined || origin === undefined || (cors !== '*' && cors !== origin)) return undefined;
    return cors === '*'
      ? { 'access-control-allow-origin': '*', 'access-control-expose-headers': CORS_EXPOSE_HEADERS }
      : { 'access-control-allow-origin': origin, 'access-control-expose-headers': CORS_EXPOSE_HEADERS, vary: 'Origin' };
  };

  const resourceOf = (params: Params): Resource => {
    const resource = resources.get(params['name'] ?? '');
    if (!resource) throw notFound(`There is no resource named ${JSON.stringify(params['name'])}`);
    return resource;
  };

  const isReady = (): boolean => (options.ready?.() ?? true) && [...resources.values()].every((r) => r.store.ready);
  const health = (ok: boolean): Reply =>
    ok ? jsonReply(200, JSON_TYPE, '{"status":"ok"}') : jsonReply(503, JSON_TYPE, '{"status":"unavailable"}');
  router.add('GET', '/healthz', () => health(true));
  router.add('GET', '/readyz', () => health(isReady()));

  router.add('GET', '/', ({ req }) => jsonReply(200, accepted(req), indexBody));

  router.add('GET', '/:name', ({ req, params, query }) => {
    const mediaType = accepted(req);
    const { body, links } = resourceOf(params).page(query);
    return { status: 200, headers: { 'content-type': mediaType, vary: 'Accept', link: linkHeader(links) }, body };
  });

  router.add('POST', '/:name', async ({ req, params }) => {
    const resource = resourceOf(params);
    const mediaType = accepted(req);
    const fields = clientFields(await readJsonBody(req, JSON_BODY_TYPES, maxBody));
    resource.check(fields);
    const time = now();
    const entity = await createWithFreshId(resource.store, () => createdRecord(newId(), time, fields));
    const href = resource.href(entity.id);
    return { status: 201, headers: { 'content-type': mediaType, vary: 'Accept', location: href }, body: resource.json(entity) };
  });

  router.add('GET', '/:name/:id', ({ req, params }) => {
    const mediaType = accepted(req);
    const resource = resourceOf(params);
    return entityReply(mediaType, resource, resource.entity(params['id'] ?? ''));
  });

  router.add('PUT', '/:name/:id', async ({ req, params }) => {
    const resource = resourceOf(params);
    const mediaType = accepted(req);
    const fields = clientFields(await readJsonBody(req, JSON_BODY_TYPES, maxBody));
    resource.check(fields);
    const time = now();
    const id = params['id'] ?? '';
    const entity = await resource.store.update(id, (current) => replacedRecord(current.record, time, fields));
    return entityReply(mediaType, resource, entity ?? resource.missing(id));
  });

  router.add('PATCH', '/:name/:id', async ({ req, params }) => {
    const resource = resourceOf(params);
    const mediaType = accepted(req);
    const patch = clientFields(await readJsonBody(req, PATCH_BODY_TYPES, maxBody));
    const time = now();
    const id = params['id'] ?? '';
    const entity = await resource.store.update(id, (current) => {
      // The patch applies to the latest state, inside the store's write order, so it never loses an update.
      const merged = mergePatch(clientFields(current.record), patch) as ClientFields;
      resource.check(merged);
      return replacedRecord(current.record, time, merged);
    });
    return entityReply(mediaType, resource, entity ?? resource.missing(id));
  });

  router.add('DELETE', '/:name/:id', async ({ params }) => {
    const resource = resourceOf(params);
    const id = params['id'] ?? '';
    if (!(await resource.store.delete(id))) resource.missing(id);
    return { status: 204 };
  });

  const dispatch = (req: IncomingMessage): Reply | Promise<Reply> => {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const mark = url.indexOf('?');
    const segments = routeSegments(mark === -1 ? url : url.slice(0, mark), basePath);
    const query = mark === -1 ? '' : url.slice(mark + 1);
    const isHealth = segments.length === 1 && HEALTH_PATHS.has(segments[0] ?? '');
    if (cors && method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      // A CORS preflight carries no credentials (Fetch standard §3.2.2), so it is answered before authentication.
      const match = router.match('OPTIONS', segments);
      if (!match) throw notFound(`There is nothing at ${JSON.stringify(url.slice(0, mark === -1 ? undefined : mark))}`);
      const methods = match.allow.join(', ');
      return {
        status: 204,
        headers: {
          allow: methods,
          'access-control-allow-methods': methods,
          'access-control-allow-headers': CORS_ALLOW_HEADERS,
          'access-control-max-age': CORS_MAX_AGE_SECONDS,
        },
      };
    }
    // Authenticate before routing, so that a client without a token learns nothing of what exists.
    if (!isHealth) auth.check(req.headers.authorization, WRITE_METHODS.has(method));
    const match = router.match(method, segments);
    if (!match) throw notFound(`There is nothing at ${JSON.stringify(url.slice(0, mark === -1 ? undefined : mark))}`);
    if (match.params['name'] !== undefined) resourceOf(match.params);
    if (method === 'OPTIONS') return { status: 204, headers: { allow: match.allow.join(', ') } };
    if (!match.handler) throw methodNotAllowed(method, match.allow);
    return match.handler({ req, params: match.params, query });
  };

  const fail = (error: unknown): Reply => {
    if (error instanceof HttpProblem) return problemReply(error);
    options.errorLog?.(error);
    if (error instanceof StoreWriteError) return problemReply(serviceUnavailable('The change could not be saved; it was not applied. Try again later'));
    return problemReply(internalError());
  };

  return (req, res) => {
    const started = performance.now();
    const extra = corsHeaders(req.headers.origin);
    const log = options.accessLog;
    const finish = (reply: Reply): void => {
      const bytes = send(req, res, reply, extra);
      if (log) {
        res.once('finish', () =>
          log({
            time: new Date().toISOString(),
            method: req.method ?? '',
            path: req.url ?? '',
            status: res.statusCode,
            ms: Math.round((performance.now() - started) * 1000) / 1000,
            bytes,
          }),
        );
      }
    };
    let reply: Reply | Promise<Reply>;
    try {
      reply = dispatch(req);
    } catch (error) {
      reply = fail(error);
    }
    if (reply instanceof Promise) reply.then(finish, (error: unknown) => finish(fail(error)));
    else finish(reply);
  };
}

/** One resource's representations, built once per entity version and kept while it is current. */
class Resource {
  readonly name: string;
  readonly store: Store;
  readonly #validate: Validator | undefined;
  readonly #path: string;
  readonly #json = new WeakMap<StoredEntity, string>();

  constructor(options: ResourceOptions, basePath: string) {
    this.name = options.name;
    this.store = options.store;
    this.#validate = options.validate;
    this.#path = `${basePath}/${options.name}`;
  }

  href(id: string): string {
    return entityHref(this.#path, id);
  }

  /** The entity's HAL text, spliced from its stored text once per version. */
  json(entity: StoredEntity): string {
    let text = this.#json.get(entity);
    if (text === undefined) {
      text = entityJson(entity.json, this.href(entity.id));
      this.#json.set(entity, text);
    }
    return text;
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

  /** A collection page (seed 2.2, contract §2, §3, §3a) and its links. */
  page(query: string): { body: string; links: ReturnType<typeof collectionLinks> } {
    const params = new URLSearchParams(query);
    const request = parsePageRequest(params.get('page') ?? undefined, params.get('limit') ?? undefined);
    const { filters, sort, sortKeys } = parseCollectionQuery(params);
    let entities: readonly StoredEntity[];
    let range;
    if (filters.size === 0 && sortKeys.length === 0) {
      // The common case reads one page straight from the store's creation order.
      range = pageRange(this.store.size, request);
      entities = this.store.page(range.offset, range.limit);
    } else {
      const selected: StoredEntity[] = [];
      for (const entity of this.store.values()) if (matchesFilters(entity.record, filters)) selected.push(entity);
      if (sortKeys.length > 0) {
        const compare = sortComparator(sortKeys);
        selected.sort((a, b) => compare(a.record, b.record));
      }
      range = pageRange(selected.length, request);
      entities = selected.slice(range.offset, range.offset + range.limit);
    }
    const links = collectionLinks(this.#path, range, carriedQuery(sort, filters));
    return { body: collectionJson(this.name, range, links, entities.map((e) => this.json(e))), links };
  }
}

/** `/api/` → `/api`; '' and `/` → ''. */
function normaliseBasePath(basePath: string): string {
  const trimmed = basePath.replace(/\/+$/, '');
  if (trimmed === '') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/**
 * Decoded path segments below the optional base path and `/v1` prefix: `/v1/products/a%20b` →
 * ['products', 'a b']. Malformed percent-encoding is a 400 problem.
 */
function routeSegments(path: string, basePath: string): string[] {
  let rest = path;
  if (basePath !== '' && (rest === basePath || rest.startsWith(`${basePath}/`))) rest = rest.slice(basePath.length) || '/';
  let segments = splitPath(rest);
  if (segments[0] === VERSION_PREFIX) segments = segments.slice(1);
  if (segments.length > 0 && segments[segments.length - 1] === '' && segments.length === 1) segments = [];
  try {
    return segments.map(decodeURIComponent);
  } catch {
    throw badRequest('The request path has malformed percent-encoding');
  }
}

/** The response media type for the request's `Accept` (contract §5), or a 406 problem. */
function accepted(req: IncomingMessage): string {
  const mediaType = negotiate(req.headers.accept);
  if (mediaType === undefined) throw notAcceptable(OFFERED_TYPES);
  return mediaType;
}

/** Checks `Content-Type` before reading anything (seed 7.2 rule 2), then reads a JSON object. */
async function readJsonBody(req: IncomingMessage, types: readonly string[], maxBody: number): Promise<JsonObject> {
  if (!isAcceptedContentType(req.headers['content-type'], types)) throw unsupportedMediaType(types);
  return parseJsonObject(await readBody(req, maxBody));
}

/** Creates with a fresh id; 96 random bits make a collision all but impossible, but never fatal. */
async function createWithFreshId(store: Store, record: () => ReturnType<typeof createdRecord>): Promise<StoredEntity> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.create(record());
    } catch (error) {
      if (!(error instanceof StoreConflictError) || attempt >= 3) throw error;
    }
  }
}

function jsonReply(status: number, mediaType: string, body: string): Reply {
  return { status, headers: { 'content-type': mediaType, vary: 'Accept' }, body };
}

function entityReply(mediaType: string, resource: Resource, entity: StoredEntity): Reply {
  return jsonReply(200, mediaType, resource.json(entity));
}

function problemReply(problem: HttpProblem): Reply {
  const headers: Record<string, string> = { 'content-type': PROBLEM_MEDIA_TYPE, ...problem.headers };
  // An oversized body may still be arriving: close the connection rather than read it.
  if (problem.status === 413) headers['connection'] = 'close';
  return { status: problem.status, headers, body: JSON.stringify(problem) };
}

/** The one writer of responses; returns the body's size in bytes. */
function send(req: IncomingMessage, res: ServerResponse, reply: Reply, extra?: Readonly<Record<string, string>>): number {
  if (res.headersSent) {
    res.destroy();
    return 0;
  }
  const headers: Record<string, string | number> = { ...reply.headers };
  if (extra) {
    for (const [name, value] of Object.entries(extra)) {
      // Vary lists every header the response depends on (RFC 9110 §12.5.5).
      headers[name] = name === 'vary' && headers['vary'] !== undefined ? `${headers['vary']}, ${value}` : value;
    }
  }
  const bytes = reply.body === undefined ? 0 : Buffer.byteLength(reply.body);
  if (reply.body !== undefined) headers['content-length'] = bytes;
  res.writeHead(reply.status, headers);
  // HEAD gets the headers a GET would get, and no body.
  res.end(req.method === 'HEAD' ? undefined : reply.body);
  return bytes;
}

