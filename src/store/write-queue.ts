import type { KeyedWrite } from './idempotency.js';
import { StoreWriteError, type Change, type DeleteCheck, type EntityRecord, type StoredEntity } from './store.js';

type Reject = (error: unknown) => void;

/** A write of the port, queued until its batch runs. */
export type WriteOp =
  | { kind: 'create'; record: EntityRecord; keyed: KeyedWrite | undefined; resolve: (entity: StoredEntity) => void; reject: Reject }
  | { kind: 'update'; id: string; change: Change; keyed: KeyedWrite | undefined; resolve: (entity: StoredEntity | undefined) => void; reject: Reject }
  | { kind: 'delete'; id: string; check: DeleteCheck | undefined; resolve: (deleted: boolean) => void; reject: Reject }
  /** Records a keyed request's answer (`keyed.answer`), writing no entity. */
  | { kind: 'answer'; keyed: KeyedWrite; resolve: () => void; reject: Reject };
/**
 * Settles a write with what it did (write-rules.ts): the entity it wrote (create, update), or none
 * (an update or delete of a missing id), or `removed` (a delete that went through).
 */
export function settleWrite(op: WriteOp, written: StoredEntity | undefined, removed = false): void {
  if (op.kind === 'create') op.resolve(written!);
  else if (op.kind === 'update') op.resolve(written);
  else if (op.kind === 'delete') op.resolve(removed);
  else op.resolve();
}

/**
 * Most turns of the event loop a batch waits for more writes (`gatherWrites`): a bound on the
 * latency it adds while writes keep coming.
 */
export const MAX_GATHER_TURNS = 4;

/** One turn of the event loop: resolves in its check phase, after the poll phase has read what the sockets hold. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Waits, before a batch is taken from `queue`, until a turn of the event loop adds no write to it,
 * or `MAX_GATHER_TURNS` turns: a group commit that gathers the requests the sockets already hold.
 *
 * Why: a durable append's cost is mostly fixed. On ext4 over virtio (this project's benchmark
 * machine) an append made durable costs ~60–90 µs of CPU, most of it the kernel's, and ~130–230 µs
 * of wall time, whether it holds 256 bytes or 32 KiB (bench/NOTES.md, "2026-11-27, late
 * evening"), so the writes of a batch share it. Taking the next batch the moment the last one is
 * durable takes only the writes that were queued meanwhile; the requests whose bytes are already
 * in the sockets, and the writes of the clients just answered, wait for a whole further append.
 * Waiting for the event loop's next check phase lets the poll phase read them first: with 50
 * clients, 18 lines a batch became 31, and a durable POST cost 14% less CPU (a PATCH 16%). A write
 * alone waits one turn of an idle loop (microseconds). PostgreSQL's `commit_delay` is the same idea
 * bounded by time; this one is bounded by turns, so it never waits on a clock.
 */
export async function gatherWrites(queue: { readonly length: number }, turn: () => Promise<void> = nextTurn, maxTurns = MAX_GATHER_TURNS): Promise<void> {
  for (let seen = -1, turns = 0; queue.length !== seen && turns < maxTurns; turns++) {
    seen = queue.length;
    await turn();
  }
}

/** An exclusive step run between batches, while no write is in flight (compaction's swap). */
export type TaskOp = { kind: 'task'; run: () => Promise<void> };
export type QueuedOp = WriteOp | TaskOp;

/**
 * The queue in front of one store's writes, shared by the file log's batcher and the PostgreSQL
 * writer: the port's writes become queued operations, and one `drain` at a time takes them (a
 * write queued while a drain runs goes in the next). An error escaping `drain` is an internal
 * error: told to `warn`, never left as an unhandled rejection that would end the process.
 */
export class WriteQueue {
  readonly #ops: QueuedOp[] = [];
  readonly #name: string;
  readonly #drain: () => Promise<void>;
  readonly #warn: (message: string) => void;
  #draining: Promise<void> | undefined;
  #closed = false;

  constructor(name: string, drain: () => Promise<void>, warn: (message: string) => void) {
    this.#name = name;
    this.#drain = drain;
    this.#warn = warn;
  }

  /** Set while a drain runs or work is queued. */
  get busy(): Promise<void> | undefined {
    return this.#draining;
  }

  get length(): number {
    return this.#ops.length;
  }

  /** The next operation, left in the queue. */
  peek(): QueuedOp | undefined {
    return this.#ops[0];
  }

  /** Takes the next task (the caller saw one with `peek`). */
  shift(): QueuedOp | undefined {
    return this.#ops.shift();
  }

  /** Takes up to `max` writes from the front, stopping at a task. */
  takeWrites(max = Infinity): WriteOp[] {
    let n = 0;
    while (n < this.#ops.length && n < max && this.#ops[n]!.kind !== 'task') n++;
    return this.#ops.splice(0, n) as WriteOp[];
  }

  /** Refuses writes from now on; those queued still run. */
  close(): void {
    this.#closed = true;
  }

  create(record: EntityRecord, keyed?: KeyedWrite): Promise<StoredEntity> {
    return this.#enqueue<StoredEntity>((resolve, reject) => ({ kind: 'create', record, keyed, resolve, reject }));
  }

  update(id: string, change: Change, keyed?: KeyedWrite): Promise<StoredEntity | undefined> {
    return this.#enqueue<StoredEntity | undefined>((resolve, reject) => ({ kind: 'update', id, change, keyed, resolve, reject }));
  }

  delete(id: string, check?: DeleteCheck): Promise<boolean> {
    return this.#enqueue<boolean>((resolve, reject) => ({ kind: 'delete', id, check, resolve, reject }));
  }

  answer(keyed: KeyedWrite): Promise<void> {
    return this.#enqueue<void>((resolve, reject) => ({ kind: 'answer', keyed, resolve, reject }));
  }

  /** Runs `run` between two batches, alone. */
  task(run: () => Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#ops.push({ kind: 'task', run: () => run().then(resolve, reject) });
      this.#kick();
    });
  }

  #enqueue<T>(make: (resolve: (value: T) => void, reject: Reject) => WriteOp): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreWriteError(`${this.#name}: the store is closed`));
    return new Promise<T>((resolve, reject) => {
      this.#ops.push(make(resolve, reject));
      this.#kick();
    });
  }

  #kick(): void {
    this.#draining ??= this.#drain()
      .catch((error: unknown) => this.#warn(`${this.#name}: internal error: ${(error as Error).stack ?? String(error)}`))
      .finally(() => {
        this.#draining = undefined;
        // A write queued between the drain's last look and this callback would wait for ever.
        if (this.#ops.length > 0) this.#kick();
      });
  }
}
