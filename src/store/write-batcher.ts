import { StoreWriteError, type Change, type DeleteCheck, type EntityRecord, type StoredEntity } from './store.js';
import { settleWrite, WriteQueue, type WriteOp } from './write-queue.js';
import { decideWrite, idOf } from './write-rules.js';

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
  readonly #queue: WriteQueue;

  constructor(target: BatchTarget<E>, name: string, warn: (message: string) => void) {
    this.#target = target;
    this.#name = name;
    this.#queue = new WriteQueue(name, () => this.#drain(), warn);
  }

  /** True while a batch or task is running or queued. */
  get busy(): Promise<void> | undefined {
    return this.#queue.busy;
  }

  /** Refuses writes from now on; those queued still run. */
  close(): void {
    this.#queue.close();
  }

  create(record: EntityRecord): Promise<StoredEntity> {
    return this.#queue.create(record);
  }

  update(id: string, change: Change): Promise<StoredEntity | undefined> {
    return this.#queue.update(id, change);
  }

  delete(id: string, check?: DeleteCheck): Promise<boolean> {
    return this.#queue.delete(id, check);
  }

  /** Runs `run` between two batches, alone. */
  task(run: () => Promise<void>): Promise<void> {
    return this.#queue.task(run);
  }

  /** Runs batches while work is queued: everything queued during one sync shares the next. */
  async #drain(): Promise<void> {
    const queue = this.#queue;
    for (let first = queue.peek(); first !== undefined; first = queue.peek()) {
      if (first.kind === 'task') {
        queue.shift();
        await first.run();
        continue;
      }
      await this.#commit(queue.takeWrites());
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
        const id = idOf(op);
        const decision = decideWrite(op, id === undefined ? undefined : latest(id));
        if (decision.kind === 'missing') {
          outcomes.push(() => settleWrite(op, undefined));
        } else if (decision.kind === 'remove') {
          changes.push({ deleted: id! });
          records.push(undefined);
          pending.set(id!, null);
          outcomes.push(() => settleWrite(op, undefined, true));
        } else {
          const entity = target.entity(decision.record, changes.length + 1);
          changes.push(entity);
          records.push(decision.record);
          pending.set(entity.id, entity);
          outcomes.push(() => settleWrite(op, entity));
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
