import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Access } from '../conventions/scopes.js';
import { READ_ONLY_PREFIX, tokenProblem } from '../conventions/credential-forms.js';
import { bearerToken, type Authenticator, type Principal } from './auth.js';

/**
 * The static bearer tokens of `--token` (README, "Authentication"): each a principal of its own,
 * `read:`-prefixed ones read-only.
 *
 * A check costs a SHA-256 and one constant-time comparison per configured token; a valid
 * `Authorization` value is then remembered, so that the next request with it costs one Map lookup.
 * Only valid values are remembered (an invented token never enters the cache), the cache holds at
 * most `CACHE_ENTRIES` and is emptied when full: a client can only churn it with valid tokens.
 */

/** Most `Authorization` values remembered; emptied when full (no recency order to keep). */
const CACHE_ENTRIES = 256;

/** Domain separation of the principal key's hash: the key is never the token's plain digest. */
const KEY_CONTEXT = 'halserve principal key\0';

interface TokenEntry {
  readonly digest: Buffer;
  readonly principal: Principal;
}

// Comparing fixed-length digests keeps the comparison's time independent of the token's length and content.
const digest = (token: string): Buffer => createHash('sha256').update(token).digest();

/**
 * A static token's principal key: `token:` and 16 hex digits of a SHA-256 over the token. The same
 * token gives the same key in every process and in any position of the flag list; the key does not
 * hold the token (though a short, guessable token could be found from it by trying, as from any hash).
 */
export function staticTokenKey(token: string): string {
  return `token:${createHash('sha256').update(KEY_CONTEXT).update(token).digest('hex').slice(0, 16)}`;
}

/** Parses `read:`-prefixed and plain tokens; one that no client could send is refused. */
export function parseTokens(tokens: readonly string[]): TokenEntry[] {
  return tokens.map((raw, i) => {
    const problem = tokenProblem(raw, i + 1);
    if (problem) throw new Error(problem);
    const access: Access = raw.startsWith(READ_ONLY_PREFIX) ? 'read' : 'write';
    const token = access === 'read' ? raw.slice(READ_ONLY_PREFIX.length) : raw;
    return { digest: digest(token), principal: { key: staticTokenKey(token), access } };
  });
}

/** An authenticator over `tokens`; undefined for a credential that is none of them (another authenticator may know it). */
export function staticTokenAuthenticator(tokens: readonly string[]): Authenticator {
  const entries = parseTokens(tokens);
  const known = new Map<string, Principal>();
  const check = (token: string): Principal | undefined => {
    const presented = digest(token);
    let found: Principal | undefined;
    // Compare against every entry, without stopping early, so timing does not tell which matched.
    for (const entry of entries) {
      if (timingSafeEqual(presented, entry.digest) && found?.access !== 'write') found = entry.principal;
    }
    return found;
  };
  return {
    authenticate(headers: IncomingHttpHeaders): Principal | undefined {
      const authorization = headers.authorization;
      if (authorization === undefined) return undefined;
      const remembered = known.get(authorization);
      if (remembered !== undefined) return remembered;
      const token = bearerToken(authorization);
      if (token === undefined) return undefined;
      const principal = check(token);
      if (principal !== undefined) {
        if (known.size >= CACHE_ENTRIES) known.clear();
        known.set(authorization, principal);
      }
      return principal;
    },
  };
}
