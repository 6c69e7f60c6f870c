/**
 * A map bounded in bytes, oldest entries evicted first: the caches of built representations (pages,
 * entities) hold at most `maxBytes`, and an entry larger than `maxEntryBytes` is never kept, so one
 * huge page cannot empty the cache for everything else.
 */
export class ByteCache<V> {
  readonly #entries = new Map<string, V>();
  readonly #maxBytes: number;
  readonly #maxEntryBytes: number;
  readonly #sizeOf: (key: string, value: V) => number;
  #bytes = 0;

  constructor(maxBytes: number, maxEntryBytes: number, sizeOf: (key: string, value: V) => number) {
    this.#maxBytes = maxBytes;
    this.#maxEntryBytes = maxEntryBytes;
    this.#sizeOf = sizeOf;
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  get(key: string): V | undefined {
    return this.#entries.get(key);
  }

  /** Marks `key` as just used, so it is evicted last (a Map keeps insertion order). */
  touch(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
  }

  /** Keeps `value` under `key` (replacing what was there), evicting the oldest entries beyond the bound. */
  set(key: string, value: V): void {
    this.delete(key);
    const bytes = this.#sizeOf(key, value);
    if (bytes > this.#maxEntryBytes) return;
    this.#entries.set(key, value);
    this.#bytes += bytes;
    for (const [oldest] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.delete(oldest);
    }
  }

  delete(key: string): void {
    const value = this.#entries.get(key);
    if (value === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= this.#sizeOf(key, value);
  }

  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}
