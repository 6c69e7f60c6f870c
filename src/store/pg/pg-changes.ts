import { Followers } from '../followers.js';
import type { ChangeFeed, FeedPage } from '../changes/change-feed.js';
import { CursorMalformedError, otherDataSet } from '../changes/change-feed.js';
import { StoreUnavailableError, type ChangeListener, type ChangeType, type StoreChange, type StoredEntity } from '../store.js';
import { isUnavailable, reason, STATEMENT_DEADLINE_MS, withDeadline, type Database } from './connection.js';
import { PREPARED, textArray } from './driver.js';
import { SCHEMA } from './layout.js';
import { comparePgCursors, formatPgCursor, parsePgCursor, pgCursorOrigin, readPgCursor, type PgCursor, type PgDataset } from './pg-cursor.js';
import { FEED_COLUMNS, FEED_ORDER, type FeedRow } from './feed.js';
import { RowEntity } from './pg-entity.js';

/**
 * A row's change time, the same on every process: a live entity's `updatedAt`, a tombstone's
 * `deleted_at` (layout.ts); 0 for a tombstone written before that column existed.
 */
export function rowTime(entity: StoredEntity | undefined, deletedAt: string | number | null): number {
  if (entity === undefined) return deletedAt === null ? 0 : Number(deletedAt);
  const updatedAt = entity.record.updatedAt;
  return typeof updatedAt === 'number' ? updatedAt : 0;
}

/**
 * The change feed of a PostgreSQL database as one process serves it (`/changes`): pages are read
 * from the table itself — each row is its entity's latest change, ordered by `(tx, pos)` (the
 * `entities_tx` index), up to the window this process's change feed has delivered (`bound`), so a
 * page never holds a change this process's streams have not had yet. Tombstones are kept, so no
 * cursor of the database ever expires; one of another (pg-cursor.ts) is answered as expired.
 * `follow` is told of every change the feed reads, of every resource, in cursor order.
 */
export class PgChangeFeed implements ChangeFeed {
  readonly #database: Database;
  /** The database's data set: its cursors carry its name. */
  readonly #dataset: PgDataset;
  /** Every transaction below it has ended and been delivered (the feed's `last`). */
  readonly #bound: () => bigint;
  readonly #followers: Followers;
  readonly #latestOf = new Map<string, PgCursor>();
  #latest: PgCursor;

  constructor(database: Database, dataset: PgDataset, bound: () => bigint, latest: PgCursor, latestOf: ReadonlyMap<string, PgCursor>, warn: (message: string) => void) {
    this.#database = database;
    this.#dataset = dataset;
    this.#bound = bound;
    this.#latest = latest;
    for (const [resource, cursor] of latestOf) this.#latestOf.set(resource, cursor);
    this.#followers = new Followers(warn);
  }

  /** A change the feed read (called in cursor order, after the replica applied it). */
  reported(change: StoreChange): void {
    const cursor = parsePgCursor(change.cursor)!;
    if (comparePgCursors(cursor, this.#latest) > 0) this.#latest = cursor;
    this.#latestOf.set(change.resource, cursor);
    this.#followers.emit(change);
  }

  get latest(): string {
    return formatPgCursor(this.#dataset.name, this.#latest.tx, this.#latest.pos);
  }

  /** The resource's latest change this process has read (the same on every process that read as far). */
  latestOf(resource: string): string {
    const cursor = this.#latestOf.get(resource);
    return cursor === undefined ? pgCursorOrigin(this.#dataset.name) : formatPgCursor(this.#dataset.name, cursor.tx, cursor.pos);
  }

  compare(a: string, b: string): number {
    const zero = { tx: 0n, pos: 0n };
    return comparePgCursors(parsePgCursor(a) ?? zero, parsePgCursor(b) ?? zero);
  }

  follow(listener: ChangeListener): () => void {
    return this.#followers.add(listener);
  }

  check(since: string): void {
    this.#after(since);
  }

  /** The position `since` names in this database; throws when it is none, or another data set's. */
  #after(since: string): PgCursor {
    const after = readPgCursor(since, this.#dataset);
    if (after === undefined) throw new CursorMalformedError(`${JSON.stringify(since)} is not a cursor of this server's changes`);
    if (after === 'other') throw otherDataSet(since, 'another database, or this one before its layout was made anew');
    return after;
  }

  async read(since: string | undefined, limit: number, resources?: ReadonlySet<string>): Promise<FeedPage> {
    const after = since === undefined ? { tx: 0n, pos: 0n } : this.#after(since);
    // Taken before the query: a change reported while it runs may lie past what it read, and an
    // empty page must not resume after a change it did not hold.
    const latest = this.latest;
    // Every transaction below the feed's `last` has ended and been delivered; so has every one up
    // to the latest change reported (its window's bound lay above it), even while the feed is
    // still delivering that window and has not moved `last` yet: a page never lags a follower.
    const last = this.#bound();
    const bound = last > this.#latest.tx ? last : this.#latest.tx + 1n;
    const params: (string | number)[] = [after.tx.toString(), after.pos.toString(), bound.toString(), limit];
    let where = `(tx > $1::xid8 OR (tx = $1::xid8 AND pos > $2::bigint)) AND tx < $3::xid8`;
    if (resources !== undefined) {
      // As an array literal: without the server's types fetched (driver.ts), a JS array would be
      // sent as a bare value, which PostgreSQL refuses ("malformed array literal").
      params.push(textArray([...resources]));
      where += ` AND resource = ANY($5::text[])`;
    }
    // Ordered by the table's columns, not the text aliases of the select list (which ORDER BY would
    // take first: "1000" sorts before "998"), so that pages follow the cursor order.
    const sql = this.#database.sql;
    let rows: FeedRow[];
    try {
      rows = await withDeadline(
        () =>
          sql.unsafe<FeedRow[]>(
            `SELECT ${FEED_COLUMNS} FROM ${SCHEMA}.entities e WHERE ${where} ${FEED_ORDER} LIMIT $4`,
            params as never,
            PREPARED,
          ),
        STATEMENT_DEADLINE_MS,
        'change feed page',
      );
    } catch (error) {
      // Pages are read from the database: while it cannot be reached, a 503 to retry, as a write gets.
      if (isUnavailable(error)) throw new StoreUnavailableError(`PostgreSQL unreachable: ${reason(error)}`);
      throw error;
    }
    const changes = rows.map((row): StoreChange => {
      const entity = row.body === null ? undefined : new RowEntity(row.id, row.body, Number(row.pos), Number(row.rev));
      // A page sees only the row: a live row written once is a create; otherwise an update.
      const type: ChangeType = entity === undefined ? 'deleted' : row.rev === '1' ? 'created' : 'updated';
      return { resource: row.resource, id: row.id, type, entity, cursor: formatPgCursor(this.#dataset.name, row.tx, row.pos), at: rowTime(entity, row.at) };
    });
    // An empty page resumes where it was asked, in the name this database hands out (an unnamed
    // cursor of the database, from before it was named, is handed back named).
    const cursor = changes.length > 0 ? changes[changes.length - 1]!.cursor : since === undefined ? latest : formatPgCursor(this.#dataset.name, after.tx, after.pos);
    return { changes, cursor };
  }
}
