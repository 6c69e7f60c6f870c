import { LruMap } from '../../structures/lru-map.js';
import { Followers } from '../followers.js';
import { MaterialisedIndex } from '../index/materialised-index.js';
import type { ChangeType, EntityRecord, QueryResult } from '../store.js';
import { formatPgCursor } from './pg-cursor.js';
import type { PgEntity } from './pg-entity.js';

/** A row as the change feed or a write of this process brings it: a live entity, or a tombstone. */
export type RowState = PgEntity | Tombstone;

export interface Tombstone {
  readonly id: string;
  readonly pos: number;
  readonly rev: number;
  readonly deleted: true;
}

const isTombstone = (row: RowState): row is Tombstone => 'deleted' in row;

/** A change as the change feed reports it to a replica: the row's state, its transaction, time and (for this process's writes) type. */
export interface FedChange {
  readonly state: RowState;
  readonly tx: string | bigint;
  readonly at: number;
  readonly type?: ChangeType;
}

/**
 * The readers of the database whose answers may be older than what the index already holds: a
 * change-feed catch-up reads a snapshot, and a write batch reads rows before it commits. Each
 * takes a tick when it starts; a delete is remembered until every reader that started before it
 * has ended (after that, no answer can hold the entity's older, live state).
 */
export class ReaderClock {
  #clock = 0;
  /** Ticks of readers under way; a Set keeps insertion order, so the first is the oldest. */
  readonly #active = new Set<number>();

  begin(): number {
    const tick = ++this.#clock;
    this.#active.add(tick);
    return tick;
  }

  end(tick: number): void {
    this.#active.delete(tick);
  }

  /** A tick for an event (a delete applied). */
  now(): number {
    return ++this.#clock;
  }

  /** The tick of the oldest reader under way, or Infinity. */
  get oldest(): number {
    for (const tick of this.#active) return tick;
    return Infinity;
  }
}

/**
 * One resource's materialised index as the database feeds it (docs/storage.md §2). Rows arrive from the
 * change feed and from this process's own writes, possibly more than once and out of order; the
 * rules below make the index converge to the database's state, in `pos` order, on every process:
 *
 * - a row whose `rev` is not above the index's (or a remembered delete's) is old: skipped;
 * - a tombstone removes, and its `rev` is remembered while an older reader may still deliver the
 *   entity's live state (`ReaderClock`), so that a stale answer never resurrects it;
 * - a live row replaces in place when its `pos` is the one held; otherwise (a create, or a
 *   re-create whose delete was never seen) it is placed by `pos`: entities at the tail with a
 *   larger `pos` are taken off and put back after it. Creates commit in about `pos` order, so
 *   that tail is short.
 */
export class Replica {
  readonly index = new MaterialisedIndex<PgEntity>();
  readonly #readers: ReaderClock;
  /**
   * Deleted ids → rev and tick of the delete, oldest first: an `LruMap` read with `peek` only, so
   * that forgetting the oldest costs O(1) (walking a `Map` from its start walks every entry deleted
   * since its table was last rebuilt).
   */
  readonly #removed = new LruMap<{ rev: number; tick: number }>({ maxEntries: Infinity });
  readonly resource: string;
  /** `Store.follow`: told of each change the change feed reports, after the index took it. */
  readonly followers: Followers;
  /** The database's data set name, which its changes' cursors carry (pg-cursor.ts). */
  readonly #dataset: string | undefined;

  constructor(readers: ReaderClock, resource = '', warn: (message: string) => void = () => {}, dataset?: string) {
    this.#readers = readers;
    this.resource = resource;
    this.followers = new Followers(warn);
    this.#dataset = dataset;
  }

  /**
   * The index revision at which the index holds exactly the database's state of this resource as
   * of its latest change the feed read (no write of this process still unread by the feed), and
   * that change's cursor: every process there holds the same state (point 6 of issue 16).
   */
  #exact: { revision: string; cursor: string } | undefined;
  /**
   * What `#exact` becomes once the catch-up under way ends having left no row of this resource for
   * a later window (`caughtUp`). A row left there (its `tx` past the window's end) may be an entity
   * written again after a change of it inside the window, which this read never saw: the index then
   * lacks a state the cursor names, and another process that read the window before that write holds
   * it under the same cursor.
   */
  #candidate: { revision: string; cursor: string } | undefined;

  /**
   * Start-up: the index was loaded from a snapshot whose latest change of this resource below its
   * xmin is `cursor`; `exact`: the resource had no row past that xmin, which the copy may have held
   * (else its state is named once the change feed has read those rows).
   */
  loadedAt(cursor: string, exact: boolean): void {
    this.#exact = exact ? { revision: this.index.revision, cursor } : undefined;
  }

  /**
   * A catch-up has ended; `clean`: it read no row of this resource past its window. Then the index
   * holds the table's row of every entity (each one's `tx` lies below the window's end), so the
   * state as of the resource's latest change read: the name found for it (`fromFeed`) holds, if no
   * write of this process has moved the index since.
   */
  caughtUp(clean: boolean): void {
    const candidate = this.#candidate;
    this.#candidate = undefined;
    if (clean && candidate !== undefined && candidate.revision === this.index.revision) this.#exact = candidate;
  }

