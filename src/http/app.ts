import type { IncomingMessage, ServerResponse } from 'node:http';
import { createAuthenticator } from './auth.js';
import { bodyLimits, ClientAbortedError, withEntityLimits } from './body.js';
import { checkIfMatch, notModified, versionTags } from '../conventions/conditional.js';
import { indexDocument } from '../conventions/hal.js';
import { randomId } from '../conventions/id.js';
import { HAL_JSON, JSON_TYPE, MERGE_PATCH_JSON } from './negotiation.js';
import {
  badRequest,
  HttpProblem,
  internalError,
  methodNotAllowed,
  notFound,
  serviceUnavailable,
} from '../conventions/problem.js';
import { jsonReply, problemReply, send, type Reply } from './reply.js';
import { accepted, normaliseBasePath, originForm, readJsonBody, repeatsHost, routeSegments } from './request.js';
import { Resource, type Page, type ResourceOptions, type WriteConditions } from './resource.js';
import { createRouter, type Params } from './router.js';
import { StoreWriteError, type StoredEntity } from '../store/store.js';

export type { ResourceOptions } from './resource.js';

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
  /** How long a collection query may run before it ends in a 503 problem (contract §9; default 5 s). */
  readonly queryBudgetMs?: number;
  /** Largest accepted request body in bytes (contract §5; default 1 MiB). */
  readonly maxBodyBytes?: number;
  /** Most values a request body may hold (contract §9; default 2,500): more is a 413 before parsing. */
  readonly maxBodyValues?: number;
  /** Most members of any one object in a request body (default 1,000): more is a 413 before parsing. */
  readonly maxBodyMembers?: number;
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

interface Context {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly params: Params;
  readonly query: string;
}

type RouteHandler = (context: Context) => Reply | Promise<Reply>;

const HEALTH_PATHS: ReadonlySet<string> = new Set(['healthz', 'readyz']);
const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Contract §5: PUT and POST take JSON; PATCH also takes a merge patch (RFC 7396). */
const JSON_BODY_TYPES: readonly string[] = [JSON_TYPE];
const PATCH_BODY_TYPES: readonly string[] = [JSON_TYPE, MERGE_PATCH_JSON];

/** Fetch standard, CORS protocol: what a browser may send and read (contract §5). */
const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Accept, If-Match, If-None-Match';
const CORS_EXPOSE_HEADERS = 'Location, ETag, Link';
const CORS_MAX_AGE_SECONDS = '600';

/** Longest `Link` header sent: nginx's default proxy buffer is 4 KiB for all of them together. */
const MAX_LINK_HEADER = 2048;

