import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Access } from '../conventions/scopes.js';
import { READ_ONLY_PREFIX, tokenProblem } from '../conventions/credential-forms.js';
import { bearerToken, type Authenticator, type Principal } from './auth.js';

/**
 * The static bearer tokens of `--token` (README, "Authentication"): each a principal of its own,
 * `read:`-prefixed ones read-only.
 *
 * A check costs one SHA-256 of the presented token and one lookup of that digest in a table of the
 * configured tokens' digests, however many tokens are configured: comparing the digest with every
 * configured one in turn cost ~0.2 µs a token, 200 µs a request with 1,000 tokens, paid again by
 * every request a remembered value did not answer (bench/NOTES.md, "many clients"). The lookup's
 * timing can tell a client only about digests: it chooses the token, not its SHA-256, so at most it
 * learns bits of a configured token's digest, from which, as from the principal key, only a short,
 * guessable token can be found by trying. The digest found is then compared in constant time.
 *
 * A valid `Authorization` value is then remembered, so that the next request with it costs one Map
 * lookup. Only valid values are remembered (an invented token never enters the cache); the cache
 * holds at most `CACHE_ENTRIES` more values than there are tokens (so that every configured token's
 * usual spelling fits, with room for others) and is emptied when full: a client can only churn it
 * with valid tokens, and a server with more clients than the cache holds would otherwise check
 * nearly every request afresh.
 */

/** Values remembered beyond one per configured token; emptied when full (no recency order to keep). */
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

/** The static tokens' authenticator, with what it has done so far (tests count it, as `RemoteKeySet.fetches`). */
export interface StaticTokenAuthenticator extends Authenticator {
  /** Presented tokens checked (digested and looked up): every request its remembered values did not answer. */
  readonly checks: number;
  /** Constant-time comparisons of a presented digest with a configured one: at most one a check. */
  readonly comparisons: number;
}

/** An authenticator over `tokens`; undefined for a credential that is none of them (another authenticator may know it). */
export function staticTokenAuthenticator(tokens: readonly string[]): StaticTokenAuthenticator {
  // By digest (each byte one char code): the same token configured twice, once `read:`, may write.
  const byDigest = new Map<string, TokenEntry>();
  for (const entry of parseTokens(tokens)) {
    const key = entry.digest.toString('latin1');
    if (byDigest.get(key)?.principal.access !== 'write') byDigest.set(key, entry);
  }
  const capacity = CACHE_ENTRIES + byDigest.size;
  const known = new Map<string, Principal>();
  let checks = 0;
  let comparisons = 0;
  const check = (token: string): Principal | undefined => {
    checks++;
    const presented = digest(token);
    const entry = byDigest.get(presented.toString('latin1'));
    if (entry === undefined) return undefined;
    comparisons++;
    return timingSafeEqual(presented, entry.digest) ? entry.principal : undefined;
  };
  return {
    get checks() {
      return checks;
    },
    get comparisons() {
      return comparisons;
    },
    authenticate(headers: IncomingHttpHeaders): Principal | undefined {
      const authorization = headers.authorization;
      if (authorization === undefined) return undefined;
      const remembered = known.get(authorization);
      if (remembered !== undefined) return remembered;
      const token = bearerToken(authorization);
      if (token === undefined) return undefined;
      const principal = check(token);
      if (principal !== undefined) {
        if (known.size >= capacity) known.clear();
        known.set(authorization, principal);
      }
      return principal;
    },
    // Only a remembered value is told: telling a token not configured from one not yet presented
    // takes the digest `authenticate` computes. No value at all is not a static token.
    known(authorization: string | undefined): Principal | null | undefined {
      return authorization === undefined ? null : known.get(authorization);
    },
  };
}
