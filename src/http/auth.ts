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

/** Checks requests against the configured bearer tokens (contract §6). */
export interface Authenticator {
  /** False when no token is configured: every request is let through. */
  readonly enabled: boolean;
  /** Throws a 401 problem for a missing or unknown token, 403 for a read token on a write. */
  check(authorization: string | undefined, write: boolean): void;
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

export function createAuthenticator(tokens: readonly string[]): Authenticator {
  const entries = parseTokens(tokens);
  return {
    enabled: entries.length > 0,
    check(authorization, write) {
      if (entries.length === 0) return;
      const token = bearerToken(authorization);
      if (token === undefined) throw unauthorized('A bearer token is required: Authorization: Bearer <token>');
      const presented = digest(token);
      let access: Access | undefined;
      // Compare against every entry, without stopping early, so timing does not tell which matched.
      for (const entry of entries) {
        if (timingSafeEqual(presented, entry.digest) && access !== 'write') access = entry.access;
      }
      if (access === undefined) throw unauthorized('The bearer token is not valid');
      if (write && access === 'read') throw forbidden('This token may only read');
    },
  };
}
