import { READY_RETRY_AFTER_SECONDS } from '../conventions/problem.js';
import type { ServerMetrics } from '../metrics/server-metrics.js';
import { PROMETHEUS_TEXT, prometheusText } from '../representations/prometheus.js';
import { permits, type Principal } from './auth.js';
import type { RouteHandler } from './context.js';
import { JSON_TYPE } from './negotiation.js';
import { jsonReply, type Reply } from './reply.js';
import { accepted } from './request.js';
import type { Router } from './router.js';

export interface OperationRouteOptions {
  readonly basePath: string;
  readonly names: readonly string[];
  readonly metrics: ServerMetrics;
  /** True when the server and every store can take requests. */
  readonly ready: () => boolean;
  /** Unix seconds. */
  readonly now: () => number;
}

/** Routes that need no authentication: probes and the SDK's `ping` (docs/conventions.md §4, §4b). */
export const OPEN_PATTERNS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/ping']);
/** Routes a rate limit never applies to: an orchestrator's probes must not be refused. */
export const UNLIMITED_PATTERNS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

/** Not ready is a 503 like any other, so it says when to ask again (RFC 9110 §10.2.3). */
const health = (ok: boolean): Reply =>
  ok ? jsonReply(200, JSON_TYPE, '{"status":"ok"}') : jsonReply(503, JSON_TYPE, '{"status":"unavailable"}', { 'retry-after': String(READY_RETRY_AFTER_SECONDS) });

/** Liveness, readiness, `ping`, `me` and `metrics`: what operators and the Shopping Feed SDK ask. */
export function addOperationRoutes(router: Router<RouteHandler>, options: OperationRouteOptions): void {
  const { basePath, names, metrics } = options;
  router.add('GET', '/healthz', () => health(true));
  router.add('GET', '/readyz', () => health(options.ready()));

  // docs/conventions.md §4.1: the Shopping Feed SDK's Client::ping().
  router.add('GET', '/ping', ({ req }) => jsonReply(200, accepted(req), `{"timestamp":${options.now()}}`));

  // The Shopping Feed SDK's Client::authenticate() reads the caller's roles and links.
  const collections = Object.fromEntries(names.map((name) => [name, { href: `${basePath}/${name}` }]));
  const index = { href: `${basePath}/` };
  router.add('GET', '/me', ({ req, principal }) => {
    // `index` is the entry point; like the index document, no `self`, so that no resource name collides with a fixed rel.
    const body = principal === undefined ? { roles: ['read', 'write'], _links: { index, ...collections } } : description(principal, names, collections, index);
    return jsonReply(200, accepted(req), JSON.stringify(body));
  });

  router.add('GET', '/metrics', () => ({ status: 200, headers: { 'content-type': PROMETHEUS_TEXT, 'cache-control': 'no-store' }, body: prometheusText(metrics.registry.metrics) }));
}

/**
 * `/me` for a principal: roles from its access over every resource (`["read","write"]`, `["read"]`
 * or `[]`) and links to what it may read; a JWT's subject and applied scopes first.
 */
function description(principal: Principal, names: readonly string[], collections: Readonly<Record<string, { href: string }>>, index: { href: string }): Record<string, unknown> {
  const roles = principal.access === 'write' ? ['read', 'write'] : principal.access === 'read' ? ['read'] : [];
  const readable = principal.access === undefined ? Object.fromEntries(names.filter((name) => permits(principal, name, 'read')).map((name) => [name, collections[name]])) : collections;
  const links = { index, ...readable };
  if (principal.scopes === undefined) return { roles, _links: links };
  return { ...(principal.subject === undefined ? {} : { sub: principal.subject }), scopes: principal.scopes, roles, _links: links };
}
