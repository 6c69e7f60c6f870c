import { StoreWriteError, type Change, type ChangeType, type DeleteCheck, type EntityRecord, type StoredEntity } from './store.js';
import { gatherWrites, settleWrite, WriteQueue, type WriteOp } from './write-queue.js';
import type { AnswerBook, KeyedWrite, Remembered, WriteOutcome } from './idempotency.js';
import { answerOf, decideWrite, digestBatch, idOf, keyOf } from './write-rules.js';

/** An answer recorded with a batch, and the index in the batch of the change its write made (none: it wrote nothing). */
export interface BatchAnswer {
  readonly key: string;
  /** `JSON.stringify(key)`, where the write had it (`KeyedWrite.keyJson`). */
  readonly keyJson: string | undefined;
  readonly remembered: Remembered;
  readonly change: number | undefined;
}

/** What the batcher needs of a durable log and the index it feeds. */
export interface BatchTarget<E extends StoredEntity> {
  /** The acknowledged state of an id. */
  get(id: string): E | undefined;
  /** The entity `record` becomes once written. */
  entity(record: EntityRecord): E;
  /**
   * Makes a batch of changes durable, in order: an entity, or the id of one deleted, with the type
   * of the write that made each, and the answers of its keyed writes (idempotency.ts), which the
   * target puts in `answers` once durable. All or none: on rejection the log holds none of them,
   * and no answer is live. `answering` is as `entity` was told, even when no answer came of it.
   */
  append(changes: readonly (E | { readonly deleted: string })[], types: readonly ChangeType[], answers: readonly BatchAnswer[], answering: boolean): Promise<void>;
  /** The remembered answers of keyed writes; without it, keys are not kept. */
  readonly answers?: AnswerBook;
  /** Applies a durable change to the index; `record` is the entity's record, already parsed. */
  apply(change: E | { readonly deleted: string }, record: EntityRecord | undefined): void;
  /** Every change of the batch is applied: the moment to report them (`Store.follow`). */
  applied?(): void;
  /**
   * After `applied`: resolves once every change the target has made is published (in the change
   * feed a reader reads); undefined when they already are. A log whose changes are published in an
   * order shared with other logs (LocalChangeLog) may hold a durable batch back behind an earlier
   * one of another log still syncing.
   */
  published?(): Promise<void> | undefined;
  /** Called after each batch (compaction policy). */
  afterBatch?(): void;
}

/**
 * Serialises the writes of one store and commits them in groups (docs/storage.md §1): writes that arrive
 * while one append + sync is in flight wait and go together in the next, sharing its sync, and a
 * batch is taken only once a turn of the event loop has added no write to it (`gatherWrites`). Each
 * write is computed against the latest state, earlier writes of its batch included, and settled
 * only once its batch is durable; if the append fails, every write of the batch fails with
 * `StoreWriteError` and nothing is applied.
 */
export class WriteBatcher<E extends StoredEntity> {
  readonly #target: BatchTarget<E>;
  readonly #name: string;
  readonly #queue: WriteQueue;
  readonly #warn: (message: string) => void;

  constructor(target: BatchTarget<E>, name: string, warn: (message: string) => void) {
    this.#target = target;
    this.#name = name;
    this.#warn = warn;
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

  create(record: EntityRecord, keyed?: KeyedWrite): Promise<StoredEntity> {
    return this.#queue.create(record, keyed);
  }

  update(id: string, change: Change, keyed?: KeyedWrite): Promise<StoredEntity | undefined> {
    return this.#queue.update(id, change, keyed);
  }

  /** Records the answer of a keyed request refused before it reached the write order, in the next batch. */
  remember(keyed: KeyedWrite): Promise<void> {
    return this.#queue.answer(keyed);
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
      // A group commit: the writes the next turns of the event loop bring share this batch's sync.
      await gatherWrites(queue);
      await this.#commit(queue.takeWrites());
      this.#target.afterBatch?.();
    }
  }

  async #commit(batch: WriteOp[]): Promise<void> {
    const target = this.#target;
    const book = target.answers;
    const pending = new Map<string, E | null>();
    const latest = (id: string): E | undefined => {
      const p = pending.get(id);
      return p === undefined ? target.get(id) : (p ?? undefined);
    };
    const changes: (E | { deleted: string })[] = [];
    /** The record of each change, so that the index need not parse the line it was made from. */
    const records: (EntityRecord | undefined)[] = [];
    const types: ChangeType[] = [];
    const outcomes: (() => void)[] = [];
    /** The answers of the batch's keyed writes, recorded with it; `answered` holds them by key, for later writes of the batch. */
    const recorded: BatchAnswer[] = [];
    const answered = new Map<string, Remembered>();
    /** Whether the batch's append records answers: known before any write is decided, so that its digests are made in a row. */
    const answering = book !== undefined && batch.some((op) => keyOf(op) !== undefined);
    if (answering) digestBatch(batch);
    for (const op of batch) {
      const keyed = keyOf(op);
      let outcome: WriteOutcome;
      let change: number | undefined;
      try {
        const id = idOf(op);
        const remembered = keyed === undefined || book === undefined ? undefined : (answered.get(keyed.key) ?? book.latest(keyed.key));
        const decision = decideWrite(op, id === undefined ? undefined : latest(id), remembered);
        if (decision.kind === 'missing') {
          outcome = { entity: undefined };
          outcomes.push(() => settleWrite(op, undefined));
        } else if (decision.kind === 'remove') {
          outcome = { entity: undefined };
          changes.push({ deleted: id! });
          records.push(undefined);
          types.push('deleted');
          pending.set(id!, null);
          outcomes.push(() => settleWrite(op, undefined, true));
        } else {
          const entity = target.entity(decision.record);
          outcome = { entity };
          change = changes.length;
          changes.push(entity);
          records.push(decision.record);
          types.push(op.kind === 'create' ? 'created' : 'updated');
          pending.set(entity.id, entity);
          outcomes.push(() => settleWrite(op, entity));
        }
      } catch (error) {
        outcome = { error };
        outcomes.push(() => op.reject(error));
      }
      if (keyed !== undefined && book !== undefined) {
        let remembered: Remembered | undefined;
        try {
          remembered = answerOf(op, outcome, book.now());
        } catch (error) {
          this.#warn(`${this.#name}: internal error: an answer could not be made: ${(error as Error).stack ?? String(error)}`);
        }
        if (remembered !== undefined) {
          recorded.push({ key: keyed.key, keyJson: keyed.keyJson, remembered, change });
          answered.set(keyed.key, remembered);
        }
      }
    }
    if (changes.length > 0 || recorded.length > 0) {
      try {
        await target.append(changes, types, recorded, answering);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        const failure = new StoreWriteError(`${this.#name}: write failed: ${(error as Error).message}`, typeof code === 'string' ? code : undefined);
        // Every op of the batch fails, even one that wrote nothing (a 404, a refused change): its
        // answer was computed against writes of the batch that did not happen.
        for (const op of batch) op.reject(failure);
        return;
      }
      try {
        changes.forEach((change, i) => target.apply(change, records[i]));
      } finally {
        // Even after an internal error: the changes applied so far are reported, and the log's
        // order of changes does not wait for this batch for ever.
        target.applied?.();
      }
    }
    // Answered only once the batch is in the change feed too: a client told its write is done
    // finds it there, as in the index. Not awaited: the next batch is written meanwhile.
    const published = target.published?.();
    if (published === undefined) for (const settle of outcomes) settle();
    else void published.then(() => {
      for (const settle of outcomes) settle();
    });
  }
}
