import type { RateDecision } from './rate-limit.js';

/**
 * The fields a limited request's answer carries (README, "Rate limits"), computed from what the
 * limiter decided: the `X-RateLimit-*` pair the Shopping Feed SDK reads, and the `RateLimit-Policy`
 * and `RateLimit` fields of the IETF draft (draft-ietf-httpapi-ratelimit-headers, §2 and §3), for
 * one policy named `default`.
 */

/** The draft's policy name: halserve has one policy. */
export const RATE_POLICY_NAME = '"default"';

/**
 * The four fields for one decision of a limiter of `rate` requests a second and `burst` at once:
 * `X-RateLimit-Limit` and `q` are the burst, `w` the whole seconds in which a burst comes back;
 * `X-RateLimit-Remaining` and `r` the requests allowed at once after this one; `t` the whole seconds
 * until one more is allowed, rounded up — 0 while one is, and on a refusal what `Retry-After` says.
 */
export function rateLimitFields(rate: number, burst: number, decision: RateDecision): Record<string, string> {
  const remaining = decision.remaining;
  const t = !decision.allowed ? Math.max(1, Math.ceil(decision.waitSeconds)) : remaining >= 1 ? 0 : Math.ceil(decision.waitSeconds);
  return {
    'x-ratelimit-limit': String(burst),
    'x-ratelimit-remaining': String(remaining),
    'ratelimit-policy': `${RATE_POLICY_NAME};q=${burst};w=${Math.ceil(burst / rate)}`,
    ratelimit: `${RATE_POLICY_NAME};r=${remaining};t=${t}`,
  };
}
