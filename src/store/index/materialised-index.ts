import { randomBytes } from 'node:crypto';
import type { MaybePromise, QueryResult, StoreQuery, StoredEntity } from '../store.js';
import { EntityIndex } from './entity-index.js';
import { QueryEngine } from './query-engine.js';
import type { Clock } from './slices.js';

/** What a log needs to feed an index while it replays. */
export interface IndexWriter<E> {
  readonly size: number;
  /** `record`: the entity's record when the caller has it parsed already. Answers the entity of the same id it replaced. */
  put(entity: E, idHash?: number, record?: unknown): E | undefined;
  remove(id: string): boolean;
  get(id: string): E | undefined;
  reserve(count: number): void;
}

/**
 * The in-memory materialised index every store answers reads from: id → entity, creation order,
 * and the query engine over them. A log (a JSON-lines file, a database) feeds it with `put` and
 * `remove` as writes become durable; it knows nothing of where entities come from.
 */
export class MaterialisedIndex<E extends StoredEntity> implements IndexWriter<E> {
  readonly #entities = new EntityIndex<E>();
  readonly #engine: QueryEngine<E>;
  /** Makes revisions of two indexes (or two runs of a server) differ. */
  readonly #epoch = randomBytes(6).toString('base64url');

  /** `clock`: the time queries' slices are measured in (slices.ts); tests drive it. */
  constructor(clock?: Clock) {
    const entities = this.#entities;
    const self = this;
    this.#engine = new QueryEngine<E>({
      get size() {
        return entities.size;
      },
      get slotCount() {
        return entities.slotCount;
      },
      get layout() {
        return entities.layout;
      },
      get revision() {
        return self.revision;
      },
      at: (row) => entities.at(row),
      page: (offset, limit) => entities.page(offset, limit),
    }, clock);
    entities.onRepack = (moved) => this.#engine.remap(moved);
  }

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

  /** Adds an entity at the end of the creation order, or replaces the one with its id in place (and answers it). */
  put(entity: E, idHash?: number, record?: unknown): E | undefined {
    if (!this.#engine.active) {
      this.#entities.set(entity, idHash);
      return this.#entities.replaced;
    }
    const slot = this.#entities.slotOf(entity.id);
    const old = slot === -1 ? undefined : this.#entities.at(slot);
    const row = this.#entities.set(entity, idHash);
    this.#engine.write(row, old, entity, record);
    return old;
  }

  remove(id: string): boolean {
    if (!this.#engine.active) return this.#entities.delete(id);
    const row = this.#entities.slotOf(id);
    if (row === -1) return false;
    const old = this.#entities.at(row);
    // Indexes first: a delete may re-pack the slots, and the row number is the old layout's.
    this.#engine.write(row, old, undefined);
    return this.#entities.delete(id);
  }

  reserve(count: number): void {
    this.#entities.reserve(count);
  }

  /** Live entities in creation order (compaction writes them out). */
  values(): IterableIterator<E> {
    return this.#entities.values();
  }

  /** The matches of a query (docs/queries.md): at once from the creation order or an index, or later when work must be sliced. */
  query(query: StoreQuery): MaybePromise<QueryResult> {
    const revision = this.revision;
    if (query.filters.length === 0 && query.sort.length === 0 && query.search.length === 0) {
      const plain = { total: this.size, entities: this.#entities.page(query.offset, query.limit), revision };
      if (query.facets === undefined || query.facets.length === 0) return plain;
      // The page from the creation order, the facets over every row.
      const facets = this.#engine.facets(query);
      if (!(facets instanceof Promise)) return { ...plain, facets };
      // Counted over the state the engine ended in (it starts over when a write lands between its
      // slices): the page and the total are read in that same turn.
      return facets.then((f) => ({ total: this.size, entities: this.#entities.page(query.offset, query.limit), facets: f.value, revision: f.revision }));
    }
    this.#engine.revise(revision);
    const answer = this.#engine.query(query);
    if (!(answer instanceof Promise)) return { ...answer, revision };
    // The revision the engine's work ended on, or none if writes landed during its last attempt.
    return answer.then((a) => ({ ...a, revision: a.revision }));
  }
}
