import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { keySetUrlProblem } from '../conventions/credential-forms.js';
import { quotableUrl } from '../conventions/quotable-url.js';
import { JWT_ALGORITHMS, type JwtAlgorithm, type VerificationKey } from './jwt.js';

/**
 * JSON Web Key Sets (RFC 7517 §5): from a file read at start-up, or from a URL kept fresh.
 *
 * A URL set is fetched at most every `MIN_FETCH_INTERVAL_SECONDS` whatever happens (at start-up,
 * once `MAX_AGE_SECONDS` have passed, or when a token names a `kid` the set does not hold): a
 * client inventing `kid`s cannot make the server hammer its identity provider. A fetched set
 * replaces the last good one; a fetch that fails (network, status, a document without a usable
 * key) keeps it, so an identity provider that is briefly away refuses nobody.
 */

/** Oldest a fetched set is used before it is fetched again (a stale one is still used if that fails). */
export const MAX_AGE_SECONDS = 600;
/** Least time between the starts of two fetches of a set. */
export const MIN_FETCH_INTERVAL_SECONDS = 30;
/** Longest wait for a set's URL to answer in full, head and body. */
const FETCH_TIMEOUT_MS = 5_000;
/** Largest set document read. */
const MAX_SET_BYTES = 1024 * 1024;
/** RFC 7518 §3.3: an RSA key for RS256/PS256 is 2048 bits or more. */
const MIN_RSA_BITS = 2048;

/** A key set that cannot be used; the message is the one line a user sees. */
export class JwksError extends Error {
  override readonly name = 'JwksError';
}

/** Why no key verifies a token; `unknownKid` when the set holds no key of its `kid` (a refetch may help). */
export interface KeyRefusal {
  readonly reason: string;
  readonly unknownKid: boolean;
}

/** Where a token's key comes from. */
export interface KeySet {
  /** The key for a token's `kid` and `alg`, or why there is none; a promise while the set must be fetched. */
  select(kid: string | undefined, alg: JwtAlgorithm): VerificationKey | KeyRefusal | Promise<VerificationKey | KeyRefusal>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** RFC 8725 §3.1: the algorithms a key's type admits, or none for a key halserve never uses. */
function algorithmsOf(jwk: Record<string, unknown>, key: KeyObject): readonly JwtAlgorithm[] {
  const details = key.asymmetricKeyDetails;
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return (details?.modulusLength ?? 0) >= MIN_RSA_BITS ? ['RS256', 'PS256'] : [];
    case 'ec':
      return details?.namedCurve === 'prime256v1' && jwk['crv'] === 'P-256' ? ['ES256'] : [];
    case 'ed25519':
      return ['EdDSA'];
    default:
      return [];
  }
}

/** One JWK as a verification key, or undefined when it cannot verify a token halserve accepts. */
function importKey(jwk: unknown): VerificationKey | undefined {
  if (!isObject(jwk) || typeof jwk['kty'] !== 'string') return undefined;
  // RFC 8725 §3.2: a symmetric key is never used, so no HMAC can be keyed with anything from the set.
  if (jwk['kty'] !== 'RSA' && jwk['kty'] !== 'EC' && jwk['kty'] !== 'OKP') return undefined;
  // RFC 7517 §4.2, §4.3: a key meant for something else.
  if (jwk['use'] !== undefined && jwk['use'] !== 'sig') return undefined;
  if (jwk['key_ops'] !== undefined && !(Array.isArray(jwk['key_ops']) && jwk['key_ops'].includes('verify'))) return undefined;
  const kid = jwk['kid'];
  if (kid !== undefined && typeof kid !== 'string') return undefined;
  let key: KeyObject;
  try {
    // Only the public members: a set that leaks a private key still yields only its public half.
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, oth: _oth, ...publicPart } = jwk;
    key = createPublicKey({ key: publicPart as JsonWebKey, format: 'jwk' });
  } catch {
    return undefined;
  }
  const fitting = algorithmsOf(jwk, key);
  const alg = jwk['alg'];
  // The key's own `alg`, when it has one, narrows what it verifies; one that does not fit its type makes it unusable.
  const algorithms = alg === undefined ? fitting : fitting.filter((a) => a === alg);
  return algorithms.length === 0 ? undefined : { kid, algorithms, key };
}

