import { recordJson } from '../../conventions/entity.js';
import type { LinkTarget } from '../../conventions/relations.js';
import {
  StoreUnavailableError,
  StoreWriteError,
  type Change,
  type ChangeType,
  type DeleteCheck,
  type EntityRecord,
  type StoredEntity,
} from '../store.js';
import { isUnavailable, reason, STATEMENT_DEADLINE_MS, withDeadline } from './connection.js';
import { PREPARED, textArray, type Sql } from './driver.js';
import { ANSWERS_KEY_CONSTRAINT, ANSWERS_TABLE, SCHEMA } from './layout.js';
import { introducedLinks, NO_LINKS, refusal, type WriterLinks } from './link-writes.js';
import { RowEntity, type PgEntity } from './pg-entity.js';
import type { OwnVersion, OwnWrites } from './own-writes.js';
import type { ReaderClock, Replica } from './replica.js';
import { settleWrite, WriteQueue, type WriteOp } from '../write-queue.js';
import { answerOf, decideWrite, digestBatch, idOf, keyOf } from '../write-rules.js';
import { ANSWER_TTL_MS, type AnswerBookOptions, type KeyedWrite, type Remembered, type WriteOutcome } from '../idempotency.js';
import { writeRows, type AnswerRow, type RowWrite } from './write-statement.js';
import { holdsNul, mayBeUnreadable, NUL_REFUSED, unreadablePath } from './nul-text.js';
import { validationFailed } from '../../conventions/problem.js';
import { sharedPrefix } from '../answer-prefix.js';

export type { WriteOp };

/** Writes of one process that go in one batch at most. */
const MAX_BATCH = 256;
/** Tries of a write whose entity other processes keep writing between its read and its write. */
const MAX_ATTEMPTS = 100;

/** An id's state as the batch sees it: the database's row, then each write of the batch. */
interface Current {
  pos: number;
  rev: number;
  entity: PgEntity | undefined;
  /** The row's rev as read (0: no row): the write goes through only if it is still that. */
  readonly read: number;
  /** Links the batch's writes of the id make (`introducedLinks`). */
  links: readonly LinkTarget[];
  /** A write of the batch deletes the entity, which others may link to. */
  guard: boolean;
  /** The type of the batch's last write of the id. */
  type?: ChangeType;
}

/** How a write that ran is answered, and what it asked of the statement. */
export interface Ran {
  readonly settle: () => void;
  /** What the write came to, for a keyed write's answer. */
  readonly outcome?: WriteOutcome;
  /** The links it makes. */
  readonly links?: readonly LinkTarget[];
  /** It deletes an entity. */
  readonly deletes?: boolean;
}

/** A write of a batch as it ran: its op, and the id it depends on (none for a record refused before any lookup). */
export interface RanWrite extends Ran {
  readonly op: WriteOp;
  readonly id: string | undefined;
}

/** SQLSTATEs of a statement that did nothing and may simply run again: deadlock detected, serialization failure. */
const TRANSIENT: ReadonlySet<string> = new Set(['40P01', '40001']);

export interface WriterOptions {
  /** The current pool (replaced after the database went away, see `Database`). */
  readonly sql: () => Sql;
  readonly resource: string;
  readonly replica: Replica;
  readonly readers: ReaderClock;
  /** Where the versions this process commits wait for the change feed to report them. */
  readonly own: OwnWrites;
  /** Told when a write found the database unreachable (the feed then checks it again). */
  readonly onUnavailable: (error: unknown) => void;
  /** How long one try's statements may take before the connection counts as lost (default `STATEMENT_DEADLINE_MS`). */
  readonly deadlineMs?: number;
  /** Told of an internal error (a bug): the writes queued after it still run. */
  readonly warn: (message: string) => void;
  /** The clock and time to live of keyed writes' answers (idempotency.ts); default `Date.now`, 24 h. */
  readonly idempotency?: AnswerBookOptions;
}

/** How often a writer deletes its resource's expired answers, in milliseconds of the ledger's clock. */
const ANSWER_SWEEP_MS = 10 * 60 * 1000;

