/**
 * The storage port: what the HTTP layer needs from a store of one resource.
 *
 * Reads are synchronous and served from memory; writes are asynchronous and resolve only once the
 * write is durable (for stores that persist). Every entity object is immutable: a write replaces it.
 */

/** The full state of one entity: the server-managed fields and the client's fields. */
export interface EntityRecord {
  readonly id: string;
  /** Unix seconds. */
  readonly createdAt: number;
  /** Unix seconds. */
  readonly updatedAt: number;
  readonly [field: string]: unknown;
}

/** An entity as a store holds it. */
export interface StoredEntity {
  readonly id: string;
  readonly record: EntityRecord;
  /** `JSON.stringify(record)`, made once when the entity was written or loaded. */
  readonly json: string;
  /** Opaque; different after every write of this entity (ETags are built from it). */
  readonly version: string;
}

/**
 * Computes the next state of an entity from its latest state (which may include writes that are
 * not yet acknowledged). It may throw to refuse the write; the error reaches the caller unchanged.
 */
export type Change = (current: StoredEntity) => EntityRecord;

/** A check run against the latest state before a delete; it may throw to refuse the delete. */
export type DeleteCheck = (current: StoredEntity) => void;

export interface Store {
  /** Number of live entities. */
  readonly size: number;
  /**
   * Moves whenever an acknowledged write changes what reads return; while it stays the same, every
   * read gives the same answer. Collection tags and cached pages are keyed by it.
   */
  readonly revision: number;
  /** The acknowledged state of an entity, or undefined. */
  get(id: string): StoredEntity | undefined;
  /**
   * Live entities in creation order, positions `[offset, offset + limit)`. Its cost does not depend
   * on `offset` or on the size of the store.
   */
  page(offset: number, limit: number): readonly StoredEntity[];
  /** Every live entity in creation order (filters and sorts walk this). */
  values(): IterableIterator<StoredEntity>;
  /** Adds a new entity at the end of the creation order. Rejects with `StoreConflictError` if the id exists. */
  create(record: EntityRecord): Promise<StoredEntity>;
  /**
   * Replaces an entity with `change(latest)`, keeping its place in the creation order. Writes to one
   * store are serialised, so a read-modify-write never loses a concurrent update.
   * Resolves undefined when the id does not exist.
   */
  update(id: string, change: Change): Promise<StoredEntity | undefined>;
  /** Removes an entity; resolves false when the id does not exist. */
  delete(id: string, check?: DeleteCheck): Promise<boolean>;
  /** True once the store is open and accepting requests (readiness). */
  readonly ready: boolean;
  /** Finishes pending writes, syncs and releases files. */
  close(): Promise<void>;
}

/** A write could not be made durable (disk full, I/O error). The state is as it was before it. */
export class StoreWriteError extends Error {
  override readonly name = 'StoreWriteError';
}

/** `create` was given an id that already exists. */
export class StoreConflictError extends Error {
  override readonly name = 'StoreConflictError';
}

/**
 * A store could not be opened (corrupt file, lock held, I/O error). The message is the one line a
 * user sees, e.g. `data/items.jsonl:17: Unexpected token } in JSON`.
 */
export class StoreOpenError extends Error {
  override readonly name = 'StoreOpenError';
}
