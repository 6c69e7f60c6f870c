import { constants, verify, type KeyObject } from 'node:crypto';

/**
 * Checking a JSON Web Token (RFC 7519) in JWS compact serialization (RFC 7515 §7.1) with
 * `node:crypto` alone, following the JWT best current practices of RFC 8725. Each function returns
 * a reason (a sentence that never repeats the token) when it refuses; the caller turns that into a
 * 401 problem. No function here throws on input from a client.
 */

/** RFC 8725 §3.1: the algorithms accepted, and nothing else (never `none`, never an HMAC). */
export const JWT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

/** Longest token checked, in bytes: a larger one is refused before any decoding. */
export const MAX_JWT_BYTES = 8 * 1024;

/** Seconds of clock difference allowed for `exp`, `nbf` and `iat` (RFC 7519 §4.1.4 "some small leeway"). */
export const CLOCK_LEEWAY_SECONDS = 60;

/** A public key of the key set, and the algorithms it may verify (RFC 8725 §3.1: bound to its type). */
export interface VerificationKey {
  readonly kid: string | undefined;
  readonly algorithms: readonly JwtAlgorithm[];
  readonly key: KeyObject;
}

/** A token taken apart, not yet verified. */
export interface DecodedJwt {
  readonly alg: JwtAlgorithm;
  readonly kid: string | undefined;
  readonly claims: Readonly<Record<string, unknown>>;
  /** `<header>.<payload>` as sent: what the signature covers (RFC 7515 §5.2). */
  readonly signingInput: string;
  readonly signature: Buffer;
}

/** The claims a server expects of every token (RFC 8725 §3.8, §3.9). */
export interface ExpectedClaims {
  readonly issuer: string;
  readonly audience: string;
  /** Unix seconds. */
  readonly now: number;
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;
const isAlgorithm = (alg: unknown): alg is JwtAlgorithm => JWT_ALGORITHMS.includes(alg as JwtAlgorithm);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A base64url part as a JSON object, or undefined. */
function jsonPart(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Takes a compact JWS apart and checks its header; a reason when it cannot be one halserve accepts. */
export function decodeJwt(token: string): DecodedJwt | string {
  if (token.length > MAX_JWT_BYTES) return `it is longer than ${MAX_JWT_BYTES} bytes`;
  const parts = token.split('.');
  if (parts.length === 5) return 'it is encrypted (JWE); only signed tokens (JWS) are accepted';
  if (parts.length !== 3) return 'it is not three base64url parts separated by dots';
  const [head = '', body = '', sig = ''] = parts;
  if (!BASE64URL.test(head) || !BASE64URL.test(body) || !BASE64URL.test(sig)) return 'it has characters outside base64url';
  const header = jsonPart(head);
  if (header === undefined) return 'its header is not a base64url-encoded JSON object';
  const alg = header['alg'];
  if (alg === undefined) return 'its header has no alg';
  // RFC 8725 §3.1: the algorithm is chosen by the key, never trusted from the token.
  if (alg === 'none') return 'it is unsigned (alg "none")';
  if (typeof alg === 'string' && alg.startsWith('HS')) return `its algorithm ${alg} is a shared-secret HMAC, which is never accepted`;
  if (!isAlgorithm(alg)) return `its algorithm ${JSON.stringify(alg)} is not one of ${JWT_ALGORITHMS.join(', ')}`;
  // RFC 7515 §4.1.11: an extension the recipient does not understand must be refused; halserve understands none.
  if ('crit' in header) return 'its header has a crit parameter; no extension is understood';
  const kid = header['kid'];
  if (kid !== undefined && typeof kid !== 'string') return 'its kid is not a string';
  const claims = jsonPart(body);
  if (claims === undefined) return 'its payload is not a base64url-encoded JSON object';
  if (sig === '') return 'it has no signature';
  return { alg, kid, claims, signingInput: `${head}.${body}`, signature: Buffer.from(sig, 'base64url') };
}

/** True when `signature` over the token is `key`'s, by the token's algorithm (RFC 7518 §3). */
export function verifySignature(decoded: DecodedJwt, key: VerificationKey): boolean {
  if (!key.algorithms.includes(decoded.alg)) return false;
  const data = Buffer.from(decoded.signingInput);
  try {
    switch (decoded.alg) {
      case 'RS256':
        return verify('sha256', data, key.key, decoded.signature);
      case 'PS256':
        // RFC 7518 §3.5: MGF1 with SHA-256, a salt as long as the hash.
        return verify('sha256', data, { key: key.key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, decoded.signature);
      case 'ES256':
        // RFC 7518 §3.4: R and S, 32 bytes each, not DER.
        return decoded.signature.length === 64 && verify('sha256', data, { key: key.key, dsaEncoding: 'ieee-p1363' }, decoded.signature);
      case 'EdDSA':
        return verify(null, data, key.key, decoded.signature);
    }
  } catch {
    // A signature of the wrong shape for the key.
    return false;
  }
}

/** A NumericDate for a message: ISO 8601 when it is a date JavaScript can show. */
function when(seconds: number): string {
  const ms = seconds * 1000;
  return Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : String(seconds);
}

const numeric = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

/**
 * The registered claims checked (RFC 7519 §4.1, RFC 8725 §3.8–3.10): `exp` required, `nbf` and
 * `iat` not in the future, each with the leeway; `iss` the issuer; `aud` the audience or an array
 * holding it; `sub` a string when present. No maximum age through `iat`.
 */
export function checkClaims(claims: Readonly<Record<string, unknown>>, expected: ExpectedClaims): string | undefined {
  const { exp, nbf, iat, iss, aud, sub } = claims;
  const { now } = expected;
  if (exp === undefined) return 'it has no exp claim';
  if (!numeric(exp)) return 'its exp claim is not a number';
  if (now > exp + CLOCK_LEEWAY_SECONDS) return `it expired at ${when(exp)}`;
  if (nbf !== undefined) {
    if (!numeric(nbf)) return 'its nbf claim is not a number';
    if (nbf > now + CLOCK_LEEWAY_SECONDS) return `it is not valid before ${when(nbf)}`;
  }
  if (iat !== undefined) {
    if (!numeric(iat)) return 'its iat claim is not a number';
    if (iat > now + CLOCK_LEEWAY_SECONDS) return `it was issued in the future (${when(iat)})`;
  }
  if (iss !== expected.issuer) return `its iss claim is not ${JSON.stringify(expected.issuer)}`;
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  if (!audiences.includes(expected.audience)) return `its aud claim does not name ${JSON.stringify(expected.audience)}`;
  if (sub !== undefined && typeof sub !== 'string') return 'its sub claim is not a string';
  return undefined;
}
