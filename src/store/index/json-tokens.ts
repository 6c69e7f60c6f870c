import { ASCII_FOLD, FNV_OFFSET, FNV_PRIME, type Vocabulary } from './vocabulary.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const U = 0x75;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Nesting deeper than this is left to the parse. */
const MAX_DEPTH = 64;

/**
 * The search tokens of a JSON object read from its UTF-8 text without parsing it: what
 * `tokensOf(JSON.parse(text))` (text-index.ts) gives, for the common case of ASCII strings. A
 * token is a run of ASCII letters and digits inside a string value (member names are not
 * searched), lower-cased, hashed as it is read and numbered by the vocabulary without becoming a
 * string. Anything this fast path cannot fold the same way hands the record to the parse: a
 * non-ASCII byte in a string (Unicode letters and case folding), a `\u` escape, an escaped member
 * name, or a member name repeated in one object (the parse keeps only the last value). The other
 * escapes (`\n`, `\"`, …) stand for characters that are not letters or digits: separators.
 *
 * The text was checked as JSON when it was stored, so the scan trusts its shape: a string right
 * after `{`, or after `,` in an object, is a member name. One instance keeps its buffers across
 * records.
 */
export class JsonTokens {
  /** Member names (hashes) of the objects open, and where each open object's names start. */
  #names: Int32Array = new Int32Array(64);
  readonly #levels: Int32Array = new Int32Array(MAX_DEPTH);
  /** 1 for an object, 0 for an array, per depth. */
  readonly #objects: Uint8Array = new Uint8Array(MAX_DEPTH);
  /** The numbers of the tokens found by the last `scan` (repeats included). */
  ids: Int32Array = new Int32Array(256);

  /**
   * Reads the string values of the object at `bytes[start, end)` (the closing brace may be
   * missing) and numbers their tokens in `vocabulary` into `ids`: how many, or -1 when the record
   * must be parsed instead (see above).
   */
  scan(bytes: Uint8Array, start: number, end: number, vocabulary: Vocabulary): number {
    let count = 0;
    let depth = 0;
    let names = 0;
    let name = false;
    let ids = this.ids;
    let i = start;
    while (i < end) {
      const c = bytes[i]!;
      if (c === QUOTE) {
        i++;
        if (name) {
          // A member name: not searched, but a repeated one means the parse keeps another value.
          let hash = FNV_OFFSET;
          for (let b = bytes[i]!; b !== QUOTE; b = bytes[++i]!) {
            if (b === BACKSLASH || i >= end) return -1;
            hash = Math.imul(hash ^ b, FNV_PRIME);
          }
          for (let k = this.#levels[depth - 1]!; k < names; k++) if (this.#names[k] === hash) return -1;
          if (names === this.#names.length) this.#names = growInts(this.#names);
          this.#names[names++] = hash;
          name = false;
          i++;
          continue;
        }
        // A string value: its tokens, folded and hashed byte by byte, numbered as they end.
        let tokenStart = -1;
        let h = 0;
        for (;;) {
          const b = bytes[i]!;
          const f = ASCII_FOLD[b]!;
          if (f > 1) {
            if (tokenStart < 0) {
              tokenStart = i;
              h = FNV_OFFSET;
            }
            h = Math.imul(h ^ f, FNV_PRIME);
          } else if (f === 0) {
            if (tokenStart >= 0) {
              if (count === ids.length) ids = this.ids = growInts(ids);
              ids[count++] = vocabulary.internAscii(bytes, tokenStart, i, h);
              tokenStart = -1;
            }
          } else if (b === QUOTE) {
            break;
          } else if (b === BACKSLASH) {
            if (bytes[i + 1] === U) return -1;
            if (tokenStart >= 0) {
              if (count === ids.length) ids = this.ids = growInts(ids);
              ids[count++] = vocabulary.internAscii(bytes, tokenStart, i, h);
              tokenStart = -1;
            }
            i++; // the escaped character, a separator
          } else {
            return -1; // not ASCII (or past the buffer)
          }
          i++;
        }
        if (i >= end) return -1;
        if (tokenStart >= 0) {
          if (count === ids.length) ids = this.ids = growInts(ids);
          ids[count++] = vocabulary.internAscii(bytes, tokenStart, i, h);
        }
        i++;
        continue;
      }
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (depth === MAX_DEPTH) return -1;
        this.#objects[depth] = c === OPEN_OBJECT ? 1 : 0;
        this.#levels[depth++] = names;
        name = c === OPEN_OBJECT;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        if (depth === 0) return -1;
        names = this.#levels[--depth]!;
        name = false;
      } else if (c === COMMA) {
        name = depth > 0 && this.#objects[depth - 1] === 1;
      } else if (c === COLON) {
        name = false;
      }
      i++;
    }
    return count;
  }
}

function growInts(array: Int32Array, atLeast = 0): Int32Array {
  const next = new Int32Array(Math.max(array.length * 2, atLeast));
  next.set(array);
  return next;
}
