import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkBodyHeaders, parseJsonObject, readBody, type BodyLimits, type JsonObject } from './body.js';
import { FORMS_OFFERED_TYPES, isAcceptedContentType, negotiate, OFFERED_TYPES } from './negotiation.js';
import { badRequest, notAcceptable } from '../conventions/problem.js';
import { splitPath } from './router.js';

/**
 * The edge of a request: its target reduced to route segments, its `Accept`, its body — each
 * checked here, so that handlers receive values they can trust (STYLE: validate at the edge).
 */

/** The version prefix every route is also served under (docs/conventions.md §4). */
export const VERSION_PREFIX = 'v1';

/** `/api/` → `/api`; '' and `/` → ''. */
export function normaliseBasePath(basePath: string): string {
  const trimmed = basePath.replace(/\/+$/, '');
  if (trimmed === '') return '';
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`;
}

/**
 * Decoded path segments below the optional base path and `/v1` prefix: `/v1/products/a%20b` →
 * ['products', 'a b']. Malformed percent-encoding is a 400 problem.
 */
export function routeSegments(path: string, basePath: string): string[] {
  let rest = path;
  if (basePath !== '' && (rest === basePath || rest.startsWith(`${basePath}/`))) rest = rest.slice(basePath.length) || '/';
  let segments = splitPath(rest);
  if (segments[0] === VERSION_PREFIX) segments = segments.slice(1);
  if (segments.length > 0 && segments[segments.length - 1] === '' && segments.length === 1) segments = [];
  // Most paths hold no escape at all, and then the segments are already decoded.
  if (!path.includes('%')) return segments;
  try {
    return segments.map(decodeURIComponent);
  } catch {
    throw badRequest('The request path has malformed percent-encoding');
  }
}

/** Outcomes of `negotiate` by `Accept` header: clients send a handful of values, over and over. */
const negotiated = new Map<string | undefined, string | undefined>();
/** The same where HAL-FORMS is offered too (collections and entities). */
const negotiatedWithForms = new Map<string | undefined, string | undefined>();
/** Bounded, so that a client varying its `Accept` cannot grow it. */
const NEGOTIATED_SIZE = 64;

/**
 * The response media type for the request's `Accept`, or a 406 problem. `forms`:
 * the route also has HAL-FORMS templates to offer (collections and entities).
 */
export function accepted(req: IncomingMessage, forms = false): string {
  const accept = req.headers.accept;
  const cache = forms ? negotiatedWithForms : negotiated;
  const offered = forms ? FORMS_OFFERED_TYPES : OFFERED_TYPES;
  let mediaType = cache.get(accept);
  if (mediaType === undefined && !cache.has(accept)) {
    mediaType = negotiate(accept, offered);
    if (cache.size >= NEGOTIATED_SIZE) cache.clear();
    cache.set(accept, mediaType);
  }
  // The same answer as before HAL-FORMS came: a client that asked for none of these learns of the two it most likely wants.
  if (mediaType === undefined) throw notAcceptable(OFFERED_TYPES);
  return mediaType;
}

/** Outcomes of `isAcceptedContentType` by the list of types taken, then by `Content-Type`: clients send a handful of values. */
const contentTypes = new WeakMap<readonly string[], Map<string | undefined, boolean>>();

function acceptedContentType(contentType: string | undefined, types: readonly string[]): boolean {
  let outcomes = contentTypes.get(types);
  if (outcomes === undefined) contentTypes.set(types, (outcomes = new Map()));
  let outcome = outcomes.get(contentType);
  if (outcome === undefined) {
    outcome = isAcceptedContentType(contentType, types);
    // Bounded, so that a client varying its `Content-Type` cannot grow it.
    if (outcomes.size >= NEGOTIATED_SIZE) outcomes.clear();
    outcomes.set(contentType, outcome);
  }
  return outcome;
}

/** Checks `Content-Type` before reading anything (docs/conventions.md §7 rule 2), then reads the body within `maxBody`'s limits. */
function readCheckedBody(req: IncomingMessage, res: ServerResponse, types: readonly string[], maxBody: BodyLimits): Promise<Buffer> {
  try {
    checkBodyHeaders(req, types, (contentType) => acceptedContentType(contentType, types));
  } catch (error) {
    return Promise.reject(error);
  }
  return readBody(req, maxBody, res);
}

/** A JSON object body, its `Content-Type` checked before anything is read (`readCheckedBody`). */
export function readJsonBody(req: IncomingMessage, res: ServerResponse, types: readonly string[], maxBody: BodyLimits): Promise<JsonObject> {
  return readCheckedBody(req, res, types, maxBody).then(parseJsonObject);
}

/** A JSON request body: its value, and its bytes as they came (what an `Idempotency-Key`'s digest is of). */
export interface JsonRequestBody {
  readonly value: JsonObject;
  readonly bytes: Buffer;
}

/** As `readJsonBody`, keeping the body's bytes beside its value. */
export function readJsonRequest(req: IncomingMessage, res: ServerResponse, types: readonly string[], maxBody: BodyLimits): Promise<JsonRequestBody> {
  return readCheckedBody(req, res, types, maxBody).then((bytes) => ({ value: parseJsonObject(bytes), bytes }));
}

/**
 * The path and query of a request target: an absolute-form target (`http://host/items`), which a
 * server must accept (RFC 9112 §3.2.2), is reduced to its origin form (`/items`).
 */
export function originForm(target: string): string {
  if (target.startsWith('/')) return target;
  const match = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*([^#]*)/i.exec(target);
  if (!match) return target;
  const rest = match[1] ?? '';
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/**
 * The name of a header a request carries more than once that must come once, or undefined: Host
 * (RFC 9112 §3.2 makes it a 400), Authorization, which holds one credential (RFC 9110 §11.6.2,
 * not a list), and Content-Type, which names one media type (RFC 9110 §8.3): node keeps the first
 * of two and drops the other, and a proxy in front may have judged the other (a `text/plain` body
 * let through, then taken here as `application/json`), so which one was meant cannot be known.
 */
export function repeatedSingleton(rawHeaders: readonly string[]): 'Host' | 'Authorization' | 'Content-Type' | undefined {
  let host = false;
  let authorization = false;
  let contentType = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] ?? '';
    if (name.length === 4 && name.toLowerCase() === 'host') {
      if (host) return 'Host';
      host = true;
    } else if (name.length === 13 && name.toLowerCase() === 'authorization') {
      if (authorization) return 'Authorization';
      authorization = true;
    } else if (name.length === 12 && name.toLowerCase() === 'content-type') {
      if (contentType) return 'Content-Type';
      contentType = true;
    }
  }
  return undefined;
}
