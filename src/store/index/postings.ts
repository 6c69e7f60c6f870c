import { RowSet } from './row-set.js';

/**
 * Key → rows in creation order: the equality postings of a field, the token postings of the text
 * index. Most keys of a high-cardinality field (names, ids, numbers) hold one row, so a key with
 * one row keeps a bare number: a million one-row typed arrays would cost a hundred megabytes.
 */
export class Postings {
  readonly #map = new Map<string, number | RowSet>();

  get distinct(): number {
    return this.#map.size;
  }

  /** How many rows hold `key`. */
  count(key: string): number {
    const rows = this.#map.get(key);
    return rows === undefined ? 0 : typeof rows === 'number' ? 1 : rows.size;
  }

  /** The rows of `key` in order (a view valid until the next change), or undefined. */
  rows(key: string): Int32Array | undefined {
    const rows = this.#map.get(key);
    return rows === undefined ? undefined : typeof rows === 'number' ? Int32Array.of(rows) : rows.view();
  }

  add(key: string, row: number): void {
    const rows = this.#map.get(key);
    if (rows === undefined) this.#map.set(key, row);
    else if (typeof rows === 'number') {
      if (rows === row) return;
      const set = new RowSet();
      set.add(Math.min(rows, row));
      set.add(Math.max(rows, row));
      this.#map.set(key, set);
    } else rows.add(row);
  }

  remove(key: string, row: number): void {
    const rows = this.#map.get(key);
    if (rows === undefined) return;
    if (typeof rows === 'number') {
      if (rows === row) this.#map.delete(key);
      return;
    }
    rows.remove(row);
    if (rows.size === 1) this.#map.set(key, rows.at(0));
    else if (rows.size === 0) this.#map.delete(key);
  }

  /** Keys in no particular order, with their row counts (a vocabulary scan). */
  keys(): IterableIterator<string> {
    return this.#map.keys();
  }

  /** Keys in no particular order, each with its count of rows (a facet over every row). */
  *counts(): Generator<[key: string, count: number], void, undefined> {
    for (const [key, rows] of this.#map) yield [key, typeof rows === 'number' ? 1 : rows.size];
  }

  /** Renumbers rows after a re-pack of the creation order. */
  remap(moved: Int32Array): void {
    for (const [key, rows] of this.#map) {
      if (typeof rows === 'number') this.#map.set(key, moved[rows]!);
      else rows.remap(moved);
    }
  }
}
