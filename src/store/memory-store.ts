import { MaterialisedIndex } from './index/materialised-index.js';
import {
  StoreConflictError,
  StoreWriteError,
  type Change,
  type DeleteCheck,
  type EntityRecord,
  type LocalStore,
  type StoredEntity,
} from './store.js';

/**
 * A store that keeps entities in memory only: for tests and embedding. It serves reads from the
 * same index as the JSON-lines store, so pages cost the same at any offset.
 */
export function createMemoryStore(initial: Iterable<EntityRecord> = []): LocalStore {
  const index = new MaterialisedIndex<StoredEntity>();
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
  for (const record of initial) index.put(stored(record));
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
    get: (id) => index.get(id),
    query: (query) => index.query(query),
    values: () => index.values(),
    async create(record) {
      writable();
      if (index.has(record.id)) throw new StoreConflictError(`id ${record.id} exists`);
      const entity = stored(record);
      index.put(entity);
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
      return entity;
    },
    async delete(id: string, check?: DeleteCheck) {
      writable();
      const current = index.get(id);
      if (!current) return false;
      check?.(current);
      return index.remove(id);
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
