import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { eventually, spawnCli, startCli, tempDir, type CliProcess } from '../helpers/process.js';

const JSON_HEADERS = { 'content-type': 'application/json' };
const line = (id: string, fields: Record<string, unknown> = {}): string => `${JSON.stringify({ id, createdAt: 1, updatedAt: 1, ...fields })}\n`;

describe('halserve CLI (docs/conventions.md §8)', () => {
  test('--port 0 on a data dir -> ready line, serves every *.jsonl, access log as JSON lines', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'books.jsonl'), line('b1') + line('b2'));
    await writeFile(join(dir, 'films.jsonl'), '');
    const cli = await startCli(['--port', '0', '--data', dir]);
    assert.match(cli.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.deepEqual(await (await fetch(`${cli.url}/`)).json(), { _links: { books: { href: '/books' }, films: { href: '/films' } } });
    const books = (await (await fetch(`${cli.url}/books`)).json()) as { total: number };
    assert.equal(books.total, 2);
    // The warning follows the ready line, so that a start-up failure stays one line.
    await eventually(() => /authentication is OFF/.test(cli.stderr()));
    await eventually(() => cli.stdout().trim().split('\n').length >= 3);
    const log = cli.stdout().trim().split('\n').slice(1).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(log.map((e) => [e['method'], e['path'], e['status']]), [['GET', '/', 200], ['GET', '/books', 200]]);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });

  test('--resource and POST -> file created; restart -> the entity is still there', async () => {
    const dir = await tempDir();
    const first = await startCli(['--port', '0', '--data', dir, '--resource', 'notes', '--log', 'off']);
    const created = await fetch(`${first.url}/notes`, { method: 'POST', headers: JSON_HEADERS, body: '{"text":"hello"}' });
    assert.equal(created.status, 201);
    const entity = (await created.json()) as { id: string };
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);
    assert.equal(first.stdout(), `halserve listening on ${first.url}\n`, 'no access log with --log off');
    assert.match(await readFile(join(dir, 'notes.jsonl'), 'utf8'), /"text":"hello"/);
    const second = await startCli(['--port', '0', '--data', dir, '--log', 'off']);
    const again = (await (await fetch(`${second.url}/notes/${entity.id}`)).json()) as { text: string };
    assert.equal(again.text, 'hello');
    second.child.kill('SIGINT');
    assert.equal(await second.exited, 0);
  });

  test('environment variables -> same as flags (HALSERVE_TOKENS, HALSERVE_DATA, PORT)', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'items.jsonl'), line('i1'));
    const cli = await startCli([], { HALSERVE_DATA: dir, PORT: '0', HALSERVE_TOKENS: 'tok', HALSERVE_LOG: 'off' });
    assert.equal((await fetch(`${cli.url}/items`)).status, 401);
    assert.equal((await fetch(`${cli.url}/items`, { headers: { authorization: 'Bearer tok' } })).status, 200);
    assert.doesNotMatch(cli.stderr(), /authentication is OFF/);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });

  test('SIGTERM during a slow request -> the request completes, then exit 0', async () => {
    const dir = await tempDir();
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off']);
    const { status, body } = await postAcrossSigterm(cli);
    assert.equal(status, 201);
    assert.equal((JSON.parse(body) as { slow: boolean }).slow, true);
    assert.equal(await cli.exited, 0);
  });

  test('SIGTERM while a request is in flight on a keep-alive connection -> its answer says Connection: close, so no client sends another on it', async () => {
    const dir = await tempDir();
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off']);
    const agent = new Agent({ keepAlive: true });
    const { connection } = await postAcrossSigterm(cli, agent);
    agent.destroy();
    // RFC 9112 §9.6: the server closes the connection after this answer; a client told keep-alive
    // would send its next request on it and lose it to the close.
    assert.equal(connection, 'close');
    assert.equal(await cli.exited, 0);
  });

  test('SIGTERM while a large answer is still being sent to a client that reads slowly -> the whole answer arrives, then exit 0', async () => {
    const dir = await tempDir();
    const big = 'x'.repeat(40_000);
    await writeFile(join(dir, 'items.jsonl'), Array.from({ length: 200 }, (_, i) => JSON.stringify({ id: `e${String(i).padStart(3, '0')}`, createdAt: 1, updatedAt: 1, big })).join('\n') + '\n');
    const cli = await startCli(['--port', '0', '--data', dir, '--log', 'off']);
    const url = new URL(`${cli.url}/items?limit=200`);
    const received = await new Promise<{ length: number; declared: number }>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path: `${url.pathname}${url.search}` }, (res) => {
        let length = 0;
        res.on('data', (chunk: Buffer) => (length += chunk.length));
        res.on('end', () => resolve({ length, declared: Number(res.headers['content-length']) }));
        res.on('error', reject);
        // Not read while the server drains: its answer waits in the sockets, ended but not sent.
        res.pause();
        cli.child.kill('SIGTERM');
        eventually(() => /SIGTERM: finishing requests in flight/.test(cli.stderr()), 'the drain to begin').then(() => res.resume(), reject);
      });
      req.on('error', reject);
      req.end();
    });
    assert.ok(received.declared > 8_000_000, String(received.declared));
    assert.equal(received.length, received.declared);
    assert.equal(await cli.exited, 0);
    assert.doesNotMatch(cli.stderr(), /grace period/);
  });

  for (const [label, args, env, message] of [
    ['0.0.0.0 without tokens', ['--host', '0.0.0.0'], {}, 'refusing to listen on 0.0.0.0 without authentication: set HALSERVE_TOKENS (or --token) or HALSERVE_JWKS (--jwks), or HALSERVE_NO_AUTH=1 (--no-auth) to serve without it'],
    ['bad resource name', ['--resource', 'Bad.Name'], {}, 'invalid resource name "Bad.Name"'],
    ['reserved resource name', ['--resource', 'healthz'], {}, 'resource name "healthz" is reserved'],
    ['unknown flag', ['--frobnicate'], {}, 'unknown option --frobnicate (see --help)'],
    ['bad port variable', [], { HALSERVE_PORT: 'eighty' }, 'HALSERVE_PORT must be a whole number from 0 to 65535'],
  ] as const) {
    test(`${label} -> exit 1 with a one-line message`, async () => {
      const dir = await tempDir();
      const proc = spawnCli(['--data', dir, ...args], { PORT: '0', ...env });
      assert.equal(await proc.exited, 1);
      assert.ok(proc.stderr().includes(`halserve: ${message}`), proc.stderr());
      assert.equal(proc.stdout(), '');
    });
  }

  test('a *.jsonl file with a bad name -> refused at start-up, never used as a path', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'Upper.jsonl'), '');
    const proc = spawnCli(['--port', '0', '--data', dir]);
    assert.equal(await proc.exited, 1);
    assert.match(proc.stderr(), /invalid resource name "Upper"/);
  });

  test('schema with an unknown keyword -> exit 1 naming the file', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'items.jsonl'), '');
    await writeFile(join(dir, 'items.schema.json'), JSON.stringify({ type: 'object', properties: { a: { type: 'string', format: 'email' } } }));
    const proc = spawnCli(['--port', '0', '--data', dir]);
    assert.equal(await proc.exited, 1);
    assert.match(proc.stderr(), /items\.schema\.json/);
    assert.match(proc.stderr(), /format/);
  });

  test('schema that is not JSON -> exit 1 naming the file', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'items.jsonl'), '');
    await writeFile(join(dir, 'items.schema.json'), '{ nope');
    const proc = spawnCli(['--port', '0', '--data', dir]);
    assert.equal(await proc.exited, 1);
    assert.match(proc.stderr(), /items\.schema\.json: not valid JSON/);
  });

  test('schema -> enforced on POST', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'items.jsonl'), '');
    await writeFile(join(dir, 'items.schema.json'), JSON.stringify({ type: 'object', required: ['name'] }));
    const cli = await startCli(['--port', '0', '--data', dir, '--log', 'off']);
    const res = await fetch(`${cli.url}/items`, { method: 'POST', headers: JSON_HEADERS, body: '{}' });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { detail: string }).detail, 'Validation failed');
  });

  test('missing data directory -> exit 1', async () => {
    const dir = await tempDir();
    const proc = spawnCli(['--port', '0', '--data', join(dir, 'nope')]);
    assert.equal(await proc.exited, 1);
    assert.match(proc.stderr(), /nope does not exist/);
  });

  test('--help -> usage on stdout, exit 0', async () => {
    const proc = spawnCli(['--help']);
    assert.equal(await proc.exited, 0);
    assert.match(proc.stdout(), /^Usage: halserve/);
    assert.match(proc.stdout(), /HALSERVE_TOKENS/);
  });

  test('--no-auth off loopback -> starts, warns that authentication is off', async () => {
    const dir = await tempDir();
    const cli = await startCli(['--port', '0', '--host', '0.0.0.0', '--no-auth', '--data', dir, '--log', 'off']);
    assert.match(cli.url, /^http:\/\/0\.0\.0\.0:\d+$/);
    await eventually(() => /authentication is OFF/.test(cli.stderr()));
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });
});

/**
 * A POST whose body is still arriving when the server is told SIGTERM: its headers (with
 * `Expect: 100-continue`, so that the server has the request in hand), half its body, the
 * signal, and the rest once the server says it is draining.
 */
function postAcrossSigterm(cli: CliProcess, agent?: Agent): Promise<{ status: number; body: string; connection: string | undefined }> {
  const url = new URL(`${cli.url}/items`);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: '/items', method: 'POST', ...(agent === undefined ? {} : { agent }), headers: { ...JSON_HEADERS, expect: '100-continue' } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
    });
    req.on('error', reject);
    req.flushHeaders();
    req.once('continue', () => {
      req.write('{"slow":');
      cli.child.kill('SIGTERM');
      eventually(() => /SIGTERM: finishing requests in flight/.test(cli.stderr()), 'the drain to begin').then(() => req.end('true}'), reject);
    });
  });
}
