import { fold, someString } from '../../conventions/query.js';
import type { StoredEntity } from '../store.js';
import { JsonTokens } from './json-tokens.js';
import { Postings } from './postings.js';
import { anyOf, intersection } from './row-lists.js';
import { CHECK_EVERY, type Slice, type Work } from './slices.js';
import { hashTokenBytes, Vocabulary } from './vocabulary.js';

/** Search pieces whose matching tokens are remembered. */
const MAX_PIECES = 1024;

/** Letters and digits: the text between two of anything else is one token. */
const SEPARATORS = /[^\p{L}\p{N}]+/u;

/** Base rows of a piece gathered and sorted up to this many; more are marked over the slots. */
const GATHER_AT_MOST = 65_536;

/** Rows indexed between two looks at the clock when the postings are laid out. */
const ROWS_PER_CHECK = 4096;

/** (token, row) pairs per chunk of a build (`TextBuilder`): 4 MiB. */
const PAIRS_PER_CHUNK = 1 << 20;

const EMPTY = new Int32Array(0);
const encoder = new TextEncoder();

/** The distinct case-folded tokens of every string in a record. */
export function tokensOf(record: unknown): Set<string> {
  const tokens = new Set<string>();
  someString(record, (text) => {
    for (const token of fold(text).split(SEPARATORS)) if (token !== '') tokens.add(token);
    return false;
  });
  return tokens;
}

/**
 * The distinct letter-and-digit pieces of search words (case-folded), and whether rows holding every
 * piece are exactly the matches: true when every word is a single piece.
 */
export function searchPieces(words: readonly string[]): { pieces: string[]; exact: boolean } {
  const pieces = new Set<string>();
  let exact = true;
  for (const word of words) {
    const parts = word.split(SEPARATORS).filter((piece) => piece !== '');
    if (parts.length !== 1 || parts[0] !== word) exact = false;
    for (const part of parts) pieces.add(part);
  }
  return { pieces: [...pieces], exact };
}

/** The tokens of a search piece: those of the built vocabulary by number, and those written since by name. */
interface Containing {
  readonly base: Int32Array;
  readonly added: Set<string>;
}

/**
 * The index `q` searches (docs/queries.md): case-folded token → rows that hold it. A search word made
 * of letters and digits only occurs in a string exactly when it occurs inside one of the string's
 * tokens, so its rows are the union of the rows of the tokens that contain it, found by a search
 * of the vocabulary. A word with other characters is looked up by its letter-and-digit pieces,
 * and the rows found are then checked against the records.
 *
 * Two parts. The base, laid out once by `TextBuilder` from every row: the vocabulary
 * (`vocabulary.ts`) and, per token number, its rows in one shared Int32Array (`#postings`, the
 * rows of token t at `[#offsets[t], #offsets[t + 1])`) — a few bytes per (token, row) pair and no
 * object per token, where a map of sets cost a hundred bytes and more per token. And what writes
 * changed since: a row written after the build is marked stale in the base (`#stale`) and its
 * current tokens go to `#written`, an ordinary map of row sets. A re-pack of the rows folds the
 * stale marks into the base.
 */
export class TextIndex {
  readonly #vocabulary: Vocabulary;
  readonly #offsets: Int32Array;
  #postings: Int32Array;
  /** Rows below this were laid out in the base; a stale one's base entries no longer count. */
  #baseSlots: number;
  #stale: Uint8Array;
  #staleCount = 0;
  readonly #written = new Postings();
  /**
   * Search piece → the tokens that contain it, kept while the written tokens grow (a new one joins
   * the sets whose piece it contains), so that a repeated search does not search the vocabulary.
   */
  readonly #containing = new Map<string, Containing>();

  constructor(vocabulary: Vocabulary, offsets: Int32Array, postings: Int32Array, slots: number) {
    this.#vocabulary = vocabulary;
    this.#offsets = offsets;
    this.#postings = postings;
    this.#baseSlots = slots;
    this.#stale = new Uint8Array(slots);
  }

  /** An index of no rows, that writes then fill. */
  static empty(): TextIndex {
    return new TextIndex(new Vocabulary(), new Int32Array(1), EMPTY, 0);
  }