  /**
   * A name for the state an answer computed at index `revision` describes, the same on every
   * process that holds it (`f.<cursor>`) when the index was exact there; else the revision itself.
   */
  tagOf(revision: string | undefined): string | undefined {
    const exact = this.#exact;
    return revision !== undefined && exact !== undefined && revision === exact.revision ? `f.${exact.cursor}` : revision;
  }

  /**
   * Changes the change feed read, in cursor order (`tx`, then `pos`): another process's applied by
   * the rules above, then every one reported to the followers, whatever the index did with it,
   * since each is a change of the database. This process's own versions (`type` set) are not
   * applied: its writer put each in the index when it committed, and a version reported later is
   * older than what the index may hold since — a create reported after its entity's delete was
   * applied and forgotten (no reader older than it left) would bring the entity back. A change's type:
   * its write's when this process made it (`type`); else `deleted` for a tombstone, and for a live
   * row `created` when its `rev` is 1, or its `pos` is not the one held (a re-create takes a new
   * one), or it is not held and its delete is remembered; else `updated` (a write whose create the
   * feed coalesced away included). `exact`: no write of this process to the resource is left
   * unreported; the state is named by its cursor once the catch-up has ended (`caughtUp`).
   */
  fromFeed(changes: readonly FedChange[], exact: boolean): void {
    const types = changes.map(({ state, type }) => type ?? this.#typeOf(state));
    this.apply(changes.filter((r) => r.type === undefined).map((r) => r.state));
    const last = changes[changes.length - 1];
    if (last !== undefined) {
      this.#candidate = exact ? { revision: this.index.revision, cursor: formatPgCursor(this.#dataset, last.tx, last.state.pos) } : undefined;
      if (!exact) this.#exact = undefined;
    }
    for (let i = 0; i < changes.length; i++) {
      const { state, tx, at } = changes[i]!;
      this.followers.emit({
        resource: this.resource,
        id: state.id,
        type: types[i]!,
        entity: isTombstone(state) ? undefined : state,
        cursor: formatPgCursor(this.#dataset, tx, state.pos),
        at,
      });
    }
  }

  #typeOf(row: RowState): ChangeType {
    if (isTombstone(row)) return 'deleted';
    if (row.rev === 1) return 'created';
    const held = this.index.get(row.id);
    if (held !== undefined) return held.pos !== row.pos ? 'created' : 'updated';
    // Never held: a re-create if this process saw the entity deleted; else a later write of an
    // entity whose create the feed coalesced away (its rev says it had one), which is `updated`,
    // as a feed page says of the same row on every process (pg-changes.ts).
    return this.#removed.peek(row.id) !== undefined ? 'created' : 'updated';
  }

  /** The rev this process holds for `id`: its entity's, a remembered delete's, or 0. */
  revOf(id: string): number {
    return this.index.get(id)?.rev ?? this.#removed.peek(id)?.rev ?? 0;
  }

  /** Applies rows (at most one per id); `records` holds the parsed records of written entities. */
  apply(rows: readonly RowState[], records?: ReadonlyMap<PgEntity, EntityRecord>): void {
    this.#forgetOldDeletes();
    const index = this.index;
    const placed: PgEntity[] = [];
    for (const row of rows) {
      const held = index.get(row.id);
      if (row.rev <= (held?.rev ?? this.#removed.peek(row.id)?.rev ?? 0)) continue;
      if (isTombstone(row)) {
        if (held) index.remove(row.id);
        // Set again, it moves to the end: the order stays that of the ticks.
        this.#removed.set(row.id, { rev: row.rev, tick: this.#readers.now() });
        continue;
      }
      this.#removed.delete(row.id);
      if (held?.pos === row.pos) {
        index.put(row, undefined, records?.get(row));
        continue;
      }
      if (held) index.remove(row.id);
      placed.push(row);
    }
    if (placed.length > 0) this.#place(placed, records);
  }

  /** Puts new entities in `pos` order, lifting the tail entities that belong after them. */
  #place(placed: PgEntity[], records: ReadonlyMap<PgEntity, EntityRecord> | undefined): void {
    placed.sort((a, b) => a.pos - b.pos);
    const first = placed[0]!.pos;
    const lifted: PgEntity[] = [];
    for (let last = this.#last(); last !== undefined && last.pos > first; last = this.#last()) {
      lifted.push(last);
      this.index.remove(last.id);
    }
    lifted.reverse();
    let i = 0;
    let j = 0;
    while (i < placed.length || j < lifted.length) {
      const take = j >= lifted.length || (i < placed.length && placed[i]!.pos < lifted[j]!.pos) ? placed[i++]! : lifted[j++]!;
      this.index.put(take, undefined, records?.get(take));
    }
  }

  #last(): PgEntity | undefined {
    const size = this.index.size;
    if (size === 0) return undefined;
    // A plain page is answered at once, from the creation order.
    const answer = this.index.query({ filters: [], sort: [], search: [], offset: size - 1, limit: 1 }) as QueryResult;
    return answer.entities[0] as PgEntity | undefined;
  }

  #forgetOldDeletes(): void {
    const oldest = this.#readers.oldest;
    let forgot = false;
    for (let removed = this.#removed.oldestValue(); removed !== undefined; removed = this.#removed.oldestValue()) {
      if (removed.tick >= oldest) break;
      this.#removed.delete(this.#removed.oldestKey()!);
      forgot = true;
    }
    // Its arrays keep their size after a burst of deletes until cleared.
    if (forgot && this.#removed.size === 0) this.#removed.clear();
  }
}
