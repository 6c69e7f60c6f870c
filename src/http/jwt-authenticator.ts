import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { HttpProblem } from '../conventions/problem.js';
import { scopePermissions, scopeValues } from '../conventions/scopes.js';
import { bearerToken, invalidToken, type Authenticator, type Principal } from './auth.js';
import type { KeyRefusal, KeySet } from './jwks.js';
import { checkClaims, CLOCK_LEEWAY_SECONDS, decodeJwt, verifySignature, type DecodedJwt, type VerificationKey } from './jwt.js';

/**
 * Bearer JWTs from an identity provider (README, "Tokens from an identity provider"): verified with
 * a key of the key set (`jwks.ts`, `jwt.ts`), their scopes made a principal.
 *
 * A verified token is remembered until its `exp` (with the same leeway a fresh check allows), with
 * its whole `Authorization` value, so that the next request with it costs one Map lookup, a string
 * comparison and a clock read. The Map's key is the value's last `TAIL` characters (the end of the
 * signature), not the whole value: a header string is new with every request, and hashing all of
 * a JWT's ~700 characters for the lookup cost ~1 µs against ~0.15 µs for the tail and the
 * comparison (measured alone). A value that shares its tail with a remembered one but is not it is
 * no hit: it is verified like any new token. The cache holds at most `CACHE_ENTRIES` (each at most 8 KiB) and is emptied when
 * full. A token stays accepted until its `exp` even if its key leaves the set meanwhile: key
 * rotation retires keys for new tokens, and an identity provider keeps the old key published while
 * tokens signed with it live.
 */

/** Most verified tokens remembered: 1024 × 8 KiB at worst. */
const CACHE_ENTRIES = 1024;
/** Characters of an `Authorization` value that key it in the cache: 192 bits of its signature. */
const TAIL = 32;

/** A verified token's principal, and the whole `Authorization` value it was verified for (kept apart: a principal never carries the token). */
interface Remembered {
  readonly principal: Principal & { readonly until: number };
  readonly authorization: string;
}

export interface JwtOptions {
  /** Where the keys come from: `staticKeySet`, `readKeySetFile` or `remoteKeySet` (jwks.ts). */
  readonly keys: KeySet;
  /** The `iss` every token must carry. */
  readonly issuer: string;
  /** The audience every token's `aud` must name. */
  readonly audience: string;
}

/** What the authenticator needs from the server besides the options. */
export interface JwtContext {
  /** The served resources: scopes naming others are ignored. */
  readonly resources: ReadonlySet<string>;
  /** Unix seconds. */
  readonly now: () => number;
}

const hex = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 32);

/**
 * A JWT's principal key: its issuer and subject together, so that a refreshed token of the same
 * subject is the same principal; without `sub`, the token itself. Hashed so that the key has a
 * bounded length (a `sub` may be long); neither part is a secret.
 */
export function jwtPrincipalKey(issuer: string, subject: string | undefined, token: string): string {
  return subject === undefined ? `jwt-token:${hex(token)}` : `jwt:${hex(`${issuer}\0${subject}`)}`;
}

const NOT_A_JWT = 'The bearer token is not a valid JWT';

/** An authenticator of bearer JWTs; a bearer credential without a dot is not a JWT and left to others. */
export function jwtAuthenticator(options: JwtOptions, context: JwtContext): Authenticator {
  const { keys, issuer, audience } = options;
  const { resources, now } = context;
  const known = new Map<string, Remembered>();
  const refuse = (reason: string): HttpProblem => invalidToken(`${NOT_A_JWT}: ${reason}`, true);

  const principalOf = (decoded: DecodedJwt, token: string): (Principal & { readonly until: number }) | HttpProblem => {
    const values = scopeValues(decoded.claims);
    if (typeof values === 'string') return refuse(values);
    const { access, grants, applied } = scopePermissions(values, resources);
    const sub = decoded.claims['sub'] as string | undefined;
    return {
      key: jwtPrincipalKey(issuer, sub, token),
      access,
      grants,
      ...(sub === undefined ? {} : { subject: sub }),
      scopes: applied,
      until: (decoded.claims['exp'] as number) + CLOCK_LEEWAY_SECONDS,
    };
  };

  const finish = (authorization: string, token: string, decoded: DecodedJwt, key: VerificationKey | KeyRefusal): Principal | HttpProblem => {
    if (!('key' in key)) return refuse(key.reason);
    if (!verifySignature(decoded, key)) return refuse('its signature does not verify with the key of the key set');
    const principal = principalOf(decoded, token);
    if (principal instanceof HttpProblem) return principal;
    if (known.size >= CACHE_ENTRIES) known.clear();
    known.set(authorization.slice(-TAIL), { principal, authorization });
    return principal;
  };

  return {
    errorCodes: true,
    authenticate(headers: IncomingHttpHeaders) {
      const authorization = headers.authorization;
      if (authorization === undefined) return undefined;
      const remembered = known.get(authorization.slice(-TAIL));
      if (remembered !== undefined && remembered.authorization === authorization) {
        if (now() <= remembered.principal.until) return remembered.principal;
        known.delete(authorization.slice(-TAIL));
      }
      const token = bearerToken(authorization);
      if (token === undefined || !token.includes('.')) return undefined;
      const decoded = decodeJwt(token);
      if (typeof decoded === 'string') return refuse(decoded);
      // Claims first: an expired or foreign token costs no signature check and no key set fetch.
      const claimProblem = checkClaims(decoded.claims, { issuer, audience, now: now() });
      if (claimProblem !== undefined) return refuse(claimProblem);
      const key = keys.select(decoded.kid, decoded.alg);
      return key instanceof Promise ? key.then((found) => finish(authorization, token, decoded, found)) : finish(authorization, token, decoded, key);
    },
  };
}
