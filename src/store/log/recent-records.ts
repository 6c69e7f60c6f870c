/**
 * The records of the last entities a store updated, kept as the objects they were written from, so
 * that the next write of a hot entity (a PATCH merges into the current record) does not parse its
 * JSON again. A created entity is not held here: the JSON-lines store keeps its record only until
 * its batch's successor is applied, long enough for the answer to its write (its links); see
 * `#holdRecord` in jsonl-store.ts. Every other reader, and every entity written longer ago, parses
 * the JSON as before, and gets the same values: a record and the parse of its `JSON.stringify` are
 * equal as JSON.
 *
 * Bounded in entries and in the bytes of the entities' JSON: the oldest holder lets go of its record
 * first (first in, first out; a hit changes nothing, so holding is O(1) whatever the pattern), and
 * an entity whose JSON alone is over the byte bound is never held.
 */

/** An entity that can hold the record it was written from, and let go of it. */
export interface RecordHolder {
  releaseRecord(): void;
}

export class RecentRecords {
  readonly #holders: (RecordHolder | undefined)[];
  readonly #weights: Int32Array;
  readonly #maxBytes: number;
  /** Slot of the oldest holder, and how many are held. */
  #oldest = 0;
  #count = 0;
  #bytes = 0;

  constructor(maxEntries: number, maxBytes: number) {
    this.#holders = new Array<RecordHolder | undefined>(maxEntries).fill(undefined);
    this.#weights = new Int32Array(maxEntries);
    this.#maxBytes = maxBytes;
  }

  /** How many entities hold their record now, and their JSON's bytes. */
  get size(): number {
    return this.#count;
  }
  get bytes(): number {
    return this.#bytes;
  }

  /** Lets `holder` keep its record (`weight`: its JSON's length) until newer ones push it out; returns it. */
  hold<T extends RecordHolder>(holder: T, weight: number): T {
    const capacity = this.#holders.length;
    if (weight > this.#maxBytes || capacity === 0) {
      holder.releaseRecord();
      return holder;
    }
    while (this.#count === capacity || this.#bytes + weight > this.#maxBytes) this.#releaseOldest();
    const slot = (this.#oldest + this.#count) % capacity;
    this.#holders[slot] = holder;
    this.#weights[slot] = weight;
    this.#count++;
    this.#bytes += weight;
    return holder;
  }

  #releaseOldest(): void {
    const slot = this.#oldest;
    this.#holders[slot]!.releaseRecord();
    this.#holders[slot] = undefined;
    this.#bytes -= this.#weights[slot]!;
    this.#oldest = (slot + 1) % this.#holders.length;
    this.#count--;
  }
}
