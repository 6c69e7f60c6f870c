/**
 * A set of rows (creation-order slots) kept sorted in one growable Int32Array: an equality
 * posting list or a search token's rows. Creation order is row order, so a new entity appends in
 * O(1), the k-th member is one array read (a page at any offset costs its length), and the size is
 * the exact `total` of an equality filter. An update that moves an old row between values inserts
 * in the middle: one memmove of at most the set's size.
 */
export class RowSet {
  #rows: Int32Array;
  #size = 0;

  constructor(capacity = 4) {
    this.#rows = new Int32Array(capacity);
  }

  /** A set over rows already in increasing order (the array is taken over, not copied). */
  static fromSorted(rows: Int32Array, size = rows.length): RowSet {
    const set = new RowSet(0);
    set.#rows = rows;
    set.#size = size;
    return set;
  }

  get size(): number {
    return this.#size;
  }

  /** The k-th smallest row. */
  at(k: number): number {
    return this.#rows[k]!;
  }

  /** The members in order, as a view valid until the next change. */
  view(): Int32Array {
    return this.#rows.subarray(0, this.#size);
  }

  /** Number of members smaller than `row`. */
  rank(row: number): number {
    let lo = 0;
    let hi = this.#size;
    const rows = this.#rows;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (rows[mid]! < row) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  has(row: number): boolean {
    const at = this.rank(row);
    return at < this.#size && this.#rows[at] === row;
  }

  add(row: number): void {
    const size = this.#size;
    if (size === this.#rows.length) this.#grow();
    const rows = this.#rows;
    if (size === 0 || rows[size - 1]! < row) {
      rows[size] = row;
      this.#size++;
      return;
    }
    const at = this.rank(row);
    if (rows[at] === row) return;
    rows.copyWithin(at + 1, at, size);
    rows[at] = row;
    this.#size++;
  }

  remove(row: number): void {
    const at = this.rank(row);
    if (at >= this.#size || this.#rows[at] !== row) return;
    this.#rows.copyWithin(at, at + 1, this.#size);
    this.#size--;
    // Give memory back when a large set has shrunk to a quarter of its room.
    if (this.#rows.length > 64 && this.#size * 4 < this.#rows.length) this.#rows = this.#rows.slice(0, this.#size * 2);
  }

  /** Renumbers every row after the creation order was re-packed; `moved` is monotone, so order holds. */
  remap(moved: Int32Array): void {
    const rows = this.#rows;
    for (let i = 0; i < this.#size; i++) rows[i] = moved[rows[i]!]!;
  }

  #grow(): void {
    const rows = new Int32Array(Math.max(4, this.#rows.length * 2));
    rows.set(this.#rows);
    this.#rows = rows;
  }
}
