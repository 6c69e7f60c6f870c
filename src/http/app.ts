import type { IncomingMessage, ServerResponse } from 'node:http';
import { createTokenScrubber } from './access-log.js';
import { clientKey, type Authenticator, type Principal } from './auth.js';
import { bodyLimits } from './body.js';
import { createBoundary, type AccessLogEntry } from './boundary.js';
import type { Context, Exchange, RouteHandler } from './context.js';
import { createCors } from './cors.js';
import { checkHandlerOptions } from './handler-options.js';
import { addDiscoveryRoutes, BROWSER_PATTERN, SHELL_PATTERNS } from './discovery-routes.js';
import { indexDocument } from '../conventions/hal.js';
import { randomId } from '../conventions/id.js';
import { badRequest, HttpProblem, methodNotAllowed, notFound, tooManyRequests } from '../conventions/problem.js';
import type { JsonSchema } from '../representations/openapi.js';
import { ServerMetrics } from '../metrics/server-metrics.js';
import { admitsOnlyForms, HAL_FORMS, HAL_JSON, JSON_TYPE, MERGE_PATCH_JSON, prefersHtml } from './negotiation.js';
import { addOperationRoutes, OPEN_PATTERNS, UNLIMITED_PATTERNS } from './operation-routes.js';
import { createOperationalLog } from './operational-log.js';
import { serverAuthentication } from './credentials.js';
import type { JwtOptions } from './jwt-authenticator.js';
import { RateLimiter, waitText } from './rate-limit.js';
import { rateLimitFields } from './rate-limit-fields.js';
import { KeptReplies } from './kept-replies.js';
import { jsonReply, type Reply } from './reply.js';
import { accepted, normaliseBasePath, originForm, repeatedSingleton, routeSegments } from './request.js';
import { addResourceRoutes, resourceOf } from './resource-routes.js';
import { Resource, type ResourceOptions } from './resource.js';
import { Related } from './related.js';
import { relationGraph, type RelationGraph } from '../conventions/relations.js';
import { combinedEpoch, representationEpoch } from '../conventions/representation-epoch.js';
import type { LinkIntegrity } from '../store/integrity.js';
import { localLinkIntegrity } from '../store/local-integrity.js';
import type { LocalStore, Store, StoreChange } from '../store/store.js';
import type { ChangeFeed } from '../store/changes/change-feed.js';
import { LocalChangeLog } from '../store/changes/local-feed.js';
import { addChangesRoutes, changeJson } from './changes-routes.js';
import { Streams, type StreamSettings } from './event-stream.js';
import { checkScope, scopeAllows, type RelTarget, type ScopeRequest } from './route-scopes.js';
import { createRouter, type Match, type Params } from './router.js';

export type { ResourceOptions } from './resource.js';
export type { AccessLogEntry } from './boundary.js';

/** A resource as the handler is given it: its store and checks, and the schema they came from. */
export interface ServedResource extends ResourceOptions {
  /** The JSON schema of its client fields, described in `/openapi.json` and the browser's forms. */
  readonly schema?: JsonSchema;
}

