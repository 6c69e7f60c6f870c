/**
 * What the access log may say about a request target: the path, and the query with the values of
 * credential-like parameters replaced, so that a token a client put in a URL never reaches a log
 * (docs/conventions.md §6: never log tokens).
 */

/** Shown instead of a secret. */
export const REDACTED = '[redacted]';

/**
 * Query parameter names that carry credentials (OAuth 2's `access_token`, RFC 6750 §2.3, and the
 * usual API-key spellings), compared lower-cased with `-` read as `_`.
 */
const CREDENTIAL_PARAMETER = /^(access_token|refresh_token|id_token|token|auth|authorization|api_key|apikey|key|secret|client_secret|password|passwd|pwd|session|sessionid|signature|sig)$/;

function isCredentialName(rawName: string): boolean {
  let name = rawName;
  try {
    name = decodeURIComponent(rawName.replaceAll('+', ' '));
  } catch {
    // A malformed escape is judged as written.
  }
  return CREDENTIAL_PARAMETER.test(name.trim().toLowerCase().replaceAll('-', '_'));
}

/** The query string with credential-like values redacted; everything else as the client sent it. */
export function redactQuery(query: string): string {
  if (query === '') return '';
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) return pair;
      return isCredentialName(pair.slice(0, eq)) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
    })
    .join('&');
}

/**
 * What looks like a JWT or a piece of one (RFC 7519 §3, RFC 7515 §7.1): a base64url-encoded JSON
 * object (`{"` encodes as `eyJ`) followed by a dot and more base64url parts.
 */
const JWT_LIKE = /eyJ[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*)+/g;

/** `text` with everything that looks like a JWT replaced, wherever a client put it. */
export function redactJwts(text: string): string {
  return text.includes('eyJ') ? text.replace(JWT_LIKE, REDACTED) : text;
}

/**
 * Replaces every configured token, as written or percent-encoded, and everything that looks like a
 * JWT, wherever it appears in `text` (a token sent as a path segment or under an unforeseen
 * parameter name). Tokens are few, and this runs once per logged request.
 */
export function createTokenScrubber(tokens: readonly string[]): (text: string) => string {
  const secrets = [...new Set(tokens.flatMap((raw) => {
    const token = raw.startsWith('read:') ? raw.slice('read:'.length) : raw;
    return token === '' ? [] : [token, encodeURIComponent(token)];
  }))].sort((a, b) => b.length - a.length);
  if (secrets.length === 0) return redactJwts;
  return (text) => {
    let out = redactJwts(text);
    for (const secret of secrets) if (out.includes(secret)) out = out.replaceAll(secret, REDACTED);
    return out;
  };
}
