import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startCli, tempDir, type CliProcess } from '../helpers/process.js';
import { assertRawProblem, portOf, rawExchange } from './raw.js';

/**
 * Resource exhaustion and malformed traffic against the real CLI, which owns the `http.Server` and
 * so its timeouts and its answers to requests the parser refuses.
 *
 * Two tests take longer than the suite's budget allows and run only with HALSERVE_QA_SLOW=1.
 */

const SLOW = process.env['HALSERVE_QA_SLOW'] === '1' ? false : 'slow (10 to 25 s): run with HALSERVE_QA_SLOW=1';
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

async function serve(extra: readonly string[] = []): Promise<CliProcess> {
  const dir = await tempDir('halserve-qa-');
  return startCli(['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off', ...extra]);
}

/** The line the CLI prints when its grace period ran out and it had to cut connections off. */
const FORCED = /grace period of \d+ s over/;

/** Opens `n` connections and resolves once all are connected; every one is destroyed after the file. */
async function openConnections(url: string, n: number, first?: string): Promise<Socket[]> {
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve) => {
          const socket = connect(portOf(url), '127.0.0.1', () => {
            if (first !== undefined) socket.write(first);
            resolve(socket);
          });
          socket.on('error', () => resolve(socket));
          socket.resume(); // read (and drop) what the server sends, so that its close is seen
        }),
    ),
  );
  after(() => {
    for (const socket of sockets) socket.destroy();
  });
  return sockets;
}

const shared = serve();
shared.catch(() => {}); // a failed start is reported by the first test that awaits it

const waitFor = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('one server, many abusers', () => {
  // One CLI for the tests that do not stop it. Started at the top level, so that its clean-up hooks
  // belong to the file and it lives until the last test of the file is done.
  const sharedCli = (): Promise<CliProcess> => shared;

  test('a bad request line, a 20 KB header -> 400 and 431 answered, server keeps serving', async () => {
    const cli = await sharedCli();
    assert.equal((await rawExchange(cli.url, 'GARBAGE\r\n\r\n')).responses[0]?.status, 400);
    assert.equal((await rawExchange(cli.url, `GET /items HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)).responses[0]?.status, 431);
    assert.equal((await fetch(`${cli.url}/healthz`)).status, 200);
  });

  test(
    'a bad request line, a 20 KB header, a bad chunk size -> problem documents (docs/conventions.md §7), not Node\'s empty answers',
    async () => {
      const cli = await sharedCli();
      assertRawProblem((await rawExchange(cli.url, 'GARBAGE\r\n\r\n')).responses[0], 400);
      assertRawProblem((await rawExchange(cli.url, `GET /items HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)).responses[0], 431);
      const chunked = 'POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n';
      assertRawProblem((await rawExchange(cli.url, chunked)).responses[0], 400);
    },
  );

  test('300 idle keep-alive connections -> a new client is still answered', async () => {
    const cli = await sharedCli();
    const sockets = await openConnections(cli.url, 300, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(sockets.length, 300);
    // A server blocked by idle connections would not answer at all (the test's own timeout ends it).
    const res = await fetch(`${cli.url}/items`);
    assert.equal(res.status, 200);
  });
});

describe('shutdown and descriptor limits', () => {

  test('SIGTERM with 200 idle keep-alive connections -> exit 0, the idle connections closed at once (not at the end of the grace period)', async () => {
    const cli = await serve();
    await openConnections(cli.url, 200, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor(100);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    assert.doesNotMatch(cli.stderr(), FORCED);
  });

  for (const [label, first] of [
    ['a connection that has sent nothing yet (a browser preconnect)', undefined],
    ['a connection with half a request header', 'GET /items HTTP/1.1\r\nHost: x\r\n'],
  ] as const) {
    test(
      `SIGTERM with ${label} -> exit 0, the connection closed at once (not at the end of the grace period)`,
      async () => {
        const cli = await serve();
        await openConnections(cli.url, 1, first);
        await waitFor(100);
        cli.child.kill('SIGTERM');
        assert.equal(await cli.exited, 0);
        assert.doesNotMatch(cli.stderr(), FORCED);
      },
    );
  }

  test('more connections than file descriptors (ulimit -n 80) -> the server survives and serves afterwards', async () => {
    const dir = await tempDir('halserve-qa-');
    const child = spawn('bash', ['-c', `ulimit -n 80 && exec "${process.execPath}" --import tsx "${CLI}" --port 0 --data "${dir}" --resource items --log off`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    const deadline = Date.now() + 15_000;
    while (!/listening on (http:\/\/\S+)\n/.test(out)) {
      assert.ok(Date.now() < deadline && child.exitCode === null, 'halserve did not start');
      await waitFor(20);
    }
    const url = /listening on (http:\/\/\S+)\n/.exec(out)?.[1] ?? '';
    const sockets = await openConnections(url, 150);
    await waitFor(500);
    for (const socket of sockets) socket.destroy();
    await waitFor(300);
    assert.equal(child.exitCode, null, 'the server died');
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});

describe('slow clients (HALSERVE_QA_SLOW=1)', () => {
  test(
    'headers trickled one line every 2 s (slowloris) -> connection closed within 20 s',
    { skip: SLOW },
    async () => {
      const cli = await serve();
      const [socket] = await openConnections(cli.url, 1, 'GET /items HTTP/1.1\r\nHost: x\r\n');
      assert.ok(socket);
      let closed = false;
      socket.on('close', () => (closed = true));
      const started = Date.now();
      while (!closed && Date.now() - started < 20_000) {
        socket.write('X-Slow: 1\r\n');
        await waitFor(2000);
      }
      assert.equal(closed, true);
    },
  );

  test(
    'SIGTERM while a client stalls mid-body -> the connection cut off at the end of the grace period (inside docker stop\'s 10 s), exit 0',
    { skip: SLOW },
    async () => {
      const cli = await serve();
      const [socket] = await openConnections(cli.url, 1, 'POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{');
      assert.ok(socket);
      await waitFor(200);
      cli.child.kill('SIGTERM');
      assert.equal(await cli.exited, 0);
      assert.match(cli.stderr(), /SIGTERM: grace period of 5 s over/);
    },
  );
});
