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

/** Each byte's meaning outside strings (`STRUCTURE`): most are numbers, literals or whitespace. */
const OTHER = 0;
const STRING = 1;
const OPEN = 2;
const CLOSE = 3;
const NEXT = 4;
const AFTER_NAME = 5;
const STRUCTURE: Uint8Array = ((): Uint8Array => {
  const table = new Uint8Array(256);
  table[QUOTE] = STRING;
  table[OPEN_OBJECT] = OPEN;
  table[OPEN_ARRAY] = OPEN;
  table[CLOSE_OBJECT] = CLOSE;
  table[CLOSE_ARRAY] = CLOSE;
  table[COMMA] = NEXT;
  table[COLON] = AFTER_NAME;
  return table;
})();

/** 1 for the bytes that end a member name's plain bytes: its closing quote, or a backslash. */
const NAME_END: Uint8Array = ((): Uint8Array => {
  const table = new Uint8Array(256);
  table[QUOTE] = 1;
  table[BACKSLASH] = 1;
  return table;
})();

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
      // Numbers, literals and whitespace are skipped a byte at a time with one look-up each: only
      // quotes and the structure's punctuation mean something here.
      const kind = STRUCTURE[bytes[i]!]!;
      if (kind === OTHER) {
        i++;
        continue;
      }
      if (kind === STRING) {
        i++;
        if (name) {
          // A member name: not searched, but a repeated one means the parse keeps another value.
          let hash = FNV_OFFSET;
          let b = bytes[i]!;
          // Up to a quote, a backslash, or past the buffer (where the look-up is undefined).
          while (NAME_END[b] === 0) {
            hash = Math.imul(hash ^ b, FNV_PRIME);
            b = bytes[++i]!;
          }
          if (b !== QUOTE || i >= end) return -1;
          for (let k = this.#levels[depth - 1]!; k < names; k++) if (this.#names[k] === hash) return -1;
          if (names === this.#names.length) this.#names = growInts(this.#names);
          this.#names[names++] = hash;
          name = false;
          i++;
          continue;
        }
        // A string value: separators skipped, each token's bytes folded and hashed in a loop of
        // their own, the token numbered where it ends. ASCII_FOLD is 0 for a separator, above 1
        // for a letter or digit, and 1 (or undefined past the buffer) for what ends the run.
        for (;;) {
          let f = ASCII_FOLD[bytes[i]!]!;
          while (f === 0) f = ASCII_FOLD[bytes[++i]!]!;
          if (f > 1) {
            const tokenStart = i;
            let h = FNV_OFFSET;
            do {
              h = Math.imul(h ^ f, FNV_PRIME);
              f = ASCII_FOLD[bytes[++i]!]!;
            } while (f > 1);
            if (count === ids.length) ids = this.ids = growInts(ids);
            ids[count++] = vocabulary.internAscii(bytes, tokenStart, i, h);
            if (f === 0) continue;
          }
          const b = bytes[i];
          if (b === QUOTE) break;
          if (b !== BACKSLASH || bytes[i + 1] === U) return -1; // not ASCII, a \u escape, or past the buffer
          i += 2; // the escape and the escaped character, a separator
        }
        if (i >= end) return -1;
        i++;
        continue;
      }
      if (kind === OPEN) {
        if (depth === MAX_DEPTH) return -1;
        const object = bytes[i] === OPEN_OBJECT;
        this.#objects[depth] = object ? 1 : 0;
        this.#levels[depth++] = names;
        name = object;
      } else if (kind === CLOSE) {
        if (depth === 0) return -1;
        names = this.#levels[--depth]!;
        name = false;
      } else if (kind === NEXT) {
        name = depth > 0 && this.#objects[depth - 1] === 1;
      } else {
        name = false; // a colon
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
