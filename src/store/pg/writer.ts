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
import type { Sql } from './driver.js';
import { SCHEMA } from './layout.js';
import { RowEntity, type PgEntity } from './pg-entity.js';
import type { Readers, Replica, RowState } from './replica.js';

type Reject = (error: unknown) => void;
type WriteOp =
  | { kind: 'create'; record: EntityRecord; resolve: (entity: StoredEntity) => void; reject: Reject }
  | { kind: 'update'; id: string; change: Change; resolve: (entity: StoredEntity | undefined) => void; reject: Reject }
  | { kind: 'delete'; id: string; check: DeleteCheck | undefined; resolve: (deleted: boolean) => void; reject: Reject };

/** Writes of one process that go in one batch at most. */
const MAX_BATCH = 256;
/** Tries of a write whose entity other processes keep writing between its read and its write. */
const MAX_ATTEMPTS = 100;

/** PostgreSQL's oid of `text`. */
/**
 * A PostgreSQL array literal of text values (`{"a","b",NULL}`), sent as one text parameter and cast
 * with `::text[]` by the server. Not `sql.array`: postgres 3.4.9 serialises an array parameter as
 * an array only once it has fetched the server's array types on that pool, and on a pool made
 * while the database was down it sent the bare values ("malformed array literal", 22P02).
 */
export function textArray(values: readonly (string | null)[]): string {
  return `{${values.map((v) => (v === null ? 'NULL' : `"${v.replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`;
}

/** An id's state as the batch sees it: the database's row, then each write of the batch. */
interface Current {
  pos: number;
  rev: number;
  entity: PgEntity | undefined;
  /** The row's rev as read (0: no row): the write goes through only if it is still that. */
  readonly read: number;
}

export interface WriterOptions {
  /** The current pool (replaced after the database went away, see `Database`). */
  readonly sql: () => Sql;
  readonly resource: string;
  readonly replica: Replica;
  readonly readers: Readers;
  /** Told when a write found the database unreachable (the feed then checks it again). */
  readonly onUnavailable: (error: unknown) => void;
}