/**
 * The writes of one resource (docs/storage.md §2). Writes queue and go in batches (group commit): a
 * batch reads the rows of its ids, runs each write's `change` / `check` against the database's
 * state — earlier writes of the batch included — and writes the final state of each id (`rev` + 1
 * per write, a new `pos` from the sequence on a create or re-create, `body` NULL on a delete) in
 * one statement, on condition that the row is still the one read (compare-and-set on `rev`; an id
 * that had no row must still have none). An id written by another process in between is not
 * written: its writes run again against the new state, so no two processes both win conflicting
 * writes and no update is lost. Written rows reach the index before any write is acknowledged
 * (read-your-writes).
 *
 * With relations (`checkLinks`), a batch whose writes make links or delete an entity others may link
 * to checks them in that same statement (the write function, link-layout.ts): a link to a missing
 * entity is refused with `DanglingLinkError`, the delete of one still linked to with
 * `StillLinkedError`, decided in the database whatever other processes write at the same moment.
 *
 * Keyed writes (`Idempotency-Key`, idempotency.ts): a batch decides each keyed write against its
 * key's answer first (write-rules.ts: a replay writes nothing), and inserts the new answers in the
 * same statement as the rows (write-statement.ts). Its first try takes its keys for new, reading no
 * answer: almost every key is (a retry is rare), and that saves a statement per batch. A key that
 * has an answer in the table (a retry, a key reused, or one expired and not yet deleted) breaks the
 * answers' primary key, the statement is undone whole, and every later try reads its keys' answers
 * with its rows (deleting expired ones first), so the retry replays. An answer goes into the table
 * in the statement of its write: an answer whose write is undone is undone with it, so a replayed
 * answer is never separated from its write — whichever process, whatever outage. Two processes
 * writing one key at once: the second statement to commit breaks the answers' primary key and is
 * undone whole, and its batch runs again, now finding the answer (a replay): no key writes twice. A
 * statement cut off by an outage (503) either committed, answer included, or did nothing: the retry
 * replays or is processed.
 *
 * No transaction spans two round trips: a connection lost in the middle of one would leave the
 * driver (postgres 3.4.9) writing its ROLLBACK to a closed socket, which ends the process. A try
 * whose statements have not answered within the deadline fails as if the connection were lost.
 */
export class PgWriter {
  readonly #options: WriterOptions;
  readonly #queue: WriteQueue;
  #links: WriterLinks = NO_LINKS;
  readonly #now: () => number;
  readonly #ttlMs: number;
  /** When expired answers were last deleted (ledger clock); -Infinity: not yet. */
  #swept = -Infinity;

  constructor(options: WriterOptions) {
    this.#options = options;
    this.#now = options.idempotency?.now ?? Date.now;
    this.#ttlMs = options.idempotency?.ttlMs ?? ANSWER_TTL_MS;
    this.#queue = new WriteQueue(options.resource, () => this.#drain(), options.warn);
  }

  /** From now on, writes check the links they make and deletes the links to what they delete. */
  checkLinks(links: WriterLinks): void {
    this.#links = links;
  }

  create(record: EntityRecord, keyed?: KeyedWrite): Promise<StoredEntity> {
    return this.#queue.create(record, keyed);
  }

  update(id: string, change: Change, keyed?: KeyedWrite): Promise<StoredEntity | undefined> {
    return this.#queue.update(id, change, keyed);
  }

  /** Records a keyed request's answer that wrote nothing (idempotency.ts `remember`). */
  remember(keyed: KeyedWrite): Promise<void> {
    return this.#queue.answer(keyed);
  }

  delete(id: string, check?: DeleteCheck): Promise<boolean> {
    return this.#queue.delete(id, check);
  }

  /** Refuses writes from now on and resolves once those queued have run. */
  async close(): Promise<void> {
    this.#queue.close();
    while (this.#queue.busy) await this.#queue.busy;
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) await this.#commit(this.#queue.takeWrites(MAX_BATCH));
  }

