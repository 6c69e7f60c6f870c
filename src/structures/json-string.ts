/**
 * A string as JSON text, the way `JSON.stringify` writes it. Most strings a store writes (ids,
 * digests, paths) hold nothing JSON escapes: those are quoted as they are, which on Node 20 costs a
 * third of what the generic serialiser takes (bench/NOTES.md, "answers as bytes outside the heap").
 */

/** A character `JSON.stringify` writes escaped: a quote, a backslash, a control character, or a surrogate (a lone one is escaped; a pair is taken the long way too). */
export const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** `JSON.stringify(text)`. */
export function jsonString(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}
