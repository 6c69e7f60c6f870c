import { CHECK_EVERY, type Slice, type Work } from './slices.js';

/** FNV-1a's offset basis and prime: a token's hash is folded in byte by byte as it is read. */
export const FNV_OFFSET = 0x811c9dc5;
export const FNV_PRIME = 16777619;

/**
 * Each byte's class for the tokenizer (json-tokens.ts): an ASCII letter or digit folded as `fold`
 * (src/conventions/query.ts) folds it (all above 1); 0 for any other ASCII character (a
 * separator); 1 for what needs a closer look: a quote, a backslash, a byte of a non-ASCII
 * character.
 */
export const ASCII_FOLD: Uint8Array = ((): Uint8Array => {
  const table = new Uint8Array(256).fill(1, 0x80);
  for (let c = 0x30; c <= 0x39; c++) table[c] = c;
  for (let c = 0x61; c <= 0x7a; c++) table[c] = c;
  for (let c = 0x41; c <= 0x5a; c++) table[c] = c + 0x20;
  table[0x22] = 1;
  table[0x5c] = 1;
  return table;
})();

/** Between two tokens in the pool: no token byte is 0 (tokens are letters and digits). */
const SEPARATOR = 0;

/** Pool bytes searched between two looks at the clock. */
const SEARCH_WINDOW = 256 * 1024;

const encoder = new TextEncoder();

/**
 * The text index's vocabulary: each distinct token (UTF-8 bytes, case-folded) gets a number, in
 * order of first sight. The tokens sit end to end in one byte pool, so that a million of them (a
 * collection's ids are tokens too) cost their bytes and two integers each rather than a million
 * strings and map entries, and so that the tokens containing a search piece are found by the
 * runtime's native substring search over the pool (`Buffer.indexOf`) instead of a loop over every
 * token. A token is looked up by the hash of its bytes (`intern`) without building a string; only
 * `token()` makes one.
 */
export class Vocabulary {
  #pool: Buffer = Buffer.allocUnsafeSlow(1 << 16);
  #used = 0;
  /** Where token `id` starts in the pool; `#starts[size]` is the end of the last one (plus its separator). */
  #starts: Int32Array;
  /**
   * Open addressing, linear probing, a power of two of slots at most two thirds full. Slot `p` is
   * `#table[2p]`, the token's hash (mixed), and `#table[2p + 1]`, its number plus one (0: empty).
   * The hash beside the number: a probe reads one cache line, where a separate array of hashes
   * cost a second miss per occupied slot probed (every new token probes at random: a collection's
   * ids are tokens, a million of them).
   */
  #table: Int32Array;
  #size = 0;

