import type { ContentCoding } from './accept-encoding.js';
import { HAL_FORMS, HAL_JSON, JSON_TYPE, representationTag } from './media-types.js';
import { preconditionFailed } from './problem.js';

/**
 * Entity tags and conditional requests (RFC 9110 §8.8.3, §13.1). Pure: headers in, decisions out.
 *
 * Every representation of a version has its own strong tag: `"<version>"` for HAL,
 * `"<version>-json"` for plain JSON, `"<version>-forms"` for HAL-FORMS, each with `-br` or `-gzip` appended when compressed. A client
 * may send back any of them: they all name the same version of the entity.
 */

const CODING_SUFFIX = /-(br|gzip)"$/;

/** The tag of the uncompressed representation of `version` in `mediaType`. */
export function entityTag(version: string, mediaType: string, halMediaType: string): string {
  return representationTag(version, mediaType === halMediaType ? HAL_JSON : mediaType === HAL_FORMS ? HAL_FORMS : JSON_TYPE);
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

/**
 * Whether the client's `tag` (coding removed) is one of `current`. A file store entity's tag was
 * `"<line>.<hash>"` up to 2026-12-02 and is `"<hash>"` since: the hash is of the entity's text, the
 * line's number named nothing more, so a tag an earlier version handed out names the same version
 * as its hash alone, and a client holding one across an upgrade still gets its 304 and its write.
 * The hash has no dot, so only a tag without one (a file store entity's) can be matched that way.
 */
function isCurrent(tag: string, current: readonly string[]): boolean {
  if (current.includes(tag)) return true;
  const hash = LINE_LED.exec(tag)?.[1];
  return hash !== undefined && current.includes(`"${hash}`);
}

/** The tags of an `If-Match`/`If-None-Match` list, `W/` kept; ['*'] for a wildcard. */
export function parseTagList(header: string): string[] {
  if (header.trim() === '*') return ['*'];
  return [...header.matchAll(/(?:W\/)?"[^"]*"/g)].map((match) => match[0]);
}

/**
 * If-None-Match on GET/HEAD (§13.1.2), weak comparison: true when the client's copy is current and
 * the answer is 304 Not Modified.
 */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  const tags = parseTagList(ifNoneMatch);
  return tags.includes('*') || tags.some((tag) => isCurrent(uncoded(tag.replace(/^W\//, '')), [etag]));
}

/** Every tag that names `version` of an entity, whatever its representation. */
export function versionTags(version: string, halMediaType: string): string[] {
  const forms = entityTag(version, HAL_FORMS, halMediaType);
  return [entityTag(version, halMediaType, halMediaType), entityTag(version, '', halMediaType), forms, readOnlyFormsTag(forms)];
}

/**
 * If-Match (§13.1.1), strong comparison against the current tags: a mismatch is a 412 problem and,
 * on a write, nothing is written.
 */
export function checkIfMatch(ifMatch: string | undefined, current: readonly string[]): void {
  if (ifMatch === undefined) return;
  const tags = parseTagList(ifMatch);
  if (tags.includes('*') || tags.some((tag) => isCurrent(uncoded(tag), current))) return;
  throw preconditionFailed('If-Match does not match the current ETag');
}

/**
 * If-None-Match on a write (§13.1.2): `*`, or a tag of the current state, means the client wanted
 * the write only if the state were other than it is — a 412 problem, nothing written.
 */
export function checkIfNoneMatch(ifNoneMatch: string | undefined, current: readonly string[]): void {
  if (ifNoneMatch === undefined) return;
  if (current.some((tag) => notModified(ifNoneMatch, tag))) throw preconditionFailed('If-None-Match matches the current ETag');
}
