import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RateLimiter, rateLimitHeaders, waitText } from '../../src/http/rate-limit.js';

/** A limiter on a clock the test moves by hand (milliseconds). */
function limiter(rate: number, burst?: number, maxClients?: number): { limiter: RateLimiter; advance: (ms: number) => void } {
  let now = 0;
  const l = new RateLimiter({ rate, ...(burst === undefined ? {} : { burst }), ...(maxClients === undefined ? {} : { maxClients }), now: () => now });
  return { limiter: l, advance: (ms) => (now += ms) };
}

describe('RateLimiter', () => {
  test('rate 2, default burst 2 -> two allowed, the third waits 0.5 s', () => {
    const { limiter: l } = limiter(2);
    assert.deepEqual(l.take('a'), { allowed: true, remaining: 1, waitSeconds: 0 });
    assert.deepEqual(l.take('a'), { allowed: true, remaining: 0, waitSeconds: 0 });
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