export interface HandlerOptions {
  readonly resources: readonly ServedResource[];
  /** Static bearer tokens, `read:`-prefixed for read-only ones. */
  readonly tokens?: readonly string[];
  /** Bearer JWTs from an identity provider: the key set, issuer and audience. */
  readonly jwt?: JwtOptions;
  /**
   * An embedder's own way of recognising credentials, asked after the JWTs and the static tokens.
   * With no tokens, no `jwt` and no `authenticator`, there is no authentication.
   */
  readonly authenticator?: Authenticator;
  /** Public path prefix the server is mounted under: links carry it, requests may or may not. */
  readonly basePath?: string;
  /** How long a collection query may run before it ends in a 503 problem (docs/conventions.md §8; default 5 s). */
  readonly queryBudgetMs?: number;
  /** Largest accepted request body in bytes (docs/conventions.md §5; default 1 MiB). */
  readonly maxBodyBytes?: number;
  /** Most values a request body may hold (docs/conventions.md §8; default 2,500): more is a 413 before parsing. */
  readonly maxBodyValues?: number;
  /** Most members of any one object in a request body (default 1,000): more is a 413 before parsing. */
  readonly maxBodyMembers?: number;
  /** Called once per finished request. */
  readonly accessLog?: (entry: AccessLogEntry) => void;
  /** Called with every unexpected error (the 500s), for the server's log. */
  readonly errorLog?: (error: unknown) => void;
  /** One line per expected operational failure (a full disk), at most one per kind every 10 s. */
  readonly warn?: (message: string) => void;
  /** Extra readiness condition for `/readyz`, e.g. false while shutting down. */
  readonly ready?: () => boolean;
  /** Origin allowed to make cross-origin requests (`*` for any); no CORS headers when unset (docs/conventions.md §5). */
  readonly corsOrigin?: string;
  /** Requests per second per token (or per client address without one); off when unset (docs/conventions.md §4.1). */
  readonly rateLimit?: number;
  /** Requests allowed at once under the rate limit; default one second's worth. */
  readonly rateLimitBurst?: number;
  /** The server's metrics; the CLI shares them with the stores. Default: the handler's own. */
  readonly metrics?: ServerMetrics;
  /** Current time in Unix seconds (tests pin it). */
  readonly now?: () => number;
  /** Milliseconds on a monotonic clock, for the rate limits (tests drive it). Default `performance.now()`. */
  readonly clock?: () => number;
  /** New entity ids (tests pin them). */
  readonly newId?: () => string;
  /**
   * The relations among `resources` (`relationGraph` of their schemas), when the caller has them
   * already (the CLI reads them once, for the stores too). Default: computed here.
   */
  readonly relations?: RelationGraph;
  /**
   * What keeps links from dangling (docs/relations.md). Default: the in-process guard over these
   * stores; a store shared by several processes supplies one that decides inside its transactions.
   */
  readonly linkIntegrity?: (graph: RelationGraph, stores: ReadonlyMap<string, Store>) => LinkIntegrity;
  /**
   * The data set's change feed (`/changes`, the collections' `changes` links). Default: the change
   * log the stores share, when they do (a data directory's, memory stores made with one); none
   * otherwise, and `/changes` is a 404.
   */
  readonly changes?: ChangeFeed;
  /** Event streams: their number, heartbeat, buffer bound, and the signal that ends them (shutdown). */
  readonly streams?: StreamSettings;
  /**
   * Told once, when the handler is built, of the change feed and of each event's JSON exactly as
   * `/changes` shows it: how webhooks (webhooks/webhooks.ts) subscribe. Not called without a feed.
   */
  readonly onFeed?: (feed: ChangeFeed, eventJson: (change: StoreChange) => string) => void;
}

/** A `node:http` request listener. */
export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A request once routed, waiting for its authentication. */
interface Routed {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly exchange: Exchange;
  readonly method: string;
  readonly match: Match<RouteHandler> | undefined;
  readonly path: string;
  readonly query: string;
}

const NO_PARAMS: Params = {};

const unixSeconds = (): number => Math.floor(Date.now() / 1000);

