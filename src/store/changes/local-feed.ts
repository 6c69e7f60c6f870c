import { Followers } from '../followers.js';
import type { ChangeListener, ChangeType, StoreChange, StoredEntity } from '../store.js';
import { ChangeOrder } from './change-order.js';
import { CursorExpiredError, CursorMalformedError, otherDataSet, type ChangeFeed, type FeedPage } from './change-feed.js';

/**
 * A change as a local log holds it: the latest change of a live entity (the log's entity itself,
 * which knows its stamp) or a remembered delete.
 */
export interface HeldChange {
  readonly seq: number;
  readonly id: string;
  readonly type: ChangeType;
  readonly at: number;
  /** The entity as the change left it; undefined for a delete. */
  readonly entity: StoredEntity | undefined;
}

/** A delete, remembered for the retention period. */
export class HeldDelete implements HeldChange {
  readonly type = 'deleted';
  readonly entity = undefined;
  constructor(
    readonly id: string,
    readonly seq: number,
    readonly at: number,
  ) {}
}

/** The cursor before every change: sequence numbers start at 1. */
export const CURSOR_ORIGIN = '0';
/** A cursor of a local log is its sequence number in decimal (RFC 3986 unreserved characters). */
const CURSOR = /^(0|[1-9][0-9]{0,15})$/;

export const formatCursor = (seq: number): string => String(seq);

/** The sequence number a cursor names, or undefined when it is not one. */
export function parseCursor(cursor: string): number | undefined {
  if (!CURSOR.test(cursor)) return undefined;
  const seq = Number(cursor);
  return Number.isSafeInteger(seq) ? seq : undefined;
}

/**
 * A data set's name, when it has one: a copy (`halserve backup`) names itself so that its cursors
 * differ from its original's, whose numbers it shares up to the copy and not after. Lower-case
 * letters and digits, a letter first (docs/storage.md §4).
 */
export const DATASET = /^[a-z][a-z0-9]{3,39}$/;
/** A cursor of a named data set: `<dataset>-<seq>`. */
const NAMED_CURSOR = /^([a-z][a-z0-9]{3,39})-(0|[1-9][0-9]{0,15})$/;
/**
 * A cursor of a PostgreSQL data set, `<dataset>-<tx>.<pos>` (`<tx>.<pos>` from a halserve before
 * databases were named; pg-cursor.ts): a copy of one is told it apart.
 */
const DATABASE_CURSOR = /^(?:[a-z][a-z0-9]{3,39}-)?(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,19})$/;

/**
 * The horizon a cursor of a change older than the newest forgotten delete carries: `_<forgotten>`
 * after its number (`LocalChangeLog.cursorOf`).
 */
const HORIZON = /_([1-9][0-9]{0,15})$/;

/** Where a cursor stands: after change `seq`, listed while deletes up to `horizon` were forgotten (0: none said). */
export interface CursorPosition {
  readonly seq: number;
  readonly horizon: number;
}

/**
 * What a cursor names: a position in the data set `dataset` (undefined: one without a name),
 * `'other'` for a well-formed cursor of another data set, undefined for no cursor at all.
 */
export function readPosition(cursor: string, dataset: string | undefined): CursorPosition | 'other' | undefined {
  const mark = HORIZON.exec(cursor);
  const horizon = mark === null ? 0 : Number(mark[1]);
  if (!Number.isSafeInteger(horizon)) return undefined;
  const seq = readSeq(mark === null ? cursor : cursor.slice(0, mark.index), dataset);
  return typeof seq === 'number' ? { seq, horizon } : seq;
}

function readSeq(cursor: string, dataset: string | undefined): number | 'other' | undefined {
  const named = NAMED_CURSOR.exec(cursor);
  if (named !== null) {
    if (named[1] !== dataset) return 'other';
    const seq = Number(named[2]);
    return Number.isSafeInteger(seq) ? seq : undefined;
  }
  const seq = parseCursor(cursor);
  if (seq === undefined) return dataset !== undefined && DATABASE_CURSOR.test(cursor) ? 'other' : undefined;
  return dataset === undefined ? seq : 'other';
}

/**
 * Whether `cursor` is one a data directory hands out (`<seq>`, `<dataset>-<seq>`, either with a
 * horizon `_<forgotten>`), of whichever data set: a PostgreSQL database imported from a directory
 * answers such a cursor as another data set's (pg-cursor.ts), not as no cursor at all.
 */
