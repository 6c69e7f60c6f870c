/**
 * A map with exact least-recently-used eviction, bounded in entries and in weight (bytes for the
 * caches of representations, 1 a client for the rate limiter), whose hit, insert, delete and
 * eviction each cost O(1) whatever its size and whatever the access pattern. Read with `peek` only,
 * it is a map in insertion order (a `set` of a held key moves it to the end) whose oldest entry is
 * found in O(1): the store's remembered answers and remembered deletes use it so.
 *
 * **Eviction rule (exact LRU).** An entry is *used* when `get` finds it or `set` stores it (`peek`
 * does not count). When a `set` takes the map past either bound, the entries used least recently
 * are evicted, one at a time, until both bounds hold again; the entry just set is never among them.
 * An entry heavier than `maxEntryWeight` is never kept (so one huge page cannot empty the cache for
 * everything else), and setting one drops the old value of its key.
 *
 * **Why not a `Map`'s insertion order.** Moving a key to the end of a `Map` means deleting and
 * adding it again, and in V8 the deleted entry stays in that key's hash chain until the table is
 * next rebuilt: a hot key re-added on every hit makes its own chain longer with every hit (measured
 * at 13–22 µs per hit at 10,000–100,000 entries, against tens of nanoseconds). Finding the oldest
 * entry by iterating the `Map` from its start walks past every entry deleted since the last
 * rebuild. Here the order lives in a doubly linked list over an array of slot numbers; the
 * `Map` only finds a key's slot, and a key is deleted from it only when it leaves the map for good.
 */

/** The end of the list: no slot. */
const NONE = -1;
/** Slots of a new or cleared map; the links double as needed. */
const INITIAL_SLOTS = 16;

export interface LruMapOptions {
  /** Entries held at most (at least 1). */
  readonly maxEntries: number;
  /** Total weight held at most; default: no bound but `maxEntries`. */
  readonly maxWeight?: number;
  /** An entry heavier than this is not kept; default `maxWeight`. */
  readonly maxEntryWeight?: number;
}

/** A bounded map that evicts the least recently used entries first; see the rule above. */
export class LruMap<V> {
  readonly #maxEntries: number;
  readonly #maxWeight: number;
  readonly #maxEntryWeight: number;
  /** Key → slot; a slot's number indexes every array below. */
  readonly #slots = new Map<string, number>();
  #keys: string[] = [];
  #values: (V | undefined)[] = [];
  #weights: number[] = [];
  /**
   * The list, two numbers a slot: at `2 * slot` the slot used just after it (towards the newest),
   * at `2 * slot + 1` the one used just before it (towards the oldest), NONE at either end. Side by
   * side in one typed array, so that relinking a slot touches one cache line rather than two.
   */
  #links = new Int32Array(2 * INITIAL_SLOTS);
  /** Slots freed by a delete or an eviction, reused before the arrays grow. */
  #free: number[] = [];
  #newest = NONE;
  #oldest = NONE;
  #weight = 0;

  constructor(options: LruMapOptions) {
    if (!(options.maxEntries >= 1)) throw new RangeError('maxEntries must be at least 1');
    this.#maxEntries = Math.floor(options.maxEntries);
    this.#maxWeight = options.maxWeight ?? Infinity;
    this.#maxEntryWeight = Math.min(options.maxEntryWeight ?? this.#maxWeight, this.#maxWeight);
  }

  /** Entries held now (never more than `maxEntries`). */
  get size(): number {
    return this.#slots.size;
  }

  /** Total weight held now (never more than `maxWeight`). */
  get weight(): number {
    return this.#weight;
  }

