import type { Filter, SortKey } from '../conventions/query.js';
import type { IdempotencyLedger, KeyedWrite } from './idempotency.js';

/**
 * The storage port: what the HTTP layer needs from a store of one resource.
 *
 * Reads may answer at once or with a Promise (`MaybePromise`): the stores here answer from memory,
 * synchronously when the work is small, and a networked store may always return a Promise. Writes
 * resolve only once the write is durable (for stores that persist). Every entity object is
 * immutable: a write replaces it.
 */

/** A value now, or later. Callers test `instanceof Promise` to keep the in-memory path synchronous. */
export type MaybePromise<T> = T | Promise<T>;

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
  /**
   * The record's JSON text as stored: `JSON.stringify(record)`, or the text as written (a line
   * written by hand, or a PATCH of one: `patchedText`). A store may decode it from its log on each access.
   */
  readonly json: string;
  /** True when `json` is known to be `JSON.stringify(record)` (the store serialised the record itself). */
  readonly serialised?: boolean;
  /** Opaque; different whenever the entity's content changes (ETags are built from it). */
  readonly version: string;
  /**
   * The values at these paths (as `valueAt(record, path)` gives them), for a store that can read
   * them more cheaply than by parsing the whole record: index builds call it once per entity.
   */
  valuesAt?(paths: readonly (readonly string[])[]): unknown[];
  /**
   * Hands `read` the UTF-8 bytes of the stored JSON object (`bytes[start, end)`; the closing brace
   * may be left out), for a store that holds them: the text index reads its tokens from them
   * without parsing the record.
   */
  jsonBytes?<T>(read: (bytes: Uint8Array, start: number, end: number) => T): T;
}

/**
 * Computes the next state of an entity from its latest state (which may include writes that are
 * not yet acknowledged). It may throw to refuse the write; the error reaches the caller unchanged.
 */
export type Change = (current: StoredEntity) => EntityRecord;

/** A check run against the latest state before a delete; it may throw to refuse the delete. */
export type DeleteCheck = (current: StoredEntity) => void;

/** A collection query (docs/queries.md) and the window of its result to return. */
export interface StoreQuery {
  /** All must hold. */
  readonly filters: readonly Filter[];
  /** Keys in turn; ties end in creation order. Empty: creation order. */
  readonly sort: readonly SortKey[];
  /** Case-folded words that must each occur in some string of the entity (`q`). */
  readonly search: readonly string[];
  readonly offset: number;
  readonly limit: number;
  /** `performance.now()` after which the query gives up with `QueryTimeoutError`. */
  readonly deadline?: number;
  /**
   * Field paths whose values to count over every match: the answer's `facets`
   * holds, for each in turn, its most frequent values.
   */
  readonly facets?: readonly (readonly string[])[];
}

/** One value of a facet and how many matches hold it (an array field: hold it as an element). */
export interface FacetCount {
  readonly value: unknown;
  readonly count: number;
}

export interface QueryResult {
  /** How many entities match, in all. */
  readonly total: number;
  /** The matching entities at positions `[offset, offset + limit)` of the order. */
  readonly entities: readonly StoredEntity[];
  /**
   * For each of the query's `facets`, in its order: at most `MAX_FACET_VALUES` values by count
   * descending, ties by value (`compareValues`). Absent when the query asked for none.
   */
  readonly facets?: readonly (readonly FacetCount[])[];
  /**
   * The revision the answer describes. The in-memory index always names one: a query sliced
   * across turns starts over when a write lands between its slices (slices.ts), so its answer is
   * of the state it ended in. Undefined is for a store that cannot say (the answer then reflects no
   * single revision: it must be neither cached nor tagged).
   */
  readonly revision: string | undefined;
}

/** What a write did to its entity (the change feed's event types: docs/changes.md §1). */
export type ChangeType = 'created' | 'updated' | 'deleted';

/**
 * One applied change, as a store reports it to its followers: the write's type, the entity as the
 * write left it (none for a delete), and where the change stands in the data set's order of
 * changes. Cursors are opaque strings, totally ordered within a data set in the order writes were
 * applied; their format belongs to the log that hands them out.
 */
export interface StoreChange {
  readonly resource: string;
  readonly id: string;
  readonly type: ChangeType;
  /** The entity as the write left it; undefined for a delete. */
  readonly entity: StoredEntity | undefined;
  readonly cursor: string;
  /** The Unix second the write was applied. */
  readonly at: number;
}

/** Told of each change; must not throw (a follower's failure is its own, see `Followers`). */
export type ChangeListener = (change: StoreChange) => void;

