import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, parseConfig } from '../../src/config.js';
import { HttpProblem } from '../../src/conventions/problem.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { LIVENESS_MS, spawnCli, startCli, tempDir } from '../helpers/process.js';
import { startServer } from '../helpers/server.js';

/**
 * Ways to take the whole process down from outside the request body: configuration that only
 * fails when a response is written, and a log reader that goes away. (Records at the size limit
 * surviving a restart are in concurrency.test.ts.)
 */

const waitFor = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const JSON_HEADERS = { 'content-type': 'application/json' };

/** Fetches `path` and gives back the status, or the error code when the connection failed. */
async function statusOf(url: string, init?: RequestInit): Promise<number | string> {
  try {
    const res = await fetch(url, init);
    await res.arrayBuffer();
    return res.status;
  } catch (error) {
    return String((error as { cause?: { code?: string } }).cause?.code ?? error);
  }
}

describe('configuration that would only bite when a response is written', () => {
  // Such a prefix cannot go into a Link or Location header: accepted, it used to kill the process
  // (ERR_INVALID_CHAR) on the first collection GET.
  test('HALSERVE_BASE_PATH with CR LF -> refused at start-up: exit 1, one line naming the base path', async () => {
    const dir = await tempDir('halserve-qa-');
    const proc = spawnCli(['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off'], { HALSERVE_BASE_PATH: '/api\r\nX-Injected: 1' });
    assert.equal(await proc.exited, 1);
    assert.equal(proc.stdout(), '');
    const lines = proc.stderr().trim().split('\n');
    assert.equal(lines.length, 1, proc.stderr());
    assert.match(lines[0] ?? '', /HALSERVE_BASE_PATH/);
  });

  for (const [label, basePath] of [
    ['/商店 (not Latin-1)', '/商店'],
    ['with a space', '/my api'],
    ['with a quote and angle brackets', '/a"<b>'],
  ] as const) {
    test(`--base-path ${label} -> ConfigError naming --base-path`, () => {
      assert.throws(() => parseConfig(['--base-path', basePath], {}), (error: Error) => error instanceof ConfigError && /--base-path/.test(error.message));
    });
  }

  test('--base-path /api/v2 -> served, links carry it, no crash', async () => {
    const dir = await tempDir('halserve-qa-');
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off', '--base-path', '/api/v2']);
    const created = await fetch(`${cli.url}/items`, { method: 'POST', headers: JSON_HEADERS, body: '{}' });
    assert.equal(created.status, 201);
    assert.match(created.headers.get('location') ?? '', /^\/api\/v2\/items\//);
    const page = await fetch(`${cli.url}/api/v2/items`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('link') ?? '', /<\/api\/v2\/items\?page=1&limit=20>; rel="self"/);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });
});

describe('a response Node refuses to write', () => {
  test("an embedder's authenticator refuses with a challenge of realm 商店 -> that exchange is cut off and logged; the process and other requests go on", async () => {
    const logged: unknown[] = [];
    const authenticator = { authenticate: () => new HttpProblem(401, 'Unknown key', {}, { 'www-authenticate': 'Key realm="商店"' }) };
    const s = await startServer({ resources: [{ name: 'items', store: createMemoryStore() }], authenticator, errorLog: (error) => logged.push(error) });
    // The header cannot carry the realm: the connection is dropped instead of the process.
    assert.equal(await statusOf(`${s.url}/items`), 'UND_ERR_SOCKET');
    assert.equal(logged.length, 1);
    assert.equal((logged[0] as { code?: string }).code, 'ERR_INVALID_CHAR');
    assert.equal(await statusOf(`${s.url}/healthz`), 200);
  });
});

describe('the access log', () => {
  test(
    'stdout closed by its reader (halserve | head -1) -> keeps serving',
    async () => {
      const dir = await tempDir('halserve-qa-');
      const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'items']);
      cli.child.stdout?.destroy();
      await waitFor(100);
      const statuses: (number | string)[] = [];
      for (let i = 0; i < 3; i++) {
        statuses.push(await statusOf(`${cli.url}/items`));
        await waitFor(50);
      }
      assert.deepEqual(statuses, [200, 200, 200]);
      assert.equal(cli.child.exitCode, null, cli.stderr());
    },
  );
});

describe('start-up failures after the configuration is read', () => {
  test(
    'port already in use -> exit 1 with exactly one line on stderr',
    async () => {
      const blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      after(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
      const port = String((blocker.address() as AddressInfo).port);
      const dir = await tempDir('halserve-qa-');
      const proc = spawnCli(['--port', port, '--data', dir, '--resource', 'items']);
      assert.equal(await proc.exited, 1);
      assert.equal(proc.stderr().trim().split('\n').length, 1, proc.stderr());
      assert.match(proc.stderr(), /EADDRINUSE/);
    },
  );
});

describe('two resources, one file', () => {
  test(
    'a.jsonl a symbolic link to b.jsonl -> refused at start-up, not two stores writing one file',
    async () => {
      const dir = await tempDir('halserve-qa-');
      await writeFile(join(dir, 'b.jsonl'), '');
      await symlink('b.jsonl', join(dir, 'a.jsonl'));
      const proc = spawnCli(['--port', '0', '--data', dir, '--log', 'off']);
      const outcome = await Promise.race([
        proc.exited,
        (async () => {
          while (!proc.stdout().includes('listening') && proc.child.exitCode === null) await waitFor(20);
          return proc.child.exitCode ?? 'started';
        })(),
      ]);
      assert.equal(outcome, 1, 'halserve started with two resources on one file');
      assert.match(proc.stderr(), /a\.jsonl|b\.jsonl/);
    },
  );
});

describe('a resource file that is not a regular file', () => {
  test(
    '--resource x with x.jsonl a FIFO -> refused at start-up, not a silent hang',
    async (t) => {
      const dir = await tempDir('halserve-qa-');
      if (spawnSync('mkfifo', [join(dir, 'x.jsonl')]).status !== 0) {
        t.skip('mkfifo(1) is not available');
        return;
      }
      const proc = spawnCli(['--port', '0', '--data', dir, '--resource', 'x', '--log', 'off']);
      // Bounded for liveness only: opening a FIFO for reading blocks until a writer comes, forever.
      const outcome = await Promise.race([proc.exited, sleep(LIVENESS_MS, undefined, { ref: false }).then(() => (proc.stdout().includes('listening') ? 'started' : 'hanging'))]);
      assert.equal(outcome, 1);
      assert.match(proc.stderr(), /x\.jsonl/);
    },
  );
});
