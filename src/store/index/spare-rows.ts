/**
 * Buffers of rows lent to one piece of query work and taken back when it ends, so that a large
 * temporary copy of rows is not a new `Int32Array` per query. An `ArrayBuffer` is memory outside
 * the JavaScript heap that V8 counts as it is allocated, and enough of it starts a full collection.
 * A facet count over a third of a million products copied its rows into a new one, 1.3 MB a query:
 * 179 of the 512 MiB of large typed arrays made under bench/fairness.ts's heavy clients (30 MiB
 * with this pool; bench/NOTES.md, 2026-11-27).
 *
 * At most `keep` buffers wait to be lent again (the largest kept), each an eighth larger than asked
 * for, so that a range that grows by a few rows still fits: 4.5 bytes a row, 9 MB for two copies of
 * a million rows, held for the life of the process. A buffer is lent to one borrower at a time:
 * what `borrow` answers is the borrower's until it `give`s it back, and not after.
 */
export class SpareRows {
  readonly #keep: number;
  readonly #spare: Int32Array[] = [];

  constructor(keep: number) {
    this.#keep = keep;
  }

  /** Buffers waiting now. */
  get size(): number {
    return this.#spare.length;
  }

  /** An array of `length` rows (its contents are whatever was left there): the smallest spare that fits, or a new one. */
  borrow(length: number): Int32Array {
    const spare = this.#spare;
    let best = -1;
    for (let i = 0; i < spare.length; i++) {
      if (spare[i]!.length >= length && (best === -1 || spare[i]!.length < spare[best]!.length)) best = i;
    }
    if (best === -1) return new Int32Array(length + (length >> 3)).subarray(0, length);
    const [buffer] = spare.splice(best, 1);
    return buffer!.subarray(0, length);
  }

  /** Takes back an array `borrow` answered; the borrower no longer reads or writes it. */
  give(rows: Int32Array): void {
    const spare = this.#spare;
    spare.push(new Int32Array(rows.buffer, 0, rows.buffer.byteLength >> 2));
    if (spare.length > this.#keep) {
      let smallest = 0;
      for (let i = 1; i < spare.length; i++) if (spare[i]!.length < spare[smallest]!.length) smallest = i;
      spare.splice(smallest, 1);
    }
  }
}
