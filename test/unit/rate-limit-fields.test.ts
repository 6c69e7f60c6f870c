import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { rateLimitFields } from '../../src/http/rate-limit-fields.js';

describe('rateLimitFields', () => {
  for (const [rate, burst, decision, expected] of [
    [10, 10, { allowed: true, remaining: 9, waitSeconds: 0 }, ['10', '9', '"default";q=10;w=1', '"default";r=9;t=0']],
    [1, 2, { allowed: true, remaining: 0, waitSeconds: 1 }, ['2', '0', '"default";q=2;w=2', '"default";r=0;t=1']],
    [0.5, 1, { allowed: true, remaining: 0, waitSeconds: 2 }, ['1', '0', '"default";q=1;w=2', '"default";r=0;t=2']],
    // 0.8 of a request left at 0.5 a second: the next is 0.4 s away.
    [0.5, 2, { allowed: true, remaining: 0, waitSeconds: 0.4 }, ['2', '0', '"default";q=2;w=4', '"default";r=0;t=1']],
    [10, 5, { allowed: true, remaining: 0, waitSeconds: 0.07 }, ['5', '0', '"default";q=5;w=1', '"default";r=0;t=1']],
    [0.5, 3, { allowed: false, remaining: 0, waitSeconds: 1.2 }, ['3', '0', '"default";q=3;w=6', '"default";r=0;t=2']],
    [50, 2, { allowed: false, remaining: 0, waitSeconds: 0.004 }, ['2', '0', '"default";q=2;w=1', '"default";r=0;t=1']],
  ] as const) {
    test(`rate ${rate}, burst ${burst}, ${decision.allowed ? `allowed, ${decision.remaining} left` : `refused, wait ${decision.waitSeconds}`} -> ${expected.join(' | ')}`, () => {
      const fields = rateLimitFields(rate, burst, decision);
      assert.deepEqual(Object.keys(fields), ['x-ratelimit-limit', 'x-ratelimit-remaining', 'ratelimit-policy', 'ratelimit']);
      assert.deepEqual(Object.values(fields), expected);
    });
  }
});
