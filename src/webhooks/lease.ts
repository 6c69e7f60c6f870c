/**
 * Which process of a data set delivers the webhooks: the holder of a lease. A data directory is
 * open in one process only (its lock, store/log/dir-lock.ts), which holds the lease for good
 * (`soleLease`); the processes of one PostgreSQL database share a lease row (pg-lease.ts).
 */
export interface Lease {
  /**
   * Resolves once this process holds the lease, with a signal that aborts when it is lost (no
   * longer renewed in time, or taken); resolves undefined when `signal` aborts first.
   */
  acquire(signal: AbortSignal): Promise<AbortSignal | undefined>;
  /**
   * Whether this process holds the lease now, by its clock, asked before each attempt: a process
   * whose event loop stalled past the lease's end learns it here even when an answer is handled
   * before the timer that would have told it; the signal `acquire` gave then aborts at once.
   */
  holds(): boolean;
  /** Gives the lease up at once, so that another process takes over without waiting for it to expire. */
  release(): Promise<void>;
}

/** The lease of a data set only this process can open: held from the start, never lost. */
export const soleLease: Lease = {
  acquire: (signal) => Promise.resolve(signal.aborted ? undefined : new AbortController().signal),
  holds: () => true,
  release: () => Promise.resolve(),
};