  add(row: number, record: unknown): void {
    for (const token of tokensOf(record)) {
      if (this.#containing.size > 0 && this.#written.count(token) === 0) {
        for (const [piece, tokens] of this.#containing) if (token.includes(piece)) tokens.added.add(token);
      }
      this.#written.add(token, row);
    }
  }

  remove(row: number, record: unknown): void {
    if (row < this.#baseSlots && this.#stale[row] === 0) {
      this.#stale[row] = 1;
      this.#staleCount++;
    }
    // A token left with no rows stays in the sets above: it finds no rows there.
    for (const token of tokensOf(record)) this.#written.remove(token, row);
  }

  /** Renumbers rows after a re-pack of the creation order (`moved` is monotone over live rows); stale base rows go. */
  remap(moved: Int32Array, slots: number): void {
    this.#written.remap(moved);
    const offsets = this.#offsets;
    const postings = this.#postings;
    const stale = this.#stale;
    let w = 0;
    let from = 0;
    for (let t = 0; t + 1 < offsets.length; t++) {
      const to = offsets[t + 1]!;
      offsets[t] = w;
      for (let k = from; k < to; k++) {
        const row = postings[k]!;
        if (stale[row] === 0) postings[w++] = moved[row]!;
      }
      from = to;
    }
    offsets[offsets.length - 1] = w;
    this.#postings = postings.subarray(0, w);
    this.#baseSlots = slots;
    this.#stale = new Uint8Array(slots);
    this.#staleCount = 0;
  }

  *#tokensContaining(piece: string, slice: Slice): Work<Containing> {
    const known = this.#containing.get(piece);
    if (known) return known;
    const base = yield* this.#vocabulary.containing(piece, slice);
    const added = new Set<string>();
    // A block at a time in a plain function: a `for…of` over the keys inside this generator made
    // an iterator result per token (a young collection every 8 MB).
    const tokens = this.#written.keys();
    while (tokensIn(tokens, piece, added, CHECK_EVERY)) if (slice.due) yield;
    // Another search may have filled it while this one yielded.
    const raced = this.#containing.get(piece);
    if (raced) return raced;
    if (this.#containing.size >= MAX_PIECES) this.#containing.clear();
    const found = { base, added };
    this.#containing.set(piece, found);
    return found;
  }

  /** The base rows of these tokens that are not stale, sorted, without repeats. */
  *#baseRows(ids: Int32Array, slots: number, slice: Slice): Work<Int32Array> {
    const offsets = this.#offsets;
    const postings = this.#postings;
    if (ids.length === 0) return EMPTY;
    // One token and no write since the build (most words): its list as it is, no copy.
    if (ids.length === 1 && this.#staleCount === 0) return postings.subarray(offsets[ids[0]!]!, offsets[ids[0]! + 1]!);
    let total = 0;
    for (let i = 0; i < ids.length; i++) total += offsets[ids[i]! + 1]! - offsets[ids[i]!]!;
    const stale = this.#stale;
    const checkStale = this.#staleCount > 0;
    if (total <= GATHER_AT_MOST) {
      const rows = new Int32Array(total);
      let k = 0;
      for (let i = 0; i < ids.length; i++) {
        for (let p = offsets[ids[i]!]!, end = offsets[ids[i]! + 1]!; p < end; p++) {
          const row = postings[p]!;
          if (!checkStale || stale[row] === 0) rows[k++] = row;
        }
      }
      const gathered = rows.subarray(0, k).sort();
      let distinct = 0;
      for (let i = 0; i < gathered.length; i++) if (i === 0 || gathered[i] !== gathered[i - 1]) gathered[distinct++] = gathered[i]!;
      return gathered.subarray(0, distinct);
    }
    // Many rows: marked over the slots, then swept, in slices.
    const marks = new Uint8Array(slots);
    let count = 0;
    let since = 0;
    for (let i = 0; i < ids.length; i++) {
      const from = offsets[ids[i]!]!;
      const to = offsets[ids[i]! + 1]!;
      count += mark(marks, postings, from, to, checkStale ? stale : undefined);
      since += to - from + 1;
      if (since >= 65_536) {
        since = 0;
        if (slice.due) yield;
      }
    }
    const rows = new Int32Array(count);
    let k = 0;
    for (let row = 0; row < slots; row += 65_536) {
      const end = Math.min(slots, row + 65_536);
      for (let r = row; r < end; r++) if (marks[r] === 1) rows[k++] = r;
      if (slice.due) yield;
    }
    return rows;
  }

  /**
   * Rows that may match every word, in creation order, over rows `[0, slots)`; `exact` when they
   * are exactly the matches (every word letters and digits only). Each piece's rows are the union
   * of its tokens' rows; the pieces' rows are then intersected. A piece of one token (most words)
   * allocates nothing the size of the collection.
   */
  *candidates(words: readonly string[], slots: number, slice: Slice): Work<{ rows: Int32Array; exact: boolean }> {
    const { pieces, exact } = searchPieces(words);
    let rows: Int32Array | undefined;
    for (const piece of pieces) {
      const tokens = yield* this.#tokensContaining(piece, slice);
      let found = yield* this.#baseRows(tokens.base, slots, slice);
      if (tokens.added.size > 0) {
        const lists: Int32Array[] = [found];
        let total = found.length;
        for (const token of tokens.added) {
          const view = this.#written.rows(token);
          if (view === undefined) continue;
          lists.push(view);
          total += view.length;
        }
        found = yield* anyOf(lists, total, slots, slice);
      }
      rows = rows === undefined ? found : intersection(rows, found);
      if (rows.length === 0) break;
      if (slice.due) yield;
    }
    // No letter or digit in any word: every row is a candidate, checked against its record.
    if (rows === undefined) {
      rows = new Int32Array(slots);
      for (let row = 0; row < slots; row++) rows[row] = row;
    }
    return { rows, exact };
  }
}

/**
 * Lays out a `TextIndex` over rows `[0, slots)`, given in order: each row's tokens are numbered
 * (`JsonTokens` over the stored JSON text when the entity hands its bytes, else the parsed record)
 * and kept as one token number per (token, row) pair; `finish` then counts them into the postings.
 *
 * The pairs (about 15 a record: 60 MB at a million) sit in chunks of `PAIRS_PER_CHUNK` rather
 * than in one array grown by doubling: growing copies nothing, and `finish` lets each chunk go
 * once it has read it. Each large buffer allocated counts towards the external memory that makes
 * V8 collect the whole heap (a million entities' worth), so a build that allocates less collects
 * less often.
 */
export class TextBuilder {
  readonly #vocabulary: Vocabulary;
  readonly #tokens = new JsonTokens();
  readonly #slots: number;
  /** Token number of each (token, row) pair, rows in order, a row's pairs within one chunk. */
  #chunks: Int32Array[] = [];
  /** Pair number (over every chunk) of each chunk's first pair. */
  #chunkStarts: number[] = [];
  #chunk: Int32Array = EMPTY;
  /** Pairs in the chunk being filled. */
  #inChunk = 0;
  #pairCount = 0;
  /** Row r's pairs end at pair number `#rowEnds[r]`. */
  readonly #rowEnds: Int32Array;
  /**
   * Per token: rows holding it. A row counts a token once: while the row is added, the tokens it
   * has counted are marked by holding their count complemented (negative), and unmarked at its
   * end — no second array of the last row per token.
   */
  #counts: Int32Array;
  #parsed: Int32Array = new Int32Array(64);
  readonly #scan = (bytes: Uint8Array, start: number, end: number): number => this.#tokens.scan(bytes, start, end, this.#vocabulary);

