import { NEEDS_ESCAPE } from '../structures/json-string.js';
import { sha256Base64url } from '../structures/sha256.js';
import { badRequest } from './problem.js';

/**
 * `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header; docs/conventions.md): the header a
 * client sends with a POST or PATCH it may retry, and what a replayed answer carries. Pure
 * functions: parsing the key, and the names under which a store remembers its answer.
 */

/** The request header (draft-ietf-httpapi-idempotency-key-header), lower-case as node gives it. */
export const IDEMPOTENCY_KEY = 'idempotency-key';
/** Sent with an answer that is a replay of the first one (`true`); a halserve name, as in Stripe's `Idempotent-Replayed`. */
export const IDEMPOTENCY_REPLAYED = 'idempotency-replayed';
/** The longest key taken (the draft leaves the length to the server). */
export const MAX_KEY_LENGTH = 255;

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * The key of an `Idempotency-Key` value: a Structured Field string (RFC 9651 §3.3.3:
 * `"8e03978e-…"`, with `\"` and `\\` the only escapes) or, as many clients send it, the bare key.
 * The key is 1–255 visible ASCII characters. Anything else (and the header sent twice) is a 400
 * problem saying what is wrong; `undefined` when the header is absent.
 */
export function parseIdempotencyKey(value: string | readonly string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw badKey('The request has more than one Idempotency-Key header');
  const text = value.trim();
  let key = text;
  if (text.startsWith('"')) {
    const unquoted = sfString(text);
    if (unquoted === undefined) throw badKey('Idempotency-Key must be a Structured Field string ("…", with \\" and \\\\ the only escapes) or a bare key');
    key = unquoted;
  }
  if (key.length === 0) throw badKey('Idempotency-Key must not be empty');
  if (key.length > MAX_KEY_LENGTH) throw badKey(`Idempotency-Key must be at most ${MAX_KEY_LENGTH} characters`);
  if (!VISIBLE_ASCII.test(key)) throw badKey('Idempotency-Key must be visible ASCII characters only (no spaces, commas of a repeated header, or control characters)');
  return key;
}

/** The content of an sf-string that is the whole of `text`, or undefined (RFC 9651 §4.2.5; no parameters). */
function sfString(text: string): string | undefined {
  let out = '';
  for (let i = 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\') {
      const next = text[++i];
      if (next !== '"' && next !== '\\') return undefined;
      out += next;
    } else if (c === '"') {
      return i === text.length - 1 ? out : undefined;
    } else {
      const code = c.charCodeAt(0);
      if (code < 0x20 || code > 0x7e) return undefined;
      out += c;
    }
  }
  return undefined;
}

function badKey(detail: string): ReturnType<typeof badRequest> {
  return badRequest(detail);
}

/**
 * The name a store remembers an answer under: a key is the client's own only together with who
 * sent it (the principal), by which method, to which path. A JSON array, so that no two different
 * requests share a name whatever their parts hold.
 */
export function ledgerKey(principal: string, method: string, path: string, key: string): string {
  return ledgerName(principal, method, path, key).key;
}

/** A ledger key (`ledgerKey`), and its JSON string literal (`JSON.stringify(key)`) where it came at no cost. */
export interface LedgerName {
  readonly key: string;
  readonly json: string | undefined;
}

/**
 * `ledgerKey`, with the key's JSON string literal when none of its parts has anything JSON
 * escapes: the key's own quotes are then all it escapes, so the literal is written out as the key
 * is, in a tenth of the time `JSON.stringify` takes over its quotes (a JSON-lines store writes the
 * key so in its log: answer-lines.ts).
 */
export function ledgerName(principal: string, method: string, path: string, key: string): LedgerName {
  // Parts with nothing JSON escapes are joined as they are: the same text, in half the time the
  // generic serialiser takes (bench/NOTES.md, "answers as bytes outside the heap"). Any other
  // part sends the whole key the long way.
  if (NEEDS_ESCAPE.test(principal) || NEEDS_ESCAPE.test(path) || NEEDS_ESCAPE.test(key) || NEEDS_ESCAPE.test(method)) return { key: JSON.stringify([principal, method, path, key]), json: undefined };
  return { key: `["${principal}","${method}","${path}","${key}"]`, json: `"[\\"${principal}\\",\\"${method}\\",\\"${path}\\",\\"${key}\\"]"` };
}

/**
 * What begins a digest of a request's bytes (`requestFingerprint`), and none made by earlier
 * versions (base64url has no `.`): an answer recorded with it is compared with the digest of the
 * retry's bytes only, never with the digest of its value re-serialised (`legacyFingerprint`), which
 * for a compact first body equals the first's bytes whatever the retry's spacing.
 */
export const FINGERPRINT_MARK = 'b.';

/**
 * A digest of a request's body as it came, its bytes (SHA-256, base64url, after
 * `FINGERPRINT_MARK`): the same key with another body is a 422. The bytes, not the JSON value:
 * hashing them costs 0.35 µs on a 190-byte body, serialising the value first and hashing the text
 * 2.6 µs (`bench/NOTES.md`), and a retry sends the bytes it sent before.
 */
export function requestFingerprint(body: Uint8Array): string {
  return FINGERPRINT_MARK + sha256Base64url(body);
}

/**
 * The digest the earliest versions stored (SHA-256 of the parsed body serialised again): an answer
 * they recorded still replays to a retry of the same request after an upgrade (`matchesRequest`).
 */
export function legacyFingerprint(body: unknown): string {
  return sha256Base64url(JSON.stringify(body));
}
