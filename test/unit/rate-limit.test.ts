import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RateLimiter, rateLimitHeaders, waitText, type RateDecision } from '../../src/http/rate-limit.js';
import { prng } from '../helpers/prng.js';

/**
 * The limiter as it was written before its table became an `LruMap` (a `Map` in order of use,
 * the oldest out first): the reference its decisions must match exactly.
 */
function referenceLimiter(rate: number, burst: number, maxClients: number, now: () => number): (key: string) => RateDecision {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return (key) => {
    const t = now();
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: burst, at: t };
      if (buckets.size >= maxClients) {
        const oldest = buckets.keys().next().value;
        if (oldest !== undefined) buckets.delete(oldest);
      }
    } else {
      buckets.delete(key);
      bucket.tokens = Math.min(burst, bucket.tokens + ((t - bucket.at) / 1000) * rate);
      bucket.at = t;
    }
    buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true, remaining: Math.floor(bucket.tokens), waitSeconds: bucket.tokens >= 1 ? 0 : (1 - bucket.tokens) / rate };
    }
    return { allowed: false, remaining: 0, waitSeconds: (1 - bucket.tokens) / rate };
  };
}

/** A random schedule: `steps` requests from `clients` clients (a few busy ones), the clock moving 0-`maxStepMs` ms between them. */
function schedule(seed: number, steps: number, clients: number, maxStepMs: number): { key: string; advance: number }[] {
  const random = prng(seed);
  return Array.from({ length: steps }, () => ({
    // Half the requests from three busy clients, the rest spread over all of them.
    key: `c${random() < 0.5 ? Math.floor(random() * 3) : Math.floor(random() * clients)}`,
    advance: Math.floor(random() * maxStepMs),
  }));
}

/** A limiter on a clock the test moves by hand (milliseconds). */
function limiter(rate: number, burst?: number, maxClients?: number): { limiter: RateLimiter; advance: (ms: number) => void } {
  let now = 0;
  const l = new RateLimiter({ rate, ...(burst === undefined ? {} : { burst }), ...(maxClients === undefined ? {} : { maxClients }), now: () => now });
  return { limiter: l, advance: (ms) => (now += ms) };
}

