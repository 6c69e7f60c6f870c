import { parseAccept, type MediaRange } from '../conventions/accept.js';
import { HAL_FORMS, HAL_JSON, JSON_TYPE } from '../conventions/media-types.js';

export { parseAccept };

export { HAL_FORMS, HAL_JSON, JSON_TYPE };
/** RFC 7396 §4. */
export const MERGE_PATCH_JSON = 'application/merge-patch+json';

/** The HAL browser's page (docs/conventions.md §4.1). */
export const HTML = 'text/html';

/** What the service can send, best first: HAL wins a tie (docs/conventions.md §5). */
export const OFFERED_TYPES: readonly string[] = [HAL_JSON, JSON_TYPE];
/**
 * What collections and entities can send: HAL-FORMS too, last, so that only a client that prefers
 * it gets it (`*\/*`, `application/*` and a tie keep HAL).
 */
export const FORMS_OFFERED_TYPES: readonly string[] = [HAL_JSON, JSON_TYPE, HAL_FORMS];


/** The quality the client gives `mediaType`: the most specific range that matches it decides. */
function quality(ranges: readonly MediaRange[], mediaType: string): number {
  const [type, subtype] = mediaType.split('/');
  let best = -1;
  let q = 0;
  for (const range of ranges) {
    const specificity =
      range.type === type && range.subtype === subtype ? 2 : range.type === type && range.subtype === '*' ? 1 : range.type === '*' && range.subtype === '*' ? 0 : -1;
    if (specificity > best) {
      best = specificity;
      q = range.q;
    }
  }
  return q;
}

/**
 * Picks the response media type for an `Accept` header (docs/conventions.md §5): HAL when the client prefers
 * it, accepts anything or sends no header; plain JSON when that is what it prefers; undefined when
 * neither is acceptable (→ 406).
 */
export function negotiate(accept: string | undefined, offered: readonly string[] = OFFERED_TYPES): string | undefined {
  if (accept === undefined || accept.trim() === '') return offered[0];
  const ranges = parseAccept(accept);
  if (ranges.length === 0) return offered[0];
  let chosen: string | undefined;
  let chosenQ = 0;
  for (const type of offered) {
    const q = quality(ranges, type);
    if (q > chosenQ) {
      chosen = type;
      chosenQ = q;
    }
  }
  return chosen;
}

/** The media type of a `Content-Type` header without its parameters, lower-cased; '' when absent. */
export function mediaTypeOf(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  const semicolon = contentType.indexOf(';');
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

/**
 * True when `contentType` names one of `accepted`, case ignored. Parameters are allowed, but a
 * charset other than UTF-8 is not: JSON exchanged between systems is UTF-8 (RFC 8259 §8.1).
 */
export function isAcceptedContentType(contentType: string | undefined, accepted: readonly string[]): boolean {
  if (!accepted.includes(mediaTypeOf(contentType))) return false;
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType ?? '')?.[1];
  return charset === undefined || /^utf-?8$/i.test(charset);
}

/**
 * True when `Accept` prefers `text/html` to both JSON types (docs/conventions.md §4.1): a browser's
 * `text/html,…,*\/*;q=0.8` does; `*\/*`, no header, or a JSON type does not, so every HAL client
 * gets JSON as before.
 */
export function prefersHtml(accept: string | undefined): boolean {
  // Only a client that names text/html asks for a page; `text/*` is no browser.
  if (accept === undefined || !accept.includes('html')) return false;
  const ranges = parseAccept(accept);
  const html = quality(ranges, HTML);
  return html > 0 && html > quality(ranges, HAL_JSON) && html > quality(ranges, JSON_TYPE) && html > quality(ranges, HAL_FORMS);
}

/**
 * True when `Accept` admits HAL-FORMS but neither HAL nor plain JSON: on a route without templates
 * the answer is a 406 that says where forms are (a HAL-FORMS client that also takes HAL gets HAL).
 */
export function admitsOnlyForms(accept: string | undefined): boolean {
  if (accept === undefined || !accept.includes('hal-forms')) return false;
  const ranges = parseAccept(accept);
  return quality(ranges, HAL_FORMS) > 0 && quality(ranges, HAL_JSON) === 0 && quality(ranges, JSON_TYPE) === 0;
}
