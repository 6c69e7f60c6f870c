import { FNV_OFFSET, FNV_PRIME, type Vocabulary } from './vocabulary.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const U = 0x75;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** An ASCII byte folded as `fold` (src/conventions/query.ts) folds it, or 0 for a separator (not a letter or digit). */
const FOLDED = ((): Uint8Array => {
  const table = new Uint8Array(128);
  for (let c = 0x30; c <= 0x39; c++) table[c] = c;
  for (let c = 0x61; c <= 0x7a; c++) table[c] = c;
  for (let c = 0x41; c <= 0x5a; c++) table[c] = c + 0x20;
  return table;
})();

const isSpace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

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
 * The text was checked as JSON when it was stored, so the scan trusts its shape. One instance
 * keeps its buffers across records.
 */
export class JsonTokens {
  /** Folded bytes of the tokens of the string being read. */
  #scratch: Uint8Array = new Uint8Array(256);
  /** That string's tokens: start and end in `#scratch`, hash. */
  #starts: Int32Array = new Int32Array(32);
  #ends: Int32Array = new Int32Array(32);
  #hashes: Int32Array = new Int32Array(32);
  /** Member names (raw hashes) of the objects open, and where each open object's names start. */
  #names: Int32Array = new Int32Array(64);
  readonly #levels: Int32Array = new Int32Array(MAX_DEPTH);
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
    let i = start;
    while (i < end) {
      const c = bytes[i]!;
      if (c === QUOTE) {
        const opened = i + 1;
        let used = 0;
        let pending = 0;
        let tokenStart = -1;
        let h = 0;
        let escaped = false;
        i = opened;
        for (;;) {
          if (i >= end) return -1;
          const b = bytes[i]!;
          if (b === QUOTE) break;
          if (b >= 0x80) return -1;
          let folded = FOLDED[b]!;
          if (b === BACKSLASH) {
            if (bytes[i + 1] === U) return -1;
            escaped = true;
            folded = 0;
            i++; // the escaped character, a separator
          }
          if (folded !== 0) {
            if (tokenStart < 0) {
              tokenStart = used;
              h = FNV_OFFSET;
            }
            if (used === this.#scratch.length) this.#scratch = growBytes(this.#scratch);
            this.#scratch[used++] = folded;
            h = Math.imul(h ^ folded, FNV_PRIME);
          } else if (tokenStart >= 0) {
            pending = this.#pend(pending, tokenStart, used, h);
            tokenStart = -1;
          }
          i++;
        }
        if (tokenStart >= 0) pending = this.#pend(pending, tokenStart, used, h);
        const closed = i;
        i++;
        let j = i;
        while (j < end && isSpace(bytes[j]!)) j++;
        if (j < end && bytes[j] === COLON) {
          // A member name: not searched, but a repeated one means the parse keeps another value.
          if (escaped || depth === 0) return -1;
          let nameHash = FNV_OFFSET;
          for (let k = opened; k < closed; k++) nameHash = Math.imul(nameHash ^ bytes[k]!, FNV_PRIME);
          for (let k = this.#levels[depth - 1]!; k < names; k++) if (this.#names[k] === nameHash) return -1;
          if (names === this.#names.length) this.#names = growInts(this.#names);
          this.#names[names++] = nameHash;
          i = j + 1;
          continue;
        }
        if (count + pending > this.ids.length) this.ids = growInts(this.ids, count + pending);
        const ids = this.ids;
        for (let p = 0; p < pending; p++) ids[count++] = vocabulary.intern(this.#scratch, this.#starts[p]!, this.#ends[p]!, this.#hashes[p]!);
        continue;
      }
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (depth === MAX_DEPTH) return -1;
        this.#levels[depth++] = names;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        if (depth === 0) return -1;
        names = this.#levels[--depth]!;
      }
      i++;
    }
    return count;
  }

  #pend(pending: number, start: number, end: number, hash: number): number {
    if (pending === this.#starts.length) {
      this.#starts = growInts(this.#starts);
      this.#ends = growInts(this.#ends);
      this.#hashes = growInts(this.#hashes);
    }
    this.#starts[pending] = start;
    this.#ends[pending] = end;
    this.#hashes[pending] = hash;
    return pending + 1;
  }
}

function growBytes(array: Uint8Array): Uint8Array {
  const next = new Uint8Array(array.length * 2);
  next.set(array);
  return next;
}

function growInts(array: Int32Array, atLeast = 0): Int32Array {
  const next = new Int32Array(Math.max(array.length * 2, atLeast));
  next.set(array);
  return next;
}