export function isDirectoryCursor(cursor: string): boolean {
  const mark = HORIZON.exec(cursor);
  const head = mark === null ? cursor : cursor.slice(0, mark.index);
  return CURSOR.test(head) || NAMED_CURSOR.test(head);
}

/** The sequence number a cursor names in `dataset`, `'other'` for another data set's, undefined for no cursor. */
export function readCursor(cursor: string, dataset: string | undefined): number | 'other' | undefined {
  const position = readPosition(cursor, dataset);
  return typeof position === 'object' ? position.seq : position;
}

export interface LocalFeedOptions {
  /** Milliseconds since the epoch (tests inject a clock). */
  readonly now?: () => number;
  /** How long deletes are remembered, in milliseconds (`--changes-retention`, default 7 days: docs/changes.md §5). */
  readonly retentionMs?: number;
  readonly warn?: (message: string) => void;
}

export const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;

export interface Published {
  readonly resource: ResourceChanges;
  readonly held: HeldChange;
  /** The sequence number of the entity's change this one supersedes, or 0. */
  readonly previous: number;
}

interface Reservation {
  readonly first: number;
  /** Undefined while its batch is in flight; null once it failed (its numbers are never used). */
  items: readonly Published[] | null | undefined;
}

/**
 * The change log of the stores of one process's data set (a data directory, or memory stores made
 * together): one sequence over every resource, each resource's latest change per entity in an
 * indexed `ChangeOrder`, deletes remembered for the retention period.
 *
 * Sequence numbers are reserved when a batch's lines are composed (the file stores them), so
 * batches of two resources, synced in parallel, may become durable out of order. Changes are
 * published — to the orders and to followers — strictly in sequence order: a reservation whose
 * batch is still in flight holds back those after it, and one that failed is skipped. So a cursor
 * handed out is never followed by a change with a smaller one: no reader can skip a change. A
 * write held back so is answered only once published (`WriteBatcher`), so the feed holds every
 * acknowledged write.
 */
export class LocalChangeLog implements ChangeFeed {
  readonly #now: () => number;
  readonly retentionMs: number;
  readonly #followers: Followers;
  readonly #warn: (message: string) => void;
  readonly #resources = new Map<string, ResourceChanges>();
  readonly #pending: Reservation[] = [];
  /** The next sequence number to reserve. */
  #next = 1;
  /** Every change up to this one is published. */
  #published = 0;
  /** The largest sequence number of a forgotten delete: an older cursor cannot resume. */
  #forgotten = 0;
  /** The data set's name, when it has one (a copy): its cursors carry it. */
  #dataset: string | undefined;

  constructor(options: LocalFeedOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS;
    this.#warn = options.warn ?? (() => {});
    this.#followers = new Followers(this.#warn);
  }

