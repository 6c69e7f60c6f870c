import { NEEDS_ESCAPE } from '../structures/json-string.js';
import { sha256Base64url } from '../structures/sha256.js';
import { badRequest } from './problem.js';
import { encodeComponent } from './uri-component.js';

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
 * The path a ledger key names for a write of resource `name` (a POST: `id` undefined; a PATCH: the
 * id written): the resource's own path, `/<name>` or `/<name>/<id escaped as links escape it>`,
 * never with the base path. Every spelling a request may route through (with `--base-path`'s
 * prefix or without, through `/v1`, an id with escapes or without) writes the same resource, so
 * it is one target; and the base path is the proxy's business, not the resource's: a server
 * restarted with another `--base-path` (or one added) still finds the answers it gave before.
 */
export function ledgerTarget(name: string, id?: string): string {
  return id === undefined ? `/${name}` : `/${name}/${encodeComponent(id)}`;
}

/**
 * The name a store remembers an answer under: a key is the client's own only together with who
 * sent it (the principal), by which method, to which target (`ledgerTarget`). A JSON array, so
 * that no two different requests share a name whatever their parts hold.
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
 * What comes before a key's target, for each method that takes a key: the method's member and the
 * quotes about it. Only the principal's member comes before it, and in a JSON text a quote inside
 * a string is escaped (`\"`), so this text is found nowhere but before the target.
 */
const POST_MARK = '","POST","';
const PATCH_MARK = '","PATCH","';

/**
 * The ledger key of this version for a ledger key an earlier one made (`ledgerKey` with another
 * target), unchanged when it is one of this version's. Answers are stored under their keys (the
 * JSON-lines store's log and answers file, PostgreSQL's table), and they outlive an upgrade by up
 * to 24 hours: a store gives those it reads this name (log/jsonl-store.ts, log/answer-file.ts,
 * pg/earlier-keys.ts), so that the retry of a write answered before the upgrade replays.
 *
 * Earlier targets: until 2026-12-02 the path as the request spelled it (`/v1/items`,
 * `/api/items/a%20b`, the query left out); then the path the server linked, under `--base-path`
 * (`/api/items`). A POST's target is its collection, the last segment; a PATCH's, its entity, the
 * last two, the id escaped as links escape it. A key of no method taking one (a test's own) is
 * left as it is.
 */
export function currentLedgerKey(key: string): string {
  let method = 'POST';
  let from = key.indexOf(POST_MARK);
  if (from !== -1) from += POST_MARK.length;
  else {
    method = 'PATCH';
    from = key.indexOf(PATCH_MARK);
    if (from === -1) return key;
    from += PATCH_MARK.length;
  }
  // Targets hold nothing JSON escapes (a base path, a resource name and an escaped id are URL
  // characters), so the target's text ends at the next quote; one of a request that spelled its
  // path with a quote or a backslash (before 2026-12-02) is read as JSON.
  const to = key.indexOf('"', from);
  if (to === -1) return key;
  const target = key.slice(from, to);
  if (target.includes('\\')) return parsedCurrentKey(key);
  const current = currentTarget(method, target);
  return current === target ? key : key.slice(0, from) + current + key.slice(to);
}

/** `currentLedgerKey` of a key whose target holds escapes: read as JSON, made again; unchanged if it is no ledger key. */
function parsedCurrentKey(key: string): string {
  let parts: unknown;
  try {
    parts = JSON.parse(key);
  } catch {
    return key;
  }
  if (!Array.isArray(parts) || parts.length !== 4 || !parts.every((part) => typeof part === 'string')) return key;
  const [principal, method, target, client] = parts as [string, string, string, string];
  return ledgerKey(principal, method, currentTarget(method, target), client);
}

/** `ledgerTarget` of an earlier version's target of `method` (see `currentLedgerKey`). */
function currentTarget(method: string, target: string): string {
  // This version's own, the usual case: `/items`, `/items/<id>` (one with escapes is made again).
  const last = target.lastIndexOf('/');
  if ((method === 'POST' ? last === 0 : last > 1 && target.lastIndexOf('/', last - 1) === 0) && !target.includes('%')) return target;
  const segments = target.split('/').filter((segment) => segment !== '');
  const name = segments[segments.length - (method === 'POST' ? 1 : 2)];
  if (name === undefined) return target;
  return ledgerTarget(unescaped(name), method === 'POST' ? undefined : unescaped(segments[segments.length - 1]!));
}

/** A path segment without its percent-escapes; as it is where they are malformed. */
function unescaped(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
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
