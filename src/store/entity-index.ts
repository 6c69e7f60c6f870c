/**
 * The in-memory index both stores serve reads from: id → entity, and the creation order with
 * positional access.
 *
 * Entities sit in an array of slots in creation order; a delete leaves a hole. A Fenwick tree over
 * the live slots finds the slot of the k-th live entity in O(log n), so a page costs
 * O(limit · log n) whatever its offset and however many holes lie before it. When holes outnumber
 * live entities the array is re-packed (O(n), amortised O(1) per delete).
 */

/** What the index needs of an entity. */
export interface Identified {
  readonly id: string;
}

/** Holes are re-packed only past this count, so that small stores never re-pack. */
const MIN_HOLES_TO_REPACK = 1024;

export class EntityIndex<E extends Identified> {
  /** id → slot. */
  #slotOf = new Map<string, number>();
  /** Creation order; `undefined` is a deleted entity's hole. */
  #slots: (E | undefined)[] = [];
  /** Fenwick tree over `#slots` (1-based): 1 per live slot. Length is a capacity ≥ slots + 1. */
  #tree = new Int32Array(1024);
  #holes = 0;

  /** Number of live entities. */
  get size(): number {
    return this.#slotOf.size;
  }

  get(id: string): E | undefined {
    const slot = this.#slotOf.get(id);
    return slot === undefined ? undefined : this.#slots[slot];
  }

  has(id: string): boolean {
    return this.#slotOf.has(id);
  }

  /** Replaces the entity with the same id in place, or adds it at the end of the creation order. */
  set(entity: E): void {
    const slot = this.#slotOf.get(entity.id);
    if (slot !== undefined) {
      this.#slots[slot] = entity;
      return;
    }
    const index = this.#slots.length;
    this.#slots.push(entity);
    this.#slotOf.set(entity.id, index);
    if (index + 1 >= this.#tree.length) this.#rebuildTree(this.#tree.length * 2);
    else this.#add(index + 1, 1);
  }

  /** Removes an entity; false when the id is not there. */
  delete(id: string): boolean {
    const slot = this.#slotOf.get(id);
    if (slot === undefined) return false;
    this.#slotOf.delete(id);
    this.#slots[slot] = undefined;
    this.#add(slot + 1, -1);
    this.#holes++;
    if (this.#holes > MIN_HOLES_TO_REPACK && this.#holes > this.#slotOf.size) this.#repack();
    return true;
  }

  /** Live entities at positions `[offset, offset + limit)` of the creation order. */
  page(offset: number, limit: number): E[] {
    const size = this.size;
    const out: E[] = [];
    if (!(offset >= 0) || !(limit > 0) || offset >= size) return out;
    const last = Math.min(size, offset + limit);
    const slots = this.#slots;
    let slot = this.#holes === 0 ? offset : this.#find(offset + 1);
    for (let rank = offset + 1; rank <= last; rank++) {
      let entity = slots[slot];
      if (entity === undefined) {
        // Jump over a run of holes instead of walking it.
        slot = this.#find(rank);
        entity = slots[slot];
      }
      out.push(entity!);
      slot++;
    }
    return out;
  }

  /** Live entities in creation order. */
  *values(): IterableIterator<E> {
    // A re-pack replaces the array, so an iteration that spans writes walks a consistent snapshot.
    const slots = this.#slots;
    for (let i = 0; i < slots.length; i++) {
      const entity = slots[i];
      if (entity !== undefined) yield entity;
    }
  }

  /** Drops every entity. */
  clear(): void {
    this.#slotOf = new Map();
    this.#slots = [];
    this.#tree = new Int32Array(1024);
    this.#holes = 0;
  }

  #add(position: number, delta: number): void {
    const tree = this.#tree;
    for (let i = position; i < tree.length; i += i & -i) tree[i]! += delta;
  }

  /** 0-based slot of the live entity of 1-based rank `rank` (1 ≤ rank ≤ size). */
  #find(rank: number): number {
    const tree = this.#tree;
    let position = 0;
    let step = 1;
    while (step * 2 < tree.length) step *= 2;
    for (; step > 0; step >>= 1) {
      const next = position + step;
      if (next < tree.length && tree[next]! < rank) {
        position = next;
        rank -= tree[next]!;
      }
    }
    return position; // 1-based position + 1 is the answer; as a 0-based slot that is `position`
  }

  /** Builds the tree over the current slots in O(n), with room for `capacity - 1` slots. */
  #rebuildTree(capacity: number): void {
    const slots = this.#slots;
    while (capacity <= slots.length + 1) capacity *= 2;
    const tree = new Int32Array(capacity);
    for (let i = 1; i <= slots.length; i++) if (slots[i - 1] !== undefined) tree[i] = 1;
    for (let i = 1; i < capacity; i++) {
      const parent = i + (i & -i);
      if (parent < capacity) tree[parent]! += tree[i]!;
    }
    this.#tree = tree;
  }

  #repack(): void {
    const packed: E[] = [];
    for (const entity of this.#slots) {
      if (entity === undefined) continue;
      this.#slotOf.set(entity.id, packed.length);
      packed.push(entity);
    }
    this.#slots = packed;
    this.#holes = 0;
    this.#rebuildTree(1024);
  }
}