  readonly #pairsPerChunk: number;

  /** `pairsPerChunk`: smaller in tests, so that a few rows fill several chunks. */
  constructor(slots: number, pairsPerChunk = PAIRS_PER_CHUNK) {
    this.#slots = slots;
    this.#pairsPerChunk = pairsPerChunk;
    this.#vocabulary = new Vocabulary(slots);
    this.#counts = new Int32Array(Math.max(1024, slots));
    this.#rowEnds = new Int32Array(slots);
  }

  /** Row `row`'s entity (undefined: a hole); rows must come in order, every one below the slots. */
  add(row: number, entity: StoredEntity | undefined): void {
    if (entity !== undefined) {
      let n = entity.jsonBytes ? entity.jsonBytes(this.#scan) : this.#scanText(entity.json);
      let ids = this.#tokens.ids;
      if (n < 0) {
        n = this.#fromRecord(entity.record);
        ids = this.#parsed;
      }
      const size = this.#vocabulary.size;
      if (size > this.#counts.length) this.#counts = grown(this.#counts, size);
      if (this.#inChunk + n > this.#chunk.length) this.#newChunk(n);
      const counts = this.#counts;
      const chunk = this.#chunk;
      const first = this.#inChunk;
      let k = first;
      for (let i = 0; i < n; i++) {
        const id = ids[i]!;
        const count = counts[id]!;
        if (count < 0) continue; // already counted for this row
        counts[id] = ~count;
        chunk[k++] = id;
      }
      for (let j = first; j < k; j++) {
        const id = chunk[j]!;
        counts[id] = ~counts[id]! + 1;
      }
      this.#inChunk = k;
      this.#pairCount += k - first;
    }
    this.#rowEnds[row] = this.#pairCount;
  }

  /**
   * A chunk for at least `n` more pairs: a row's pairs are never split between two. A small
   * collection's chunk is sized for about 16 tokens a row, not the 4 MiB a large one fills.
   */
  #newChunk(n: number): void {
    this.#chunk = new Int32Array(Math.max(n, Math.min(this.#pairsPerChunk, 16 * this.#slots + 1024)));
    this.#chunks.push(this.#chunk);
    this.#chunkStarts.push(this.#pairCount);
    this.#inChunk = 0;
  }

  /** The index, once every row has been added. */
  *finish(slice: Slice): Work<TextIndex> {
    const size = this.#vocabulary.size;
    const offsets = new Int32Array(size + 1);
    const cursor = this.#counts;
    for (let t = 0; t < size; t++) {
      offsets[t + 1] = offsets[t]! + cursor[t]!;
      cursor[t] = offsets[t]!;
    }
    const postings = new Int32Array(this.#pairCount);
    const rowEnds = this.#rowEnds;
    const chunks = this.#chunks;
    this.#chunk = EMPTY;
    let row = 0;
    let since = 0;
    for (let c = 0; c < chunks.length; c++) {
      const chunk = chunks[c]!;
      const base = this.#chunkStarts[c]!;
      const stop = c + 1 < chunks.length ? this.#chunkStarts[c + 1]! : this.#pairCount;
      // The rows whose pairs this chunk holds (rows without pairs pass by on the way).
      let k = base;
      while (k < stop) {
        for (const end = rowEnds[row]!; k < end; k++) postings[cursor[chunk[k - base]!]!++] = row;
        row++;
        if (++since === ROWS_PER_CHECK) {
          since = 0;
          if (slice.due) yield;
        }
      }
      chunks[c] = EMPTY; // read: let it go
    }
    this.#chunks = [];
    this.#counts = EMPTY;
    return new TextIndex(this.#vocabulary, offsets, postings, this.#slots);
  }

  #scanText(json: string): number {
    const bytes = Buffer.from(json, 'utf8');
    return this.#tokens.scan(bytes, 0, bytes.length, this.#vocabulary);
  }

  /** The record's tokens numbered into `#parsed`: the way for text the byte scan leaves to the parse. */
  #fromRecord(record: unknown): number {
    let n = 0;
    for (const token of tokensOf(record)) {
      const bytes = encoder.encode(token);
      if (n === this.#parsed.length) this.#parsed = grown(this.#parsed, n + 1);
      this.#parsed[n++] = this.#vocabulary.intern(bytes, 0, bytes.length, hashTokenBytes(bytes, 0, bytes.length));
    }
    return n;
  }
}

/** Marks the rows `postings[from, to)` (those not stale); returns how many were not marked before. */
function mark(marks: Uint8Array, postings: Int32Array, from: number, to: number, stale: Uint8Array | undefined): number {
  let added = 0;
  for (let p = from; p < to; p++) {
    const row = postings[p]!;
    if (marks[row] === 0 && (stale === undefined || stale[row] === 0)) {
      marks[row] = 1;
      added++;
    }
  }
  return added;
}

function grown(array: Int32Array, atLeast: number): Int32Array {
  const next = new Int32Array(Math.max(array.length * 2, atLeast));
  next.set(array);
  return next;
}

/** Adds to `found` the next `count` tokens that contain `piece`; false once the tokens are exhausted. */
function tokensIn(tokens: Iterator<string>, piece: string, found: Set<string>, count: number): boolean {
  for (let n = 0; n < count; n++) {
    const next = tokens.next();
    if (next.done === true) return false;
    if (next.value.includes(piece)) found.add(next.value);
  }
  return true;
}