  /** The value under `key`, which becomes the most recently used entry. */
  get(key: string): V | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    if (slot !== this.#newest) {
      this.#unlink(slot);
      this.#pushNewest(slot);
    }
    return this.#values[slot];
  }

  /** The value under `key`, leaving the order as it is. */
  peek(key: string): V | undefined {
    const slot = this.#slots.get(key);
    return slot === undefined ? undefined : this.#values[slot];
  }

  /**
   * Keeps `value` under `key` as the most recently used entry (replacing what was there) and evicts
   * the least recently used entries beyond the bounds. False when `weight` is over `maxEntryWeight`:
   * then nothing is kept under `key`.
   */
  set(key: string, value: V, weight = 1): boolean {
    const slot = this.#slots.get(key);
    if (slot === undefined) return this.add(key, value, weight);
    if (weight > this.#maxEntryWeight) {
      this.#remove(slot);
      return false;
    }
    this.#weight -= this.#weights[slot]!;
    if (slot !== this.#newest) this.#unlink(slot);
    this.#store(slot, value, weight);
    return true;
  }

  /**
   * `set` of a key the caller knows is not held, one look-up of the key fewer (in a map of 100,000
   * keys, each misses the processor's caches). Adding a key already held breaks the map.
   */
  add(key: string, value: V, weight = 1): boolean {
    if (weight > this.#maxEntryWeight) return false;
    const slot = this.#allocate(key);
    this.#slots.set(key, slot);
    this.#store(slot, value, weight);
    return true;
  }

  /** Puts `value` in `slot`, unlinked or the newest already, as the newest; then evicts past the bounds. */
  #store(slot: number, value: V, weight: number): void {
    this.#values[slot] = value;
    this.#weights[slot] = weight;
    this.#weight += weight;
    if (slot !== this.#newest) this.#pushNewest(slot);
    // The entry just set is the newest and fits alone, so this stops before reaching it.
    while (this.#slots.size > this.#maxEntries || this.#weight > this.#maxWeight) this.#remove(this.#oldest);
  }

  /** Forgets `key`; true when it was held. */
  delete(key: string): boolean {
    const slot = this.#slots.get(key);
    if (slot === undefined) return false;
    this.#remove(slot);
    return true;
  }

  /** Forgets everything, and gives back the memory of the arrays. */
  clear(): void {
    this.#slots.clear();
    this.#keys = [];
    this.#values = [];
    this.#weights = [];
    this.#links = new Int32Array(2 * INITIAL_SLOTS);
    this.#free = [];
    this.#newest = NONE;
    this.#oldest = NONE;
    this.#weight = 0;
  }

  /** The least recently used key (the next to be evicted), or undefined when empty; the order is left as it is. */
  oldestKey(): string | undefined {
    return this.#oldest === NONE ? undefined : this.#keys[this.#oldest];
  }

  /** The value of `oldestKey()`, without looking its key up again; the order is left as it is. */
  oldestValue(): V | undefined {
    return this.#oldest === NONE ? undefined : this.#values[this.#oldest];
  }

  /**
   * The entries from the least recently used to the most, leaving the order as it is. The map must
   * not change while they are walked.
   */
  *entries(): IterableIterator<[string, V]> {
    for (let slot = this.#oldest; slot !== NONE; slot = this.#links[2 * slot]!) yield [this.#keys[slot]!, this.#values[slot]!];
  }

  /** The keys from the least recently used to the most (O(n): for tests and diagnostics). */
  keys(): string[] {
    const out: string[] = [];
    for (let slot = this.#oldest; slot !== NONE; slot = this.#links[2 * slot]!) out.push(this.#keys[slot]!);
    return out;
  }

  #allocate(key: string): number {
    const reused = this.#free.pop();
    if (reused !== undefined) {
      this.#keys[reused] = key;
      return reused;
    }
    // Grown one slot at a time by push, so the arrays stay packed (V8's fast elements).
    const slot = this.#keys.length;
    this.#keys.push(key);
    this.#values.push(undefined);
    this.#weights.push(0);
    if (2 * slot + 1 >= this.#links.length) {
      const links = new Int32Array(2 * this.#links.length);
      links.set(this.#links);
      this.#links = links;
    }
    return slot;
  }

  #remove(slot: number): void {
    this.#unlink(slot);
    this.#slots.delete(this.#keys[slot]!);
    this.#weight -= this.#weights[slot]!;
    // Nothing freed stays reachable from here.
    this.#keys[slot] = '';
    this.#values[slot] = undefined;
    this.#weights[slot] = 0;
    this.#free.push(slot);
  }

  #unlink(slot: number): void {
    const links = this.#links;
    const newer = links[2 * slot]!;
    const older = links[2 * slot + 1]!;
    if (newer === NONE) this.#newest = older;
    else links[2 * newer + 1] = older;
    if (older === NONE) this.#oldest = newer;
    else links[2 * older] = newer;
  }

  #pushNewest(slot: number): void {
    const links = this.#links;
    links[2 * slot] = NONE;
    links[2 * slot + 1] = this.#newest;
    if (this.#newest === NONE) this.#oldest = slot;
    else links[2 * this.#newest] = slot;
    this.#newest = slot;
  }
}
