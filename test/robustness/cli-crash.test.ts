import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { spawnCli, startCli, tempDir } from '../helpers/process.js';

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

describe('configuration that only bites when a response is written', () => {
  for (const [label, args, env] of [
    ['--base-path /商店 (not Latin-1)', ['--base-path', '/商店'], {}],
    ['HALSERVE_BASE_PATH with CR LF', [], { HALSERVE_BASE_PATH: '/api\r\nX-Injected: 1' }],
  ] as const) {
    test(
      `${label} -> refused at start-up with one line, or served; never a crash on the first request`,
      { todo: 'bug: the base path goes into Link and Location headers as it is; Node throws ERR_INVALID_CHAR in reply.ts send(), which app.ts does not catch, and the process dies on the first collection GET or POST. Fix: config.ts refuses (or encodeURI-s) such a --base-path; app.ts wraps finish() so a throw in send() destroys that response, not the process' },
      async () => {
        const dir = await tempDir('halserve-qa-');
        const proc = spawnCli(['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off', ...args], env);
        const deadline = Date.now() + 15_000;
        let url: string | undefined;
        while (url === undefined && proc.child.exitCode === null && Date.now() < deadline) {
          url = /halserve listening on (http:\/\/\S+)\n/.exec(proc.stdout())?.[1];
          await waitFor(20);
        }
        if (url === undefined) {
          assert.equal(await proc.exited, 1);
          const lines = proc.stderr().trim().split('\n').filter((line) => !line.includes('WARNING'));
          assert.equal(lines.length, 1, proc.stderr());
          assert.match(lines[0] ?? '', /base.path/i);
          return;
        }
        assert.equal(await statusOf(`${url}/items`), 200);
        assert.equal(await statusOf(`${url}/items`, { method: 'POST', headers: JSON_HEADERS, body: '{}' }), 201);
        assert.equal(proc.child.exitCode, null, `halserve died: ${proc.stderr()}`);
      },
    );
  }
});

describe('the access log', () => {
  test(
    'stdout closed by its reader (halserve | head -1) -> keeps serving',
    { todo: 'bug: the next access-log write gets EPIPE, process.stdout emits "error" with no listener, and the process dies (measured: the second request after the reader left was refused). Fix in cli.ts: process.stdout.on("error", …) that turns the access log off and warns once' },
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
