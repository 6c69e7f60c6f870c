/**
 * When a failed delivery is tried again: exponential backoff with jitter (the AWS Architecture
 * Blog's "equal jitter"), pure, with the random source injected so tests pin it.
 *
 * The n-th retry (n = 1, 2, …) waits a random time in [d/2, d], d = min(cap, first·2^(n-1)): the
 * first retry comes within `first` (5 s), no wait exceeds `cap` (5 minutes), and a success starts
 * again at n = 1. Half of each wait is random, so receivers that failed together are not retried
 * together.
 */
export interface BackoffPolicy {
  /** The longest wait before the first retry, in ms. */
  readonly firstMs: number;
  /** The longest wait before any retry, in ms. */
  readonly capMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { firstMs: 5_000, capMs: 300_000 };

/** The wait before retry `retry` (1 for the first), in ms; `random` returns a number in [0, 1). */
export function retryDelay(retry: number, random: () => number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const exponent = Math.min(Math.max(retry, 1) - 1, 30);
  const ceiling = Math.min(policy.capMs, policy.firstMs * 2 ** exponent);
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}
