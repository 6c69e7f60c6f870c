import { embedOf } from '../conventions/relations.js';
import { permits, refusal, type Access, type Principal } from './auth.js';
import type { Params } from './router.js';

/**
 * What each route asks of a principal's permissions (README, "Tokens from an identity provider"),
 * checked after authentication and before the route runs. A route added later gets its rule by
 * naming its pattern here; a pattern not named asks for the most, permission over every resource.
 */

/**
 * - `resource`: the resource the path names (`:name`): read for GET, HEAD and OPTIONS, write for the
 *   rest; every resource an `embed` reaches, read.
 * - `listing`: a valid credential; the route shows only what it may read, and any resource its
 *   `resource` query parameter names must be readable (`/`, `/me`, a change feed).
 * - `every-resource`: read (or write) over every resource at once (`/metrics`).
 */
export type ScopeRule = 'resource' | 'listing' | 'every-resource';

/** The rule of each route pattern. */
export const ROUTE_SCOPES: ReadonlyMap<string, ScopeRule> = new Map<string, ScopeRule>([
  ['/:name', 'resource'],
  ['/:name/:id', 'resource'],
  ['/', 'listing'],
  ['/me', 'listing'],
  ['/changes', 'listing'],
  ['/openapi.json', 'listing'],
  ['/metrics', 'every-resource'],
]);

const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What a request to a route asks for. */
export interface ScopeRequest {
  readonly method: string;
  /** The matched pattern; undefined when no route matched. */
  readonly pattern: string | undefined;
  readonly params: Params;
  /** The raw query string, without `?`. */
  readonly query: string;
}

/** The resources a rel of `resource`'s entities leads to (`embed`), or undefined for an unknown rel (a 400 later). */
export type RelTarget = (resource: string, rel: string) => string | undefined;

/**
 * The resources a `resource` query parameter names (repeatable, comma-separated). Its name is
 * decoded as the routes decode it: `res%6Furce=` is `resource=` too, so a query holding an escape
 * is always parsed.
 */
function namedResources(query: string): string[] {
  if (!query.includes('resource') && !query.includes('%')) return [];
  return new URLSearchParams(query)
    .getAll('resource')
    .flatMap((value) => value.split(','))
    .filter((name) => name !== '');
}

/**
 * Throws a 403 problem when `principal` may not make `request`. A principal with `write` over
 * every resource, or `read` on a read, passes at once: static tokens never parse the query here.
 */
export function checkScope(principal: Principal, request: ScopeRequest, relTarget: RelTarget, errorCodes: boolean): void {
  const lacking = unmet(principal, request, relTarget);
  if (lacking !== undefined) throw refusal(principal, lacking.resource, lacking.access, errorCodes);
}

/** True when `principal` may make `request`: `checkScope` without the refusal (the kept-replies lane asks it for every answer). */
export function scopeAllows(principal: Principal, request: ScopeRequest, relTarget: RelTarget): boolean {
  return unmet(principal, request, relTarget) === undefined;
}

/** The first permission `principal` lacks for `request` (the one its refusal names), or undefined. */
function unmet(principal: Principal, request: ScopeRequest, relTarget: RelTarget): { resource: string | undefined; access: Access } | undefined {
  const need: Access = WRITE_METHODS.has(request.method) ? 'write' : 'read';
  if (principal.access === 'write' || (principal.access === 'read' && need === 'read')) return undefined;
  const rule = (request.pattern === undefined ? undefined : ROUTE_SCOPES.get(request.pattern)) ?? 'every-resource';
  const lacks = (resource: string | undefined, access: Access): boolean => !permits(principal, resource, access);
  switch (rule) {
    case 'resource': {
      const name = request.params['name'] ?? '';
      if (lacks(name, need)) return { resource: name, access: need };
      for (const rel of embedOf(request.query)) {
        const target = relTarget(name, rel);
        if (target !== undefined && lacks(target, 'read')) return { resource: target, access: 'read' };
      }
      return undefined;
    }
    case 'listing':
      if (need === 'write' && lacks(undefined, need)) return { resource: undefined, access: need };
      for (const name of namedResources(request.query)) if (lacks(name, 'read')) return { resource: name, access: 'read' };
      return undefined;
    case 'every-resource':
      return lacks(undefined, need) ? { resource: undefined, access: need } : undefined;
  }
}
