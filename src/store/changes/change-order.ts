/**
 * The changes of one resource in cursor order, each entity's latest one only: a sorted array of
 * sequence numbers with holes (a superseded or forgotten change leaves one), re-packed when holes
 * outnumber the rest. Appends are O(1) (sequence numbers only grow), removal and "the first change
 * after s" are a binary search, so a feed resumed from far back starts where it should without
 * reading what lies before (the change order is indexed, never scanned).
 */
export class ChangeOrder<T extends { readonly seq: number }> {
  #seqs = new Float64Array(64);
  #items: (T | undefined)[] = [];
  #used = 0;
  #holes = 0;

  /** Live changes held. */
  get size(): number {
    return this.#used - this.#holes;
  }

  /** The largest sequence number held, or 0. */
  get last(): number {
    for (let i = this.#used - 1; i >= 0; i--) if (this.#items[i] !== undefined) return this.#seqs[i]!;
    return 0;
  }

  /** Adds a change; its `seq` must be above every one added before (`seq`: `item.seq`, if the caller has read it). */
  add(item: T, seq = item.seq): void {
    const used = this.#used;
    if (used > 0 && seq <= this.#seqs[used - 1]!) throw new RangeError(`change ${seq} is not after ${this.#seqs[used - 1]}`);
    if (used === this.#seqs.length) {
      const grown = new Float64Array(used * 2);
      grown.set(this.#seqs);
      this.#seqs = grown;
    }
    this.#seqs[used] = seq;
    this.#items[used] = item;
    this.#used = used + 1;
  }

  /** The change held at `seq`, if any. */
  get(seq: number): T | undefined {
    const i = this.#find(seq);
    return i < this.#used && this.#seqs[i] === seq ? this.#items[i] : undefined;
  }

  /** Drops the change at `seq` (superseded by a later one of its entity, or forgotten); false if none. */
  remove(seq: number): boolean {
    const i = this.#find(seq);
    if (i >= this.#used || this.#seqs[i] !== seq || this.#items[i] === undefined) return false;
    this.#items[i] = undefined;
    this.#holes++;
    if (this.#holes > 32 && this.#holes * 2 > this.#used) this.#repack();
    return true;
  }

  /** The changes with a sequence number above `after`, in order. */
  *after(after: number): IterableIterator<T> {
    // Positions move only on a re-pack, which a removal between two steps may cause: re-find then.
    let seq = after;
    let i = this.#find(after + 1);
    let packs = this.#packs;
    for (;;) {
      if (packs !== this.#packs) {
        i = this.#find(seq + 1);
        packs = this.#packs;
      }
      if (i >= this.#used) return;
      const item = this.#items[i++];
      if (item === undefined) continue;
      seq = item.seq;
      yield item;
    }
  }

  /** The sequence numbers of the changes held, in order: a copy, read from the array, not from the items. */
  numbers(): Float64Array {
    const out = new Float64Array(this.size);
    let n = 0;
    for (let i = 0; i < this.#used; i++) if (this.#items[i] !== undefined) out[n++] = this.#seqs[i]!;
    return out;
  }

  /** Every change held, in order. */
  values(): IterableIterator<T> {
    return this.after(-Infinity);
  }

  #packs = 0;

  #repack(): void {
    let w = 0;
    for (let r = 0; r < this.#used; r++) {
      const item = this.#items[r];
      if (item === undefined) continue;
      this.#items[w] = item;
      this.#seqs[w] = this.#seqs[r]!;
      w++;
    }
    this.#items.length = w;
    this.#used = w;
    this.#holes = 0;
    this.#packs++;
  }

  /** The first position whose sequence number is at least `seq`. */
  #find(seq: number): number {
    let lo = 0;
    let hi = this.#used;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#seqs[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/**
 * The positions of `seqs` in ascending order of their numbers, equal numbers in the order of their
 * positions; undefined when that is the order they are in already, each above the one before (a
 * log read at start-up, its lines in the order they were written, usually is).
 */
export function ascendingOrder(seqs: readonly number[]): Uint32Array | undefined {
  let ascending = true;
  for (let i = 1; i < seqs.length && ascending; i++) ascending = seqs[i]! > seqs[i - 1]!;
  if (ascending) return undefined;
  const order = new Uint32Array(seqs.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  return order.sort((a, b) => seqs[a]! - seqs[b]! || a - b);
}