/**
 * The writes of one resource (contract §8a). Writes queue and go in batches (group commit): a
 * batch reads the rows of its ids, runs each write's `change` / `check` against the database's
 * state — earlier writes of the batch included — and writes the final state of each id (`rev` + 1
 * per write, a new `pos` from the sequence on a create or re-create, `body` NULL on a delete) in
 * one statement, on condition that the row is still the one read (compare-and-set on `rev`; an id
 * that had no row must still have none). An id written by another process in between is not
 * written: its writes run again against the new state, so no two processes both win conflicting
 * writes and no update is lost. Written rows reach the index before any write is acknowledged
 * (read-your-writes).
 *
 * No transaction spans two round trips: a connection lost in the middle of one would leave the
 * driver (postgres 3.4.9) writing its ROLLBACK to a closed socket, which ends the process.
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
    const { readers, resource } = this.#options;
    let pending = batch;
    for (let attempt = 1; pending.length > 0; attempt++) {
      const tick = readers.begin();
      try {
        pending = await this.#attempt(pending);
      } catch (error) {
        let failure: Error;
        if (isUnavailable(error)) {
          this.#options.onUnavailable(error);
          failure = new StoreUnavailableError(`${resource}: PostgreSQL unreachable: ${reason(error)}`);
        } else {
          failure = new StoreWriteError(`${resource}: write failed: ${(error as Error).message}`);
        }
        for (const op of pending) op.reject(failure);
        return;
      } finally {
        readers.end(tick);
      }
      if (pending.length > 0 && attempt >= MAX_ATTEMPTS) {
        const failure = new StoreUnavailableError(`${resource}: gave up after ${attempt} tries, other processes kept writing the same entities`);
        for (const op of pending) op.reject(failure);
        return;
      }
    }
  }

  /**
   * One try of a batch: reads its ids' rows, runs the writes against them, writes each id's final
   * state if its row is still the one read, and settles the writes of the ids that were written
   * (and of those that wrote nothing). Returns the writes of ids another process wrote meanwhile:
   * they run again, against the new state.
   */
  async #attempt(batch: readonly WriteOp[]): Promise<WriteOp[]> {
    const { replica, resource } = this.#options;
    const sql = this.#options.sql();
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
      sql.unsafe<{ id: string; pos: string; rev: string; body: string | null }[]>(
        `SELECT id, pos::text AS pos, rev::text AS rev, body FROM ${SCHEMA}.entities WHERE resource = $1 AND id = ANY($2::text[])`,
        [resource, textArray([...ids])],
      ),
      creates === 0
        ? Promise.resolve([])
        : sql.unsafe<{ pos: string }[]>(`SELECT nextval('${SCHEMA}.creation')::text AS pos FROM generate_series(1, $1::int)`, [creates]),
    ]);
    const next = positions.map((p) => Number(p.pos)).sort((a, b) => a - b);
    const states = new Map<string, Current>();
    for (const row of found) {
      const pos = Number(row.pos);
      const rev = Number(row.rev);
      states.set(row.id, { pos, rev, read: rev, entity: row.body === null ? undefined : new RowEntity(row.id, row.body, pos, rev) });
    }
    const stateOf = (id: string): Current => {
      let state = states.get(id);
      if (!state) states.set(id, (state = { pos: 0, rev: 0, read: 0, entity: undefined }));
      return state;
    };
    const records = new Map<PgEntity, EntityRecord>();
    /** Each write's answer, and the id it depends on (none for a record refused before any lookup). */
    const answers: { op: WriteOp; id: string | undefined; settle: () => void }[] = [];
    for (const op of batch) {
      const id = op.kind === 'create' ? (typeof op.record.id === 'string' ? op.record.id : undefined) : op.id;
      try {
        answers.push({ op, id, settle: this.#run(op, stateOf, next, records) });
      } catch (error) {
        answers.push({ op, id, settle: () => op.reject(error) });
      }
    }
    const written = [...states].filter(([, state]) => state.rev !== state.read);
    const rows: RowState[] = written.map(([id, state]) => state.entity ?? { id, pos: state.pos, rev: state.rev, deleted: true });
    const succeeded = await this.#write(sql, rows, states);
    const lost = new Set(written.map(([id]) => id).filter((id) => !succeeded.has(id)));
    replica.apply(
      rows.filter((row) => succeeded.has(row.id)),
      records,
    );
    const again: WriteOp[] = [];
    for (const answer of answers) {
      if (answer.id !== undefined && lost.has(answer.id)) again.push(answer.op);
      else answer.settle();
    }
    return again;
  }

  /** Runs one write against its id's state as the batch left it; returns how to answer it. Throws to refuse it. */
  #run(op: WriteOp, stateOf: (id: string) => Current, next: number[], records: Map<PgEntity, EntityRecord>): () => void {
    if (op.kind === 'create') {
      checkRecord(op.record);
      const state = stateOf(op.record.id);
      if (state.entity) throw new StoreConflictError(`id ${op.record.id} exists`);
      state.pos = next.shift()!;
      state.rev++;
      const entity = (state.entity = new RowEntity(op.record.id, JSON.stringify(op.record), state.pos, state.rev));
      records.set(entity, op.record);
      return () => op.resolve(entity);
    }
    const state = stateOf(op.id);
    const current = state.entity;
    if (!current) return op.kind === 'update' ? () => op.resolve(undefined) : () => op.resolve(false);
    if (op.kind === 'delete') {
      op.check?.(current);
      state.rev++;
      state.entity = undefined;
      return () => op.resolve(true);
    }
    const record = op.change(current);
    checkRecord(record);
    if (record.id !== op.id) throw new Error(`change() returned id ${String(record.id)} for ${op.id}`);
    state.rev++;
    const entity = (state.entity = new RowEntity(op.id, JSON.stringify(record), state.pos, state.rev));
    records.set(entity, record);
    return () => op.resolve(entity);
  }

  /**
   * Writes the final state of each id in one statement (atomic, no transaction held across round
   * trips): an UPDATE of a row whose `rev` is still the one read, an INSERT of an id that had no
   * row and still has none. Returns the ids written; the others were written by another process
   * since they were read.
   */
  async #write(sql: Sql, rows: readonly RowState[], states: ReadonlyMap<string, Current>): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const text = textArray;
    const written = await sql.unsafe<{ id: string }[]>(
      `WITH u AS (
         SELECT * FROM unnest($2::text[], $3::text[]::bigint[], $4::text[]::bigint[], $5::text[], $6::text[]::bigint[]) AS u(id, pos, rev, body, read)
       ), updated AS (
         UPDATE ${SCHEMA}.entities AS e SET pos = u.pos, rev = u.rev, body = u.body, tx = pg_current_xact_id()
         FROM u WHERE u.read > 0 AND e.resource = $1 AND e.id = u.id AND e.rev = u.read
         RETURNING e.id
       ), inserted AS (
         INSERT INTO ${SCHEMA}.entities (resource, id, pos, rev, body)
         SELECT $1, u.id, u.pos, u.rev, u.body FROM u WHERE u.read = 0
         ON CONFLICT (resource, id) DO NOTHING
         RETURNING id
       )
       SELECT id FROM updated UNION ALL SELECT id FROM inserted`,
      [
        this.#options.resource,
        text(rows.map((r) => r.id)),
        text(rows.map((r) => String(r.pos))),
        text(rows.map((r) => String(r.rev))),
        text(rows.map((r) => ('deleted' in r ? null : r.json))),
        text(rows.map((r) => String(states.get(r.id)!.read))),
      ],
    );
    return new Set(written.map((r) => r.id));
  }
}
