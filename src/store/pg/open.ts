import type { AnswerBookOptions } from '../idempotency.js';
import type { RelationGraph } from '../../conventions/relations.js';
import type { LinkIntegrity } from '../integrity.js';
import { StoreOpenError } from '../store.js';
import { connect, readDataset, reason, type ConnectOptions, type Database } from './connection.js';
import { ChangeFeed, isOwn, type FeedItem } from './feed.js';
import { OwnWrites } from './own-writes.js';
import { loadRows } from './loader.js';
import { loadPosition } from './load-position.js';
import { RowEntity } from './pg-entity.js';
import { PgLinkIntegrity, prepareLinks, unreadableLinking, unreadJson, writerLinks } from './pg-integrity.js';
import { PgChangeFeed, rowTime } from './pg-changes.js';
import { formatPgCursor, pgCursorOrigin, type PgCursor, type PgDataset } from './pg-cursor.js';
import { PgStore } from './pg-store.js';
import { SCHEMA } from './layout.js';
import { ReaderClock, Replica, type FedChange, type RowState } from './replica.js';
import { PgWriter } from './writer.js';

export interface PostgresOptions extends ConnectOptions {
  /** Resources to serve even when the table holds no row of theirs yet (already-checked names). */
  readonly resources: readonly string[];
  /** Why a resource name found in the table cannot be served, or undefined when it can. */
  readonly nameProblem?: (name: string) => string | undefined;
  readonly warn: (message: string) => void;
  /** The change feed's poll interval (default 1000 ms). */
  readonly pollMs?: number;
  /** How long a write try or a catch-up round trip may go unanswered (default `STATEMENT_DEADLINE_MS`). */
  readonly deadlineMs?: number;
  /** The clock and time to live of keyed writes' answers (idempotency.ts). */
  readonly idempotency?: AnswerBookOptions;
}

/** The stores of one database, sharing its connections and its change feed. */
export interface PostgresStores {
  /** Every declared resource and every resource with a live row in the table, by name. */
  readonly stores: Map<string, PgStore>;
  /** The connections, for what keeps state of its own in the database (webhooks/pg-positions.ts). */
  readonly database: Database;
  /** Whether the database answered the last catch-up. */
  readonly reachable: boolean;
  /** The database's changes, as this process serves them (`/changes`). */
  readonly changes: PgChangeFeed;
  /** Resolves once a catch-up that started after the call has succeeded (tests). */
  sync(): Promise<void>;
  /**
   * Keeps the links of `graph` (docs/relations.md) from dangling across every process on the database:
   * creates what the checks need there when absent (an index per link field, the write function),
   * has each resource's writes check their links in their own statement, and resolves with the
   * `LinkIntegrity` for the handler (`HandlerOptions.linkIntegrity`). Throws `StoreOpenError`.
   */
  keepLinks(graph: RelationGraph): Promise<LinkIntegrity>;
  /** Finishes queued writes, stops the feed, closes the connections. */
  close(): Promise<void>;
}

/**
 * Opens every resource kept in the PostgreSQL database at `url` (docs/storage.md §2): connects (creating
 * the layout on a first start), loads every live row into the indexes from one snapshot, then
 * starts the change feed from that snapshot. Throws `StoreOpenError`, one line, on any failure.
 */
