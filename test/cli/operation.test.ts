import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { eventually, startCli, tempDir } from '../helpers/process.js';
import { promtoolAccepts, sample } from '../helpers/metrics.js';
import { rawExchange } from '../robustness/raw.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

describe('operation behind the CLI (docs/conventions.md §4.1, §6)', () => {
  test('writes through the JSON-lines store -> durable writes, fsync times and batch sizes in /metrics; promtool check metrics passes', async (t) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'notes.jsonl'), '');
    const cli = await startCli(['--port', '0', '--data', dir, '--log', 'off']);
    // Twenty concurrent creates share group commits: fewer batches than lines.
    const created = await Promise.all(Array.from({ length: 20 }, (_, i) => fetch(`${cli.url}/notes`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ i }) })));
    assert.deepEqual(new Set(created.map((r) => r.status)), new Set([201]));
    const id = ((await created[0]?.json()) as { id: string }).id;
    assert.equal((await fetch(`${cli.url}/notes/${id}`, { method: 'DELETE' })).status, 204);
    const text = await (await fetch(`${cli.url}/metrics`)).text();
    assert.equal(sample(text, 'halserve_store_writes_total{resource="notes"}'), 21);
    assert.equal(sample(text, 'halserve_store_batch_lines_sum{resource="notes"}'), 21);
    const batches = sample(text, 'halserve_store_batch_lines_count{resource="notes"}') ?? 0;
    assert.ok(batches >= 2 && batches <= 21, `batches ${batches}`);
    assert.equal(sample(text, 'halserve_store_fsync_seconds_count{resource="notes"}'), batches);
    assert.ok((sample(text, 'halserve_store_fsync_seconds_sum{resource="notes"}') ?? 0) > 0);
    assert.equal(sample(text, 'halserve_entities{resource="notes"}'), 19);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);

    promtoolAccepts(t, text);
  });

  test('resources served, before any write -> every counter whose labels are known at 0 (README: a first increment visible to increase()); promtool check metrics passes', async (t) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'notes.jsonl'), '');
    // One resource from a file, one declared; a webhook URL whose query holds a token (not in its label).
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'tags', '--log', 'off', '--webhook', 'http://127.0.0.1:9/hook?token=q1', '--webhook-secret', 'a-webhook-secret-of-32-characters']);
    const text = await (await fetch(`${cli.url}/metrics`)).text();
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    for (const resource of ['notes', 'tags']) {
      for (const series of [
        `halserve_store_writes_total{resource="${resource}"}`,
        `halserve_page_cache_requests_total{resource="${resource}",result="hit"}`,
        `halserve_page_cache_requests_total{resource="${resource}",result="miss"}`,
        // A file store's: it compacts, and lets Idempotency-Key answers go past its bounds.
        `halserve_store_compactions_total{resource="${resource}",outcome="ok"}`,
        `halserve_store_compactions_total{resource="${resource}",outcome="failed"}`,
        `halserve_idempotency_answers_evicted_total{resource="${resource}"}`,
      ]) {
        assert.equal(sample(text, series), 0, series);
      }
    }
    const url = 'http://127.0.0.1:9/hook';
    for (const series of [
      `halserve_webhook_deliveries_total{url="${url}"}`,
      `halserve_webhook_missed_total{url="${url}"}`,
      `halserve_webhook_failures_total{url="${url}",cause="status"}`,
      `halserve_webhook_failures_total{url="${url}",cause="timeout"}`,
      `halserve_webhook_failures_total{url="${url}",cause="connection"}`,
    ]) {
      assert.equal(sample(text, series), 0, series);
    }
    // A write failure's cause is open-ended (an errno code): no series before the first.
    assert.doesNotMatch(text, /^halserve_store_write_failures_total\{/m);
    assert.ok(!text.includes('q1'), 'the webhook URL\'s query reached a label');

    promtoolAccepts(t, text);
  });

  test('a configured token sent every way a client might -> never on stdout or stderr', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'notes.jsonl'), '');
    const write = 'W-sekrit-token-1234';
    const read = 'R-sekrit-token-5678';
    const cli = await startCli(['--port', '0', '--data', dir, '--token', write, '--token', `read:${read}`]);
    for (const token of [write, read, 'not-configured-but-secret']) {
      const ways: [string, RequestInit][] = [
        ['/notes', { headers: { authorization: `Bearer ${token}` } }],
        ['/notes', { headers: { authorization: `Basic ${Buffer.from(`user:${token}`).toString('base64')}` } }],
        [`/?access_token=${token}`, {}],
        [`/notes?token=${token}&page=1`, {}],
        [`/notes?api_key=${encodeURIComponent(token)}`, {}],
        [`/notes?apikey=${token}`, { headers: { authorization: `Bearer ${token}` } }],
        [`/${token}`, {}],
        [`/notes/${token}`, { headers: { authorization: `Bearer ${write}` } }],
        ['/notes', { method: 'POST', headers: { ...JSON_HEADERS, authorization: `Bearer ${token}`, 'x-api-key': token, cookie: `session=${token}` }, body: JSON.stringify({ token }) }],
        ['/notes', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: token }],
      ];
      for (const [path, init] of ways) await (await fetch(`${cli.url}${path}`, init)).arrayBuffer();
    }
    await eventually(() => cli.stdout().split('\n').length > 25);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    const out = cli.stdout() + cli.stderr();
    assert.ok(!out.includes(write) && !out.includes(read), 'a configured token reached the output');
    assert.ok(!out.includes('sekrit'), 'part of a configured token reached the output');
    // Credential parameters are redacted whatever their value.
    assert.ok(!/=not-configured-but-secret/.test(out), 'a credential parameter was logged');
    assert.match(out, /"query":"access_token=\[redacted\]"/);
  });
  test('requests the parser refuses -> a line each on stdout, counted in /metrics, the token in neither; promtool check metrics passes', async (t) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'notes.jsonl'), '');
    const token = 'R-sekrit-refused-5678';
    const cli = await startCli(['--port', '0', '--data', dir, '--token', token]);
    const head = `Host: x\r\nAuthorization: Bearer ${token}\r\n`;
    const sent = [
      await rawExchange(cli.url, 'GARBAGE\r\n\r\n'),
      await rawExchange(cli.url, `GET /notes?access_token=${token} HTTP/1.1\r\n${head}X-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      await rawExchange(cli.url, `POST /notes HTTP/1.1\r\n${head}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`),
    ];
    assert.deepEqual(
      sent.map(({ responses }) => [responses[0]?.status, responses[0]?.headers['connection']]),
      [
        [400, 'close'],
        [431, 'close'],
        [400, 'close'],
      ],
    );
    const text = await (await fetch(`${cli.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    assert.equal(sample(text, 'halserve_http_requests_total{method="other",route="unparsed",status="400"}'), 2);
    assert.equal(sample(text, 'halserve_http_requests_total{method="other",route="unparsed",status="431"}'), 1);
    await eventually(() => cli.stdout().includes('"path":"/metrics"'));
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    const refused = cli
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry['refused'] !== undefined)
      .map(({ time: _, ...rest }) => rest);
    assert.deepEqual(refused, [
      { method: '', path: '', status: 400, ms: 0, bytes: sent[0]?.responses[0]?.body.length, refused: 'HPE_INVALID_METHOD' },
      { method: '', path: '', status: 431, ms: 0, bytes: sent[1]?.responses[0]?.body.length, refused: 'HPE_HEADER_OVERFLOW' },
      { method: '', path: '', status: 400, ms: 0, bytes: sent[2]?.responses[0]?.body.length, refused: 'HPE_INVALID_CHUNK_SIZE' },
    ]);
    assert.ok(!`${cli.stdout()}${cli.stderr()}`.includes('sekrit'), 'the token reached the output');

    promtoolAccepts(t, text);
  });
});
