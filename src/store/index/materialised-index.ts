import { randomBytes } from 'node:crypto';
import { compareValues, matches, valueAt } from '../../conventions/query.js';
import type { QueryResult, StoreQuery, StoredEntity } from '../store.js';
import { EntityIndex } from './entity-index.js';

/** What a log needs to feed an index while it replays. */
export interface IndexWriter<E> {
  readonly size: number;
  put(entity: E, idHash?: number): void;
  remove(id: string): boolean;
  reserve(count: number): void;
}

/**
 * The in-memory materialised index every store answers reads from: id → entity, creation order,
 * and the query engine over them. A log (a JSON-lines file, a database) feeds it with `put` and
 * `remove` as writes become durable; it knows nothing of where entities come from.
 */
export class MaterialisedIndex<E extends StoredEntity> implements IndexWriter<E> {
  readonly #entities = new EntityIndex<E>();
  /** Makes revisions of two indexes (or two runs of a server) differ. */
  readonly #epoch = randomBytes(6).toString('base64url');

  get size(): number {
    return this.#entities.size;
  }

  /** Opaque: moves with every change, never repeats across instances. */
  get revision(): string {
    return `${this.#epoch}.${this.#entities.revision.toString(36)}`;
  }

  get(id: string): E | undefined {
    return this.#entities.get(id);
  }

  has(id: string): boolean {
    return this.#entities.has(id);
  }

  /** Adds an entity at the end of the creation order, or replaces the one with its id in place. */
  put(entity: E, idHash?: number): void {
    this.#entities.set(entity, idHash);
  }

  remove(id: string): boolean {
    return this.#entities.delete(id);
  }

  reserve(count: number): void {
    this.#entities.reserve(count);
  }

  clear(): void {
    this.#entities.clear();
  }

  /** Live entities in creation order (compaction writes them out). */
  values(): IterableIterator<E> {
    return this.#entities.values();
  }

  query(query: StoreQuery): QueryResult {
    const revision = this.revision;
    if (query.filters.length === 0 && query.sort.length === 0 && query.search.length === 0) {
      return { total: this.size, entities: this.#entities.page(query.offset, query.limit), revision };
    }
    const selected: { entity: E; record: unknown }[] = [];
    for (const entity of this.#entities.values()) {
      const record = entity.record;
      if (matches(record, query.filters, query.search)) selected.push({ entity, record });
    }
    if (query.sort.length > 0) {
      selected.sort((a, b) => {
        for (const { path, descending } of query.sort) {
          const order = compareValues(valueAt(a.record, path), valueAt(b.record, path));
          if (order !== 0) return descending ? -order : order;
        }
        return 0;
      });
    }
    return { total: selected.length, entities: selected.slice(query.offset, query.offset + query.limit).map((s) => s.entity), revision };
  }
}
