import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { forbidden, HttpProblem, unauthorized } from '../conventions/problem.js';
import type { Access } from '../conventions/scopes.js';

export type { Access } from '../conventions/scopes.js';

/**
 * Authentication as a port (README, "Authentication"): an `Authenticator` turns a request's headers
 * into a `Principal` or a problem. Static tokens (`static-tokens.ts`) and JWTs from an identity
 * provider (`jwt-authenticator.ts`) are two implementations; `composeAuthenticators` asks each in
 * turn, and an embedder may add its own. What a principal may do is decided here, by pure functions.
 */

/**
 * Who a request's credential names, and what it may do. Built once per credential and cached, so
 * it must not hold anything specific to one request.
 */
export interface Principal {
  /**
   * Stable and names no secret: the same credential (or, for a JWT, the same issuer and subject)
   * gives the same key in every process and after every restart. Rate limits are kept per key.
   */
  readonly key: string;
  /** What it may do to every resource; undefined: nothing beyond `grants`. */
  readonly access: Access | undefined;
  /** What it may do to single resources, beyond `access` (a JWT's `<resource>:read` scopes). */
  readonly grants?: ReadonlyMap<string, Access>;
  /** The JWT's `sub`, shown by `/me`. */
  readonly subject?: string;
  /** The scope values halserve applied, shown by `/me`; undefined for a static token. */
  readonly scopes?: readonly string[];
  /**
   * The last second (Unix time, the server's clock) this principal answers for its credential: a
   * JWT's `exp` plus the leeway. None: the same credential gives this principal for the life of the
   * process (a static token). Open event streams end then (event-stream.ts).
   */
  readonly until?: number;
}

/**
 * Who a request counts against (rate limits, idempotency keys, open streams): its principal, or
 * its client's address without one (no authentication, or a credential that was refused).
 */
export function clientKey(req: IncomingMessage, principal: Principal | undefined): string {
  return principal?.key ?? `address:${req.socket.remoteAddress ?? ''}`;
}

/** What an authenticator says of a request: its principal, a refusal, or nothing (not its kind of credential). */
export type AuthOutcome = Principal | HttpProblem | undefined;

/** One way of recognising credentials. */
export interface Authenticator {
  /**
   * The principal the request's credential names; an `HttpProblem` (401) when this authenticator
   * recognises the credential and refuses it; undefined when the credential is not one it knows,
   * so that the next authenticator may try. A promise only when it must fetch something first.
   */
  authenticate(headers: IncomingHttpHeaders): AuthOutcome | Promise<AuthOutcome>;
  /**
   * What `authenticate` would say now of a request whose only header it reads is this
   * `Authorization` value (undefined: none), when that can be told without checking anything: the
   * principal it remembers for the value (and would give now), or `null` when it certainly gives
   * no principal for it (not its kind of credential); undefined when only `authenticate` can tell.
   * O(1), no signature or digest. The kept-replies lane (kept-replies.ts) asks it for every request
   * it answers, so that a reply kept for one credential serves every credential allowed to have it.
   */
  known?(authorization: string | undefined): Principal | null | undefined;
  /**
   * True when refusals should name the RFC 6750 §3.1 error codes (`invalid_token`,
   * `insufficient_scope`) in `WWW-Authenticate`: the JWT authenticator turns them on.
   */
  readonly errorCodes?: boolean;
}

/** Every authenticator of a server, asked in order. */
export interface Authentication {
  /** False when none is configured: every request is let through as its client address. */
  readonly enabled: boolean;
  /** True when refusals carry RFC 6750 error codes. */
  readonly errorCodes: boolean;
  /** The request's principal, or a 401 problem; never undefined while enabled. */
  authenticate(headers: IncomingHttpHeaders): Principal | HttpProblem | Promise<Principal | HttpProblem>;
  /**
   * The principal `authenticate` would give now to a request whose `Authorization` is this value,
   * when every authenticator can tell so without checking anything (`Authenticator.known`);
   * undefined otherwise (then only the full path can tell: a value not remembered, a refusal).
   */
  known(authorization: string | undefined): Principal | undefined;
}

/** RFC 6750 §3: the challenge of every 401 names the realm. */
export const REALM_CHALLENGE = 'Bearer realm="halserve"';
/** RFC 6750 §3.1: the credential was refused. */
export const INVALID_TOKEN_CHALLENGE = `${REALM_CHALLENGE}, error="invalid_token"`;
/** RFC 6750 §3.1: the credential is valid but lacks the scope. */
export const INSUFFICIENT_SCOPE_CHALLENGE = `${REALM_CHALLENGE}, error="insufficient_scope"`;

/** A refused bearer credential: 401, with `error="invalid_token"` when error codes are on. */
export function invalidToken(detail: string, errorCodes: boolean): HttpProblem {
  return errorCodes ? new HttpProblem(401, detail, {}, { 'www-authenticate': INVALID_TOKEN_CHALLENGE }) : unauthorized(detail);
}

/** 403 for a valid credential without the permission, with `error="insufficient_scope"` when error codes are on. */
export function insufficientScope(detail: string, errorCodes: boolean): HttpProblem {
  return errorCodes ? new HttpProblem(403, detail, {}, { 'www-authenticate': INSUFFICIENT_SCOPE_CHALLENGE }) : forbidden(detail);
}

