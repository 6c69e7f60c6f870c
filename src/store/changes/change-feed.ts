import type { ChangeListener, MaybePromise, StoreChange } from '../store.js';

/**
 * The port of a data set's change feed (a data directory, one PostgreSQL database): every
 * resource's changes in one cursor order, read from a cursor and followed as they happen. The HTTP
 * layer's `/changes` and streams code against this; cursors are opaque to it.
 */
export interface ChangeFeed {
  /** The cursor of the latest change, or the cursor before every change of a data set without any. */
  readonly latest: string;
  /**
   * A cursor at or after `resource`'s latest change and before any later one, that resumes: what a
   * collection page links to (`changes`). It moves only when the resource changes.
   */
  latestOf(resource: string): string;
  /**
   * Up to `limit` changes after `since` (undefined: from the oldest change still held), oldest
   * first, of `resources` only when given, each entity's latest change only (earlier ones are
   * coalesced away). Throws `CursorMalformedError` for a cursor this data set never hands out,
   * `CursorExpiredError` for one older than a forgotten delete.
   */
  read(since: string | undefined, limit: number, resources?: ReadonlySet<string>): MaybePromise<FeedPage>;
  /** Told of every change of every resource from now on, in cursor order; returns the unsubscribe. */
  follow(listener: ChangeListener): () => void;
  /** Negative, zero or positive as cursor `a` comes before, with or after `b` (both well-formed). */
  compare(a: string, b: string): number;
  /** Throws (or rejects) as `read` would for `since` (a stream checks its start before it begins). */
  check(since: string): MaybePromise<void>;
}

export interface FeedPage {
  readonly changes: readonly StoreChange[];
  /** The last change's cursor, or `since` (the latest cursor without one) when there is none. */
  readonly cursor: string;
}

/** A cursor that names no change this data set could hand out (a typo, another server's). */
export class CursorMalformedError extends Error {
  override readonly name = 'CursorMalformedError';
}

/** A cursor older than a delete the feed has forgotten (past retention): list again. */
export class CursorExpiredError extends Error {
  override readonly name = 'CursorExpiredError';
}

/**
 * The error for a well-formed cursor of another data set (a copy's, another database's): it cannot
 * resume here, whatever its position, so it is answered as an expired one (410, list again).
 * `how` says how the two data sets came apart.
 */
export const otherDataSet = (cursor: string, how: string): CursorExpiredError => new CursorExpiredError(`cursor ${cursor} is of another data set (${how})`);
