import type { LinkTarget } from '../conventions/relations.js';

/**
 * The port that keeps links from dangling (docs/relations.md): a write whose links point nowhere is
 * refused, and so is the delete of an entity something still links to — atomically with the
 * write, however writes to the two resources interleave.
 *
 * The HTTP layer wraps every write that sets links in `linking` and every delete of an entity that
 * may be linked to in `removing`. The in-process implementation (`local-integrity.ts`) coordinates
 * the stores of one process; a store shared by several processes (PostgreSQL) decides the same
 * inside its own transactions and supplies its own implementation (`HandlerOptions.linkIntegrity`),
 * throwing the same two errors.
 */
export interface LinkIntegrity {
  /**
   * Runs `write` (a create or change that links to `targets`) so that every target exists when
   * it is applied and cannot be deleted before it settles. Rejects with `DanglingLinkError`,
   * without running `write`, when a target does not exist.
   */
  linking<T>(targets: readonly LinkTarget[], write: () => Promise<T>): Promise<T>;
  /**
   * Runs `remove` (the delete of `id` from `resource`) only when no entity links to it, and lets
   * no link to it be made until it settles. Rejects with `StillLinkedError` otherwise.
   */
  removing<T>(resource: string, id: string, remove: () => Promise<T>): Promise<T>;
  /**
   * Whether an entity exists, asked as a target of `linking` is: the caller's 404 before a
   * write's links are checked. Against a shared database, an id this process's copy lacks is
   * looked up there (another process may have just created it).
   */
  exists(resource: string, id: string): Promise<boolean>;
  /**
   * True when `removing` counts the links before `remove` runs the delete's own checks (the
   * entity exists, `If-Match`), all against state in this process: the caller then makes those
   * checks first, so that a 404 or 412 comes before a 409. False when the delete decides all of
   * them itself against a shared database, of which this process's copy may be behind.
   */
  readonly countsBeforeChecks: boolean;
}

/** Some targets of a write do not exist: nothing was written. */
export class DanglingLinkError extends Error {
  override readonly name = 'DanglingLinkError';
  readonly missing: readonly LinkTarget[];

  constructor(missing: readonly LinkTarget[]) {
    super(`links to missing entities: ${missing.map((t) => `${t.resource}/${t.id}`).join(', ')}`);
    this.missing = missing;
  }
}

/** How many entities of `source` link to an entity through `field`. */
export interface Referrers {
  readonly source: string;
  readonly field: string;
  readonly count: number;
}

/** An entity that others still link to was not deleted. */
export class StillLinkedError extends Error {
  override readonly name = 'StillLinkedError';
  readonly resource: string;
  readonly id: string;
  /** Every (source, field) that links to it at least once. */
  readonly referrers: readonly Referrers[];

  constructor(resource: string, id: string, referrers: readonly Referrers[]) {
    super(`${resource}/${id} is still linked to`);
    this.resource = resource;
    this.id = id;
    this.referrers = referrers;
  }

  get total(): number {
    return this.referrers.reduce((sum, r) => sum + r.count, 0);
  }
}
