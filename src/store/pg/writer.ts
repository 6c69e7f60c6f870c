import { checkRecord } from '../memory-store.js';
import {
  StoreConflictError,
  StoreUnavailableError,
  StoreWriteError,
  type Change,
  type DeleteCheck,
  type EntityRecord,
  type StoredEntity,
} from '../store.js';
import { isUnavailable, reason } from './connection.js';
import type { TransactionSql } from 'postgres';
import type { Sql } from './driver.js';
import { SCHEMA } from './layout.js';
import { RowEntity, type PgEntity } from './pg-entity.js';
import type { Readers, Replica, RowState } from './replica.js';

type Reject = (error: unknown) => void;
type WriteOp =
  | { kind: 'create'; record: EntityRecord; resolve: (entity: StoredEntity) => void; reject: Reject }
  | { kind: 'update'; id: string; change: Change; resolve: (entity: StoredEntity | undefined) => void; reject: Reject }
  | { kind: 'delete'; id: string; check: DeleteCheck | undefined; resolve: (deleted: boolean) => void; reject: Reject };

/** Writes of one process that share a transaction at most. */
const MAX_BATCH = 256;
/** Tries of a batch that lost a race (a concurrent insert of the same id, a deadlock). */
const MAX_ATTEMPTS = 5;
/** SQLSTATEs after which a batch is simply run again: serialization failure, deadlock. */
const RETRY_CODES: ReadonlySet<string> = new Set(['40001', '40P01']);

/** PostgreSQL's oid of `text`. */
const TEXT = 25;

/** A create found its id inserted by another process after the batch looked: the batch runs again. */
class LateConflict extends Error {}

/** What one batch's transaction decided: the rows it wrote, and each write's answer. */
interface Outcome {
  readonly rows: RowState[];
  readonly records: Map<PgEntity, EntityRecord>;
  readonly settle: (() => void)[];
}

/** An id's state as the batch sees it: the database's row, then each write of the batch. */
interface Current {
  pos: number;
  rev: number;
  entity: PgEntity | undefined;
  /** The row exists in the table (live or tombstone), locked by this transaction. */
  readonly stored: boolean;
}

export interface WriterOptions {
  readonly sql: Sql;
  readonly resource: string;
  readonly replica: Replica;
  readonly readers: Readers;
  /** Told when a write found the database unreachable (the feed then checks it again). */
  readonly onUnavailable: (error: unknown) => void;
}

/**
 * The writes of one resource (contract §8a). Writes queue and go in batches, one transaction each
 * (group commit): the transaction locks the rows of the batch's ids (`SELECT … FOR UPDATE`, in id
 * order), runs each write's `change` / `check` against the database's state — earlier writes of
 * the batch included — writes the final state of each id (`rev` + 1 per write, a new `pos` from
 * the sequence on a create or re-create, `body` NULL on a delete) and commits. A create of an id
 * with no row inserts with `ON CONFLICT DO NOTHING`: if another process inserted it meanwhile, the
 * whole batch runs again and then sees that row. Committed rows reach the index before any write
 * is acknowledged (read-your-writes); nothing reaches it otherwise.
 */
export class PgWriter {
  readonly #options: WriterOptions;
  #queue: WriteOp[] = [];
  #draining: Promise<void> | undefined;
  #closed = false;