describe('RateLimiter', () => {
  test('rate 2, default burst 2 -> two allowed (the second says the next is 0.5 s away), the third waits 0.5 s', () => {
    const { limiter: l } = limiter(2);
    assert.deepEqual(l.take('a'), { allowed: true, remaining: 1, waitSeconds: 0 });
    assert.deepEqual(l.take('a'), { allowed: true, remaining: 0, waitSeconds: 0.5 });
    assert.deepEqual(l.take('a'), { allowed: false, remaining: 0, waitSeconds: 0.5 });
  });

  test('after the wait -> allowed again; a refused request costs nothing', () => {
    const { limiter: l, advance } = limiter(4, 1);
    assert.equal(l.take('a').allowed, true);
    assert.equal(l.take('a').waitSeconds, 0.25);
    advance(100);
    assert.ok(Math.abs(l.take('a').waitSeconds - 0.15) < 1e-9);
    advance(150);
    assert.equal(l.take('a').allowed, true);
  });

  test('rate 0.5, burst 2, 3.6 s after the burst -> allowed with 0.8 left: the next is 0.4 s away, not 2', () => {
    const { limiter: l, advance } = limiter(0.5, 2);
    l.take('a');
    l.take('a');
    advance(3600);
    const decision = l.take('a');
    assert.equal(decision.allowed, true);
    assert.equal(decision.remaining, 0);
    assert.ok(Math.abs(decision.waitSeconds - 0.4) < 1e-9);
  });

  test('burst 5 at rate 1 -> five at once, then one a second; refill never passes the burst', () => {
    const { limiter: l, advance } = limiter(1, 5);
    for (let i = 0; i < 5; i++) assert.equal(l.take('a').allowed, true);
    assert.equal(l.take('a').allowed, false);
    advance(60_000);
    assert.equal(l.take('a').remaining, 4);
  });

  test('clients are independent', () => {
    const { limiter: l } = limiter(1);
    assert.equal(l.take('a').allowed, true);
    assert.equal(l.take('a').allowed, false);
    assert.equal(l.take('b').allowed, true);
  });

  test('100 000 clients with maxClients 1000 -> never more than 1000 buckets', () => {
    const { limiter: l } = limiter(1, 1, 1000);
    for (let i = 0; i < 100_000; i++) l.take(`client-${i}`);
    assert.equal(l.size, 1000);
  });

  test('the least recently seen client is the one dropped', () => {
    const { limiter: l } = limiter(1, 1, 2);
    l.take('a');
    l.take('b');
    l.take('a'); // a is now the most recent, and empty
    l.take('c'); // drops b
    assert.equal(l.take('a').allowed, false);
    assert.equal(l.size, 2);
  });

  for (const seed of [1, 2, 3, 4, 5]) {
    test(`seed ${seed}: 20,000 requests of 50 clients through a table of 20 -> every decision the same as the Map-ordered limiter's`, () => {
      let now = 0;
      const l = new RateLimiter({ rate: 5, burst: 3, maxClients: 20, now: () => now });
      const reference = referenceLimiter(5, 3, 20, () => now);
      for (const { key, advance } of schedule(seed, 20_000, 50, 40)) {
        now += advance;
        assert.deepEqual(l.take(key), reference(key));
        assert.ok(l.size <= 20);
      }
    });

    test(`seed ${seed}: a bounded table against an unbounded one -> a client differs only on coming back with a fresh burst, after 20 others came within burst/rate of its last request`, () => {
      let now = 0;
      const rate = 5;
      const burst = 3;
      const bounded = new RateLimiter({ rate, burst, maxClients: 20, now: () => now });
      // The unbounded limiter, written out so that the test can align a bucket once it has explained a difference.
      const buckets = new Map<string, { tokens: number; at: number }>();
      const unbounded = (key: string): { allowed: boolean; remaining: number } => {
        const bucket = buckets.get(key) ?? { tokens: burst, at: now };
        bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * rate);
        bucket.at = now;
        buckets.set(key, bucket);
        if (bucket.tokens < 1) return { allowed: false, remaining: 0 };
        bucket.tokens -= 1;
        return { allowed: true, remaining: Math.floor(bucket.tokens) };
      };
      const history: { key: string; at: number }[] = [];
      let differed = 0;
      for (const { key, advance } of schedule(seed, 20_000, 60, 30)) {
        now += advance;
        const a = bounded.take(key);
        const b = unbounded(key);
        if (a.allowed !== b.allowed || a.remaining !== b.remaining) {
          differed++;
          const last = history.findLastIndex((h) => h.key === key);
          const others = new Set(history.slice(last + 1).map((h) => h.key));
          assert.ok(others.size >= 20, `${key} differed after only ${others.size} other clients`);
          assert.ok(now - history[last]!.at < (burst / rate) * 1000, `${key} differed though idle for a full refill`);
          // What it gained is a fresh burst, no more.
          assert.deepEqual(a, { allowed: true, remaining: burst - 1, waitSeconds: 0 });
          buckets.set(key, { tokens: burst - 1, at: now });
        }
        history.push({ key, at: now });
      }
      // The schedule does evict busy clients early (otherwise this test would prove nothing).
      assert.ok(differed > 0);
    });
  }

  test('rate 0 -> RangeError', () => assert.throws(() => new RateLimiter({ rate: 0 }), RangeError));

  test('headers -> limit and remaining', () => {
    const { limiter: l } = limiter(10);
    assert.deepEqual(rateLimitHeaders(l, l.take('a')), { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '9' });
  });
});

describe('waitText', () => {
  for (const [seconds, text] of [
    [0.25, '0.25'],
    [1, '1'],
    [0.0001, '0.001'],
    [0.1234, '0.124'],
    [2.5, '2.5'],
  ] as const) {
    test(`${seconds} -> ${text}`, () => assert.equal(waitText(seconds), text));
  }
});