/** The usable keys of a JWKS document; a document without one is a `JwksError`. */
export function importKeySet(document: unknown, source: string): VerificationKey[] {
  if (!isObject(document) || !Array.isArray(document['keys'])) throw new JwksError(`${source}: not a JSON Web Key Set (an object with a "keys" array)`);
  const keys = document['keys'].map(importKey).filter((k): k is VerificationKey => k !== undefined);
  if (keys.length === 0) {
    throw new JwksError(`${source}: no key of the set can verify ${JWT_ALGORITHMS.join(', ')} (RSA of ${MIN_RSA_BITS} bits or more, EC P-256, OKP Ed25519; use "sig")`);
  }
  return keys;
}

/**
 * The key for a token: the one its `kid` names, which must admit its `alg`; without `kid`, the
 * only key that admits its `alg`.
 */
export function selectKey(keys: readonly VerificationKey[], kid: string | undefined, alg: JwtAlgorithm): VerificationKey | KeyRefusal {
  if (kid !== undefined) {
    const key = keys.find((k) => k.kid === kid);
    if (key === undefined) return { reason: `no key of the key set has its kid ${JSON.stringify(kid)}`, unknownKid: true };
    if (!key.algorithms.includes(alg)) return { reason: `its algorithm ${alg} does not fit the key ${JSON.stringify(kid)} (${key.algorithms.join(', ')})`, unknownKid: false };
    return key;
  }
  const fitting = keys.filter((k) => k.algorithms.includes(alg));
  if (fitting.length === 1) return fitting[0]!;
  return { reason: fitting.length === 0 ? `it has no kid and no key of the set takes ${alg}` : `it has no kid and ${fitting.length} keys of the set take ${alg}`, unknownKid: fitting.length === 0 };
}

/** A set read once: from a file at start-up, or given by an embedder. */
export function staticKeySet(document: unknown, source = 'key set'): KeySet {
  const keys = importKeySet(document, source);
  return { select: (kid, alg) => selectKey(keys, kid, alg) };
}

