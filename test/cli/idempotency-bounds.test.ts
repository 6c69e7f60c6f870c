import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventually, startCli, tempDir, type CliProcess } from '../helpers/process.js';

const keyed = (cli: CliProcess, key: string, text: string): Promise<Response> =>
  fetch(`${cli.url}/notes`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': `"${key}"` }, body: JSON.stringify({ text }) });

/** The value of `halserve_idempotency_answers_evicted_total` for `notes` (0 from start-up on), or undefined when it has no series. */
async function evicted(cli: CliProcess): Promise<number | undefined> {
  const text = await (await fetch(`${cli.url}/metrics`)).text();
  const m = /^halserve_idempotency_answers_evicted_total\{resource="notes"\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

const WARNING = /notes\.jsonl: \d+ Idempotency-Key answers? (was|were) let go before their 24 hours, the oldest first, to keep within (\d+) answers and (\d+) bytes \(--idempotency-answers, --idempotency-memory\); a retry with such a key is processed as new/g;

describe('--idempotency-answers: the file store\'s bound on remembered answers', () => {
  test('past it -> the oldest answers go, counted in /metrics and said once on stderr; the newest still replay; HALSERVE_IDEMPOTENCY_ANSWERS after a restart likewise', async () => {
    const dir = await tempDir();
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'notes', '--log', 'off', '--idempotency-answers', '3']);
    try {
      const ids: string[] = [];
      for (let i = 1; i <= 5; i++) {
        const res = await keyed(cli, `k${i}`, `n${i}`);
        assert.equal(res.status, 201);
        ids.push(((await res.json()) as { id: string }).id);
      }
      assert.equal(await evicted(cli), 2);
      const warnings = [...cli.stderr().matchAll(WARNING)];
      assert.equal(warnings.length, 1, cli.stderr());
      assert.deepEqual([warnings[0]![2], warnings[0]![3]], ['3', String(64 * 1024 * 1024)]);
      // The newest three are kept: a retry is the first answer again.
      const replay = await keyed(cli, 'k5', 'n5');
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get('idempotency-replayed'), 'true');
      assert.equal(((await replay.json()) as { id: string }).id, ids[4]);
      // k1 was let go: its retry is processed as new (what the warning says), and pushes out one more.
      const retried = await keyed(cli, 'k1', 'n1');
      assert.equal(retried.status, 201);
      assert.equal(retried.headers.get('idempotency-replayed'), null);
      assert.notEqual(((await retried.json()) as { id: string }).id, ids[0]);
      assert.equal(await evicted(cli), 3);
      assert.equal([...cli.stderr().matchAll(WARNING)].length, 1, 'at most one warning an hour');
    } finally {
      cli.child.kill('SIGTERM');
      assert.equal(await cli.exited, 0);
    }

    // The three answers kept (k4, k5, k1's second), read back by a server that keeps two: the newest
    // replay; k4 is processed as new, and pushes k5 out. What start-up let go is not counted (the log
    // still holds answers the first process let go and counted): the series is there, at 0.
    const again = await startCli(['--port', '0', '--data', dir, '--log', 'off'], { HALSERVE_IDEMPOTENCY_ANSWERS: '2' });
    try {
      assert.equal(await evicted(again), 0);
      for (const [key, replayed] of [['k1', 'true'], ['k5', 'true'], ['k4', null]] as const) {
        const res = await keyed(again, key, `n${key.slice(1)}`);
        assert.equal(res.status, 201);
        assert.equal(res.headers.get('idempotency-replayed'), replayed, key);
      }
      assert.equal(await evicted(again), 1);
      await eventually(() => [...again.stderr().matchAll(WARNING)].length === 1, 'the warning');
      assert.match(again.stderr(), /notes\.jsonl: 1 Idempotency-Key answer was let go .* within 2 answers/);
    } finally {
      again.child.kill('SIGTERM');
      assert.equal(await again.exited, 0);
    }
  });
});