export async function openPostgres(options: PostgresOptions): Promise<PostgresStores> {
  const { warn } = options;
  const database = await connect(options);
  const { where } = database;
  // The data set's name (connect made sure there is one), before any cursor is made: every
  // process on the database reads the same, and so hands out the same cursor for a change.
  let dataset: PgDataset;
  try {
    dataset = await readDataset(database.sql);
  } catch (error) {
    await database.sql.end({ timeout: 1 }).catch(() => {});
    throw new StoreOpenError(`cannot read the data set's name from PostgreSQL at ${where}: ${reason(error)}`);
  }
  const readers = new ReaderClock();
  const replicas = new Map<string, Replica>();
  for (const name of options.resources) replicas.set(name, new Replica(readers, name, warn, dataset.name));
  const skipped = new Set<string>();
  /** A resource met in the table: served when its name is valid (the table may have been written by hand). */
  const replicaOf = (resource: string, loading: boolean): Replica | undefined => {
    let replica = replicas.get(resource);
    if (replica || !loading || skipped.has(resource)) return replica;
    const problem = options.nameProblem?.(resource);
    if (problem !== undefined) {
      skipped.add(resource);
      warn(`${where}: rows of resource ${JSON.stringify(resource)} are not served: ${problem}`);
      return undefined;
    }
    replicas.set(resource, (replica = new Replica(readers, resource, warn, dataset.name)));
    return replica;
  };
  let from: bigint;
  try {
    from = await database.alone((sql) => loadRows(sql, (resource) => replicaOf(resource, true)?.index));
  } catch (error) {
    await database.sql.end({ timeout: 1 }).catch(() => {});
    throw new StoreOpenError(`cannot load from PostgreSQL at ${where}: ${reason(error)}`);
  }

  // Where the changes stood when the indexes were loaded: the latest row below the snapshot, of
  // the database and of each resource (the same on every process that loaded at or after it).
  let latest: PgCursor;
  let latestOf: Map<string, PgCursor>;
  /**
   * Resources with a row at or past the snapshot's xmin: the copy may hold it, ahead of the cursor
   * (read after the copy, so it names every such row the copy showed: a row written again only
   * moves further past).
   */
  const ahead = new Set<string>();
  try {
    for (const row of await database.sql.unsafe<{ resource: string }[]>(`SELECT DISTINCT e.resource FROM ${SCHEMA}.entities e WHERE e.tx >= $1::xid8`, [from.toString()])) {
      ahead.add(row.resource);
    }
    ({ latest, latestOf } = await loadPosition(database.sql, from));
  } catch (error) {
    await database.sql.end({ timeout: 1 }).catch(() => {});
    throw new StoreOpenError(`cannot read the change feed's position from PostgreSQL at ${where}: ${reason(error)}`);
  }

  // A commit of this process wakes its feed at once (its own streams see the write sooner than the notification would bring it).
  const own = new OwnWrites(() => feed.wake());
  /** Changes come in cursor order: applied and reported run by run of one resource, so that followers of every resource hear them in that order too. */
  const deliver = (items: readonly FeedItem[]): void => {
    let run: FedChange[] = [];
    let runOf: string | undefined;
    const flush = (): void => {
      if (runOf !== undefined && run.length > 0) replicas.get(runOf)!.fromFeed(run, own.pendingOf(runOf) === 0);
      run = [];
    };
    for (const item of items) {
      if (!replicas.has(item.resource)) {
        if (!skipped.has(item.resource)) {
          skipped.add(item.resource);
          warn(`${where}: resource ${JSON.stringify(item.resource)} was created by another process; restart this one (or declare it with --resource) to serve it`);
        }
        continue;
      }
      let change: FedChange;
      if (isOwn(item)) change = item;
      else {
        const pos = Number(item.pos);
        const rev = Number(item.rev);
        const state: RowState = item.body === null ? { id: item.id, pos, rev, deleted: true } : new RowEntity(item.id, item.body, pos, rev);
        change = { state, tx: item.tx, at: rowTime(item.body === null ? undefined : state as RowEntity, item.at) };
      }
      if (item.resource !== runOf) {
        flush();
        runOf = item.resource;
      }
      run.push(change);
    }
    flush();
  };
  const feed = new ChangeFeed({
    database,
    from,
    readers,
    own,
    deliver,
    caughtUp: (beyond) => {
      for (const [resource, replica] of replicas) replica.caughtUp(!beyond.has(resource));
    },
    ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
    onStatus: (up, error) => {
      if (!up) database.recycle();
      warn(
        up
          ? `PostgreSQL at ${where} is reachable again: caught up, writes accepted`
          : `PostgreSQL at ${where} is unreachable (${reason(error)}): writes answer 503, reads go on from memory`,
      );
    },
  });
  const pgChanges = new PgChangeFeed(database, dataset, () => feed.last, latest, latestOf, warn);
  for (const [resource, replica] of replicas) {
    const cursor = latestOf.get(resource);
    replica.loadedAt(cursor === undefined ? pgCursorOrigin(dataset.name) : formatPgCursor(dataset.name, cursor.tx, cursor.pos), !ahead.has(resource));
  }
  for (const replica of replicas.values()) replica.followers.add((change) => pgChanges.reported(change));
  const stores = new Map<string, PgStore>();
  const writers = new Map<string, PgWriter>();
  const onUnavailable = (error: unknown): void => feed.down(error);
  for (const [resource, replica] of [...replicas].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const writer = new PgWriter({
      sql: () => database.sql,
      resource,
      replica,
      readers,
      own,
      onUnavailable,
      warn,
      ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
      ...(options.idempotency === undefined ? {} : { idempotency: options.idempotency }),
    });
    writers.set(resource, writer);
    stores.set(resource, new PgStore(replica, writer, () => feed.up));
  }
  feed.start();
  let closing: Promise<void> | undefined;
  return {
    stores,
    database,
    changes: pgChanges,
    get reachable() {
      return feed.up;
    },
    sync: () => feed.sync(),
    async keepLinks(graph) {
      try {
        await prepareLinks(database, graph);
      } catch (error) {
        // One stored body the indexes cannot read fails the whole build (one transaction: nothing is
        // left made); the line names it, instead of PostgreSQL's reason alone, which names no row.
        throw new StoreOpenError(`cannot prepare the relations' checks in PostgreSQL at ${where}: ${(unreadJson(error) ? unreadableLinking(graph, stores) : undefined) ?? reason(error)}`);
      }
      for (const [resource, writer] of writers) writer.checkLinks(writerLinks(graph, resource));
      return new PgLinkIntegrity(database, stores, onUnavailable);
    },
    close: () =>
      (closing ??= (async () => {
        await Promise.allSettled([...stores.values()].map((store) => store.close()));
        await feed.close();
        await database.end();
      })()),
  };
}