/** Reads and checks a key set file; a file that cannot be read or used is a `JwksError`. */
export async function readKeySetFile(path: string): Promise<KeySet> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new JwksError(`--jwks ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new JwksError(`--jwks ${path}: not valid JSON`);
  }
  return staticKeySet(document, `--jwks ${path}`);
}

export interface RemoteKeySetOptions {
  /** Unix seconds (tests pin it). */
  readonly now: () => number;
  /** One line per failed fetch. */
  readonly warn?: (message: string) => void;
  /** The fetch to use (tests may count calls); default the global one. */
  readonly fetch?: typeof fetch;
  /** Longest wait for the whole answer, head and body, in milliseconds (tests shorten it); default 5 000. */
  readonly timeoutMs?: number;
}

/** A set kept fresh from `url`; see this file's header for when it is fetched. */
export interface RemoteKeySet extends KeySet {
  /** Fetches now unless a fetch began in the last 30 s; resolves once that fetch (or the one in flight) ends. */
  refresh(): Promise<void>;
  /** Fetches begun so far, failed or not. */
  readonly fetches: number;
}

/**
 * A response's body as text (UTF-8, as `Response.text` decodes it), each read raced with
 * `deadline`, counted as it arrives (decoded: a gzip answer's `Content-Length` says nothing of it;
 * a chunked one has none): past `MAX_SET_BYTES`, or cut off by the deadline, it is cancelled, which
 * closes its connection, and nothing more of it is held.
 */
async function bodyText(response: Response, deadline: Promise<never>): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), deadline]);
      if (done) return new TextDecoder().decode(Buffer.concat(chunks));
      bytes += value.byteLength;
      if (bytes > MAX_SET_BYTES) throw new JwksError(`its set is larger than ${MAX_SET_BYTES} bytes`);
      chunks.push(value);
    }
  } catch (error) {
    void reader.cancel().catch(() => undefined);
    throw error;
  }
}

/** A key set fetched from `url` (checked with `keySetUrlProblem` first). */
export function remoteKeySet(url: string, options: RemoteKeySetOptions): RemoteKeySet {
  const problem = keySetUrlProblem(url);
  if (problem !== undefined) throw new JwksError(`--jwks: ${problem}`);
  const { now } = options;
  const get = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? FETCH_TIMEOUT_MS;
  // A failure's message may quote the URL (Node's fetch does, for one with user-info): as written,
  // or as the URL parser writes it; either is said without what may hold credentials.
  const written = [...new Set([url, new URL(url).href])].sort((a, b) => b.length - a.length);
  const withoutCredentials = (message: string): string => written.reduce((text, form) => text.replaceAll(form, quotableUrl(form)), message);
  let keys: VerificationKey[] | undefined;
  let fetchedAt = -Infinity;
  let began = -Infinity;
  let fetches = 0;
  let inFlight: Promise<void> | undefined;

  const load = async (): Promise<VerificationKey[]> => {
    // One deadline for the head and the body, kept here rather than left to fetch's signal alone:
    // once the head has come, fetch holds its abort only weakly, and after a garbage collection an
    // abort is lost, so a body that stalls would keep this fetch in flight for good (and with it
    // every later fetch of the set). So the body is read here, each read raced with the deadline.
    const controller = new AbortController();
    let expire: () => void = () => undefined;
    const deadline = new Promise<never>((_, reject) => {
      expire = () => reject(new JwksError(`no whole answer within ${timeoutMs} ms`));
    });
    // Raced below, or not at all when the answer came in time.
    deadline.catch(() => undefined);
    const timer = setTimeout(() => {
      expire();
      controller.abort();
    }, timeoutMs);
    timer.unref();
    try {
      const response = await Promise.race([get(url, { signal: controller.signal, redirect: 'error', headers: { accept: 'application/jwk-set+json, application/json' } }), deadline]);
      if (response.status !== 200) throw new JwksError(`answered ${response.status}`);
      const length = Number(response.headers.get('content-length') ?? 0);
      if (length > MAX_SET_BYTES) throw new JwksError(`its set is larger than ${MAX_SET_BYTES} bytes`);
      const text = await bodyText(response, deadline);
      let document: unknown;
      try {
        document = JSON.parse(text);
      } catch {
        throw new JwksError('its set is not valid JSON');
      }
      return importKeySet(document, 'its set');
    } finally {
      clearTimeout(timer);
    }
  };

  /**
   * Seconds since `then` by the server's clock. A wall clock set back (NTP stepping it, a VM resumed)
   * is before `then`: how long ago that was cannot be known, so it counts as long ago. Counted as
   * negative instead, it would hold back every fetch, and keep the set from ageing, for as long as
   * the clock was set back: a rotated key would be refused for that long.
   */
  const since = (then: number): number => {
    const at = now();
    return at < then ? Infinity : at - then;
  };

  const fetchNow = (): Promise<void> => {
    if (inFlight !== undefined) return inFlight;
    if (since(began) < MIN_FETCH_INTERVAL_SECONDS) return Promise.resolve();
    began = now();
    fetches++;
    inFlight = load().then(
      (fresh) => {
        keys = fresh;
        fetchedAt = now();
      },
      (error: unknown) => options.warn?.(`key set ${quotableUrl(url)} could not be fetched (${withoutCredentials((error as Error).message)}); ${keys === undefined ? 'JWTs are refused until it can be' : 'the last good set is kept'}`),
    ).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  const fromKept = (kid: string | undefined, alg: JwtAlgorithm): VerificationKey | KeyRefusal =>
    keys === undefined ? { reason: 'the key set could not be fetched yet', unknownKid: false } : selectKey(keys, kid, alg);

  return {
    get fetches() {
      return fetches;
    },
    refresh: fetchNow,
    select(kid, alg) {
      const may = inFlight !== undefined || since(began) >= MIN_FETCH_INTERVAL_SECONDS;
      if (keys === undefined || since(fetchedAt) >= MAX_AGE_SECONDS) {
        return may ? fetchNow().then(() => fromKept(kid, alg)) : fromKept(kid, alg);
      }
      const found = selectKey(keys, kid, alg);
      if ('key' in found || !found.unknownKid || !may) return found;
      return fetchNow().then(() => fromKept(kid, alg));
    },
  };
}