  constructor(options: WriterOptions) {
    this.#options = options;
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

  /** Refuses writes from now on and resolves once those queued have run. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#draining) await this.#draining;
  }

  #enqueue<T>(make: (resolve: (value: T) => void, reject: Reject) => WriteOp): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreWriteError(`${this.#options.resource}: the store is closed`));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push(make(resolve, reject));
      this.#kick();
    });
  }

  #kick(): void {
    this.#draining ??= this.#drain().finally(() => {
      this.#draining = undefined;
      // A write queued between the loop's last look and this callback would wait for ever.
      if (this.#queue.length > 0) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) await this.#commit(this.#queue.splice(0, MAX_BATCH));
  }

  async #commit(batch: WriteOp[]): Promise<void> {
    const { sql, replica, readers, resource } = this.#options;
    for (let attempt = 1; ; attempt++) {
      const tick = readers.begin();
      try {
        const outcome = await sql.begin((tx) => this.#transaction(tx, batch));
        replica.apply(outcome.rows, outcome.records);
        for (const settle of outcome.settle) settle();
        return;
      } catch (error) {
        const retry = error instanceof LateConflict || RETRY_CODES.has((error as { code?: string }).code ?? '');
        if (retry && attempt < MAX_ATTEMPTS) continue;
        let failure: Error;
        if (isUnavailable(error)) {
          this.#options.onUnavailable(error);
          failure = new StoreUnavailableError(`${resource}: PostgreSQL unreachable: ${reason(error)}`);
        } else {
          failure = new StoreWriteError(`${resource}: write failed: ${(error as Error).message}`);
        }
        for (const op of batch) op.reject(failure);
        return;
      } finally {
        readers.end(tick);
      }
    }
  }

  async #transaction(tx: TransactionSql, batch: readonly WriteOp[]): Promise<Outcome> {
    const resource = this.#options.resource;
    const ids = new Set<string>();
    let creates = 0;
    for (const op of batch) {
      if (op.kind !== 'create') ids.add(op.id);
      else if (typeof op.record.id === 'string') {
        ids.add(op.record.id);
        creates++;
      }
    }
    const [found, positions] = await Promise.all([
      tx.unsafe<{ id: string; pos: string; rev: string; body: string | null }[]>(
        `SELECT id, pos::text AS pos, rev::text AS rev, body FROM ${SCHEMA}.entities WHERE resource = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE`,
        [resource, tx.array([...ids], TEXT)],
      ),
      creates === 0
        ? Promise.resolve([])
        : tx.unsafe<{ pos: string }[]>(`SELECT nextval('${SCHEMA}.creation')::text AS pos FROM generate_series(1, $1::int)`, [creates]),
    ]);
    const next = positions.map((p) => Number(p.pos)).sort((a, b) => a - b);
    const states = new Map<string, Current>();
    for (const row of found) {
      const pos = Number(row.pos);
      const rev = Number(row.rev);
      states.set(row.id, { pos, rev, entity: row.body === null ? undefined : new RowEntity(row.id, row.body, pos, rev), stored: true });
    }
    const stateOf = (id: string): Current => {
      let state = states.get(id);
      if (!state) states.set(id, (state = { pos: 0, rev: 0, entity: undefined, stored: false }));
      return state;
    };
    const records = new Map<PgEntity, EntityRecord>();
    const settle: (() => void)[] = [];
    const written = new Set<Current>();
    for (const op of batch) {
      try {
        if (op.kind === 'create') {
          checkRecord(op.record);
          const state = stateOf(op.record.id);
          if (state.entity) throw new StoreConflictError(`id ${op.record.id} exists`);
          state.pos = next.shift()!;
          state.rev++;
          const entity = (state.entity = new RowEntity(op.record.id, JSON.stringify(op.record), state.pos, state.rev));
          records.set(entity, op.record);
          written.add(state);
          settle.push(() => op.resolve(entity));
        } else if (op.kind === 'update') {
          const state = stateOf(op.id);
          if (!state.entity) {
            settle.push(() => op.resolve(undefined));
            continue;
          }
          const record = op.change(state.entity);
          checkRecord(record);
          if (record.id !== op.id) throw new Error(`change() returned id ${String(record.id)} for ${op.id}`);
          state.rev++;
          const entity = (state.entity = new RowEntity(op.id, JSON.stringify(record), state.pos, state.rev));
          records.set(entity, record);
          written.add(state);
          settle.push(() => op.resolve(entity));
        } else {
          const state = stateOf(op.id);
          if (!state.entity) {
            settle.push(() => op.resolve(false));
            continue;
          }
          op.check?.(state.entity);
          state.rev++;
          state.entity = undefined;
          written.add(state);
          settle.push(() => op.resolve(true));
        }
      } catch (error) {
        settle.push(() => op.reject(error));
      }
    }
    const rows: RowState[] = [];
    for (const [id, state] of states) {
      if (written.has(state)) rows.push(state.entity ?? { id, pos: state.pos, rev: state.rev, deleted: true });
    }
    await this.#write(tx, rows, states);
    return { rows, records, settle };
  }

  /** The final state of each written id: an UPDATE of the rows that exist, an INSERT of the others. */
  async #write(tx: TransactionSql, rows: readonly RowState[], states: ReadonlyMap<string, Current>): Promise<void> {
    if (rows.length === 0) return;
    const resource = this.#options.resource;
    // Every column travels as text[] (type 25's array): the driver serialises it without guessing.
    const columns = (subset: readonly RowState[]): ReturnType<typeof tx.array>[] => [
      tx.array(subset.map((r) => r.id), TEXT),
      tx.array(subset.map((r) => String(r.pos)), TEXT),
      tx.array(subset.map((r) => String(r.rev)), TEXT),
      tx.array(subset.map((r) => ('deleted' in r ? null : r.json)) as string[], TEXT),
    ];
    const existing = rows.filter((r) => states.get(r.id)!.stored);
    const fresh = rows.filter((r) => !states.get(r.id)!.stored);
    const unnest = 'unnest($2::text[], $3::text[]::bigint[], $4::text[]::bigint[], $5::text[]) AS u(id, pos, rev, body)';
    const [, inserted] = await Promise.all([
      existing.length === 0
        ? Promise.resolve([])
        : tx.unsafe(
            `UPDATE ${SCHEMA}.entities AS e SET pos = u.pos, rev = u.rev, body = u.body, tx = pg_current_xact_id() FROM ${unnest} WHERE e.resource = $1 AND e.id = u.id`,
            [resource, ...columns(existing)],
          ),
      fresh.length === 0
        ? Promise.resolve([])
        : tx.unsafe(
            `INSERT INTO ${SCHEMA}.entities (resource, id, pos, rev, body) SELECT $1, u.id, u.pos, u.rev, u.body FROM ${unnest} ON CONFLICT (resource, id) DO NOTHING RETURNING id`,
            [resource, ...columns(fresh)],
          ),
    ]);
    if (inserted.length < fresh.length) throw new LateConflict(`${resource}: an id was created by another process meanwhile`);
  }
}