  /** The Unix second now. */
  nowSeconds(): number {
    return Math.floor(this.#now() / 1000);
  }

  /** The changes of `name`, made on first use. */
  resource(name: string): ResourceChanges {
    let resource = this.#resources.get(name);
    if (!resource) this.#resources.set(name, (resource = new ResourceChanges(name, this.#warn)));
    return resource;
  }

  /** The names of the resources whose changes the log numbers (`resource`), in the order they came. */
  get resourceNames(): string[] {
    return [...this.#resources.keys()];
  }

  /**
   * The changes numbered as `from`'s are `to`'s from now on, those already numbered included: for a
   * store made without the name it is then served under (memory-store.ts `serveAs`).
   */
  rename(from: string, to: string): void {
    const resource = this.#resources.get(from);
    if (resource === undefined || from === to) return;
    if (this.#resources.has(to)) throw new Error(`the change log already numbers changes of ${JSON.stringify(to)}`);
    this.#resources.delete(from);
    resource.name = to;
    this.#resources.set(to, resource);
  }

  /** Start-up: a sequence number found in a log (the next one reserved is above it). */
  seen(seq: number): void {
    if (seq >= this.#next) this.#next = seq + 1;
    if (seq > this.#published) this.#published = seq;
  }

  /** Start-up and compaction: deletes up to `seq` are forgotten. */
  forgot(seq: number): void {
    if (seq > this.#forgotten) this.#forgotten = seq;
    this.seen(seq);
  }

  get forgotten(): number {
    return this.#forgotten;
  }

  /** Start-up: the data set's name (`_changes` holds it), before any cursor is handed out. */
  named(dataset: string | undefined): void {
    this.#dataset = dataset;
  }

  /** The data set's name, if it has one. */
  get dataset(): string | undefined {
    return this.#dataset;
  }

  /**
   * The cursor of sequence number `seq` in this data set. Below the newest forgotten delete it also
   * names that delete (`<seq>_<forgotten>`): a client that listed the feed while that delete was
   * already forgotten never saw the entity it removed, so its cursor resumes for as long as no
   * newer delete is forgotten; the bare number could not tell it from a cursor of a client that
   * did see that entity, and is past its delete (docs/changes.md §5).
   */
  cursorOf(seq: number): string {
    const cursor = this.#dataset === undefined ? formatCursor(seq) : `${this.#dataset}-${seq}`;
    return seq < this.#forgotten ? `${cursor}_${this.#forgotten}` : cursor;
  }

  /** The last sequence number reserved (published or not). */
  get reserved(): number {
    return this.#next - 1;
  }

  /** The latest published sequence number. */
  get published(): number {
    return this.#published;
  }

  /** Start-up, before anything is served: the next sequence number, published at once. */
  take(): number {
    if (this.#pending.length > 0) throw new Error('take() is for start-up, while no batch is in flight');
    const seq = this.#next++;
    this.#published = seq;
    return seq;
  }

  /** Resolves once every reservation up to `seq` is settled (its changes published, or failed). */
  through(seq: number): Promise<void> {
    if (this.#settledThrough(seq)) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ seq, resolve }));
  }

  readonly #waiters: { seq: number; resolve: () => void }[] = [];

  #settledThrough(seq: number): boolean {
    const head = this.#pending[0];
    return head === undefined || head.first > seq;
  }

  /** Takes `count` sequence numbers for a batch about to be written; returns the first. */
  reserve(count: number): number {
    const first = this.#next;
    this.#next += count;
    this.#pending.push({ first, items: undefined });
    return first;
  }

  /** The batch of the reservation `first` is durable and applied (`items`), or failed (`null`). */
  settle(first: number, items: readonly Published[] | null): void {
    const reservation = this.#pending.find((r) => r.first === first);
    if (!reservation) throw new Error(`no reservation at ${first}`);
    reservation.items = items;
    while (this.#pending.length > 0 && this.#pending[0]!.items !== undefined) {
      const { items: done } = this.#pending.shift()!;
      for (const item of done ?? []) this.#publish(item);
    }
    for (let i = this.#waiters.length - 1; i >= 0; i--) {
      const waiter = this.#waiters[i]!;
      if (!this.#settledThrough(waiter.seq)) continue;
      this.#waiters.splice(i, 1);
      waiter.resolve();
    }
  }

  #publish({ resource, held, previous }: Published): void {
    resource.place(held, previous);
    this.#published = held.seq;
    const change: StoreChange = {
      resource: resource.name,
      id: held.id,
      type: held.type,
      entity: held.entity,
      cursor: this.cursorOf(held.seq),
      at: held.at,
    };
    resource.followers.emit(change);
    this.#followers.emit(change);
  }

  // ---- the feed ----

  get latest(): string {
    return this.cursorOf(this.#published);
  }

  compare(a: string, b: string): number {
    return this.#seqOf(a) - this.#seqOf(b);
  }

  #seqOf(cursor: string): number {
    const seq = readCursor(cursor, this.#dataset);
    return typeof seq === 'number' ? seq : 0;
  }

  latestOf(resource: string): string {
    return this.cursorOf(Math.max(this.#resources.get(resource)?.latest ?? 0, this.#forgotten));
  }

  follow(listener: ChangeListener): () => void {
    return this.#followers.add(listener);
  }

  check(since: string): void {
    this.#after(since);
  }

  read(since: string | undefined, limit: number, resources?: ReadonlySet<string>): FeedPage {
    const after = since === undefined ? 0 : this.#after(since);
    const published = this.#published;
    const sources: IterableIterator<HeldChange>[] = [];
    for (const [name, resource] of this.#resources) if (!resources || resources.has(name)) sources.push(resource.order.after(after));
    // A k-way merge over the resources' orders: each is in sequence order already.
    const heads = sources.map((it) => it.next()).map((r) => (r.done ? undefined : r.value));
    const names = [...this.#resources.keys()].filter((name) => !resources || resources.has(name));
    const changes: StoreChange[] = [];
    while (changes.length < limit) {
      let best = -1;
      for (let i = 0; i < heads.length; i++) if (heads[i] !== undefined && (best < 0 || heads[i]!.seq < heads[best]!.seq)) best = i;
      if (best < 0 || heads[best]!.seq > published) break;
      const held = heads[best]!;
      changes.push({ resource: names[best]!, id: held.id, type: held.type, entity: held.entity, cursor: this.cursorOf(held.seq), at: held.at });
      const r = sources[best]!.next();
      heads[best] = r.done ? undefined : r.value;
    }
    const cursor = changes.length > 0 ? changes[changes.length - 1]!.cursor : since ?? this.latest;
    return { changes, cursor };
  }

  /** The sequence number `since` names; throws when it cannot resume. */
  #after(since: string): number {
    const position = readPosition(since, this.#dataset);
    if (position === undefined) throw new CursorMalformedError(`${JSON.stringify(since)} is not a cursor of this server's changes`);
    // A copy's cursors name it, so that one of its original (or of another copy) cannot resume here.
    if (position === 'other') throw otherDataSet(since, 'this one was copied from it, or it from this one');
    const { seq, horizon } = position;
    if (seq > this.#published) throw new CursorMalformedError(`cursor ${since} is after the latest change (${this.latest}): it is not one of this data set's`);
    // `cursorOf` names a horizon only above the change, and never one not yet forgotten.
    if (horizon !== 0 && (horizon <= seq || horizon > this.#forgotten)) throw new CursorMalformedError(`${JSON.stringify(since)} is not a cursor of this server's changes`);
    if (seq < this.#forgotten && horizon !== this.#forgotten) {
      throw new CursorExpiredError(`cursor ${since} is older than a delete this server no longer remembers (changes since ${this.cursorOf(this.#forgotten)} are kept)`);
    }
    return seq;
  }

  // ---- retention ----

  /** The deletes of `resource` older than the retention period (compaction leaves them out). */
  expired(resource: string): HeldDelete[] {
    const horizon = this.nowSeconds() - Math.ceil(this.retentionMs / 1000);
    return this.resource(resource).deletesBefore(horizon);
  }
}

/** One resource's changes: its order, its remembered deletes, its followers. */
export class ResourceChanges {
  /** Changed only by `LocalChangeLog.rename`. */
  name: string;
  readonly order = new ChangeOrder<HeldChange>();
  readonly followers: Followers;
  /** Remembered deletes by id (a re-create supersedes its delete). */
  readonly #deletes = new Map<string, HeldDelete>();

  constructor(name: string, warn: (message: string) => void) {
    this.name = name;
    this.followers = new Followers(warn);
  }

  follow(listener: ChangeListener): () => void {
    return this.followers.add(listener);
  }

  /** The remembered delete of `id`, if any. */
  deleteOf(id: string): HeldDelete | undefined {
    return this.#deletes.get(id);
  }

  /** Every remembered delete. */
  deletes(): IterableIterator<HeldDelete> {
    return this.#deletes.values();
  }

  /** The sequence number of the latest change placed (0: none). */
  latest = 0;

  /** Puts `held` in the order, in place of the entity's change `previous` (0: none held). */
  place(held: HeldChange, previous: number): void {
    this.latest = held.seq;
    if (previous > 0) this.order.remove(previous);
    const deleted = this.#deletes.get(held.id);
    if (deleted) {
      this.order.remove(deleted.seq);
      this.#deletes.delete(held.id);
    }
    if (held instanceof HeldDelete) this.#deletes.set(held.id, held);
    this.order.add(held);
  }

  /**
   * Start-up: the entities' latest changes, in any order (sorted here); or, with `seqs` (their
   * numbers, read by the caller), in ascending order of those numbers, each above the one before.
   * A change loaded from the log reads its number from the line's bytes each time it is asked.
   */
  load(held: HeldChange[], seqs?: readonly number[]): void {
    if (seqs === undefined) held.sort((a, b) => a.seq - b.seq);
    for (let i = 0; i < held.length; i++) {
      const item = held[i]!;
      const seq = seqs === undefined ? item.seq : seqs[i]!;
      if (seq > this.latest) this.latest = seq;
      if (item instanceof HeldDelete) this.#deletes.set(item.id, item);
      this.order.add(item, seq);
    }
  }

  deletesBefore(atSeconds: number): HeldDelete[] {
    return [...this.#deletes.values()].filter((d) => d.at < atSeconds);
  }

  /** Forgets deletes (past retention, left out of a compacted file). */
  forget(deletes: readonly HeldDelete[]): void {
    for (const d of deletes) {
      if (this.#deletes.get(d.id) !== d) continue;
      this.#deletes.delete(d.id);
      this.order.remove(d.seq);
    }
  }
}
