/**
 * The in-memory index both stores serve reads from: id → entity, and the creation order with
 * positional access.
 *
 * Entities sit in an array of slots in creation order; a delete leaves a hole. A Fenwick tree over
 * the live slots finds the slot of the k-th live entity in O(log n), so a page costs
 * O(limit · log n) whatever its offset and however many holes lie before it. When holes outnumber
 * live entities the array is re-packed (O(n), amortised O(1) per delete).
 *
 * id → slot is an open-addressing hash table over an Int32Array rather than a `Map`: loading a
 * million entities into a `Map` alone took longer than half the start-up budget, mostly in
 * rehashing and in allocating its entries. Each table entry keeps its id's hash beside the slot,
 * so that a probe passing other entries compares integers in one cache line instead of chasing
 * each entity's id string through memory.
 */

/** What the index needs of an entity. */
export interface Identified {
  readonly id: string;
  /**
   * Whether this entity's id is `id`, when telling costs less than building `id` (an entity that
   * points into the bytes it was loaded from): every lookup whose hash matches asks it.
   */
  hasId?(id: string): boolean;
}

/** Whether `entity`'s id is `id`, without building its id string where the entity can tell. */
function isId(entity: Identified, id: string): boolean {
  return entity.hasId === undefined ? entity.id === id : entity.hasId(id);
}

const EMPTY = -1;

/** FNV-1a over the UTF-16 code units: ids are short, and this runs once per lookup. */
export function hashId(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  // Fold the high bits in (the table masks the low ones); `| 0` keeps it an int32 like the table.
  return (h ^ (h >>> 15)) | 0;
}

/**
 * `hashId` of the id whose UTF-8 bytes are `bytes[start, end)`, without building the string. A
 * non-ASCII id (whose bytes are not its UTF-16 code units) gives `undefined`: hash the string.
 */
export function hashIdBytes(bytes: Uint8Array, start: number, end: number): number | undefined {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) {
    const c = bytes[i]!;
    if (c >= 0x80) return undefined;
    h = Math.imul(h ^ c, 16777619);
  }
  return (h ^ (h >>> 15)) | 0;
}

/** A table of `entries` empty entries (`[slot, hash]` pairs). */
function emptyTable(entries: number): Int32Array {
  const table = new Int32Array(entries * 2);
  for (let i = 0; i < table.length; i += 2) table[i] = EMPTY;
  return table;
}

/** Holes are re-packed only past this count, so that small stores never re-pack. */
const MIN_HOLES_TO_REPACK = 1024;

export class EntityIndex<E extends Identified> {
  /**
   * id → slot, linear probing: entry `p` is `[slot, hash]` at `[2p, 2p + 1]`; slot -1 is empty.
   * The number of entries is a power of two, at most half of them used.
   */
  #table = emptyTable(1024);
  #count = 0;
  /** The hash `#probe` computed last (`set` stores it). */
  #lastHash = 0;
  /** The entity the last `set` replaced; undefined when it added one. */
  #replaced: E | undefined;
  /** Creation order; `undefined` is a deleted entity's hole. */
  #slots: (E | undefined)[] = [];
  /** Fenwick tree over `#slots` (1-based): 1 per live slot. Length is a capacity ≥ slots + 1. */
  #tree = new Int32Array(1024);
  #holes = 0;
  #revision = 0;
  #layout = 0;
  /** Told the old → new slot map whenever a re-pack renumbers the slots (secondary indexes follow). */
  onRepack: ((moved: Int32Array) => void) | undefined;

  /** Moves on every change of the index: equal revisions mean equal contents. */
  get revision(): number {
    return this.#revision;
  }

  /** Number of live entities. */
  get size(): number {
    return this.#count;
  }

  /** Moves whenever slots are renumbered: work that holds slot numbers across turns starts over. */
  get layout(): number {
    return this.#layout;
  }

  /** Slots are `[0, slotCount)`; a hole's entity is undefined. */
  get slotCount(): number {
    return this.#slots.length;
  }

  /** The entity in a slot (a row of the secondary indexes), or undefined for a hole. */
  at(slot: number): E | undefined {
    return this.#slots[slot];
  }

  /** The slot of an id, or -1. */
  slotOf(id: string): number {
    return this.#table[this.#probe(id, hashId(id))]!;
  }

  get(id: string): E | undefined {
    const slot = this.#table[this.#probe(id, hashId(id))]!;
    return slot === EMPTY ? undefined : this.#slots[slot];
  }

  has(id: string): boolean {
    return this.#table[this.#probe(id, hashId(id))] !== EMPTY;
  }

