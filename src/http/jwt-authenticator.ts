import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { HttpProblem } from '../conventions/problem.js';
import { scopePermissions, scopeValues } from '../conventions/scopes.js';
import { bearerToken, invalidToken, type Authenticator, type Principal } from './auth.js';
import type { KeyRefusal, KeySet } from './jwks.js';
import { checkClaims, CLOCK_LEEWAY_SECONDS, decodeJwt, verifySignature, type DecodedJwt, type VerificationKey } from './jwt.js';
import { LruMap } from '../structures/lru-map.js';

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
 * no hit: it is verified like any new token. A token stays accepted until its `exp` even if its key
 * leaves the set meanwhile: key rotation retires keys for new tokens, and an identity provider keeps
 * the old key published while tokens signed with it live.
 *
 * The cache is bounded by bytes (`CACHE_BYTES`: each value's length and `ENTRY_BYTES` for its
 * principal) and lets the least recently used token go first (`LruMap`, O(1) a hit or an eviction).
 * It was 1,024 tokens, emptied when full: a deployment with 1,025 subjects active at once emptied
 * it before any came back, and every request then paid a signature check (~1 µs a request with
 * 1,024 subjects in turn, ~60-450 µs with 2,000; bench/NOTES.md, "many clients"). Now some 9,000
 * tokens of a usual size (~1 KB) are kept, and a subject that keeps asking stays kept however
 * many others come and go.
 */

/** Most bytes of verified tokens remembered: their `Authorization` values and `ENTRY_BYTES` each. */
const CACHE_BYTES = 16 * 1024 * 1024;
/** Bytes counted for a remembered token besides its value: its principal (scopes, grants), its key and its slot (~0.7 KB measured with `--expose-gc`). */
const ENTRY_BYTES = 768;
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
  const known = new LruMap<Remembered>({ maxEntries: Math.floor(CACHE_BYTES / ENTRY_BYTES), maxWeight: CACHE_BYTES });
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
    known.set(authorization.slice(-TAIL), { principal, authorization }, authorization.length + ENTRY_BYTES);
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
    // As `authenticate`'s first steps: a remembered value until its principal's end; a value
    // without a dot (no bearer token, or one that is not a JWT) is never this authenticator's.
    known(authorization: string | undefined): Principal | null | undefined {
      if (authorization === undefined || !authorization.includes('.')) return null;
      const remembered = known.get(authorization.slice(-TAIL));
      return remembered !== undefined && remembered.authorization === authorization && now() <= remembered.principal.until ? remembered.principal : undefined;
    },
  };
}