/** Builds the request listener for a set of resources. Everything it uses comes from `options`. */
export function createHandler(options: HandlerOptions): Handler {
  checkHandlerOptions(options);
  const basePath = normaliseBasePath(options.basePath ?? '');
  const now = options.now ?? unixSeconds;
  const metrics = options.metrics ?? new ServerMetrics();
  const maxBody = bodyLimits(options);
  // Stores made without a name for their changes take the one they are served under (store.ts `serveAs`).
  for (const r of options.resources) (r.store as Partial<LocalStore>).serveAs?.(r.name);
  // docs/relations.md: the schemas' `x-link`s, read once (a link to a resource not served is refused here).
  const graph = options.relations ?? relationGraph(options.resources);
  const stores = new Map(options.resources.map((r) => [r.name, r.store]));
  const integrity = (options.linkIntegrity ?? localLinkIntegrity)(graph, stores);
  // docs/conventions.md §5: what each resource's bytes depend on besides its data, folded into its
  // tags; from the configuration alone, so processes configured alike hand out the same tags.
  const epochs = new Map(options.resources.map((r) => [r.name, representationEpoch({ basePath, schema: r.schema, relations: graph.get(r.name) })]));
  const embedding = combinedEpoch(epochs);
  // Each resource's relations read the others through this map, filled before any request comes.
  const resources = new Map<string, Resource>();
  for (const r of options.resources) {
    const relations = graph.get(r.name);
    const links = relations !== undefined && relations.forward.length + relations.reverse.length > 0 ? { related: new Related(relations, basePath, resources), integrity } : undefined;
    resources.set(r.name, new Resource({ ...r, mergedLimits: maxBody }, basePath, options.queryBudgetMs, links, { own: epochs.get(r.name)!, embedding }));
  }
  for (const [name, resource] of resources) {
    metrics.track(name, () => resource.store.size);
    metrics.served(name);
    // Writes are counted as the store reports its changes: every store, every process's on PostgreSQL.
    metrics.follow(name, resource.store);
  }
  const names = [...resources.keys()];
  const auth = serverAuthentication(options, { resources: new Set(names), now });
  // Where each rel of `embed` leads, for the scope check: a forward rel to its target, a reverse one to its source.
  const relTargets = new Map([...graph].map(([name, r]) => [name, new Map([...r.forward.map((l) => [l.field, l.target] as const), ...r.reverse.map((l) => [l.rel, l.source] as const)])]));
  const relTarget: RelTarget = (resource, rel) => relTargets.get(resource)?.get(rel);
  const feed = options.changes ?? sharedLog(options.resources.map((r) => r.store));
  if (feed instanceof LocalChangeLog) checkFeedNames(feed, names);
  const streams = new Streams(options.streams ?? {}, metrics.streamCounters, now);
  const cors = createCors(options.corsOrigin);
  // The default burst is the rate rounded down, at least 1: a whole number of requests.
  const limiter =
    options.rateLimit === undefined
      ? undefined
      : new RateLimiter({ rate: options.rateLimit, burst: options.rateLimitBurst ?? Math.max(1, Math.floor(options.rateLimit)), ...(options.clock === undefined ? {} : { now: options.clock }) });

  // kept-replies.ts: not with a rate limit (each answer carries its own fields) nor an embedder's
  // authenticator (which may read any header). A kept reply serves a credential the authenticators
  // remember whose principal the route's scope rule lets have it, as `proceed` decides.
  const kept =
    limiter === undefined && options.authenticator === undefined
      ? new KeptReplies((authorization, scope) => {
          const principal = auth.known(authorization);
          return principal !== undefined && scopeAllows(principal, scope, relTarget);
        }, metrics)
      : undefined;

  const router = createRouter<RouteHandler>();
  const indexBody = JSON.stringify(indexDocument(basePath, names));
  router.add('GET', '/', ({ req, principal }) => {
    // A token that may not read every resource sees only those it may read.
    if (principal === undefined || principal.access !== undefined) return jsonReply(200, accepted(req), indexBody);
    return jsonReply(200, accepted(req), JSON.stringify(indexDocument(basePath, names.filter((name) => principal.grants?.has(name)))));
  });
  addResourceRoutes(router, { resources, maxBody, now, newId: options.newId ?? randomId, metrics, streams, feed, originless: cors.headers(undefined) });
  if (feed) {
    addChangesRoutes(router, { basePath, resources, feed, streams });
    for (const resource of resources.values()) resource.linkChanges(feed);
    options.onFeed?.(feed, (change) => changeJson(resources, change));
  }
  addOperationRoutes(router, {
    basePath,
    names,
    metrics,
    now,
    ready: () => (options.ready?.() ?? true) && [...resources.values()].every((r) => r.store.ready),
  });
  const discovery = addDiscoveryRoutes(router, { basePath, resources: options.resources, relations: graph, tokensConfigured: auth.enabled });

  const dispatch = (req: IncomingMessage, res: ServerResponse, exchange: Exchange): Reply | Promise<Reply> => {
    const method = req.method ?? 'GET';
    // RFC 9110 §15.6.6: a request line of another major version (node's parser takes `HTTP/2.0`)
    // is not answered as if it were HTTP/1.1.
    if (req.httpVersionMajor !== 1) throw new HttpProblem(505, `HTTP/${req.httpVersion} is not supported: send HTTP/1.1 (or HTTP/1.0)`, {}, { connection: 'close' });
    const repeated = repeatedSingleton(req.rawHeaders);
    if (repeated !== undefined) throw badRequest(`The request has more than one ${repeated} header`);
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400.
    if (req.headers.host === undefined && req.httpVersionMinor >= 1) throw badRequest('The request has no Host header');
    const target = req.url ?? '/';
    // RFC 9112 §3.2: a request target has no fragment (a client keeps it to itself); one sent would
    // be read as part of an id or a filter's value.
    if (target.includes('#')) throw badRequest('The request target holds a fragment (#…): send the URL without it');
    const url = originForm(target);
    // RFC 9112 §3.2.4: the asterisk form is for OPTIONS alone; any other target is a path.
    if (!url.startsWith('/') && !(method === 'OPTIONS' && url === '*')) throw badRequest('The request target is not a path: only OPTIONS takes *');
    const coding = req.headers['transfer-encoding'];
    // RFC 9112 §6.1: HTTP/1.0 has no Transfer-Encoding; one that carries it was likely passed on by
    // something that did not decode it, so its framing is faulty whatever Node made of it: 400, and close.
    if (coding !== undefined && req.httpVersionMinor === 0) throw new HttpProblem(400, 'An HTTP/1.0 request cannot carry Transfer-Encoding: send the body with a Content-Length', {}, { connection: 'close' });
    if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
      // RFC 9112 §6.3: without chunked last, where the body ends cannot be known: 400, and close.
      if (!/(^|,)\s*chunked\s*$/i.test(coding)) throw new HttpProblem(400, `Transfer-Encoding ${JSON.stringify(coding)} does not end with chunked: where the body ends cannot be known`, {}, { connection: 'close' });
      // §6.1: a coding the server does not know (gzip, chunked) is a 501, not a body taken as it is.
      throw new HttpProblem(501, `Transfer-Encoding ${JSON.stringify(coding)} is not supported: send the body chunked, or with a Content-Length`);
    }
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    const segments = routeSegments(path, basePath);
    const query = mark === -1 ? '' : url.slice(mark + 1);
    const match = router.match(method, segments);
    if (match) exchange.route = routeLabel(match.pattern, undefined);
    const pattern = match?.pattern;
    // A CORS preflight carries no credentials (Fetch standard §3.2.2), so it is answered before authentication.
    if (cors.enabled && method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      limit(req, exchange, undefined, pattern);
      if (!match) throw nothingAt(path);
      return cors.preflight(match.allow);
    }
    // The browser's shell and its assets hold no data: served to anyone, before authentication (docs/conventions.md §4.1).
    if (pattern === BROWSER_PATTERN && (method === 'GET' || method === 'HEAD')) {
      limit(req, exchange, undefined, pattern);
      return discovery.asset(match?.params['asset'] ?? '', req.headers['if-none-match']);
    }
    if ((method === 'GET' || method === 'HEAD') && pattern !== undefined && SHELL_PATTERNS.has(pattern)) {
      if (prefersHtml(req.headers.accept)) {
        exchange.route = `${exchange.route} (html)`;
        limit(req, exchange, undefined, pattern);
        return discovery.shell(req.headers['if-none-match']);
      }
      exchange.negotiated = true;
    }
    const open = !auth.enabled || (pattern !== undefined && OPEN_PATTERNS.has(pattern));
    const request: Routed = { req, res, exchange, method, match, path, query };
    if (open) return proceed(request, undefined);
    const outcome = auth.authenticate(req.headers);
    return outcome instanceof Promise ? outcome.then((settled) => proceed(request, settled)) : proceed(request, outcome);
  };

  /**
   * Takes the request from its client's bucket (README, "Rate limits"): per principal when the
   * credential is valid; otherwise per address, so that inventing tokens buys nothing. Every route
   * but `/healthz` and `/readyz` is limited, those answered before authentication too.
   */
  const limit = (req: IncomingMessage, exchange: Exchange, principal: Principal | undefined, pattern: string | undefined): void => {
    if (!limiter || (pattern !== undefined && UNLIMITED_PATTERNS.has(pattern))) return;
    const decision = limiter.take(clientKey(req, principal));
    exchange.headers = rateLimitFields(limiter.rate, limiter.burst, decision);
    if (!decision.allowed) {
      metrics.rateLimited.inc();
      throw tooManyRequests(decision.waitSeconds, waitText(decision.waitSeconds));
    }
  };

  /** Rate limit, refusal, scope, then the route: what follows authentication. */
  const proceed = (request: Routed, outcome: Principal | HttpProblem | undefined): Reply | Promise<Reply> => {
    const { req, res, exchange, method, match, path, query } = request;
    const principal = outcome instanceof HttpProblem ? undefined : outcome;
    const pattern = match?.pattern;
    limit(req, exchange, principal, pattern);
    // Authenticate before routing, so that a client without a token learns nothing of what exists.
    if (outcome instanceof HttpProblem) throw outcome;
    // What the route asked of the principal: none without one (no authentication, an open route).
    let scope: ScopeRequest | undefined;
    if (principal !== undefined) {
      // A method the route never allows is a 405 whatever else the token may do there (RFC 9110
      // §15.5.6), once it may read the route: its scopes are checked as for a read.
      const unsupported = match !== undefined && match.handler === undefined && method !== 'OPTIONS';
      scope = { method: unsupported ? 'GET' : method, pattern, params: match?.params ?? NO_PARAMS, query };
      checkScope(principal, scope, relTarget, auth.errorCodes);
    }
    if (!match) throw nothingAt(path);
    const name = match.params['name'];
    if (name !== undefined) {
      exchange.resource = resourceOf(resources, match.params).name;
      // Known now to be one of the configured few: a bounded label.
      exchange.route = routeLabel(match.pattern, name);
    }
    if (method === 'OPTIONS') return { status: 204, headers: match.allow.includes('PATCH') ? { allow: match.allow.join(', '), 'accept-patch': ACCEPT_PATCH } : { allow: match.allow.join(', ') } };
    if (!match.handler) throw methodNotAllowed(method, match.allow);
    // docs/forms.md: templates are on collections and entities; elsewhere a client that takes only HAL-FORMS learns so.
    if ((method === 'GET' || method === 'HEAD') && !TEMPLATE_PATTERNS.has(match.pattern) && admitsOnlyForms(req.headers.accept)) throw formsNotHere(match.pattern);
    const context: Context = { req, res, params: match.params, query, principal };
    const reply = match.handler(context);
    if (kept !== undefined && !(reply instanceof Promise) && reply.current !== undefined) kept.keep(req, scope, exchange.route, reply);
    return reply;
  };

  const warn = options.warn ?? ((message: string) => process.stderr.write(`halserve: ${message}\n`));
  return createBoundary(dispatch, {
    cors,
    metrics,
    accessLog: options.accessLog,
    errorLog: options.errorLog,
    operationalLog: createOperationalLog(warn),
    scrub: createTokenScrubber(options.tokens ?? []),
    streams,
    kept,
  });
}

