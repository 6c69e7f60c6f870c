import { createHash, timingSafeEqual } from 'node:crypto';
import { forbidden, unauthorized } from '../conventions/problem.js';

/** Prefix of a token that may only read (contract §6). */
export const READ_ONLY_PREFIX = 'read:';

/**
 * What a client can send after `Bearer ` and have arrive unchanged: visible ASCII, no spaces.
 * (RFC 6750 §2.1's b64token is narrower; tokens in use are not always that tidy.)
 */
export const SENDABLE_TOKEN = /^[\x21-\x7e]+$/;

/** What a token may do. */
export type Access = 'read' | 'write';

interface TokenEntry {
  readonly digest: Buffer;
  readonly access: Access;
}

/** Who a request's valid token says it is: its access, and a key naming the token without holding it. */
export interface Principal {
  readonly access: Access;
  /** `token:<n>`, the token's position in the configuration (rate limits count per token). */
  readonly key: string;
}

/** Checks requests against the configured bearer tokens (contract §6). */
export interface Authenticator {
  /** False when no token is configured: every request is let through. */
  readonly enabled: boolean;
  /** The principal of a valid bearer token, or undefined for none, an unknown one, or no authentication. */
  identify(authorization: string | undefined): Principal | undefined;
  /** Throws a 401 problem for a missing or unknown token, 403 for a read token on a write. */
  authorize(principal: Principal | undefined, authorization: string | undefined, write: boolean): void;
  /** `identify` then `authorize`; returns the principal. */
  check(authorization: string | undefined, write: boolean): Principal | undefined;
}

// Comparing fixed-length digests keeps the comparison's time independent of the token's length and content.
const digest = (token: string): Buffer => createHash('sha256').update(token).digest();

/**
 * Why a configured token (`read:`-prefixed or plain) can never be presented, or undefined when it
 * can. The message never repeats the token.
 */
export function tokenProblem(raw: string, position: number): string | undefined {
  const token = raw.startsWith(READ_ONLY_PREFIX) ? raw.slice(READ_ONLY_PREFIX.length) : raw;
  if (token === '') return `token ${position} is empty`;
  if (!SENDABLE_TOKEN.test(token)) {
    return `token ${position} has characters no client can send in an Authorization header (only visible ASCII, no spaces)`;
  }
  return undefined;
}

/** Parses `read:`-prefixed and plain tokens; one that no client could send is refused. */
export function parseTokens(tokens: readonly string[]): TokenEntry[] {
  return tokens.map((raw, i) => {
    const problem = tokenProblem(raw, i + 1);
    if (problem) throw new Error(problem);
    const access: Access = raw.startsWith(READ_ONLY_PREFIX) ? 'read' : 'write';
    return { digest: digest(access === 'read' ? raw.slice(READ_ONLY_PREFIX.length) : raw), access };
  });
}

/** The credential of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), or undefined. */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^Bearer +(\S+) *$/i.exec(authorization);
  return match?.[1];
}

/** An authenticator over `tokens` (`read:`-prefixed or plain); none configured lets everything through. */
export function createAuthenticator(tokens: readonly string[]): Authenticator {
  const entries = parseTokens(tokens);
  const identify = (authorization: string | undefined): Principal | undefined => {
    if (entries.length === 0) return undefined;
    const token = bearerToken(authorization);
    if (token === undefined) return undefined;
    const presented = digest(token);
    let found: Principal | undefined;
    // Compare against every entry, without stopping early, so timing does not tell which matched.
    entries.forEach((entry, i) => {
      if (timingSafeEqual(presented, entry.digest) && found?.access !== 'write') found = { access: entry.access, key: `token:${i}` };
    });
    return found;
  };
  const authorize = (principal: Principal | undefined, authorization: string | undefined, write: boolean): void => {
    if (entries.length === 0) return;
    if (principal === undefined) {
      throw unauthorized(bearerToken(authorization) === undefined ? 'A bearer token is required: Authorization: Bearer <token>' : 'The bearer token is not valid');
    }
    if (write && principal.access === 'read') throw forbidden('This token may only read');
  };
  return {
    enabled: entries.length > 0,
    identify,
    authorize,
    check(authorization, write) {
      const principal = identify(authorization);
      authorize(principal, authorization, write);
      return principal;
    },
  };
}