  /**
   * Replaces the entity with the same id in place, or adds it at the end of the creation order.
   * `idHash` must be `hashId(entity.id)`; a loader that hashed the id's bytes passes it, so that
   * the id string is never built for an entity that is only added.
   */
  set(entity: E, idHash?: number): number {
    this.#revision++;
    const at = this.#probe(entity, idHash ?? hashId(entity.id));
    const slot = this.#table[at]!;
    if (slot !== EMPTY) {
      this.#replaced = this.#slots[slot];
      this.#slots[slot] = entity;
      return slot;
    }
    this.#replaced = undefined;
    const index = this.#slots.length;
    this.#slots.push(entity);
    this.#table[at] = index;
    this.#table[at + 1] = this.#lastHash;
    // Past half full: double.
    if (++this.#count * 4 > this.#table.length) this.#rehash(this.#table.length);
    if (index + 1 >= this.#tree.length) this.#rebuildTree(this.#tree.length * 2);
    else this.#add(index + 1, 1);
    return index;
  }

  /** The entity the last `set` replaced (same id), or undefined when it added a new one. */
  get replaced(): E | undefined {
    return this.#replaced;
  }

  /** Makes room for `count` entities in the id table (a hint: loading knows roughly how many). */
  reserve(count: number): void {
    if (count * 4 > this.#table.length) this.#rehash(count * 2);
  }

  /** Removes an entity; false when the id is not there. Call `slotOf` first to learn its slot. */
  delete(id: string): boolean {
    const at = this.#probe(id, hashId(id));
    const slot = this.#table[at]!;
    if (slot === EMPTY) return false;
    this.#revision++;
    this.#unlink(at);
    this.#count--;
    this.#slots[slot] = undefined;
    this.#add(slot + 1, -1);
    this.#holes++;
    if (this.#holes > MIN_HOLES_TO_REPACK && this.#holes > this.#count) this.#repack();
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
    this.#revision++;
    this.#layout++;
    this.#table = emptyTable(1024);
    this.#count = 0;
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
    const slots = this.#slots;
    const packed: E[] = [];
    const moved = new Int32Array(slots.length);
    for (let slot = 0; slot < slots.length; slot++) {
      const entity = slots[slot];
      if (entity === undefined) continue;
      moved[slot] = packed.length;
      packed.push(entity);
    }
    this.#slots = packed;
    this.#holes = 0;
    this.#layout++;
    this.#rebuildTree(1024);
    this.#rehash(this.#table.length / 2, moved);
    this.onRepack?.(moved);
  }

  /** Index in `#table` of the entry for `id`: where it is, or the empty entry where it would go. */
  #probe(key: string | E, h: number): number {
    const table = this.#table;
    const slots = this.#slots;
    const mask = (table.length >> 1) - 1;
    this.#lastHash = h;
    // The id of `key` is read only when a hash matches: for a loaded entity that builds a string.
    for (let p = h & mask; ; p = (p + 1) & mask) {
      const slot = table[2 * p]!;
      if (slot === EMPTY) return 2 * p;
      if (table[2 * p + 1] === h && isId(slots[slot]!, typeof key === 'string' ? key : key.id)) return 2 * p;
    }
  }

  /** Empties the entry at index `at`, shifting later members of its probe run back (no tombstones). */
  #unlink(at: number): void {
    const table = this.#table;
    const mask = (table.length >> 1) - 1;
    let hole = at >> 1;
    for (let next = (hole + 1) & mask; ; next = (next + 1) & mask) {
      const slot = table[2 * next]!;
      if (slot === EMPTY) break;
      const home = table[2 * next + 1]! & mask;
      // Move it into the hole unless its home lies cyclically in (hole, next].
      const stays = hole <= next ? hole < home && home <= next : hole < home || home <= next;
      if (!stays) {
        table[2 * hole] = slot;
        table[2 * hole + 1] = table[2 * next + 1]!;
        hole = next;
      }
    }
    table[2 * hole] = EMPTY;
  }

  /**
   * Rebuilds the id table with at least `minimum` entries from the stored hashes (ids are not
   * read again); `moved` maps old slots to new ones after a re-pack.
   */
  #rehash(minimum: number, moved?: Int32Array): void {
    let entries = 1024;
    while (entries < minimum || entries < this.#count * 2 + 2) entries *= 2;
    const old = this.#table;
    const table = emptyTable(entries);
    const mask = entries - 1;
    for (let i = 0; i < old.length; i += 2) {
      const slot = old[i]!;
      if (slot === EMPTY) continue;
      const h = old[i + 1]!;
      let p = h & mask;
      while (table[2 * p] !== EMPTY) p = (p + 1) & mask;
      table[2 * p] = moved ? moved[slot]! : slot;
      table[2 * p + 1] = h;
    }
    this.#table = table;
  }
}
