import { isSerialised, recordJson } from '../conventions/entity.js';
import { HeldDelete, LocalChangeLog, type HeldChange } from './changes/local-feed.js';
import { MaterialisedIndex } from './index/materialised-index.js';
import { AnswerBook, type AnswerBookOptions, type KeyedWrite, type WriteOutcome } from './idempotency.js';
import { answerOf, checkRecord, decideWrite, idOf, keyOf, type WriteRequest } from './write-rules.js';
import {
  StoreWriteError,
  type Change,
  type ChangeType,
  type DeleteCheck,
  type EntityRecord,
  type LocalStore,
  type StoredEntity,
} from './store.js';

export interface MemoryStoreOptions {
  /**
   * The resource's name in its data set's changes. Default: the name `createHandler` serves the
   * store under (`serveAs`), `items` until then. Required with a shared `changes`.
   */
  readonly resource?: string;
  /** The change log shared by the memory stores of one data set (default: the store's own). */
  readonly changes?: LocalChangeLog;
  /** The remembered answers of `Idempotency-Key` writes: clock, time to live, bound (idempotency.ts). */
  readonly idempotency?: AnswerBookOptions;
}

/**
 * A store that keeps entities in memory only: for tests and embedding. It serves reads from the
 * same index as the JSON-lines store, so pages cost the same at any offset. Its changes are
 * numbered in its change log (shared by the stores made with the same `changes`) as it applies them.
 */
export function createMemoryStore(initial: Iterable<EntityRecord> = [], options: MemoryStoreOptions = {}): LocalStore & { readonly changes: LocalChangeLog } {
  // Stores sharing a log each number their changes under their own name: two under the default
  // would mix their changes in one resource.
  if (options.changes !== undefined && options.resource === undefined) throw new Error('a memory store sharing a change log needs its name: createMemoryStore(initial, { resource, changes })');
  const index = new MaterialisedIndex<StoredEntity>();
  const book = new AnswerBook(options.idempotency);
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
      json: recordJson(record),
      serialised: isSerialised(record),
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
  /** A write, decided and applied at once, then reported: nothing else runs in between (write-rules.ts). */
  const write = (op: WriteRequest): StoredEntity | boolean | undefined => {
    if (!open) throw new StoreWriteError('the store is closed');
    const keyed = keyOf(op);
    let outcome: WriteOutcome = { entity: undefined };
    try {
      const id = idOf(op);
      const decision = decideWrite(op, id === undefined ? undefined : index.get(id), keyed && book.latest(keyed.key));
      if (decision.kind === 'missing') return op.kind === 'delete' ? false : undefined;
      if (decision.kind === 'remove') {
        index.remove(id!);
        applied(id!, 'deleted', undefined);
        return true;
      }
      const entity = stored(decision.record);
      index.put(entity);
      applied(entity.id, op.kind === 'create' ? 'created' : 'updated', entity);
      outcome = { entity };
      return entity;
    } catch (error) {
      outcome = { error };
      throw error;
    } finally {
      // Memory is the whole of this store's durability: the answer is kept at the write's own instant.
      const remembered = keyed && answerOf(op, outcome, book.now());
      if (keyed && remembered) book.put(keyed.key, remembered);
    }
  };

  return {
    serveAs(name: string): void {
      // A store made without a name takes the one it is served under; a named one keeps its own.
      if (options.resource === undefined) log.rename(changes.name, name);
    },
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
    async create(record: EntityRecord, keyed?: KeyedWrite) {
      return write({ kind: 'create', record, keyed }) as StoredEntity;
    },
    async update(id: string, change: Change, keyed?: KeyedWrite) {
      return write({ kind: 'update', id, change, keyed }) as StoredEntity | undefined;
    },
    async delete(id: string, check?: DeleteCheck) {
      return write({ kind: 'delete', id, check }) as boolean;
    },
    idempotency: {
      claim: (key, fingerprint, legacy) => book.claim(key, fingerprint, legacy),
      remember: async (keyed) => {
        write({ kind: 'answer', keyed });
      },
    },
    async close() {
      open = false;
    },
  };
}
