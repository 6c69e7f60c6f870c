import { fold, someString } from '../../conventions/query.js';
import { Postings } from './postings.js';
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
 * The index `q` searches (contract §3a): case-folded token → rows that hold it. A search word made
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
    let step = 0;
    for (const token of this.#tokens.keys()) {
      if (token.includes(piece)) found.push(token);
      if (++step % CHECK_EVERY === 0 && slice.due) yield;
    }
    // Another search may have filled it while this one yielded.
    const raced = this.#containing.get(piece);
    if (raced) return raced;
    if (this.#containing.size >= MAX_PIECES) this.#containing.clear();
    this.#containing.set(piece, found);
    return found;
  }

  /**
   * Rows that may match every word, in creation order, over rows `[0, slots)`; `exact` when they
   * are exactly the matches (every word letters and digits only).
   */
  *candidates(words: readonly string[], slots: number, slice: Slice): Work<{ rows: Int32Array; exact: boolean }> {
    const groups: string[] = [];
    let exact = true;
    for (const word of words) {
      const pieces = word.split(SEPARATORS).filter((piece) => piece !== '');
      if (pieces.length !== 1 || pieces[0] !== word) exact = false;
      groups.push(...pieces);
    }
    // `hits[row] === g` once the row has matched the first g groups.
    const hits = new Uint8Array(slots);
    let g = 0;
    for (const piece of groups) {
      for (const token of yield* this.#tokensContaining(piece, slice)) {
        const view = this.#tokens.rows(token);
        if (view === undefined) continue;
        for (let i = 0; i < view.length; i++) {
          const row = view[i]!;
          if (hits[row] === g) hits[row] = g + 1;
        }
      }
      g++;
      if (g === 255) break; // more pieces than a byte counts: the rest are checked against the records
    }
    if (g < groups.length) exact = false;
    let count = 0;
    for (let row = 0; row < slots; row++) if (hits[row] === g) count++;
    const rows = new Int32Array(count);
    let k = 0;
    for (let row = 0; row < slots; row++) if (hits[row] === g) rows[k++] = row;
    return { rows, exact };
  }
}
