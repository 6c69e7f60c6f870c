import { isAscii } from 'node:buffer';
import { matchesSearch } from '../../conventions/query.js';
import type { StoredEntity } from '../store.js';
import type { Rows } from './rows.js';
import type { Slice, Work } from './slices.js';
import { searchPieces } from './text-index.js';

/**
 * `q` answered without the text index, from the stored JSON bytes: what the engine does while the
 * index is being built (the first search of a large collection would otherwise wait for the whole
 * build, about 3 s at a million entities on a 2-core machine; a scan reads the bytes once, with
 * the native matchers, in a fraction of it).
 *
 * A search piece made of ASCII letters and digits occurs in a string of a record (docs/queries.md:
 * case-folded, inside a token) exactly when, in the record's JSON text, it occurs (ASCII
 * case-insensitively) inside a string that is a value, not a member name — provided the row's
 * text has no escape (`\`) and no character whose case folding holds an ASCII letter or digit
 * (`FOLDS_TO_ASCII`: ß folds to "ss", the Kelvin sign to "k"). In such a row, quotes delimit the
 * strings: a hit is inside a string when an odd number of quotes precede it in the row, and that
 * string is a member name when a `:` follows its closing quote. Multi-byte UTF-8 characters never
 * hold an ASCII byte, so other non-ASCII text changes nothing. Every other row (an escape, one of
 * those characters) is "unsure": checked against its parsed record (`matchesSearch`) when the
 * answer is to be exact, or handed on as a candidate. So is a row that names a member twice in one
 * object (`JSON.parse` keeps the last value, so a hit may be in a value the record does not have).
 *
 * The rows are read in batches of consecutive rows whose bytes lie in order in one buffer (a
 * loaded file's block), up to `BATCH_BYTES`: each batch is decoded once (latin1, one byte per
 * character) and searched by a case-insensitive regular expression per piece.
 */

/** Most bytes of rows searched as one text. */
const BATCH_BYTES = 64 * 1024;

/** Rows (or bytes / 256) gathered between two looks at the clock. */
const ROWS_PER_CHECK = 256;

/**
 * The code points whose case folding (`fold`, src/conventions/query.ts) holds an ASCII letter or
 * digit: a row holding one may match a piece its bytes do not show. Checked against every code
 * point by test/store/text-scan.test.ts.
 */
export const FOLDS_TO_ASCII: readonly number[] = [
  0xdf, 0x130, 0x149, 0x17f, 0x1f0, 0x1e96, 0x1e97, 0x1e98, 0x1e99, 0x1e9a, 0x1e9e, 0x212a, 0xfb00, 0xfb01, 0xfb02, 0xfb03, 0xfb04, 0xfb05, 0xfb06,
];

/** Their UTF-8 bytes, as latin1 text (one character a byte) finds them. */
const FOLDING = new RegExp(
  FOLDS_TO_ASCII.map((cp) => [...Buffer.from(String.fromCodePoint(cp), 'utf8')].map((b) => `\\x${b.toString(16).padStart(2, '0')}`).join('')).join('|'),
);

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const COLON = 0x3a;

/** What a scan of `words` searches: its pieces, and whether rows with every piece are exactly the matches. */
export interface ScanPlan {
  readonly pieces: readonly string[];
  /** Every word is one piece: a clean row with every piece matches, and unsure rows are checked here. */
  readonly exact: boolean;
}

/** The plan of a scan for `words` (case-folded), or undefined when a piece is not ASCII letters and digits, or there is none. */
export function scanPlan(words: readonly string[]): ScanPlan | undefined {
  const plan = searchPieces(words);
  return plan.pieces.length === 0 || !plan.pieces.every((piece) => /^[a-z0-9]+$/.test(piece)) ? undefined : plan;
}

/**
 * Rows that may match every word, in creation order, over rows `[0, slots)`; `exact` when they are
 * exactly the matches. `plan` is `scanPlan(words)`.
 */
export function* scanCandidates(words: readonly string[], plan: ScanPlan, rows: Rows<StoredEntity>, slice: Slice): Work<{ rows: Int32Array; exact: boolean }> {
  const scan = new Scan(words, plan, rows);
  const slots = rows.slotCount;
  let since = 0;
  for (let row = 0; row < slots; row++) {
    const entity = rows.at(row);
    if (entity === undefined) continue;
    since += scan.add(row, entity);
    if (since >= ROWS_PER_CHECK) {
      since = 0;
      if (slice.due) yield;
    }
  }
  scan.flush();
  return { rows: scan.found.subarray(0, scan.count), exact: plan.exact };
}

