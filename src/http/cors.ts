import type { Reply } from './reply.js';

/** Fetch standard, CORS protocol: what a browser may send and read (docs/conventions.md §5). */
const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Accept, If-Match, If-None-Match, Idempotency-Key';
const CORS_EXPOSE_HEADERS = 'Location, ETag, Link, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Wait, RateLimit-Policy, RateLimit, Idempotency-Replayed';
const CORS_MAX_AGE_SECONDS = '600';

/** CORS for one allowed origin (`*` for any), or none: no CORS headers at all (docs/conventions.md §5). */
export interface Cors {
  /** True when CORS is on. */
  readonly enabled: boolean;
  /** The headers for a request from `origin`, or none when CORS is off or the origin is not allowed. */
  headers(origin: string | undefined): Record<string, string> | undefined;
  /** The answer to a preflight for a path allowing `methods`. */
  preflight(methods: readonly string[]): Reply;
}

export function createCors(allowed: string | undefined): Cors {
  return {
    enabled: allowed !== undefined,
    headers(origin) {
      if (allowed === undefined || origin === undefined || (allowed !== '*' && allowed !== origin)) return undefined;
      return allowed === '*'
        ? { 'access-control-allow-origin': '*', 'access-control-expose-headers': CORS_EXPOSE_HEADERS }
        : { 'access-control-allow-origin': origin, 'access-control-expose-headers': CORS_EXPOSE_HEADERS, vary: 'Origin' };
    },
    preflight(methods) {
      const list = methods.join(', ');
      return {
        status: 204,
        headers: {
          allow: list,
          'access-control-allow-methods': list,
          'access-control-allow-headers': CORS_ALLOW_HEADERS,
          'access-control-max-age': CORS_MAX_AGE_SECONDS,
        },
      };
    },
  };
}
