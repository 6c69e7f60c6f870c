import type { Reply } from './reply.js';

/** Fetch standard, CORS protocol: what a browser may send and read (docs/conventions.md §5). */
const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Accept, If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since, Idempotency-Key';
const CORS_EXPOSE_HEADERS = 'Location, ETag, Link, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Wait, RateLimit-Policy, RateLimit, Idempotency-Replayed';
const CORS_MAX_AGE_SECONDS = '600';

/** CORS for one allowed origin (`*` for any), or none: no CORS headers at all (docs/conventions.md §5). */
export interface Cors {
  /** True when CORS is on. */
  readonly enabled: boolean;
  /**
   * The headers of every response to a request from `origin` (undefined: the request has no
   * `Origin`), or none when CORS is off. The same object for every request they are the same for:
   * a reply made once (`prepared`) holds `headers(undefined)`, and is sent as it is to a request
   * given that very object (reply.ts `send`).
   */
  headers(origin: string | undefined): Readonly<Record<string, string>> | undefined;
  /** The answer to a preflight for a path allowing `methods`. */
  preflight(methods: readonly string[]): Reply;
}

export function createCors(allowed: string | undefined): Cors {
  if (allowed === '*') {
    // Any origin, never with credentials (no Access-Control-Allow-Credentials is ever sent): `*` is
    // the answer to every origin, so it is sent to every request, with an Origin or without. No
    // response then differs by Origin, none needs `Vary: Origin`, and a cache may hand one made for
    // a request without Origin to a browser's cross-origin request (Fetch standard, "CORS protocol
    // and HTTP caches").
    const any = Object.freeze({ 'access-control-allow-origin': '*', 'access-control-expose-headers': CORS_EXPOSE_HEADERS });
    return { enabled: true, headers: () => any, preflight };
  }
  if (allowed === undefined) return { enabled: false, headers: () => undefined, preflight };
  // One origin: the response to it differs from the response to any other request, one without
  // Origin too, so every response says it depends on Origin; else a cache (a CDN, a proxy) could
  // store one made for a request without Origin and hand it to the browser's cross-origin request,
  // which would then be refused for want of Access-Control-Allow-Origin (Fetch standard, "CORS
  // protocol and HTTP caches"; RFC 9110 §12.5.5).
  const granted = Object.freeze({ 'access-control-allow-origin': allowed, 'access-control-expose-headers': CORS_EXPOSE_HEADERS, vary: 'Origin' });
  const refused = Object.freeze({ vary: 'Origin' });
  return { enabled: true, headers: (origin) => (origin === allowed ? granted : refused), preflight };
}

function preflight(methods: readonly string[]): Reply {
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
}
