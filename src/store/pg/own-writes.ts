import type { ChangeType } from '../store.js';
import type { RowState } from './replica.js';

/** A version of a row this process wrote and committed: its change, as the change feed reports it. */
export interface OwnVersion {
  readonly resource: string;
  /** The transaction that wrote it: its change's cursor is `<dataset>-<tx>.<pos>` (pg-cursor.ts). */
  readonly tx: bigint;
  readonly state: RowState;
  /** The write's own type (`created`, `updated`, `deleted`). */
  readonly type: ChangeType;
  /** The Unix second it was applied. */
  readonly at: number;
}

const settle = (): void => {};

/** Negative, zero or positive as version `a`'s cursor comes before, with or after `(tx, pos)`. */
export function compareOwn(a: OwnVersion, tx: bigint, pos: bigint): number {
  if (a.tx !== tx) return a.tx < tx ? -1 : 1;
  const p = BigInt(a.state.pos);
  return p === pos ? 0 : p < pos ? -1 : 1;
}

/**
 * This process's writes, every version of each, from the statement that committed them until the
 * change feed has reported them (src/store/README.md, "PostgreSQL"). The table keeps each entity's
 * latest row only, so two writes of one entity committed before the feed's next read would reach
 * its followers as one; the feed reports these versions instead, each in its own place of the
 * cursor order.
 *
 * For that, a catch-up must know every version this process committed below its window's end `h`
 * before it reports the window. A write statement is `track`ed from before it is sent until its
 * versions are `add`ed (or it failed); the catch-up, once it has read `h`, waits for the
 * statements tracked at that moment (`settled`). A statement sent after `h` came back reached the
 * database after the snapshot `h` was taken from, so its transaction id is at or above `h`: not in
 * the window.
 */
export class OwnWrites {
  readonly #inFlight = new Set<Promise<void>>();
  /** Versions not yet reported, in the order they were added (sorted when read). */
  #versions: OwnVersion[] = [];
  #sorted = true;
  /** Versions not yet reported, by resource. */
  readonly #pending = new Map<string, number>();
  /** Told when versions are added: the change feed reads them at once, not when the database's notification comes back. */
  readonly #added: () => void;

  constructor(added: () => void = () => {}) {
    this.#added = added;
  }

  /**
   * `statement`, counted in flight until it has settled and `committed` has run with its result
   * (the writer adds its versions there, in the same turn as the statement's answer).
   * `statement` must settle within a deadline: a catch-up waits for it.
   */
  track<T>(statement: Promise<T>, committed: (result: T) => void): Promise<T> {
    const tracked = statement.then((result) => {
      committed(result);
      return result;
    });
    const done = tracked.then(settle, settle);
    this.#inFlight.add(done);
    void done.then(() => this.#inFlight.delete(done));
    return tracked;
  }

  /** Versions a statement committed (in any order). */
  add(versions: readonly OwnVersion[]): void {
    if (versions.length === 0) return;
    for (const v of versions) {
      this.#versions.push(v);
      this.#pending.set(v.resource, (this.#pending.get(v.resource) ?? 0) + 1);
    }
    this.#sorted = false;
    this.#added();
  }

  /** Resolves once every statement in flight now has settled. */
  settled(): Promise<void> {
    return this.#inFlight.size === 0 ? Promise.resolve() : Promise.all([...this.#inFlight]).then(settle);
  }

  /** The versions below transaction `h`, in cursor order; they stay until `forget(h)`. */
  below(h: bigint): readonly OwnVersion[] {
    if (!this.#sorted) {
      this.#versions.sort((a, b) => compareOwn(a, b.tx, BigInt(b.state.pos)));
      this.#sorted = true;
    }
    let n = 0;
    while (n < this.#versions.length && this.#versions[n]!.tx < h) n++;
    return this.#versions.slice(0, n);
  }

  /** `version` is being reported (once: the feed never reports a cursor twice). */
  reported(version: OwnVersion): void {
    this.#pending.set(version.resource, this.#pending.get(version.resource)! - 1);
  }

  /** Every version below `h` has been reported. */
  forget(h: bigint): void {
    if (this.#versions.length > 0 && this.#versions[0]!.tx < h) this.#versions = this.#versions.filter((v) => v.tx >= h);
  }

  /** Versions of `resource` committed and not yet reported. */
  pendingOf(resource: string): number {
    return this.#pending.get(resource) ?? 0;
  }
}
