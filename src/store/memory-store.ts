import { MaterialisedIndex } from './index/materialised-index.js';
import { checkRecord, decideWrite, idOf, type WriteRequest } from './write-rules.js';
import {
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
  /** A write, decided and applied at once: nothing else runs in between (write-rules.ts). */
  const write = (op: WriteRequest): StoredEntity | boolean | undefined => {
    if (!open) throw new StoreWriteError('the store is closed');
    const id = idOf(op);
    const decision = decideWrite(op, id === undefined ? undefined : index.get(id));
    if (decision.kind === 'missing') return op.kind === 'delete' ? false : undefined;
    if (decision.kind === 'remove') return index.remove(id!);
    const entity = stored(decision.record);
    index.put(entity);
    return entity;
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
      return write({ kind: 'create', record }) as StoredEntity;
    },
    async update(id: string, change: Change) {
      return write({ kind: 'update', id, change }) as StoredEntity | undefined;
    },
    async delete(id: string, check?: DeleteCheck) {
      return write({ kind: 'delete', id, check }) as boolean;
    },
    async close() {
      open = false;
    },
  };
}
