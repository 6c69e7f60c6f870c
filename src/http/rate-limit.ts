/**
 * Token-bucket rate limits per client (docs/conventions.md §4.1): each client may make `rate` requests a second
 * on average, and `burst` at once after a pause.
 *
 * Memory is bounded whatever the number of clients: at most `maxClients` buckets are kept, least
 * recently seen first out (exact LRU, `LruMap`: a request of a known client and the eviction of the
 * oldest both cost O(1) however many clients are known). A client is evicted only once `maxClients`
 * other clients have been seen since its last request, and a bucket idle for `burst / rate` seconds
 * is full again, so dropping it changes nothing; only a flood of `maxClients` distinct clients within
 * that time can give an evicted one a fresh burst, which is the price of a bound.
 */
import { LruMap } from '../structures/lru-map.js';

/** What the limiter decided for one request. */
export interface RateDecision {
  readonly allowed: boolean;
  /** Whole requests left in the bucket after this one. */
  readonly remaining: number;
  /** Seconds until one more request is allowed: 0 while the bucket holds a whole one after this request. */
  readonly waitSeconds: number;
}

interface Bucket {
  tokens: number;
  /** `now()` of the last refill, in milliseconds. */
  at: number;
}

export interface RateLimiterOptions {
  /** Requests per second, on average. */
  readonly rate: number;
  /** Requests allowed at once; default `max(1, rate)`, one second's worth. */
  readonly burst?: number;
  /** Default 10 000 buckets: about a megabyte. */
  readonly maxClients?: number;
  /** Milliseconds, monotonic (tests pin it). */
  readonly now?: () => number;
}

/** A bounded set of token buckets, one per client key. */
export class RateLimiter {
  readonly rate: number;
  readonly burst: number;
  readonly #now: () => number;
  /** By key; each use makes its bucket the most recently used. */
  readonly #buckets: LruMap<Bucket>;

  constructor(options: RateLimiterOptions) {
    if (!(options.rate > 0)) throw new RangeError('rate must be greater than 0');
    this.rate = options.rate;
    this.burst = options.burst ?? Math.max(1, options.rate);
    // At least one bucket: a table of none would forget every client at once.
    this.#buckets = new LruMap({ maxEntries: Math.max(1, options.maxClients ?? 10_000) });
    this.#now = options.now ?? (() => performance.now());
  }

  /** Buckets held now (never more than `maxClients`). */
  get size(): number {
    return this.#buckets.size;
  }

  /** Takes one request from `key`'s bucket, or says how long to wait for one. */
  take(key: string): RateDecision {
    const now = this.#now();
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: this.burst, at: now };
      // Evicts the least recently seen client when the table is full.
      this.#buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.rate);
      bucket.at = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true, remaining: Math.floor(bucket.tokens), waitSeconds: bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) / this.rate };
    }
    return { allowed: false, remaining: 0, waitSeconds: (1 - bucket.tokens) / this.rate };
  }
}

/** Response headers while limiting is on: the limit per second and what is left (docs/conventions.md §4.1). */
export function rateLimitHeaders(limiter: RateLimiter, decision: RateDecision): Record<string, string> {
  return { 'x-ratelimit-limit': String(limiter.rate), 'x-ratelimit-remaining': String(decision.remaining) };
}

/** `X-RateLimit-Wait`: seconds as a decimal, to the millisecond, never 0 for a wait (`0.25`). */
export function waitText(seconds: number): string {
  return String(Math.max(0.001, Math.ceil(seconds * 1000) / 1000));
}
