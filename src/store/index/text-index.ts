import { fold, someString } from '../../conventions/query.js';
import { RowSet } from './row-set.js';
import { CHECK_EVERY, type Slice, type Work } from './slices.js';

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
  readonly #tokens = new Map<string, RowSet>();

  add(row: number, record: unknown): void {
    for (const token of tokensOf(record)) {
      let rows = this.#tokens.get(token);
      if (rows === undefined) {
        rows = new RowSet();
        this.#tokens.set(token, rows);
      }
      rows.add(row);
    }
  }

  remove(row: number, record: unknown): void {
    for (const token of tokensOf(record)) {
      const rows = this.#tokens.get(token);
      if (rows === undefined) continue;
      rows.remove(row);
      if (rows.size === 0) this.#tokens.delete(token);
    }
  }

  remap(moved: Int32Array): void {
    for (const rows of this.#tokens.values()) rows.remap(moved);
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
      let step = 0;
      for (const [token, rows] of this.#tokens) {
        if (++step % CHECK_EVERY === 0 && slice.due) yield;
        if (!token.includes(piece)) continue;
        const view = rows.view();
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