const unixSeconds = (): number => Math.floor(Date.now() / 1000);
/** Builds the request listener for a set of resources. Everything it uses comes from `options`. */
export function createHandler(options: HandlerOptions): Handler {
  const basePath = normaliseBasePath(options.basePath ?? '');
  const maxBody = bodyLimits(options);
  const now = options.now ?? unixSeconds;
  const newId = options.newId ?? randomId;
  const auth = createAuthenticator(options.tokens ?? []);
  const resources = new Map(options.resources.map((r) => [r.name, new Resource(withEntityLimits(r, maxBody), basePath, options.queryBudgetMs)]));
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
    const page = resourceOf(params).page(query, mediaType);
    return page instanceof Promise ? page.then((p) => pageReply(req, p, mediaType)) : pageReply(req, page, mediaType);
  });

  router.add('POST', '/:name', async ({ req, res, params }) => {
    const resource = resourceOf(params);
    const mediaType = accepted(req);
    const body = await readJsonBody(req, res, JSON_BODY_TYPES, maxBody);
    const entity = await resource.create(body, now(), newId);
    return entityReply(201, mediaType, resource, entity, { location: resource.href(entity.id) });
  });

  router.add('GET', '/:name/:id', ({ req, params }) => {
    const mediaType = accepted(req);
    const resource = resourceOf(params);
    const entity = resource.entity(params['id'] ?? '');
    return entity instanceof Promise ? entity.then((e) => entityRead(req, mediaType, resource, e)) : entityRead(req, mediaType, resource, entity);
  });

  router.add('PUT', '/:name/:id', async ({ req, res, params }) => {
    const resource = resourceOf(params);
    const mediaType = accepted(req);
    const body = await readJsonBody(req, res, JSON_BODY_TYPES, maxBody);
    const entity = await resource.replace(params['id'] ?? '', body, now(), writeConditions(req));
    return entityReply(200, mediaType, resource, entity);
  });

  router.add('PATCH', '/:name/:id', async ({ req, res, params }) => {
    const resource = resourceOf(params);
    const mediaType = accepted(req);
    const body = await readJsonBody(req, res, PATCH_BODY_TYPES, maxBody);
    const entity = await resource.patch(params['id'] ?? '', body, now(), writeConditions(req));
    return entityReply(200, mediaType, resource, entity);
  });

  router.add('DELETE', '/:name/:id', async ({ req, params }) => {
    await resourceOf(params).remove(params['id'] ?? '', writeConditions(req));
    return { status: 204 };
  });

  const dispatch = (req: IncomingMessage, res: ServerResponse): Reply | Promise<Reply> => {
    const method = req.method ?? 'GET';
    if (repeatsHost(req.rawHeaders)) throw badRequest('The request has more than one Host header');
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400.
    if (req.headers.host === undefined && req.httpVersionMinor >= 1) throw badRequest('The request has no Host header');
    const url = originForm(req.url ?? '/');
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    const segments = routeSegments(path, basePath);
    const query = mark === -1 ? '' : url.slice(mark + 1);
    const nothingHere = (): HttpProblem => notFound(`There is nothing at ${JSON.stringify(path)}`);
    const isHealth = segments.length === 1 && HEALTH_PATHS.has(segments[0] ?? '');
    if (cors && method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      // A CORS preflight carries no credentials (Fetch standard §3.2.2), so it is answered before authentication.
      const match = router.match('OPTIONS', segments);
      if (!match) throw nothingHere();
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
    if (!match) throw nothingHere();
    if (match.params['name'] !== undefined) resourceOf(match.params);
    if (method === 'OPTIONS') return { status: 204, headers: { allow: match.allow.join(', ') } };
    if (!match.handler) throw methodNotAllowed(method, match.allow);
    return match.handler({ req, res, params: match.params, query });
  };

  const fail = (error: unknown): Reply => {
    if (error instanceof HttpProblem) return problemReply(error);
    // A client that left has no one to answer; that is no failure of the server.
    if (error instanceof ClientAbortedError) return { status: 400 };
    options.errorLog?.(error);
    if (error instanceof StoreWriteError) return problemReply(serviceUnavailable('The change could not be saved; it was not applied. Try again later'));
    return problemReply(internalError());
  };

  return (req, res) => {
    const started = performance.now();
    const extra = corsHeaders(req.headers.origin);
    const log = options.accessLog;
    // A response that cannot be written (a header Node refuses) ends this exchange, not the process.
    const unwritable = (error: unknown): void => {
      options.errorLog?.(error);
      res.destroy();
    };
    const finish = (reply: Reply): void => {
      let bytes = 0;
      try {
        const sent = send(req, res, reply, extra);
        if (typeof sent === 'number') bytes = sent;
        else sent.then((n) => (bytes = n), unwritable);
      } catch (error) {
        unwritable(error);
        return;
      }
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
      reply = dispatch(req, res);
    } catch (error) {
      reply = fail(error);
    }
    if (reply instanceof Promise) reply.then(finish, (error: unknown) => finish(fail(error)));
    else finish(reply);
  };
}

/** The conditions of a write (RFC 9110 §13.1.1, §13.1.2), checked by the resource inside the store's write order. */
function writeConditions(req: IncomingMessage): WriteConditions {
  return { ifMatch: req.headers['if-match'], ifNoneMatch: req.headers['if-none-match'] };
}

/** A collection page, or 304 when the client's copy is current; a long `Link` is left to the body. */
function pageReply(req: IncomingMessage, page: Page, mediaType: string): Reply {
  const headers: Record<string, string> = {};
  if (page.etag !== undefined) {
    headers['etag'] = page.etag;
    checkIfMatch(req.headers['if-match'], [page.etag]);
  } else if (req.headers['if-match'] !== undefined) {
    // The page spans writes: it matches no tag a client can hold.
    checkIfMatch(req.headers['if-match'], []);
  }
  // A long filter makes five long links: past a size proxies take, the body alone carries them.
  if (page.link.length <= MAX_LINK_HEADER) headers['link'] = page.link;
  if (page.etag !== undefined && notModified(req.headers['if-none-match'], page.etag)) return { status: 304, headers: { ...headers, vary: 'Accept' } };
  return jsonReply(200, mediaType, page.body, headers);
}

/** GET of one entity, with its tag and conditions. */
function entityRead(req: IncomingMessage, mediaType: string, resource: Resource, entity: StoredEntity): Reply {
  const { body, version } = resource.representation(entity);
  const ifMatch = req.headers['if-match'];
  if (ifMatch !== undefined) checkIfMatch(ifMatch, versionTags(version, HAL_JSON));
  const etag = resource.etag(version, mediaType);
  if (notModified(req.headers['if-none-match'], etag)) return { status: 304, headers: { etag, vary: 'Accept' } };
  return jsonReply(200, mediaType, body, { etag });
}

/** An entity with its tag; `extra` adds headers such as `Location`. */
function entityReply(status: number, mediaType: string, resource: Resource, entity: StoredEntity, extra: Readonly<Record<string, string>> = {}): Reply {
  const { body, version } = resource.representation(entity);
  return jsonReply(status, mediaType, body, { etag: resource.etag(version, mediaType), ...extra });
}