/**
 * The credential of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), or undefined for
 * none or another scheme.
 */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^Bearer +(\S+) *$/i.exec(authorization);
  return match?.[1];
}

/** The IANA HTTP Authentication Scheme Registry (RFC 9110 §16.4), by lower-cased name. */
const KNOWN_SCHEMES: ReadonlyMap<string, string> = new Map(
  ['Basic', 'Concealed', 'Digest', 'DPoP', 'GNAP', 'HOBA', 'Mutual', 'Negotiate', 'OAuth', 'PrivateToken', 'SCRAM-SHA-1', 'SCRAM-SHA-256', 'vapid'].map((s) => [s.toLowerCase(), s]),
);

/** RFC 9110 §15.5.2: a 401 carries a challenge; an embedder's refusal without one gets the realm's. */
function challenged(problem: HttpProblem | undefined): HttpProblem | undefined {
  if (problem === undefined || problem.status !== 401 || problem.headers['www-authenticate'] !== undefined) return problem;
  return new HttpProblem(401, problem.detail, problem.extras, { ...problem.headers, 'www-authenticate': REALM_CHALLENGE });
}

const isPrincipal = (a: AuthOutcome): a is Principal => a !== undefined && !(a instanceof HttpProblem);

/**
 * Asks each authenticator in turn: the first principal wins; otherwise the first refusal; otherwise
 * a 401 that says whether a credential was missing or unknown. With none, authentication is off.
 */
export function composeAuthenticators(authenticators: readonly Authenticator[]): Authentication {
  const errorCodes = authenticators.some((a) => a.errorCodes === true);
  const missing = unauthorized('A bearer token is required: Authorization: Bearer <token>');
  const notBearer = 'The Authorization header is not "Bearer <token>" (one token, no spaces in it)';
  const blank = unauthorized(notBearer);
  // A broken Bearer header is a bearer credential refused: with error codes on, RFC 6750 §3.1's invalid_token.
  const malformed = invalidToken(notBearer, errorCodes);
  const unknown = invalidToken('The bearer token is not valid', errorCodes);
  const fallback = (headers: IncomingHttpHeaders): HttpProblem => {
    const authorization = headers.authorization;
    if (authorization === undefined) return missing;
    if (bearerToken(authorization) !== undefined) return unknown;
    // RFC 6750 §3.1: another scheme counts as no bearer credential; a broken Bearer header is said to be one.
    const first = /^\s*(\S+)/.exec(authorization)?.[1];
    if (first === undefined) return blank;
    if (first.toLowerCase() === 'bearer') return malformed;
    // Named only when it is a registered scheme: what else stands there may be a credential.
    const scheme = KNOWN_SCHEMES.get(first.toLowerCase());
    return unauthorized(`A bearer token is required: Authorization: Bearer <token> (${scheme === undefined ? 'no other scheme is' : `the ${scheme} scheme is not`} accepted)`);
  };
  const from = (headers: IncomingHttpHeaders, start: number, refused: HttpProblem | undefined): Principal | HttpProblem | Promise<Principal | HttpProblem> => {
    let first = refused;
    for (let i = start; i < authenticators.length; i++) {
      const outcome = authenticators[i]!.authenticate(headers);
      if (outcome instanceof Promise) {
        return outcome.then((settled) => (isPrincipal(settled) ? settled : from(headers, i + 1, first ?? challenged(settled))));
      }
      if (isPrincipal(outcome)) return outcome;
      first ??= challenged(outcome);
    }
    return first ?? fallback(headers);
  };
  // As `from` decides: the first authenticator that gives a principal wins, so one that might
  // give one (an unknown answer) before the one that remembers the value leaves it to the full path.
  const known = (authorization: string | undefined): Principal | undefined => {
    for (const authenticator of authenticators) {
      const said = authenticator.known?.(authorization);
      if (said === undefined) return undefined;
      if (said !== null) return said;
    }
    return undefined;
  };
  return {
    enabled: authenticators.length > 0,
    errorCodes,
    authenticate: (headers) => from(headers, 0, undefined),
    known,
  };
}

const RANK: Readonly<Record<Access, number>> = { read: 1, write: 2 };
const rank = (access: Access | undefined): number => (access === undefined ? 0 : RANK[access]);

/** True when `principal` may do `need` to `resource` (undefined: to every resource at once). */
export function permits(principal: Principal, resource: string | undefined, need: Access): boolean {
  if (rank(principal.access) >= RANK[need]) return true;
  if (resource === undefined) return false;
  return rank(principal.grants?.get(resource)) >= RANK[need];
}

/**
 * What a principal without `need` on `resource` is told: a static `read:` token keeps its old
 * words, a JWT is told the scopes it lacks, and an embedder's principal without scopes (one of
 * `grants` only, or of no access) what it may not do.
 */
export function refusal(principal: Principal, resource: string | undefined, need: Access, errorCodes: boolean): HttpProblem {
  const what = resource === undefined ? 'every resource' : JSON.stringify(resource);
  if (principal.scopes === undefined) {
    return insufficientScope(principal.access === 'read' && need === 'write' ? 'This token may only read' : `This credential may not ${need} ${what}`, errorCodes);
  }
  const scopes = resource === undefined ? `the ${need} scope` : `the ${need} or ${resource}:${need} scope`;
  return insufficientScope(`This token may not ${need} ${what}: it needs ${scopes}`, errorCodes);
}
