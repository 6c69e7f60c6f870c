import { fold, someString } from '../../conventions/query.js';
import { Postings } from './postings.js';
import { anyOf, intersection } from './row-lists.js';
import { CHECK_EVERY, type Slice, type Work } from './slices.js';

/** Search pieces whose matching tokens are remembered. */
const MAX_PIECES = 1024;

/** Letters and digits: the text between two of anything else is one token. */
const SEPARATORS = /[^\p{L}\p{N}]+/u;

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
 * The index `q` searches (docs/queries.md): case-folded token → rows that hold it. A search word made
 * of letters and digits only occurs in a string exactly when it occurs inside one of the string's
 * tokens, so its rows are the union of the rows of the tokens that contain it: found by scanning
 * the vocabulary (thousands of distinct tokens, not millions of strings). A word with other
 * characters is looked up by its letter-and-digit pieces, and the rows found are then checked
 * against the records.
 */
export class TextIndex {
  readonly #tokens = new Postings();
  /**
   * Search piece → the tokens that contain it, kept while the vocabulary grows (a new token joins
   * the lists whose piece it contains), so that a repeated search does not scan the vocabulary.
   */
  readonly #containing = new Map<string, string[]>();

  add(row: number, record: unknown): void {
    for (const token of tokensOf(record)) {
      if (this.#containing.size > 0 && this.#tokens.count(token) === 0) {
        for (const [piece, tokens] of this.#containing) if (token.includes(piece)) tokens.push(token);
      }
      this.#tokens.add(token, row);
    }
  }

  remove(row: number, record: unknown): void {
    // A token left with no rows stays in the lists above: it finds no rows there.
    for (const token of tokensOf(record)) this.#tokens.remove(token, row);
  }

  remap(moved: Int32Array): void {
    this.#tokens.remap(moved);
  }

  *#tokensContaining(piece: string, slice: Slice): Work<string[]> {
    const known = this.#containing.get(piece);
    if (known) return known;
    const found: string[] = [];
    // A block at a time in a plain function: a `for…of` over the keys inside this generator made
    // an iterator result per token, a million of them per search (a young collection every 8 MB).
    const tokens = this.#tokens.keys();
    while (tokensIn(tokens, piece, found, CHECK_EVERY)) if (slice.due) yield;
    // Another search may have filled it while this one yielded.
    const raced = this.#containing.get(piece);
    if (raced) return raced;
    if (this.#containing.size >= MAX_PIECES) this.#containing.clear();
    this.#containing.set(piece, found);
    return found;
  }

  /**
   * Rows that may match every word, in creation order, over rows `[0, slots)`; `exact` when they
   * are exactly the matches (every word letters and digits only). Each piece's rows are the union
   * of its tokens' rows, merged when they are few, marked over the slots when many; the pieces'
   * rows are then intersected. Nothing the size of the collection is allocated for a piece of a
   * few tokens (most words): memory allocated per query is what brings on full collections.
   */
  *candidates(words: readonly string[], slots: number, slice: Slice): Work<{ rows: Int32Array; exact: boolean }> {
    const pieces: string[] = [];
    let exact = true;
    for (const word of words) {
      const parts = word.split(SEPARATORS).filter((piece) => piece !== '');
      if (parts.length !== 1 || parts[0] !== word) exact = false;
      pieces.push(...parts);
    }
    let rows: Int32Array | undefined;
    for (const piece of new Set(pieces)) {
      const lists: Int32Array[] = [];
      let total = 0;
      for (const token of yield* this.#tokensContaining(piece, slice)) {
        const view = this.#tokens.rows(token);
        if (view === undefined) continue;
        lists.push(view);
        total += view.length;
      }
      const found = yield* anyOf(lists, total, slots, slice);
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

/** Adds to `found` the next `count` tokens that contain `piece`; false once the tokens are exhausted. */
function tokensIn(tokens: Iterator<string>, piece: string, found: string[], count: number): boolean {
  for (let n = 0; n < count; n++) {
    const next = tokens.next();
    if (next.done === true) return false;
    if (next.value.includes(piece)) found.push(next.value);
  }
  return true;
}
