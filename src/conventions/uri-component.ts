/**
 * Percent-encoding of one URI component for the links the server writes. Pure.
 *
 * `encodeURIComponent` throws (URIError) on a lone surrogate, which a stored string may hold: a
 * body's `"\ud800"` is kept as written (docs/conventions.md §5). No URL can carry one — a
 * component is percent-encoded UTF-8 (RFC 3986 §2.5), and UTF-8 has no surrogates — so it is
 * written as U+FFFD, as WHATWG URL's percent-encoding of a USVString does (URLSearchParams, `new URL`).
 */
export function encodeComponent(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(text.replace(LONE_SURROGATE, '\ufffd'));
  }
}

/** True when `text` holds a lone surrogate: no URL can carry it as it is. */
export function hasLoneSurrogate(text: string): boolean {
  return text.search(LONE_SURROGATE) !== -1;
}

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
