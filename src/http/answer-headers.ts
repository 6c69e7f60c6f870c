import { NEEDS_ESCAPE } from '../structures/json-string.js';

/**
 * The headers of a write's entity answer (resource-routes.ts `entityReply`) as JSON text, for the
 * answer a keyed write records (idempotent-write.ts, the JSON-lines store's answers line:
 * src/store/log/answer-lines.ts). The text is exactly `JSON.stringify` of the headers object the
 * answer is sent with — the same members in the same order, the same escapes — written from a
 * template: `JSON.stringify` of that five-member object took 1.4 µs a keyed POST, the template a
 * tenth of it (bench/NOTES.md, "2026-12-03").
 *
 * A value is written unescaped only where it cannot hold a character JSON escapes: the media type
 * is looked up (each one's text made once, by `JSON.stringify`); `Vary` is a constant;
 * `Last-Modified` is an HTTP date (`httpDate`: letters, digits, spaces, commas and colons), its text
 * made again only when the date changes; a tag is a quoted string of visible ASCII, its quotes
 * escaped, once checked to be so (a store of an embedder's may make any version); `Location` is the
 * collection's path, checked once per path, and the id percent-encoded (`encodeURIComponent` writes
 * ASCII letters, digits and `-_.!~*'()%` only). Anything else takes `JSON.stringify`. Pure but for
 * those memos.
 */

/** The header object's members, in the order `jsonReply` and `entityReply` make them. */
export interface EntityAnswerHeaders {
  readonly 'content-type': string;
  readonly vary: string;
  readonly etag: string;
  readonly 'last-modified'?: string;
  readonly location?: string;
}

/** A tag of visible ASCII but `"` and `\` inside its quotes (RFC 9110 §8.8.3's `etagc`, less the backslash and obs-text). */
const PLAIN_TAG = /^"[\x21\x23-\x5b\x5d-\x7e]*"$/;

/** Each media type's JSON text (a handful: negotiation.ts). */
const mediaTypes = new Map<string, string>();
/** Whether each collection path needs escapes (one per resource). */
const plainPaths = new Map<string, boolean>();
let lastDate = '';
let lastDateJson = '""';

/**
 * `JSON.stringify(headers)` of an entity answer's headers: `Content-Type`, `Vary`, `ETag`, and where
 * given `Last-Modified` and `Location`. A location must be `entityHref(collection, id)`
 * (src/conventions/hal.ts): the collection's path, a slash and the percent-encoded id; one that
 * does not begin so is escaped the long way.
 */
export function entityHeadersJson(headers: EntityAnswerHeaders, collection: string): string {
  const mediaType = headers['content-type'];
  const etag = headers.etag;
  const vary = headers.vary;
  const modified = headers['last-modified'];
  const location = headers.location;
  let typeJson = mediaTypes.get(mediaType);
  if (typeJson === undefined) {
    typeJson = JSON.stringify(mediaType);
    if (mediaTypes.size < 64) mediaTypes.set(mediaType, typeJson);
  }
  const tagJson = PLAIN_TAG.test(etag) ? `"\\${etag.slice(0, -1)}\\""` : JSON.stringify(etag);
  let json = `{"content-type":${typeJson},"vary":${vary === 'Accept' ? '"Accept"' : JSON.stringify(vary)},"etag":${tagJson}`;
  if (modified !== undefined) {
    if (modified !== lastDate) {
      lastDateJson = JSON.stringify(modified);
      lastDate = modified;
    }
    json += `,"last-modified":${lastDateJson}`;
  }
  if (location !== undefined) json += `,"location":${plainLocation(location, collection) ? `"${location}"` : JSON.stringify(location)}`;
  return `${json}}`;
}

/** Whether `location` is `collection`, a slash, and text `encodeURIComponent` wrote, with `collection` needing no escape. */
function plainLocation(location: string, collection: string): boolean {
  if (location.length <= collection.length || !location.startsWith(collection) || location.charCodeAt(collection.length) !== 0x2f) return false;
  let plain = plainPaths.get(collection);
  if (plain === undefined) {
    plain = !NEEDS_ESCAPE.test(collection);
    if (plainPaths.size < 4096) plainPaths.set(collection, plain);
  }
  return plain;
}