/** One scan: the batch being gathered, and the rows found. */
class Scan {
  readonly #words: readonly string[];
  readonly #patterns: RegExp[];
  readonly #exact: boolean;
  readonly #rows: Rows<StoredEntity>;
  found = new Int32Array(1024);
  count = 0;
  // The batch: rows `#batchRows[0..#size)` with bytes `[#starts[i], #ends[i])` of `#bytes`, a
  // Buffer over `#source`, the array the entities handed.
  #bytes: Buffer | undefined;
  #source: Uint8Array | undefined;
  #size = 0;
  #batchRows = new Int32Array(64);
  #starts = new Int32Array(64);
  #ends = new Int32Array(64);
  /** Per batch row: how many of the pieces, in order, were found in it (a clean row), or -1 (unsure). */
  #hits = new Int32Array(64);
  /** The batch's rows held as text only (see `#addText`), and their bytes so far with a line end each. */
  #texts: string[] = [];
  #textBytes = 0;
  // What `jsonBytes` hands over, read without a closure per row.
  #readBytes: Uint8Array | undefined;
  #readStart = 0;
  #readEnd = 0;
  readonly #read = (bytes: Uint8Array, start: number, end: number): undefined => {
    this.#readBytes = bytes;
    this.#readStart = start;
    this.#readEnd = end;
  };

  constructor(words: readonly string[], plan: ScanPlan, rows: Rows<StoredEntity>) {
    this.#words = words;
    this.#patterns = plan.pieces.map((piece) => new RegExp(piece, 'gi'));
    this.#exact = plan.exact;
    this.#rows = rows;
  }

  /** Adds a row to the batch (searching the batch first when the row cannot join it); returns a weight for the clock checks. */
  add(row: number, entity: StoredEntity): number {
    if (entity.jsonBytes === undefined) return this.#addText(row, entity.json);
    if (this.#texts.length > 0) this.flush();
    entity.jsonBytes(this.#read);
    const bytes = this.#readBytes!;
    const start = this.#readStart;
    const end = this.#readEnd;
    const size = this.#size;
    if (size > 0 && (bytes !== this.#source || start < this.#ends[size - 1]! || end - this.#starts[0]! > BATCH_BYTES)) this.flush();
    if (this.#size === 0) {
      this.#source = bytes;
      this.#bytes = asBuffer(bytes);
    }
    this.#enter(row, start, end);
    return 1 + ((end - start) >> 8);
  }

  /**
   * A row held only as JSON text (a store without the bytes: memory, PostgreSQL): the batch's texts
   * are joined by line ends (never raw in JSON text) and encoded once when it is searched.
   */
  #addText(row: number, json: string): number {
    if (this.#size > 0 && (this.#texts.length === 0 || this.#textBytes + json.length > BATCH_BYTES)) this.flush();
    const length = Buffer.byteLength(json, 'utf8');
    this.#enter(row, this.#textBytes, this.#textBytes + length);
    this.#texts.push(json);
    this.#textBytes += length + 1;
    return 1 + (length >> 8);
  }

  /** Puts a row in the batch. */
  #enter(row: number, start: number, end: number): void {
    if (this.#size === this.#batchRows.length) this.#grow();
    const i = this.#size++;
    this.#batchRows[i] = row;
    this.#starts[i] = start;
    this.#ends[i] = end;
  }

  /** Searches the batch gathered, and empties it. */
  flush(): void {
    const n = this.#size;
    if (n === 0) return;
    this.#size = 0;
    if (this.#texts.length > 0) {
      this.#bytes = Buffer.from(this.#texts.join('\n'), 'utf8');
      this.#texts = [];
      this.#textBytes = 0;
    }
    const buf = this.#bytes!;
    this.#bytes = undefined;
    this.#source = undefined;
    const starts = this.#starts;
    const ends = this.#ends;
    const hits = this.#hits;
    const base = starts[0]!;
    const text = buf.toString('latin1', base, ends[n - 1]!);
    hits.fill(0, 0, n);
    const span = buf.subarray(base, ends[n - 1]!);
    if (!isAscii(span) || span.indexOf(BACKSLASH) !== -1) {
      for (let i = 0; i < n; i++) {
        const row = buf.subarray(starts[i]!, ends[i]!);
        if (row.indexOf(BACKSLASH) !== -1 || (!isAscii(row) && FOLDING.test(text.slice(starts[i]! - base, ends[i]! - base)))) hits[i] = -1;
      }
    }
    for (let k = 0; k < this.#patterns.length; k++) {
      const pattern = this.#patterns[k]!;
      pattern.lastIndex = 0;
      let i = 0;
      for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
        const at = base + m.index;
        while (ends[i]! <= at) i++;
        if (starts[i]! > at) {
          // Between two rows (a stamp, a line end).
          pattern.lastIndex = starts[i]! - base;
          continue;
        }
        // Only a clean row holding every piece before this one (k hits) can match: any other (an
        // unsure row, one missing a piece, one where this piece is found already) is passed.
        if (hits[i] !== k) {
          pattern.lastIndex = ends[i]! - base;
          continue;
        }
        const close = valueStringEnd(buf, starts[i]!, at, ends[i]!);
        if (close < 0) {
          // Not in a value's string: look again after it.
          pattern.lastIndex = -close - base;
          continue;
        }
        hits[i] = k + 1;
        pattern.lastIndex = ends[i]! - base;
      }
    }
    const pieces = this.#patterns.length;
    for (let i = 0; i < n; i++) {
      let hit = hits[i]!;
      // A member named twice in one object: the parse keeps the last value, so a hit may be in a value the record does not have.
      if (hit === pieces && repeatsAName(buf, starts[i]!, ends[i]!)) hit = -1;
      if (hit === pieces) this.#push(this.#batchRows[i]!);
      else if (hit < 0) {
        const row = this.#batchRows[i]!;
        if (!this.#exact) this.#push(row);
        else {
          const entity = this.#rows.at(row);
          if (entity !== undefined && matchesSearch(entity.record, this.#words)) this.#push(row);
        }
      }
    }
  }

  #push(row: number): void {
    if (this.count === this.found.length) {
      const grown = new Int32Array(this.found.length * 2);
      grown.set(this.found);
      this.found = grown;
    }
    this.found[this.count++] = row;
  }

  #grow(): void {
    const more = (a: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> => {
      const b = new Int32Array(a.length * 2);
      b.set(a);
      return b;
    };
    this.#batchRows = more(this.#batchRows);
    this.#starts = more(this.#starts);
    this.#ends = more(this.#ends);
    this.#hits = more(this.#hits);
  }
}

/**
 * For a hit at `at` in a clean row `[start, end)`: the position of the closing quote of the
 * value string that holds it; or, when it is in no string or in a member name, minus the position
 * to search on from (a negative number).
 */
export function valueStringEnd(bytes: Uint8Array, start: number, at: number, end: number): number {
  let quotes = 0;
  for (let i = start; i < at; i++) if (bytes[i] === QUOTE) quotes++;
  if ((quotes & 1) === 0) return -(at + 1);
  let close = at;
  while (close < end && bytes[close] !== QUOTE) close++;
  // A string the row does not close (never in a stored line): no value of it.
  if (close === end) return -end;
  let next = close + 1;
  while (bytes[next] === 0x20 || bytes[next] === 0x09 || bytes[next] === 0x0a || bytes[next] === 0x0d) next++;
  return bytes[next] === COLON ? -(close + 1) : close;
}

/** Most objects open at once that `repeatsAName` follows; a row nested deeper is reported as repeating (and parsed). */
const MAX_DEPTH = 64;
const nameStarts: number[][] = Array.from({ length: MAX_DEPTH }, () => []);
const nameEnds: number[][] = Array.from({ length: MAX_DEPTH }, () => []);
/** 1 where the value open at that depth is an object, 0 for an array. */
const isObject = new Uint8Array(MAX_DEPTH);

/**
 * True when some object of a clean row (no escape) names a member twice (or nests deeper than
 * `MAX_DEPTH`). Reads the row once; names are compared byte for byte with those of the same object.
 */
export function repeatsAName(bytes: Uint8Array, start: number, end: number): boolean {
  let depth = -1;
  for (let i = start; i < end; i++) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      const from = i + 1;
      let close = from;
      while (close < end && bytes[close] !== QUOTE) close++;
      let next = close + 1;
      while (next < end && (bytes[next] === 0x20 || bytes[next] === 0x09 || bytes[next] === 0x0a || bytes[next] === 0x0d)) next++;
      if (depth >= 0 && isObject[depth] === 1 && bytes[next] === COLON) {
        const starts = nameStarts[depth]!;
        const ends = nameEnds[depth]!;
        const length = close - from;
        for (let k = 0; k < starts.length; k++) {
          if (ends[k]! - starts[k]! !== length) continue;
          let j = 0;
          while (j < length && bytes[starts[k]! + j] === bytes[from + j]) j++;
          if (j === length) return true;
        }
        starts.push(from);
        ends.push(close);
      }
      i = close;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth >= MAX_DEPTH) return true;
      isObject[depth] = c === 0x7b ? 1 : 0;
      nameStarts[depth]!.length = 0;
      nameEnds[depth]!.length = 0;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
