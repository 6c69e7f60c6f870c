import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { POSITIONS_FILE } from '../../src/webhooks/file-positions.js';
import { eventually, spawnCli, startCli, tempDir, type CliProcess } from '../helpers/process.js';
import { feedCursors, SECRET, startReceiver, type Receiver } from './receiver.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

const start = (dir: string, receiver: Receiver, extra: string[] = []): Promise<CliProcess> =>
  startCli(['--data', dir, '--port', '0', '--log', 'off', '--resource', 'items', '--resource', 'orders', '--webhook', receiver.url, '--webhook-secret', SECRET, ...extra]);

async function post(url: string, name: string, n: number): Promise<void> {
  const res = await fetch(`${url}/${name}`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n }) });
  assert.equal(res.status, 201);
}

/** Every event of /changes acknowledged, and each run of deliveries (between restarts) in cursor order. */
async function checkNothingSkipped(url: string, receiver: Receiver): Promise<void> {
  assert.deepEqual(receiver.invalid, []);
  const acked = new Set(receiver.acknowledged());
  for (const cursor of await feedCursors(url)) assert.ok(acked.has(cursor), `event ${cursor} acknowledged`);
}

describe('webhooks from the CLI (a real process, a real receiver)', () => {
  test('kill -9 mid-delivery, then a restart -> resumes after the saved position: nothing skipped, order kept per run', async () => {
    const dir = await tempDir();
    // The receiver holds the fifth event it is sent without answering: the server is killed meanwhile.
    let hold = true;
    const receiver = await startReceiver({ behaviour: ({ id, attempt }) => (hold && id === '5' && attempt === 1 ? 'hang' : 204) });
    const first = await start(dir, receiver);
    for (let i = 0; i < 12; i++) await post(first.url, i % 2 ? 'orders' : 'items', i);
    await eventually(() => receiver.received.some((r) => r.id === '5'), 'the fifth event in flight');
    const beforeCrash = receiver.received.length;
    first.child.kill('SIGKILL');
    await first.exited;
    hold = false;
    const second = await start(dir, receiver);
    for (let i = 12; i < 16; i++) await post(second.url, 'items', i);
    const latest = (await feedCursors(second.url)).at(-1);
    await eventually(() => receiver.acknowledged().includes(latest!), 'the latest event acknowledged after the restart');
    await checkNothingSkipped(second.url, receiver);
    // Before the crash: 1..4 acknowledged, 5 in flight; after it: from the saved position (at most 4) on, in order.
    const before = receiver.received.slice(0, beforeCrash).map((r) => Number(r.id));
    const after = receiver.received.slice(beforeCrash).map((r) => Number(r.id));
    assert.deepEqual(before, [1, 2, 3, 4, 5]);
    assert.ok(after[0]! <= 5, `resumed at or before the event in flight, not after: ${after[0]}`);
    for (let i = 1; i < after.length; i++) assert.ok(after[i]! > after[i - 1]!, 'in cursor order');
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });

  test('SIGTERM, then a restart -> nothing acknowledged is sent again', async () => {
    const dir = await tempDir();
    const receiver = await startReceiver();
    const first = await start(dir, receiver);
    for (let i = 0; i < 10; i++) await post(first.url, 'items', i);
    const latest = (await feedCursors(first.url)).at(-1)!;
    await eventually(() => receiver.acknowledged().includes(latest), 'every event acknowledged');
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);
    const stored = JSON.parse(await readFile(join(dir, POSITIONS_FILE), 'utf8')) as Record<string, { cursor: string }>;
    assert.equal(stored[receiver.url]?.cursor, latest);
    const second = await start(dir, receiver);
    for (let i = 0; i < 5; i++) await post(second.url, 'orders', i);
    const last = (await feedCursors(second.url)).at(-1)!;
    await eventually(() => receiver.acknowledged().includes(last), 'the new events acknowledged');
    const ids = receiver.received.map((r) => r.id);
    assert.equal(new Set(ids).size, ids.length, 'no event sent twice');
    assert.deepEqual(ids.map(Number), Array.from({ length: 15 }, (_, i) => i + 1));
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });

  test('SIGTERM with a delivery the receiver never answers -> exit 0 within the grace, the event unacknowledged, no connection said to be cut', async () => {
    const dir = await tempDir();
    const receiver = await startReceiver({ behaviour: () => 'hang' });
    const cli = await start(dir, receiver);
    await post(cli.url, 'items', 1);
    await eventually(() => receiver.received.length === 1, 'the delivery in flight');
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    // The HTTP side drained at once (no connection was open): only the delivery used the grace.
    assert.doesNotMatch(cli.stderr(), /closing the connections still open/);
    const stored = JSON.parse(await readFile(join(dir, POSITIONS_FILE), 'utf8')) as Record<string, { cursor: string }>;
    assert.equal(stored[receiver.url]?.cursor, '0');
  });

  test('--webhook-resource orders -> only orders\' events', async () => {
    const dir = await tempDir();
    const receiver = await startReceiver();
    const cli = await start(dir, receiver, ['--webhook-resource', 'orders']);
    for (let i = 0; i < 6; i++) await post(cli.url, i % 2 ? 'orders' : 'items', i);
    await eventually(() => receiver.acknowledged().length === 3, 'three orders delivered');
    assert.deepEqual(receiver.received.map((r) => r.event.resource), ['orders', 'orders', 'orders']);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });

  const whsecShort = `whsec_${Buffer.alloc(16).toString('base64')}`;
  for (const [label, args, env, message] of [
    ['a URL that is not http(s)', ['--webhook', 'ftp://example.com/x', '--webhook-secret', SECRET], {}, '--webhook: "ftp://example.com/x" is not an http:// or https:// URL'],
    ['a URL that is not a URL', ['--webhook', 'example.com/hook', '--webhook-secret', SECRET], {}, '--webhook: "example.com/hook" is not a URL (webhooks are http:// or https:// URLs)'],
    // A mistyped URL is quoted without what may hold credentials: stderr is a log.
    ['a URL with credentials that is not http(s)', ['--webhook', 'htps://alice:hunter2@hooks.example/x?token=q1', '--webhook-secret', SECRET], {}, '--webhook: "htps://[redacted]@hooks.example/x?[redacted]" is not an http:// or https:// URL'],
    ['a URL with credentials that is not a URL', ['--webhook', 'https://alice:hunter2@/x?token=q1', '--webhook-secret', SECRET], {}, '--webhook: "https://[redacted]@/x?[redacted]" is not a URL (webhooks are http:// or https:// URLs)'],
    ['a bad URL in the variable', [], { HALSERVE_WEBHOOKS: 'http://ok.example/a,nope', HALSERVE_WEBHOOK_SECRET: SECRET }, '--webhook: "nope" is not a URL (webhooks are http:// or https:// URLs)'],
    ['no secret', ['--webhook', 'http://127.0.0.1:9/x'], {}, '--webhook needs --webhook-secret (HALSERVE_WEBHOOK_SECRET): the key its deliveries are signed with'],
    ['a short secret', ['--webhook', 'http://127.0.0.1:9/x', '--webhook-secret', 'too-short'], {}, '--webhook-secret: a secret must be at least 24 characters (or whsec_ and base64 of at least 24 bytes)'],
    ['a short whsec_ secret in the variable', ['--webhook', 'http://127.0.0.1:9/x'], { HALSERVE_WEBHOOK_SECRET: whsecShort }, 'HALSERVE_WEBHOOK_SECRET: a whsec_ secret must hold at least 24 bytes, not 16'],
    ['a whsec_ secret that is not base64', ['--webhook', 'http://127.0.0.1:9/x', '--webhook-secret', 'whsec_!!!!not-base64-at-all-no-no-no'], {}, '--webhook-secret: a whsec_ secret must be followed by base64 (A-Z a-z 0-9 + /, padded with =)'],
    ['a secret without a URL', ['--webhook-secret', SECRET], {}, '--webhook-secret needs --webhook (HALSERVE_WEBHOOKS): the URLs to deliver to'],
    ['a resource without a URL', ['--webhook-resource', 'items'], {}, '--webhook-resource needs --webhook (HALSERVE_WEBHOOKS): the URLs to deliver to'],
    ['an unknown resource', ['--webhook', 'http://127.0.0.1:9/x', '--webhook-secret', SECRET, '--webhook-resource', 'nothing'], {}, '--webhook-resource: "nothing" is not a resource of this server (items)'],
    ['a lease too long', ['--webhook-lease', '1m'], {}, '--webhook-lease must be at most 20s, not "1m"'],
    ['a lease on files', ['--webhook', 'http://127.0.0.1:9/x', '--webhook-secret', SECRET, '--webhook-lease', '5s'], {}, '--webhook-lease needs --store postgres://… (HALSERVE_STORE): only processes sharing a database take turns delivering'],
    ['a lease in the variable on files', ['--webhook', 'http://127.0.0.1:9/x', '--webhook-secret', SECRET], { HALSERVE_WEBHOOK_LEASE: '5s' }, 'HALSERVE_WEBHOOK_LEASE needs --store postgres://… (HALSERVE_STORE): only processes sharing a database take turns delivering'],
  ] as const) {
    test(`${label} -> exit 1 with one line on stderr`, async () => {
      const dir = await tempDir();
      const proc = spawnCli(['--data', dir, '--port', '0', '--resource', 'items', ...args], { ...env });
      assert.equal(await proc.exited, 1);
      assert.equal(proc.stderr(), `halserve: ${message}\n`);
      assert.equal(proc.stdout(), '');
    });
  }
});
