import { checkRecord } from './memory-store.js';
import { StoreConflictError, StoreWriteError, type Change, type DeleteCheck, type EntityRecord, type StoredEntity } from './store.js';

/** What the batcher needs of a durable log and the index it feeds. */
export interface BatchTarget<E extends StoredEntity> {
  /** The acknowledged state of an id. */
  get(id: string): E | undefined;
  /** The entity `record` becomes as the `n`-th change (n ≥ 1) after those the log already holds. */
  entity(record: EntityRecord, n: number): E;
  /**
   * Makes a batch of changes durable, in order: an entity, or the id of one deleted. All or none:
   * on rejection the log holds none of them.
   */
  append(changes: readonly (E | { readonly deleted: string })[]): Promise<void>;
  /** Applies a durable change to the index; `record` is the entity's record, already parsed. */
  apply(change: E | { readonly deleted: string }, record: EntityRecord | undefined): void;
  /** Called after each batch (compaction policy). */
  afterBatch?(): void;
}

type Reject = (error: unknown) => void;
type WriteOp =
  | { kind: 'create'; record: EntityRecord; resolve: (entity: StoredEntity) => void; reject: Reject }
  | { kind: 'update'; id: string; change: Change; resolve: (entity: StoredEntity | undefined) => void; reject: Reject }
  | { kind: 'delete'; id: string; check: DeleteCheck | undefined; resolve: (deleted: boolean) => void; reject: Reject };
/** An exclusive step run between batches, while no write is in flight (compaction's swap). */
type TaskOp = { kind: 'task'; run: () => Promise<void> };
type Op = WriteOp | TaskOp;

/**
 * Serialises the writes of one store and commits them in groups (contract §8): writes that arrive
 * while one append + sync is in flight wait and go together in the next, sharing its sync. Each
 * write is computed against the latest state, earlier writes of its batch included, and settled
 * only once its batch is durable; if the append fails, every write of the batch fails with
 * `StoreWriteError` and nothing is applied.
 */
export class WriteBatcher<E extends StoredEntity> {
  readonly #target: BatchTarget<E>;
  readonly #name: string;
  readonly #warn: (message: string) => void;
  #queue: Op[] = [];
  #draining: Promise<void> | undefined;
  #closed = false;

  constructor(target: BatchTarget<E>, name: string, warn: (message: string) => void) {
    this.#target = target;
    this.#name = name;
    this.#warn = warn;
  }

  /** True while a batch or task is running or queued. */
  get busy(): Promise<void> | undefined {
    return this.#draining;
  }

  /** Refuses writes from now on; those queued still run. */
  close(): void {
    this.#closed = true;
  }

  create(record: EntityRecord): Promise<StoredEntity> {
    return this.#enqueue<StoredEntity>((resolve, reject) => ({ kind: 'create', record, resolve, reject }));
  }

  update(id: string, change: Change): Promise<StoredEntity | undefined> {
    return this.#enqueue<StoredEntity | undefined>((resolve, reject) => ({ kind: 'update', id, change, resolve, reject }));
  }

  delete(id: string, check?: DeleteCheck): Promise<boolean> {
    return this.#enqueue<boolean>((resolve, reject) => ({ kind: 'delete', id, check, resolve, reject }));
  }

  /** Runs `run` between two batches, alone. */
  task(run: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ kind: 'task', run: () => run().then(resolve, reject) });
      this.#kick();
    });
  }

  #enqueue<T>(make: (resolve: (value: T) => void, reject: Reject) => WriteOp): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreWriteError(`${this.#name}: the store is closed`));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push(make(resolve, reject));
      this.#kick();
    });
  }

  #kick(): void {
    this.#draining ??= this.#drain()
      .catch((error: unknown) => this.#warn(`${this.#name}: internal error: ${(error as Error).stack ?? String(error)}`))
      .finally(() => {
        this.#draining = undefined;
        if (this.#queue.length > 0) this.#kick();
      });
  }

  /** Runs batches while work is queued: everything queued during one sync shares the next. */
  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const first = this.#queue[0]!;
      if (first.kind === 'task') {
        this.#queue.shift();
        await first.run();
        continue;
      }
      let n = 1;
      while (n < this.#queue.length && this.#queue[n]!.kind !== 'task') n++;
      const batch = this.#queue.splice(0, n) as WriteOp[];
      await this.#commit(batch);
      this.#target.afterBatch?.();
    }
  }

  async #commit(batch: WriteOp[]): Promise<void> {
    const target = this.#target;
    const pending = new Map<string, E | null>();
    const latest = (id: string): E | undefined => {
      const p = pending.get(id);
      return p === undefined ? target.get(id) : (p ?? undefined);
    };
    const changes: (E | { deleted: string })[] = [];
    /** The record of each change, so that the index need not parse the line it was made from. */
    const records: (EntityRecord | undefined)[] = [];
    const outcomes: (() => void)[] = [];
    for (const op of batch) {
      try {
        if (op.kind === 'create') {
          checkRecord(op.record);
          if (latest(op.record.id)) throw new StoreConflictError(`id ${op.record.id} exists`);
          const entity = target.entity(op.record, changes.length + 1);
          changes.push(entity);
          records.push(op.record);
          pending.set(entity.id, entity);
          outcomes.push(() => op.resolve(entity));
        } else if (op.kind === 'update') {
          const current = latest(op.id);
          if (!current) {
            outcomes.push(() => op.resolve(undefined));
            continue;
          }
          const next = op.change(current);
          checkRecord(next);
          if (next.id !== op.id) throw new Error(`change() returned id ${next.id} for ${op.id}`);
          const entity = target.entity(next, changes.length + 1);
          changes.push(entity);
          records.push(next);
          pending.set(op.id, entity);
          outcomes.push(() => op.resolve(entity));
        } else {
          const current = latest(op.id);
          if (!current) {
            outcomes.push(() => op.resolve(false));
            continue;
          }
          op.check?.(current);
          changes.push({ deleted: op.id });
          records.push(undefined);
          pending.set(op.id, null);
          outcomes.push(() => op.resolve(true));
        }
      } catch (error) {
        outcomes.push(() => op.reject(error));
      }
    }
    if (changes.length > 0) {
      try {
        await target.append(changes);
      } catch (error) {
        const failure = new StoreWriteError(`${this.#name}: write failed: ${(error as Error).message}`);
        // Every op of the batch fails, even one that wrote nothing (a 404, a refused change): its
        // answer was computed against writes of the batch that did not happen.
        for (const op of batch) op.reject(failure);
        return;
      }
      changes.forEach((change, i) => target.apply(change, records[i]));
    }
    for (const settle of outcomes) settle();
  }
}