/**
 * Durability figures a log reports for metrics (group commits, compactions): not changes, so not
 * part of `follow`; the metrics code depends on this port, not on a log's module.
 */
export interface StoreObserver {
  /** A batch of `lines` lines reached the disk; `syncSeconds` is what its write and fdatasync took (0 without sync). */
  committed?(lines: number, syncSeconds: number): void;
  /** A compaction ended, rewritten or not. */
  compacted?(ok: boolean): void;
  /** `count` answers of keyed writes were let go inside their time to live, to keep within the bounds (idempotency.ts `pushedOut`). */
  answersPushedOut?(count: number): void;
}

export interface Store {
  /** Number of live entities. */
  readonly size: number;
  /**
   * An opaque token that moves whenever an acknowledged write changes what reads return, and is
   * never the same for two different states, even across restarts. While it stays the same,
   * every read gives the same answer: collection tags and cached pages are keyed by it.
   */
  readonly revision: string;
  /** The acknowledged state of an entity, or undefined. */
  get(id: string): MaybePromise<StoredEntity | undefined>;
  /**
   * The entities matching a query, in its order, and how many match. Its cost depends on the page
   * it returns, not on the size of the store or the position of the page (docs/queries.md).
   */
  query(query: StoreQuery): MaybePromise<QueryResult>;
  /**
   * Adds a new entity at the end of the creation order. Rejects with `StoreConflictError` if the id exists.
   * The store may keep `record` (and the record `change` returns, for `update`) as the entity's:
   * the caller hands it over and does not change it afterwards.
   * `keyed` (a store with `idempotency`): the write and its answer are recorded together, and a key
   * that has an answer rejects with `ReplayedAnswer` or `KeyReusedError`, writing nothing (idempotency.ts).
   */
  create(record: EntityRecord, keyed?: KeyedWrite): Promise<StoredEntity>;
  /**
   * Replaces an entity with `change(latest)`, keeping its place in the creation order. Writes to one
   * store are serialised, so a read-modify-write never loses a concurrent update.
   * Resolves undefined when the id does not exist.
   */
  update(id: string, change: Change, keyed?: KeyedWrite): Promise<StoredEntity | undefined>;
  /** Removes an entity; resolves false when the id does not exist. */
  delete(id: string, check?: DeleteCheck): Promise<boolean>;
  /**
   * Calls `listener` with every change applied from now on, once each, in cursor order, after the
   * change is durable and in the index (a read made from the listener sees it). The one place a log
   * reports its changes: the file log after its sync, the PostgreSQL replica after its change feed
   * read the row — never the index, whose re-placements are not changes. Returns the unsubscribe.
   */
  follow(listener: ChangeListener): () => void;
  /** The remembered answers of keyed writes; undefined: this store keeps none (and ignores `keyed`). */
  readonly idempotency?: IdempotencyLedger | undefined;
  /** True once the store is open and accepting requests (readiness). */
  readonly ready: boolean;
  /** Finishes pending writes, syncs and releases files. */
  close(): Promise<void>;
}

/** A store that answers from memory in this process: `get` is immediate. */
export interface LocalStore extends Store {
  get(id: string): StoredEntity | undefined;
  /** Every live entity in creation order (export, compaction, tests). */
  values(): IterableIterator<StoredEntity>;
  /**
   * Told by `createHandler` the name the store is served under, before any request: a store made
   * without a name for its changes (`createMemoryStore()`) takes it, so that its events and the
   * collection's `changes` link name the same resource.
   */
  serveAs?(name: string): void;
}

/** A write could not be made durable (disk full, I/O error). The state is as it was before it. */
export class StoreWriteError extends Error {
  override readonly name = 'StoreWriteError';
  /** The errno code of the failure (`ENOSPC`, `EIO`…), when there was one: metrics and logs name it. */
  readonly code: string | undefined;

  constructor(message: string, code?: string) {
    super(message);
    this.code = code;
  }
}

/**
 * The store's database cannot be reached (docs/storage.md §2): the write was not made, or its outcome is
 * unknown because the connection was lost during its commit (a change feed will show it if it
 * committed). Answered with 503 and `Retry-After`; reads go on from memory.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
}

/** A query could not be answered before its deadline (docs/conventions.md §8). */
export class QueryTimeoutError extends Error {
  override readonly name = 'QueryTimeoutError';
}

/**
 * A query named a field with no index while a resource keeps as many as it may
 * (`MAX_FIELD_INDEXES`: each holds a value for every entity and is kept current by every write, so
 * their number is bounded as every long-lived thing is) and each of them is read by a query under
 * way, so none can go yet.
 */
export class IndexLimitError extends Error {
  override readonly name = 'IndexLimitError';
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
