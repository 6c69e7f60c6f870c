import { HeldDelete, LocalChangeLog, type HeldChange } from './changes/local-feed.js';
import { MaterialisedIndex } from './index/materialised-index.js';
import {
  StoreConflictError,
  StoreWriteError,
  type Change,
  type ChangeType,
  type DeleteCheck,
  type EntityRecord,
  type LocalStore,
  type StoredEntity,
} from './store.js';

export interface MemoryStoreOptions {
  /** The resource's name in its data set's changes (default `items`). */
  readonly resource?: string;
  /** The change log shared by the memory stores of one data set (default: the store's own). */
  readonly changes?: LocalChangeLog;
}

/**
 * A store that keeps entities in memory only: for tests and embedding. It serves reads from the
 * same index as the JSON-lines store, so pages cost the same at any offset. Its changes are
 * numbered in its change log (shared by the stores made with the same `changes`) as it applies them.
 */
export function createMemoryStore(initial: Iterable<EntityRecord> = [], options: MemoryStoreOptions = {}): LocalStore & { readonly changes: LocalChangeLog } {
  const index = new MaterialisedIndex<StoredEntity>();
  const log = options.changes ?? new LocalChangeLog();
  const changes = log.resource(options.resource ?? 'items');
  /** The sequence number of each id's latest change (a remembered delete's included). */
  const latest = new Map<string, number>();
  const report = (id: string, type: ChangeType, entity: StoredEntity | undefined, seq: number): HeldChange => {
    const at = log.nowSeconds();
    const held: HeldChange = entity === undefined ? new HeldDelete(id, seq, at) : { seq, id, type, at, entity };
    latest.set(id, seq);
    return held;
  };
  /** Applies a change to the index with `apply`, then publishes it. */
  const applied = (id: string, type: ChangeType, entity: StoredEntity | undefined): void => {
    const first = log.reserve(1);
    const previous = latest.get(id) ?? 0;
    log.settle(first, [{ resource: changes, held: report(id, type, entity, first), previous }]);
  };
  let writes = 0;
  let open = true;
  const stored = (record: EntityRecord): StoredEntity => {
    checkRecord(record);
    return Object.freeze({
      id: record.id,
      record,
      json: JSON.stringify(record),
      version: (++writes).toString(36),
    });
  };
  const loaded: HeldChange[] = [];
  for (const record of initial) {
    const entity = stored(record);
    index.put(entity);
    loaded.push(report(entity.id, 'created', entity, log.take()));
  }
  changes.load(loaded);
  const writable = (): void => {
    if (!open) throw new StoreWriteError('the store is closed');
  };

  return {
    get size() {
      return index.size;
    },
    get revision() {
      return index.revision;
    },
    get ready() {
      return open;
    },
    get changes() {
      return log;
    },
    follow: (listener) => changes.follow(listener),
    get: (id) => index.get(id),
    query: (query) => index.query(query),
    values: () => index.values(),
    async create(record) {
      writable();
      if (index.has(record.id)) throw new StoreConflictError(`id ${record.id} exists`);
      const entity = stored(record);
      index.put(entity);
      applied(entity.id, 'created', entity);
      return entity;
    },
    async update(id: string, change: Change) {
      writable();
      const current = index.get(id);
      if (!current) return undefined;
      const next = change(current);
      if (next.id !== id) throw new Error(`change() returned id ${String(next.id)} for ${id}`);
      const entity = stored(next);
      index.put(entity);
      applied(id, 'updated', entity);
      return entity;
    },
    async delete(id: string, check?: DeleteCheck) {
      writable();
      const current = index.get(id);
      if (!current) return false;
      check?.(current);
      index.remove(id);
      applied(id, 'deleted', undefined);
      return true;
    },
    async close() {
      open = false;
    },
  };
}

/** Guards the store against records that would not survive a round trip through a file. */
export function checkRecord(record: EntityRecord): void {
  if (typeof record.id !== 'string' || record.id.length === 0) {
    throw new TypeError('an entity needs a non-empty string id');
  }
}
