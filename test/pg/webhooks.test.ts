import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sample } from '../helpers/metrics.js';
import { eventually, startCli, type CliProcess } from '../helpers/process.js';
import { feedCursors, SECRET, startReceiver, type Receiver } from '../webhooks/receiver.js';
import { freshDatabase, pgMissing } from './helpers.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

/** Whether `cli` says it delivers (`halserve_webhook_delivering`). */
async function delivering(cli: CliProcess): Promise<boolean> {
  const text = await (await fetch(`${cli.url}/metrics`)).text();
  return sample(text, 'halserve_webhook_delivering') === 1;
}

/** `n` creates spread over `clis` in turn. */
async function writes(clis: readonly CliProcess[], n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i++) {
    const res = await fetch(`${clis[i % clis.length]!.url}/items`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n: i }) });
    assert.equal(res.status, 201);
  }
}

/** Every event of the feed acknowledged; how many deliveries were made for how many events. */
async function allAcknowledged(url: string, receiver: Receiver): Promise<{ events: number; deliveries: number }> {
  const cursors = await feedCursors(url);
  await eventually(() => {
    const acked = new Set(receiver.acknowledged());
    return cursors.every((cursor) => acked.has(cursor));
  }, 'every event of /changes acknowledged');
  assert.deepEqual(receiver.invalid, []);
  return { events: cursors.length, deliveries: receiver.received.length };
}

describe('webhooks on PostgreSQL: one deliverer per database', { skip: pgMissing }, () => {
  test('three processes, one receiver -> each event delivered about once; the deliverer killed -> another takes over, nothing skipped', async () => {
    const url = await freshDatabase();
    const receiver = await startReceiver();
    const args = ['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--webhook', receiver.url, '--webhook-secret', SECRET, '--webhook-lease', '2s'];
    const clis: CliProcess[] = [];
    for (let i = 0; i < 3; i++) clis.push(await startCli(args));
    await eventually(async () => (await Promise.all(clis.map(delivering))).filter(Boolean).length === 1, 'one process delivering');
    await writes(clis, 150);
    const first = await allAcknowledged(clis[0]!.url, receiver);
    assert.equal(first.events, 150);
    assert.ok(first.deliveries <= 150 * 1.05, `${first.deliveries} deliveries for 150 events`);
    assert.equal((await Promise.all(clis.map(delivering))).filter(Boolean).length, 1, 'still one deliverer');

    const states = await Promise.all(clis.map(delivering));
    const deliverer = clis[states.indexOf(true)]!;
    deliverer.child.kill('SIGKILL');
    await deliverer.exited;
    const survivors = clis.filter((cli) => cli !== deliverer);
    await writes(survivors, 60, 150);
    const second = await allAcknowledged(survivors[0]!.url, receiver);
    assert.equal(second.events, 210);
    assert.ok(second.deliveries <= 210 * 1.05, `${second.deliveries} deliveries for 210 events`);
    await eventually(async () => (await Promise.all(survivors.map(delivering))).filter(Boolean).length === 1, 'one survivor delivering');
    for (const cli of survivors) {
      cli.child.kill('SIGTERM');
      assert.equal(await cli.exited, 0);
    }
  });
});
