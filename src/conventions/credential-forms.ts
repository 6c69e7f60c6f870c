/**
 * What a configured credential may look like (README, "Authentication"): a static token a client
 * can send, and a key set URL halserve may fetch. Pure checks, shared by the configuration (which
 * refuses a bad value at start-up, naming the option) and the authenticators.
 */

/** Prefix of a token that may only read. */
export const READ_ONLY_PREFIX = 'read:';

/**
 * What a client can send after `Bearer ` and have arrive unchanged: visible ASCII, no spaces.
 * (RFC 6750 §2.1's b64token is narrower; tokens in use are not always that tidy.)
 */
export const SENDABLE_TOKEN = /^[\x21-\x7e]+$/;

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

/** True for a loopback host, where an `http:` set URL is allowed. */
function loopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** A `--jwks` value that names a URL (a scheme and `//`) rather than a file. */
export const looksLikeUrl = (source: string): boolean => /^[a-z][a-z0-9+.-]*:\/\//i.test(source);

/** Why a set URL cannot be used, or undefined: `https:`, or `http:` on a loopback host. */
export function keySetUrlProblem(source: string): string | undefined {
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    return `${JSON.stringify(source)} is not a URL`;
  }
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && loopbackHost(url.hostname)) return undefined;
  return `${url.protocol}//${url.host} is neither https nor http on a loopback address (127.0.0.0/8, [::1], localhost)`;
}