  /**
   * `expected`: about how many tokens it will hold. A build passes its row count — every row's id
   * is a token of its own, so a collection's vocabulary is rarely smaller — and the arrays are
   * sized for it at once rather than doubled up to it, each doubling a copy (and a rehash) of
   * what came before, and each allocation more external memory for V8 to collect the heap over.
   */
  constructor(expected = 1024) {
    const tokens = Math.max(1024, expected);
    let slots = 2048;
    while (slots * 2 < tokens * 3) slots *= 2;
    this.#table = new Int32Array(2 * slots);
    this.#starts = new Int32Array(tokens + 1);
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes held, for memory accounting in tests and benchmarks. */
  get bytes(): number {
    return this.#pool.length + this.#starts.byteLength + this.#table.byteLength;
  }

  /** The number of the token `bytes[start, end)` (hashed by `hashTokenBytes`), added if new. */
  intern(bytes: Uint8Array, start: number, end: number, hash: number): number {
    const table = this.#table;
    const mask = (table.length >> 1) - 1;
    const h = mix(hash);
    for (let p = h & mask; ; p = (p + 1) & mask) {
      const id = table[2 * p + 1]! - 1;
      if (id < 0) return this.#add(bytes, start, end, h, p);
      if (table[2 * p] === h && this.#equal(id, bytes, start, end)) return id;
    }
  }

  /**
   * `intern` of the ASCII letters and digits `bytes[start, end)` folded (`ASCII_FOLD`), `hash`
   * being that of the folded bytes: the tokenizer numbers a token straight from the record's text.
   */
  internAscii(bytes: Uint8Array, start: number, end: number, hash: number): number {
    const table = this.#table;
    const mask = (table.length >> 1) - 1;
    const h = mix(hash);
    for (let p = h & mask; ; p = (p + 1) & mask) {
      const id = table[2 * p + 1]! - 1;
      if (id < 0) return this.#add(bytes, start, end, h, p, true);
      if (table[2 * p] === h && this.#equalFolded(id, bytes, start, end)) return id;
    }
  }

  /** The number of a token given as a string, or -1 when it is not in the vocabulary. */
  find(token: string): number {
    const bytes = encoder.encode(token);
    const h = mix(hashTokenBytes(bytes, 0, bytes.length));
    const table = this.#table;
    const mask = (table.length >> 1) - 1;
    for (let p = h & mask; ; p = (p + 1) & mask) {
      const id = table[2 * p + 1]! - 1;
      if (id < 0) return -1;
      if (table[2 * p] === h && this.#equal(id, bytes, 0, bytes.length)) return id;
    }
  }

  /** Token `id` as a string. */
  token(id: number): string {
    return this.#pool.toString('utf8', this.#starts[id]!, this.#starts[id + 1]! - 1);
  }

  /**
   * The numbers of the tokens that contain `piece` (a non-empty string of letters and digits), in
   * increasing order. The search runs a window of the pool at a time, yielding when the slice is
   * used up.
   */
  *containing(piece: string, slice: Slice): Work<Int32Array> {
    const needle = Buffer.from(piece, 'utf8');
    let found: Int32Array = new Int32Array(16);
    let count = 0;
    const pool = this.#pool;
    const used = this.#used;
    let from = 0;
    let since = 0;
    while (from < used) {
      // A match must start inside the window; it may run past its end.
      const windowEnd = Math.min(used, from + SEARCH_WINDOW);
      const view = pool.subarray(from, Math.min(used, windowEnd + needle.length - 1));
      let at = view.indexOf(needle);
      let next = windowEnd;
      while (at >= 0 && from + at < windowEnd) {
        const id = this.#idAt(from + at);
        if (count === found.length) found = grow(found);
        found[count++] = id;
        // Go on from the next token: this one is found.
        const after = this.#starts[id + 1]!;
        if (after >= windowEnd) {
          next = after;
          break;
        }
        at = view.indexOf(needle, after - from);
        if (++since >= CHECK_EVERY) {
          since = 0;
          if (slice.due) yield;
        }
      }
      from = next;
      if (slice.due) yield;
    }
    return found.slice(0, count);
  }

  /** The token whose bytes hold pool position `at` (the last start at or before it). */
  #idAt(at: number): number {
    const starts = this.#starts;
    let lo = 0;
    let hi = this.#size - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid]! <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  #equal(id: number, bytes: Uint8Array, start: number, end: number): boolean {
    const from = this.#starts[id]!;
    if (this.#starts[id + 1]! - 1 - from !== end - start) return false;
    const pool = this.#pool;
    for (let i = 0; i < end - start; i++) if (pool[from + i] !== bytes[start + i]) return false;
    return true;
  }

  #equalFolded(id: number, bytes: Uint8Array, start: number, end: number): boolean {
    const from = this.#starts[id]!;
    if (this.#starts[id + 1]! - 1 - from !== end - start) return false;
    const pool = this.#pool;
    // An ASCII letter or digit folds by setting bit 5 (`ASCII_FOLD`): digits and lower case have it.
    for (let i = 0; i < end - start; i++) if (pool[from + i] !== (bytes[start + i]! | 0x20)) return false;
    return true;
  }

  #add(bytes: Uint8Array, start: number, end: number, h: number, p: number, fold = false): number {
    const id = this.#size;
    const length = end - start;
    if (this.#used + length + 1 > this.#pool.length) {
      const pool = Buffer.allocUnsafeSlow(Math.max(this.#pool.length * 2, this.#used + length + 1));
      this.#pool.copy(pool, 0, 0, this.#used);
      this.#pool = pool;
    }
    const pool = this.#pool;
    if (fold) for (let i = 0; i < length; i++) pool[this.#used + i] = bytes[start + i]! | 0x20;
    else for (let i = 0; i < length; i++) pool[this.#used + i] = bytes[start + i]!;
    this.#used += length;
    pool[this.#used++] = SEPARATOR;
    if (id + 2 > this.#starts.length) {
      const starts = new Int32Array(2 * (this.#starts.length - 1) + 1);
      starts.set(this.#starts);
      this.#starts = starts;
    }
    this.#starts[id + 1] = this.#used;
    this.#size++;
    this.#table[2 * p] = h;
    this.#table[2 * p + 1] = id + 1;
    // Slots: `#table.length / 2`; more than two thirds of them taken, twice as many.
    if (this.#size * 3 > this.#table.length) this.#rehash();
    return id;
  }

  #rehash(): void {
    const old = this.#table;
    const table = new Int32Array(old.length * 2);
    const mask = (table.length >> 1) - 1;
    // Where a token sits is no part of what it is: the slots are taken over in the old table's order.
    for (let q = 0; q < old.length; q += 2) {
      const number = old[q + 1]!;
      if (number === 0) continue;
      const h = old[q]!;
      let p = h & mask;
      while (table[2 * p + 1]! !== 0) p = (p + 1) & mask;
      table[2 * p] = h;
      table[2 * p + 1] = number;
    }
    this.#table = table;
  }
}

/** FNV-1a of `bytes[start, end)`: what a tokenizer folds in byte by byte. */
export function hashTokenBytes(bytes: Uint8Array, start: number, end: number): number {
  let h = FNV_OFFSET;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
  return h;
}

/** Folds the high bits in: the table masks the low ones. */
function mix(h: number): number {
  return (h ^ (h >>> 15)) | 0;
}

function grow(array: Int32Array): Int32Array {
  const next = new Int32Array(array.length * 2);
  next.set(array);
  return next;
}
