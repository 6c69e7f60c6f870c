/**
 * Rows kept in the order of a comparator (a field's values, ties by row): the order index that
 * serves `sort` and range filters. A B-tree of one level: chunks of at most `CHUNK` rows, so that
 * an insert or a remove moves at most one chunk's members (a million rows in one array would move
 * megabytes per write), and the row at any rank is found by walking the chunk sizes.
 */
const CHUNK = 512;
const BUILD_FILL = 384;

export type RowComparator = (a: number, b: number) => number;

export class OrderedRows {
  #chunks: Int32Array[] = [];
  #sizes: number[] = [];
  #size = 0;
  readonly #compare: RowComparator;

  constructor(compare: RowComparator) {
    this.#compare = compare;
  }

  get size(): number {
    return this.#size;
  }

  /** Replaces the contents with rows already in comparator order. */
  load(sorted: Int32Array): void {
    this.#chunks = [];
    this.#sizes = [];
    for (let start = 0; start < sorted.length; start += BUILD_FILL) {
      const chunk = new Int32Array(CHUNK);
      const part = sorted.subarray(start, Math.min(sorted.length, start + BUILD_FILL));
      chunk.set(part);
      this.#chunks.push(chunk);
      this.#sizes.push(part.length);
    }
    this.#size = sorted.length;
  }

  /** The row at `rank` (0-based). */
  at(rank: number): number {
    const [chunk, offset] = this.#locate(rank);
    return this.#chunks[chunk]![offset]!;
  }

  /** A copy of the rows at ranks `[from, to)`. */
  copy(from: number, to: number): Int32Array {
    const out = new Int32Array(Math.max(0, Math.min(to, this.#size) - from));
    this.copyInto(out, from);
    return out;
  }

  /** Copies the rows from rank `from` on into `out`, as many as fit or remain; returns how many. */
  copyInto(out: Int32Array, from: number): number {
    const count = Math.max(0, Math.min(out.length, this.#size - from));
    if (count === 0) return 0;
    let [c, o] = this.#locate(from);
    for (let k = 0; k < count; c++, o = 0) {
      const take = Math.min(this.#sizes[c]! - o, count - k);
      out.set(this.#chunks[c]!.subarray(o, o + take), k);
      k += take;
    }
    return count;
  }

  /** The rows at ranks `[from, to)` in order, or, when `from > to`, those at `[to, from)` backwards. */
  *ranks(from: number, to: number): Generator<number, void, undefined> {
    if (from < to) {
      let [c, o] = this.#locate(from);
      for (let r = from; r < to; r++) {
        while (o >= this.#sizes[c]!) {
          c++;
          o = 0;
        }
        yield this.#chunks[c]![o++]!;
      }
    } else if (from > to) {
      let [c, o] = this.#locate(from - 1);
      for (let r = from - 1; r >= to; r--) {
        while (o < 0) o = this.#sizes[--c]! - 1;
        yield this.#chunks[c]![o--]!;
      }
    }
  }

  /**
   * Number of rows for which `probe(row) < 0`: with a probe that compares a row's value to a bound,
   * the rank where the bound would go. `probe` must be monotone over the order.
   */
  rankWhere(probe: (row: number) => number): number {
    const chunks = this.#chunks;
    const sizes = this.#sizes;
    // The first chunk whose last row is not below the bound.
    let lo = 0;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (probe(chunks[mid]![sizes[mid]! - 1]!) < 0) lo = mid + 1;
      else hi = mid;
    }
    let rank = 0;
    for (let c = 0; c < lo; c++) rank += sizes[c]!;
    if (lo === chunks.length) return rank;
    return rank + lowerBound(chunks[lo]!, sizes[lo]!, probe);
  }

  insert(row: number): void {
    if (this.#chunks.length === 0) {
      this.#chunks.push(new Int32Array(CHUNK));
      this.#sizes.push(0);
    }
    const [c, a] = this.#place(row);
    const chunk = this.#chunks[c]!;
    const size = this.#sizes[c]!;
    chunk.copyWithin(a + 1, a, size);
    chunk[a] = row;
    this.#sizes[c] = size + 1;
    this.#size++;
    if (size + 1 === CHUNK) this.#split(c);
  }

  /** Removes a row; its value must still be the one it was inserted with. */
  remove(row: number): boolean {
    if (this.#chunks.length === 0) return false;
    const [c, a] = this.#place(row);
    const chunk = this.#chunks[c]!;
    const size = this.#sizes[c]!;
    if (a >= size || chunk[a] !== row) return false;
    chunk.copyWithin(a, a + 1, size);
    this.#sizes[c] = size - 1;
    this.#size--;
    if (size - 1 === 0 && this.#chunks.length > 1) {
      this.#chunks.splice(c, 1);
      this.#sizes.splice(c, 1);
    }
    return true;
  }

  /** Renumbers rows after a re-pack of the creation order (monotone: ties keep their order). */
  remap(moved: Int32Array): void {
    for (let c = 0; c < this.#chunks.length; c++) {
      const chunk = this.#chunks[c]!;
      for (let i = 0; i < this.#sizes[c]!; i++) chunk[i] = moved[chunk[i]!]!;
    }
  }

  /** The chunk and the offset in it where `row` is, or would go. */
  #place(row: number): [number, number] {
    const compare = this.#compare;
    const probe = (other: number): number => compare(other, row);
    const c = this.#chunkFor(probe);
    return [c, lowerBound(this.#chunks[c]!, this.#sizes[c]!, probe)];
  }

  /** The chunk where a row compared by `probe` belongs: the first whose last row is not below it. */
  #chunkFor(probe: (row: number) => number): number {
    const chunks = this.#chunks;
    const sizes = this.#sizes;
    let lo = 0;
    let hi = chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const size = sizes[mid]!;
      if (size === 0 || probe(chunks[mid]![size - 1]!) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #locate(rank: number): [number, number] {
    const sizes = this.#sizes;
    let c = 0;
    while (c < sizes.length - 1 && rank >= sizes[c]!) rank -= sizes[c++]!;
    return [c, rank];
  }

  #split(c: number): void {
    const chunk = this.#chunks[c]!;
    const half = CHUNK >>> 1;
    const right = new Int32Array(CHUNK);
    right.set(chunk.subarray(half, CHUNK));
    this.#chunks.splice(c + 1, 0, right);
    this.#sizes.splice(c + 1, 0, CHUNK - half);
    this.#sizes[c] = half;
  }
}

/** The first offset in `chunk[0, size)` whose row is not below the probe's bound. */
function lowerBound(chunk: Int32Array, size: number, probe: (row: number) => number): number {
  let a = 0;
  let b = size;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if (probe(chunk[mid]!) < 0) a = mid + 1;
    else b = mid;
  }
  return a;
}
