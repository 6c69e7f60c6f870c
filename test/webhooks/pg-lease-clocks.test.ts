import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Sql } from '../../src/store/pg/driver.js';
import type { Scheduler } from '../../src/webhooks/delivery.js';
import { PgLease } from '../../src/webhooks/pg-lease.js';

/**
 * The lease's term against steps of the wall clock, with both clocks moved by hand and a database
 * that needs no server: the lease row's statements are answered here (the lease against a real
 * PostgreSQL is test/pg/webhooks.test.ts). No timer of the scheduler fires on its own, so the
 * holder never renews: what it believes is read from `holds()`, as the deliverer does before each
 * attempt.
 */
const TTL_MS = 3_000;
const NOT_RENEWED = 'webhook lease not renewed in time (PostgreSQL unreachable or slow): delivery stops until this process holds it again';

interface Fixture {
  readonly lease: PgLease;
  readonly clocks: { wall: number; monotonic: number };
  readonly warnings: string[];
  readonly stop: AbortController;
}

/** A lease taken at 2026-12-02T12:00:00Z on the wall clock, by a process that cannot reach the database after that. */
async function held(): Promise<Fixture> {
  let reachable = true;
  const sql = {
    unsafe: (text: string) => {
      if (!reachable) return Promise.reject(Object.assign(new Error('connection lost'), { code: 'ECONNRESET' }));
      return Promise.resolve(text.includes('to_regclass') ? [{ present: true }] : [{ holder: 'a' }]);
    },
  } as unknown as Sql;
  const clocks = { wall: Date.UTC(2026, 11, 2, 12), monotonic: 1_000 };
  const scheduler: Scheduler = {
    now: () => clocks.wall,
    monotonic: () => clocks.monotonic,
    random: () => 0.5,
    sleep: (_ms, signal) => new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }))),
  };
  const warnings: string[] = [];
  const lease = new PgLease({ sql: () => sql, holder: 'a', ttlMs: TTL_MS, scheduler, warn: (m) => warnings.push(m) });
  const stop = new AbortController();
  assert.ok(await lease.acquire(stop.signal));
  reachable = false;
  return { lease, clocks, warnings, stop };
}

test('the wall clock set back an hour while the holder cannot renew -> its lease still ends when its term has run (the database gives the row to another then)', async () => {
  const { lease, clocks, warnings, stop } = await held();
  clocks.monotonic += TTL_MS - 1;
  clocks.wall += TTL_MS - 1 - 3_600_000;
  assert.equal(lease.holds(), true, 'within its term');
  clocks.monotonic += 1;
  clocks.wall += 1;
  assert.equal(lease.holds(), false, 'its term has run: it must not deliver beside the next holder for the hour the clock went back');
  assert.deepEqual(warnings, [NOT_RENEWED]);
  stop.abort();
  await lease.release();
});

test('the monotonic clock stood still while the machine slept, the wall clock set right on waking -> the lease has ended', async () => {
  const { lease, clocks, warnings, stop } = await held();
  clocks.wall += 60_000;
  assert.equal(lease.holds(), false);
  assert.deepEqual(warnings, [NOT_RENEWED]);
  stop.abort();
  await lease.release();
});

test('the wall clock set forward -> the lease ends early (taken again on the next look), never late', async () => {
  const { lease, clocks, stop } = await held();
  clocks.monotonic += 1;
  clocks.wall += 3_600_000;
  assert.equal(lease.holds(), false);
  stop.abort();
  await lease.release();
});
