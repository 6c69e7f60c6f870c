import { composeAuthenticators, type Authentication, type Authenticator } from './auth.js';
import { jwtAuthenticator, type JwtContext, type JwtOptions } from './jwt-authenticator.js';
import { staticTokenAuthenticator } from './static-tokens.js';

/** The credentials a server is configured with. */
export interface Credentials {
  /** Static bearer tokens, `read:`-prefixed for read-only ones. */
  readonly tokens?: readonly string[];
  /** Bearer JWTs from an identity provider. */
  readonly jwt?: JwtOptions;
  /** An embedder's own authenticator. */
  readonly authenticator?: Authenticator;
}

/**
 * The server's authentication: JWTs first, then static tokens, then the embedder's authenticator.
 * The order keeps every cached check one Map lookup: a JWT seen before answers from the JWT cache
 * without a static token's SHA-256, and a static token (which has no dot, in the usual case) is
 * passed over by the JWT authenticator at the cost of a lookup and a scan for a dot. None
 * configured: authentication is off.
 */
export function serverAuthentication(credentials: Credentials, context: JwtContext): Authentication {
  const tokens = credentials.tokens ?? [];
  return composeAuthenticators([
    ...(credentials.jwt === undefined ? [] : [jwtAuthenticator(credentials.jwt, context)]),
    ...(tokens.length === 0 ? [] : [staticTokenAuthenticator(tokens)]),
    ...(credentials.authenticator === undefined ? [] : [credentials.authenticator]),
  ]);
}
