import type { ContentCoding } from './accept-encoding.js';
import { HAL_FORMS, HAL_JSON, JSON_TYPE, representationTag } from './media-types.js';
import { preconditionFailed } from './problem.js';
import { EPOCH_LENGTH } from './representation-epoch.js';

/**
 * Entity tags and conditional requests (RFC 9110 §8.8.3, §13.1). Pure: headers in, decisions out.
 *
 * Every representation of a version has its own strong tag: `"<version>:<epoch>"` for HAL,
 * `"<version>:<epoch>-json"` for plain JSON, `"<version>:<epoch>-forms"` for HAL-FORMS, each with
 * `-br` or `-gzip` appended when compressed. The epoch (representation-epoch.ts) names what the
 * bytes depend on besides the data: base path, schema, relations, halserve's rendering.
 *
 * Two comparisons, as the tags serve two ends:
 * - `If-None-Match` on a GET or HEAD asks whether the client's bytes are still the ones served:
 *   the whole tag is compared, epoch included, so after a restart with another base path or schema
 *   the client gets a 200 with the new links and forms, never a 304 that keeps the old ones.
 * - `If-Match` (on any method) and `If-None-Match` on a write ask about the entity's data, against
 *   lost updates: a tag names its version whatever the epoch it was made under, so a tag of the
 *   current version handed out before such a restart (or before tags had an epoch) still lets the
 *   write through, and one of an older version is a 412 as ever.
 */

const CODING_SUFFIX = /-(br|gzip)"$/;

/** A tag's epoch, before its media type's suffixes (`-json`, `-forms`, `-read`). */
const EPOCH_PART = new RegExp(`:[0-9a-z]{${EPOCH_LENGTH}}((?:-[a-z]+)*")$`);

/** A version's tag base under `epoch`: `<version>:<epoch>`, or the version alone for none (''). */
function epochBase(version: string, epoch: string): string {
  return epoch === '' ? version : `${version}:${epoch}`;
}

/** The tag of the uncompressed representation of `version` in `mediaType`, under `epoch` ('' for none: `"<version>"`). */
export function entityTag(version: string, mediaType: string, halMediaType: string, epoch = ''): string {
  return representationTag(epochBase(version, epoch), mediaType === halMediaType ? HAL_JSON : mediaType === HAL_FORMS ? HAL_FORMS : JSON_TYPE);
}

/**
 * The tag of a HAL-FORMS representation for a principal that may not write the resource: its
 * `_templates` is empty (docs/forms.md §2), so its bytes, and its tag, differ from the writer's.
 */
export function readOnlyFormsTag(etag: string): string {
  return `${etag.slice(0, -1)}-read"`;
}

/** The tag of the uncompressed representation in `mediaType`, for a principal that may (`writable`) or may not write. */
export function variantTag(etag: string, mediaType: string, writable: boolean): string {
  return mediaType === HAL_FORMS && !writable ? readOnlyFormsTag(etag) : etag;
}

/** The tag of the same representation sent with a content coding. */
export function codedTag(etag: string, coding: ContentCoding): string {
  return `${etag.slice(0, -1)}-${coding}"`;
}

/** A tag from a client, its coding suffix removed: `"v-json-br"` → `"v-json"`. */
function uncoded(tag: string): string {
  return tag.replace(CODING_SUFFIX, '"');
}

/**
 * A file store entity's tag as halserve wrote it before 2026-12-02: its line's number, a dot, the
 * hash (a 53-bit number in base 36: at most 11 digits, and fewer than 8 for one in 100,000, which
 * are not recognised, so that no short version, a memory store's counter, is taken for one).
 */
const LINE_LED = /^"[0-9a-z]+\.([0-9a-z]{8,11}(?:-[a-z]+)*")$/;

/** A tag (coding removed) without its epoch: what names the data alone. */
function withoutEpoch(tag: string): string {
  return tag.replace(EPOCH_PART, '$1');
}

/**
 * Whether the client's `tag` (coding removed) names the same data as one of `current`, whatever
 * the epoch each was made under: `If-Match`, and `If-None-Match` on a write. A tag without an
 * epoch (of a halserve before 2026-12-02, or made under none) names its version too. A file store
 * entity's tag was `"<line>.<hash>"` up to 2026-12-02 and is `"<hash>:<epoch>"` since: the hash is
 * of the entity's text, the line's number named nothing more, so a tag an earlier version handed
 * out names the same version as its hash alone, and a client holding one across an upgrade still
 * gets its write. The hash has no dot, so only a tag without one (a file store entity's) can be
 * matched that way.
 */
function namesCurrentData(tag: string, current: readonly string[]): boolean {
  if (current.includes(tag)) return true;
  const data = withoutEpoch(tag);
  const hash = LINE_LED.exec(data)?.[1];
  return current.some((c) => {
    const own = withoutEpoch(c);
    return own === data || (hash !== undefined && own === `"${hash}`);
  });
}

/** The tags of an `If-Match`/`If-None-Match` list, `W/` kept; ['*'] for a wildcard. */
export function parseTagList(header: string): string[] {
  if (header.trim() === '*') return ['*'];
  return [...header.matchAll(/(?:W\/)?"[^"]*"/g)].map((match) => match[0]);
}

/**
 * If-None-Match on GET/HEAD (§13.1.2), weak comparison: true when the client's copy is current and
 * the answer is 304 Not Modified. The whole tag, epoch included: a tag of other bytes (another
 * base path, schema or rendering, or of a halserve whose tags had no epoch) is a 200.
 */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  const tags = parseTagList(ifNoneMatch);
  return tags.includes('*') || tags.some((tag) => uncoded(tag.replace(/^W\//, '')) === etag);
}

/** Every tag that names `version` of an entity under `epoch`, whatever its representation. */
export function versionTags(version: string, halMediaType: string, epoch = ''): string[] {
  const forms = entityTag(version, HAL_FORMS, halMediaType, epoch);
  return [entityTag(version, halMediaType, halMediaType, epoch), entityTag(version, '', halMediaType, epoch), forms, readOnlyFormsTag(forms)];
}

/**
 * If-Match (§13.1.1), strong comparison against the current tags, of the data (`namesCurrentData`:
 * a tag of the current version made under an earlier epoch passes): a mismatch is a 412 problem
 * and, on a write, nothing is written.
 */
export function checkIfMatch(ifMatch: string | undefined, current: readonly string[]): void {
  if (ifMatch === undefined) return;
  const tags = parseTagList(ifMatch);
  if (tags.includes('*') || tags.some((tag) => namesCurrentData(uncoded(tag), current))) return;
  throw preconditionFailed('If-Match does not match the current ETag');
}

/**
 * If-None-Match on a write (§13.1.2), weak comparison: `*`, or a tag of the current state (its
 * data, whatever the epoch, as for If-Match), means the client wanted the write only if the state
 * were other than it is — a 412 problem, nothing written.
 */
export function checkIfNoneMatch(ifNoneMatch: string | undefined, current: readonly string[]): void {
  if (ifNoneMatch === undefined) return;
  const tags = parseTagList(ifNoneMatch);
  if (tags.includes('*') || tags.some((tag) => namesCurrentData(uncoded(tag.replace(/^W\//, '')), current))) throw preconditionFailed('If-None-Match matches the current ETag');
}