  /**
   * Runs a batch in rounds, each holding at most one write of an id (the first still to run of
   * each): a statement writes one row per id, so two writes of one entity in one statement would
   * make one change, and followers must be told each write of this process (own-writes.ts).
   */
  async #commit(batch: WriteOp[]): Promise<void> {
    for (let rest = batch; rest.length > 0; ) {
      const round: WriteOp[] = [];
      const later: WriteOp[] = [];
      const ids = new Set<string>();
      for (const op of rest) {
        const id = idOf(op);
        if (id !== undefined && ids.has(id)) later.push(op);
        else {
          if (id !== undefined) ids.add(id);
          round.push(op);
        }
      }
      await this.#commitRound(round);
      rest = later;
    }
  }

  async #commitRound(batch: WriteOp[]): Promise<void> {
    const { readers, resource } = this.#options;
    let pending = batch;
    for (let attempt = 1; pending.length > 0; attempt++) {
      const tick = readers.begin();
      try {
        pending = await this.#attempt(pending, attempt > 1);
      } catch (error) {
        const code = (error as { code?: unknown } | null)?.code;
        // The statement did nothing (a deadlock or serialization failure): the whole batch runs again.
        if (typeof code === 'string' && TRANSIENT.has(code) && attempt < MAX_ATTEMPTS) continue;
        // Another process answered one of the batch's keys first: undone whole, it runs again and replays.
        if (code === '23505' && (error as { constraint_name?: unknown }).constraint_name === ANSWERS_KEY_CONSTRAINT && attempt < MAX_ATTEMPTS) continue;
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
   * state if its row is still the one read (and its links hold, see `writeRows`), and settles the
   * writes of the ids that were written (and of those that wrote nothing). Returns the writes of
   * ids another process wrote meanwhile, and of ids a refused write shared: they run again,
   * against the database's state.
   */
  async #attempt(batch: readonly WriteOp[], retry: boolean): Promise<WriteOp[]> {
    const { replica, resource } = this.#options;
    const sql = this.#options.sql();
    digestBatch(batch);
    const ids = new Set<string>();
    let creates = 0;
    for (const op of batch) {
      const id = idOf(op);
      if (id === undefined) continue;
      ids.add(id);
      if (op.kind === 'create') creates++;
    }
    // A first try takes its keys for new (see the class comment): a key with an answer sends it round again.
    const keys = retry ? [...new Set(batch.flatMap((op) => keyOf(op)?.key ?? []))] : [];
    const now = this.#now();
    const cutoff = now - this.#ttlMs;
    const sweep = now - this.#swept >= ANSWER_SWEEP_MS;
    if (sweep) this.#swept = now;
    const [found, positions, known] = await this.#deadline(Promise.all([
      sql.unsafe<{ id: string; pos: string; rev: string; body: string | null }[]>(
        `SELECT id, pos::text AS pos, rev::text AS rev, body FROM ${SCHEMA}.entities WHERE resource = $1 AND id = ANY($2::text[])`,
        // An id holding U+0000 has no row (nul-text.ts): not sent, its write runs as against a missing one.
        [resource, textArray([...ids].filter((id) => !holdsNul(id)))],
        PREPARED,
      ),
      creates === 0
        ? Promise.resolve([])
        : sql.unsafe<{ pos: string }[]>(`SELECT nextval('${SCHEMA}.creation')::text AS pos FROM generate_series(1, $1::int)`, [creates], PREPARED),
      keys.length === 0 && !sweep
        ? Promise.resolve([])
        : // Expired answers go (the batch's keys', and now and then all of the resource's), so that a
          // key past its time to live can be answered again; live ones are read.
          sql.unsafe<{ key: string; fingerprint: string; at: string; status: number; headers: string; body: string }[]>(
            `WITH gone AS (DELETE FROM ${ANSWERS_TABLE} WHERE resource = $1 AND at <= $3::bigint AND ($4::boolean OR key = ANY($2::text[])))
             SELECT key, fingerprint, at::text AS at, status, headers, body FROM ${ANSWERS_TABLE} WHERE resource = $1 AND key = ANY($2::text[]) AND at > $3::bigint`,
            [resource, textArray(keys), String(cutoff), sweep],
            PREPARED,
          ),
    ]));
    const remembered = new Map<string, Remembered>(
      known.map((a) => [a.key, { fingerprint: a.fingerprint, at: Number(a.at), answer: { status: a.status, headers: JSON.parse(a.headers) as Record<string, string>, body: a.body } }]),
    );
    /** The answers of the batch's keyed writes, by key, and the id each one's write concerns. */
    const answered = new Map<string, { id: string | undefined; remembered: Remembered }>();
    const record = (op: WriteOp, outcome: WriteOutcome): void => {
      const keyed = keyOf(op);
      if (keyed === undefined) return;
      try {
        const r = answerOf(op, outcome, now);
        if (r !== undefined) answered.set(keyed.key, { id: idOf(op), remembered: r });
      } catch (error) {
        this.#options.warn(`${resource}: internal error: an answer could not be made: ${(error as Error).stack ?? String(error)}`);
      }
    };
    const next = positions.map((p) => Number(p.pos)).sort((a, b) => a - b);
    const states = new Map<string, Current>();
    for (const row of found) {
      const pos = Number(row.pos);
      const rev = Number(row.rev);
      states.set(row.id, { pos, rev, read: rev, entity: row.body === null ? undefined : new RowEntity(row.id, row.body, pos, rev), links: [], guard: false });
    }
    const stateOf = (id: string): Current => {
      let state = states.get(id);
      if (!state) states.set(id, (state = { pos: 0, rev: 0, read: 0, entity: undefined, links: [], guard: false }));
      return state;
    };
    const records = new Map<PgEntity, EntityRecord>();
    /** Each write as it ran (`RanWrite`). */
    const runs: RanWrite[] = [];
    for (const op of batch) {
      const id = idOf(op);
      const key = keyOf(op)?.key;
      const known = key === undefined ? undefined : (answered.get(key)?.remembered ?? remembered.get(key));
      try {
        const ran = this.#run(op, stateOf, next, records, known);
        runs.push({ op, id, ...ran });
        if (ran.outcome !== undefined) record(op, ran.outcome);
      } catch (error) {
        runs.push({ op, id, settle: () => op.reject(error) });
        record(op, { error });
      }
    }
    const written = [...states].filter(([, state]) => state.rev !== state.read);
    const rows = written.map(([id, state]): RowWrite => ({
      row: state.entity ?? { id, pos: state.pos, rev: state.rev, deleted: true },
      read: state.read,
      links: state.links,
      guard: state.guard,
    }));
    // An answer decided against a write of the batch stands or falls with that write.
    const rowOf = new Map(written.map(([id], i) => [id, i]));
    const answerRows = [...answered].map(([key, { id, remembered: r }]): AnswerRow => {
      const row = id === undefined ? undefined : rowOf.get(id);
      return { id: row === undefined ? undefined : id, key, fingerprint: r.fingerprint, at: r.at, status: r.answer.status, headers: r.answer.headersJson ?? JSON.stringify(r.answer.headers), ...bodyOf(r.answer.body, row, rows) };
    });
    const deletedAt = Math.floor(Date.now() / 1000);
    // Counted in flight until its versions are known (own-writes.ts): the change feed reports them,
    // each in its place, rather than the table's latest row.
    const outcomes = await this.#options.own.track(this.#deadline(writeRows(sql, resource, rows, this.#links.reverse, answerRows, deletedAt)), (outcomes) => {
      const versions: OwnVersion[] = [];
      const applied = [];
      for (const { row } of rows) {
        const outcome = outcomes.get(row.id);
        if (outcome?.kind !== 'written') continue;
        applied.push(row);
        const deleted = 'deleted' in row;
        const updatedAt = deleted ? undefined : records.get(row)?.updatedAt;
        versions.push({
          resource,
          tx: BigInt(outcome.tx),
          state: row,
          type: deleted ? 'deleted' : (states.get(row.id)?.type ?? 'updated'),
          at: deleted ? deletedAt : typeof updatedAt === 'number' ? updatedAt : 0,
        });
      }
      this.#options.own.add(versions);
      // Read-your-writes: in the index before any write of the batch is answered.
      replica.apply(applied, records);
    });
    const again: WriteOp[] = [];
    for (const run of runs) {
      const outcome = run.id === undefined ? undefined : outcomes.get(run.id);
      const refused = outcome === undefined ? undefined : refusal(resource, run, outcome);
      if (refused === 'again') again.push(run.op);
      else if (refused !== undefined) run.op.reject(refused);
      else run.settle();
    }
    return again;
  }

  /** Runs one write against its id's state as the batch left it; returns how to answer it. Throws to refuse it. */
  #run(op: WriteOp, stateOf: (id: string) => Current, next: number[], records: Map<PgEntity, EntityRecord>, remembered: Remembered | undefined): Ran {
    const { forward, reverse } = this.#links;
    const id = idOf(op);
    const state = id === undefined ? undefined : stateOf(id);
    const decision = decideWrite(op, state?.entity, remembered);
    // A record without an id was refused above: from here on the id and its state exist.
    if (decision.kind === 'missing') return { settle: () => settleWrite(op, undefined), outcome: { entity: undefined } };
    if (decision.kind === 'remove') {
      state!.rev++;
      state!.entity = undefined;
      if (reverse.length > 0) state!.guard = true;
      return { settle: () => settleWrite(op, undefined, true), deletes: true };
    }
    const { record } = decision;
    const json = recordJson(record);
    // The link fields' indexes read a linking resource's bodies with `json` operators, which refuse
    // `\u0000` and a lone surrogate anywhere in one (nul-text.ts): refused as this write's own 400, not
    // as the failure of its batch's statement, which would fail every write of the batch with a 503
    // that no retry mends.
    if (forward.length > 0 && mayBeUnreadable(json)) {
      const path = unreadablePath(record);
      if (path !== undefined) throw validationFailed({ [path]: { type: NUL_REFUSED } });
    }
    const before = state!.entity;
    if (op.kind === 'create') state!.pos = next.shift()!;
    state!.rev++;
    const entity = (state!.entity = new RowEntity(id!, json, state!.pos, state!.rev));
    // The write's own type, for the change it reports (a create, or a replace or patch).
    state!.type = op.kind === 'create' ? 'created' : 'updated';
    records.set(entity, record);
    const links = forward.length === 0 ? [] : introducedLinks(forward, record, before?.record);
    state!.links = [...state!.links, ...links];
    return { settle: () => settleWrite(op, entity), links, outcome: { entity } };
  }

  /** `work`, or a `StatementDeadlineError` once it has taken longer than the deadline (a connection that never answers). */
  #deadline<T>(work: Promise<T>): Promise<T> {
    return withDeadline(() => work, this.#options.deadlineMs ?? STATEMENT_DEADLINE_MS, `${this.#options.resource}: write`);
  }
}

/** Below this many characters shared with its row's JSON, a body is sent whole: the reference would save little. */
const MIN_SHARED = 32;
/** Halves of surrogate pairs: a start holding any is sent whole (PostgreSQL's `left` counts code points, JavaScript's strings UTF-16 units). */
const SURROGATE = /[\ud800-\udfff]/;

/**
 * An answer's body as its statement sends it (`AnswerRow.from`): its start by reference to the
 * JSON of `rows[row]`, the row its write made, where it begins as that JSON does (a 201's or 200's
 * representation of the record), and whole otherwise.
 */
function bodyOf(body: string, row: number | undefined, rows: readonly RowWrite[]): Pick<AnswerRow, 'body' | 'from'> {
  const state = row === undefined ? undefined : rows[row]!.row;
  if (state === undefined || 'deleted' in state) return { body };
  const shared = sharedPrefix(body, state.json);
  if (shared < MIN_SHARED || SURROGATE.test(body.slice(0, shared))) return { body };
  return { body: body.slice(shared), from: { row: row!, shared } };
}
