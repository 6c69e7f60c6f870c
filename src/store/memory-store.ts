import {
  StoreConflictError,
  type Change,
  type DeleteCheck,
  type EntityRecord,
  type Store,
  type StoredEntity,
} from './store.js';

/** A store that keeps entities in memory only: for tests and embedding. */
export function createMemoryStore(initial: Iterable<EntityRecord> = []): Store {
  const entities = new Map<string, StoredEntity>();
  let writes = 0;
  const stored = (record: EntityRecord): StoredEntity => ({
    id: record.id,
    record,
    json: JSON.stringify(record),
    version: (++writes).toString(36),
  });
  for (const record of initial) entities.set(record.id, stored(record));

  return {
    get size() {
      return entities.size;
    },
    ready: true,
    get: (id) => entities.get(id),
    page(offset, limit) {
      const out: StoredEntity[] = [];
      let i = 0;
      for (const entity of entities.values()) {
        if (i++ < offset) continue;
        if (out.length >= limit) break;
        out.push(entity);
      }
      return out;
    },
    values: () => entities.values(),
    async create(record) {
      if (entities.has(record.id)) throw new StoreConflictError(`id ${record.id} exists`);
      const entity = stored(record);
      entities.set(entity.id, entity);
      return entity;
    },
    async update(id: string, change: Change) {
      const current = entities.get(id);
      if (!current) return undefined;
      const entity = stored(change(current));
      entities.set(id, entity);
      return entity;
    },
    async delete(id: string, check?: DeleteCheck) {
      const current = entities.get(id);
      if (!current) return false;
      check?.(current);
      return entities.delete(id);
    },
    async close() {},
  };
}