/** The 404 of a path no route matches. */
function nothingAt(path: string): HttpProblem {
  return notFound(`There is nothing at ${JSON.stringify(path)}`);
}

/** RFC 5789 §3.1: the patch documents an entity takes, said by OPTIONS. */
const ACCEPT_PATCH = `${MERGE_PATCH_JSON}, ${JSON_TYPE}`;

/** The routes that carry HAL-FORMS templates. */
const TEMPLATE_PATTERNS: ReadonlySet<string> = new Set(['/:name', '/:name/:id']);

/** What the routes that serve neither HAL nor JSON serve instead (for `formsNotHere`). */
const SERVED_TYPES: ReadonlyMap<string, string> = new Map([
  ['/metrics', 'text/plain'],
  ['/openapi.json', JSON_TYPE],
]);

/** RFC 9110 §15.5.7: the route has no templates, and the client takes nothing else. */
function formsNotHere(pattern: string): HttpProblem {
  const served = SERVED_TYPES.get(pattern) ?? `${HAL_JSON} or ${JSON_TYPE}`;
  return new HttpProblem(406, `HAL-FORMS (${HAL_FORMS}) is served on collections and entities only; ask this route for ${served}`, {}, { vary: 'Accept' });
}

/** The change log every store reports to, when they share one (local stores made together). */
function sharedLog(stores: readonly Store[]): ChangeFeed | undefined {
  const logs = new Set(stores.map((store) => (store as { changes?: unknown }).changes));
  const [log] = logs;
  return logs.size === 1 && log instanceof LocalChangeLog ? log : undefined;
}

/**
 * A local change log whose events name a resource this handler does not serve came from a store
 * made without the name it is served under (`createMemoryStore()` names its changes `items`, a
 * JSON-lines store after its file):
 * its events, and the collections' `changes` links, would never meet. Refused when the handler is
 * made, saying how to name the store.
 */
function checkFeedNames(log: LocalChangeLog, served: readonly string[]): void {
  const stray = log.resourceNames.filter((name) => !served.includes(name));
  if (stray.length === 0) return;
  throw new Error(
    `a store's changes are named ${stray.map((name) => JSON.stringify(name)).join(', ')}, which no resource is served as (${served.map((name) => JSON.stringify(name)).join(', ')}): make each store with the name it is served under, e.g. createMemoryStore([], { resource: ${JSON.stringify(served[0] ?? 'items')} }) or openJsonlStore({ file, resource: ${JSON.stringify(served[0] ?? 'items')} })`,
  );
}

/** Labels made so far, by pattern then resource name ('' for none): a handful, made once each. */
const labels = new Map<string, Map<string, string>>();

/**
 * A bounded label for a matched route: its pattern with `{…}` for each parameter, never a value
 * from the request, except a resource's name once it is known to be a configured one.
 */
function routeLabel(pattern: string, name: string | undefined): string {
  let byName = labels.get(pattern);
  if (byName === undefined) labels.set(pattern, (byName = new Map()));
  let label = byName.get(name ?? '');
  if (label === undefined) {
    const named = name === undefined ? pattern : pattern.replace(':name', name);
    label = named.replace(/:([a-z]+)/g, '{$1}');
    // Names come from the configuration, but a process may make many handlers: keep the cache small.
    if (byName.size < 1024) byName.set(name ?? '', label);
  }
  return label;
}
