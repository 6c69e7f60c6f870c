/**
 * `halserve backup` (docs/storage.md §4) as a user runs it: a real server on a temporary data
 * directory, a writer that never stops while the backup runs, the backup command in a child
 * process, then a second server on the copy. No test measures how long anything took: the
 * figure the command prints (how long the server's writes waited) is reported, not asserted.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { eventually, spawnCli, startCli, tempDir, type CliProcess } from '../helpers/process.js';
import { parseBackupArgs } from '../../src/backup-cli.js';
import { BACKUP_SOCKET } from '../../src/store/log/backup-protocol.js';
import { lastWriteIn, listAll, maxStamp, startWriter, stateAfter, stateOfFiles, touchedAfter } from '../helpers/writer.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
}

async function halserve(args: readonly string[]): Promise<Run> {
  const cli = spawnCli(args);
  const code = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

/** Exit 1, nothing on stdout, one line on stderr matching `pattern`. */
function assertOneLineFailure(run: Run, pattern: RegExp): void {
  assert.equal(run.code, 1, `exit code; stderr: ${run.stderr}`);
  assert.equal(run.stdout, '');
  assert.match(run.stderr, /^halserve: [^\n]+\n$/, `one line: ${JSON.stringify(run.stderr)}`);
  assert.match(run.stderr, pattern);
}

async function startServer(dir: string): Promise<CliProcess> {
  return startCli(['--port', '0', '--data', dir, '--log', 'off']);
}

describe('halserve backup (docs/storage.md §4)', () => {
  test('a writer running -> the copy is one cursor of the feed: every write before it, none after, resources in step; halserve --data DEST serves it', async (t) => {
    const root = await tempDir();
    const data = join(root, 'data');
    const dest = join(root, 'copy');
    await mkdir(data);
    await writeFile(join(data, 'orders.jsonl'), `${JSON.stringify({ id: 'counter', createdAt: 1, updatedAt: 1, n: 0 })}\n`);
    await writeFile(join(data, 'items.schema.json'), JSON.stringify({ type: 'object', properties: { n: { type: 'integer' } } }));
    await writeFile(join(data, 'items.jsonl'), '');
    await writeFile(join(data, 'empty.jsonl'), '');
    const server = await startServer(data);
    const writer = startWriter(server.url);
    // Some writes first, so that the copy cannot be trivially empty.
    while (writer.acked() < 40) await new Promise((resolve) => setTimeout(resolve, 5));
    const ackedBefore = writer.acked();
    const run = await halserve(['backup', '--data', data, '--to', dest]);
    const sentAfter = writer.sent() + 1;
    // More writes after the backup, so that the feed after its cursor is not empty.
    while (writer.acked() < sentAfter + 20) await new Promise((resolve) => setTimeout(resolve, 5));
    await writer.stop();
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.trimEnd().split('\n');
    const cursor = lines.at(-1)!;
    assert.match(cursor, /^[1-9][0-9]*$/, 'the cursor alone on the last line');
    const held = /writes waited ([0-9.]+) ms/.exec(run.stdout)?.[1];
    t.diagnostic(`the server's writes waited ${held} ms for the snapshot (not asserted)`);

    // The copy: the layout of the original, every resource, the schema; nothing else but _changes.
    assert.deepEqual((await readdir(dest)).sort(), ['_changes', 'empty.jsonl', 'items.jsonl', 'items.schema.json', 'orders.jsonl']);
    assert.equal(await readFile(join(dest, 'empty.jsonl'), 'utf8'), '');
    assert.equal(await readFile(join(dest, 'items.schema.json'), 'utf8'), await readFile(join(data, 'items.schema.json'), 'utf8'));
    assert.deepEqual((await readdir(root)).sort(), ['copy', 'data'], 'nothing left beside the copy');
    const orders = await readFile(join(dest, 'orders.jsonl'), 'utf8');
    const items = await readFile(join(dest, 'items.jsonl'), 'utf8');

    // One cursor: the copy is the state after exactly the first k writes, in both resources at once.
    const copied = stateOfFiles(orders, items);
    const k = lastWriteIn(copied);
    assert.deepEqual(copied, stateAfter(k), `the state after write ${k}, no skew between resources`);
    assert.ok(k >= ackedBefore, `every write acknowledged before the backup started is in the copy (${k} >= ${ackedBefore})`);
    assert.ok(k < sentAfter, `no write sent after the backup ended is in it (${k} < ${sentAfter})`);
    assert.equal(Math.max(maxStamp(orders), maxStamp(items)), Number(cursor), 'its latest change is the cursor printed');
    // The original's changes after the cursor are those of the writes after k (each entity's
    // latest, as the feed coalesces): no gap between the copy and the feed, no overlap.
    const touched = touchedAfter(k, writer);
    const fed = new Set<string>();
    for (let since = cursor; ; ) {
      const page = (await (await fetch(`${server.url}/changes?since=${since}&limit=200`)).json()) as { cursor: string; _embedded: { changes: { resource: string; id: string }[] } };
      if (page._embedded.changes.length === 0) break;
      for (const change of page._embedded.changes) fed.add(`${change.resource}/${change.id}`);
      since = page.cursor;
    }
    assert.deepEqual([...fed].sort(), [...touched].sort(), 'the feed after the cursor holds exactly the writes after the copy');

    // The copy served: the same entities with the same ETags as the original, for those not written since.
    const copy = await startServer(dest);
    for (const resource of ['orders', 'items']) {
      const listed = await listAll(`${copy.url}/${resource}`, resource);
      const expected = resource === 'orders' ? [...stateAfter(k).orders, stateAfter(k).counter] : stateAfter(k).items;
      assert.deepEqual(listed.map((e) => e.n).sort((a, b) => a - b), expected.sort((a, b) => a - b));
      for (const entity of listed) {
        const there = await fetch(`${copy.url}/${resource}/${entity.id}`);
        const here = await fetch(`${server.url}/${resource}/${entity.id}`);
        const changedSince = entity.id === 'counter' ? stateAfter(sentAfter + 20).counter !== entity.n : here.status === 404;
        if (!changedSince) {
          assert.equal(there.headers.get('etag'), here.headers.get('etag'), `${resource}/${entity.id}: same version`);
          assert.deepEqual(await there.json(), await here.json());
        }
      }
    }
    // A new feed: the original's cursor is refused with 410; the copy's own cursors resume.
    const gone = await fetch(`${copy.url}/changes?since=${cursor}`);
    assert.equal(gone.status, 410);
    const now = (await (await fetch(`${copy.url}/changes?since=now`)).json()) as { cursor: string };
    assert.match(now.cursor, new RegExp(`^b[0-9a-f]+-${cursor}$`), 'the copy names its cursors, at the same number');
    const created = await fetch(`${copy.url}/items`, { method: 'POST', headers: JSON_HEADERS, body: '{"n":-1}' });
    assert.equal(created.status, 201);
    const resumed = (await (await fetch(`${copy.url}/changes?since=${now.cursor}`)).json()) as { _embedded: { changes: { entity: { n: number } }[] } };
    assert.deepEqual(resumed._embedded.changes.map((c) => c.entity.n), [-1]);
    for (const proc of [server, copy]) {
      proc.child.kill('SIGTERM');
      assert.equal(await proc.exited, 0);
    }
  });

  test('a keyed write the copy holds -> its retry against a server on the copy replays the first answer (README, docs/storage.md §4)', async () => {
    const root = await tempDir();
    const data = join(root, 'data');
    const dest = join(root, 'copy');
    await mkdir(data);
    await writeFile(join(data, 'things.jsonl'), '');
    const server = await startServer(data);
    const post = (url: string): Promise<Response> =>
      fetch(`${url}/things`, { method: 'POST', headers: { ...JSON_HEADERS, 'idempotency-key': '"retry-me"' }, body: JSON.stringify({ n: 1 }) });
    const first = await post(server.url);
    assert.equal(first.status, 201);
    const firstBody = await first.text();
    const run = await halserve(['backup', '--data', data, '--to', dest]);
    assert.equal(run.code, 0, run.stderr);
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
    const copy = await startServer(dest);
    const retry = await post(copy.url);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotency-replayed'), 'true');
    assert.equal(retry.headers.get('location'), first.headers.get('location'));
    assert.equal(retry.headers.get('etag'), first.headers.get('etag'));
    assert.equal(await retry.text(), firstBody);
    const listed = (await (await fetch(`${copy.url}/things`)).json()) as { count: number };
    assert.equal(listed.count, 1, 'written once');
    copy.child.kill('SIGTERM');
    assert.equal(await copy.exited, 0);
  });

  test('bad input -> one line on stderr, exit 1, nothing written', async (t) => {
    const root = await tempDir();
    const data = join(root, 'data');
    await mkdir(data);
    await writeFile(join(data, 'things.jsonl'), '');
    const server = await startServer(data);
    const full = join(root, 'full');
    await mkdir(full);
    await writeFile(join(full, 'keep.txt'), 'mine');
    const file = join(root, 'a-file');
    await writeFile(file, 'x');
    const idle = join(root, 'idle');
    await mkdir(idle);
    await writeFile(join(idle, 'things.jsonl'), '');
    const stale = join(root, 'stale');
    await mkdir(stale);
    // A lock naming a process that is gone (a server killed).
    const gone = spawnCli(['--help']);
    await gone.exited;
    await writeFile(join(stale, '.halserve.lock'), `${gone.child.pid}\n`);
    const deaf = join(root, 'deaf');
    await mkdir(deaf);
    // Held by a running process (this one) that takes no backups.
    await writeFile(join(deaf, '.halserve.lock'), `${process.pid}\n`);
    const cases: [string, string[], RegExp][] = [
      ['a non-empty DEST', ['--data', data, '--to', full], /full is not empty/],
      ['DEST a file', ['--data', data, '--to', file], /a-file is not a directory/],
      ['DEST under a missing directory', ['--data', data, '--to', join(root, 'missing', 'copy')], /parent directory .*missing does not exist/],
      ['a data directory that does not exist', ['--data', join(root, 'nothing'), '--to', join(root, 'c1')], /data directory .*nothing does not exist/],
      ['a data directory no server holds', ['--data', idle, '--to', join(root, 'c2')], /no running server holds .*idle/],
      ['a lock whose process is gone', ['--data', stale, '--to', join(root, 'c3')], /no running server holds .*stale/],
      ['a holder that does not answer', ['--data', deaf, '--to', join(root, 'c4')], /does not answer at .*_backup\.sock/],
      ['no --to', ['--data', data], /needs --to/],
      ['an unknown option', ['--data', data, '--to', join(root, 'c5'), '--fast'], /unknown option "--fast"/],
      ['an unreachable database', ['--from', 'postgres://127.0.0.1:1/db', '--to', join(root, 'c6')], /cannot reach the database/],
      ['--from a directory', ['--from', data, '--to', join(root, 'c7')], /--from takes a postgres:\/\/ URL/],
    ];
    for (const [what, args, pattern] of cases) {
      await t.test(`${what} -> one line, exit 1`, async () => {
        assertOneLineFailure(await halserve(['backup', ...args]), pattern);
      });
    }
    assert.deepEqual(await readdir(full), ['keep.txt'], 'a non-empty DEST is left as it was');
    assert.deepEqual((await readdir(root)).sort(), ['a-file', 'data', 'deaf', 'full', 'idle', 'stale'], 'no DEST created, nothing beside');
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  });

  test('a server that stops sending mid-copy -> one line, exit 1, no DEST and nothing beside it', async () => {
    const root = await tempDir();
    const data = join(root, 'data');
    await mkdir(data);
    await writeFile(join(data, '.halserve.lock'), `${process.pid}\n`);
    // A stand-in server: announces 1,000 bytes of one resource, sends 10, and hangs up.
    const fake = net.createServer((socket) => {
      socket.once('data', () => {
        socket.write(`${JSON.stringify({ cursor: '7', forgotten: 0, heldMs: 0, resources: [{ name: 'things', bytes: 1000 }] })}\n{"id":"a",`);
        socket.end();
      });
    });
    await new Promise<void>((resolve) => fake.listen(join(data, BACKUP_SOCKET), resolve));
    try {
      const dest = join(root, 'copy');
      assertOneLineFailure(await halserve(['backup', '--data', data, '--to', dest]), /stopped sending before the copy was whole/);
      assert.deepEqual((await readdir(root)).sort(), ['data']);
      // Into an existing empty DEST: left empty.
      await mkdir(dest);
      assertOneLineFailure(await halserve(['backup', '--data', data, '--to', dest]), /stopped sending/);
      assert.deepEqual(await readdir(dest), []);
    } finally {
      await new Promise((resolve) => fake.close(resolve));
    }
  });
});

describe('halserve backup into a disk that fills up', () => {
  test('a copy that cannot be written (a file size limit, as a full disk) -> one line saying so, not that the server stopped; nothing left', async () => {
    const root = await tempDir();
    const data = join(root, 'data');
    await mkdir(data);
    await writeFile(join(data, '.halserve.lock'), `${process.pid}\n`);
    // A stand-in server that sends all it announces: 1 MiB of one resource.
    const bytes = 1024 * 1024;
    const fake = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () => {
        socket.write(`${JSON.stringify({ cursor: '7', forgotten: 0, heldMs: 0, resources: [{ name: 'things', bytes }] })}\n`);
        socket.end(Buffer.alloc(bytes, 0x20));
      });
    });
    await new Promise<void>((resolve) => fake.listen(join(data, BACKUP_SOCKET), resolve));
    try {
      // No file of the backup may grow past 256 KiB (ulimit -f counts KiB): its writes fail with
      // EFBIG, as they would with ENOSPC on a full disk (Node ignores SIGXFSZ).
      const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
      const child = spawn('sh', ['-c', 'ulimit -f 256 && exec "$@"', 'sh', process.execPath, '--import', 'tsx', cli, 'backup', '--data', data, '--to', join(root, 'copy')], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const code = await new Promise<number | string>((resolve) => child.once('exit', (c, signal) => resolve(c ?? signal ?? -1)));
      assertOneLineFailure({ code, stdout, stderr }, /cannot write the copy into .*: EFBIG/);
      assert.doesNotMatch(stderr, /stopped sending/);
      assert.deepEqual(await readdir(root), ['data'], 'nothing at DEST or beside it');
    } finally {
      await new Promise((resolve) => fake.close(resolve));
    }
  });
});

describe('halserve backup interrupted', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`${signal} while the copy is written -> one line, exit ${signal === 'SIGINT' ? 130 : 143}, the partial copy removed: nothing beside DEST`, async () => {
      const root = await tempDir();
      const data = join(root, 'data');
      await mkdir(data);
      await writeFile(join(data, '.halserve.lock'), `${process.pid}\n`);
      // A stand-in server: announces 1,000,000 bytes of one resource, sends some, and waits.
      let sent!: () => void;
      const sending = new Promise<void>((resolve) => (sent = resolve));
      const fake = net.createServer((socket) => {
        socket.once('data', () => {
          socket.write(`${JSON.stringify({ cursor: '7', forgotten: 0, heldMs: 0, resources: [{ name: 'things', bytes: 1_000_000 }] })}\n{"id":"a",`, () => sent());
        });
      });
      await new Promise<void>((resolve) => fake.listen(join(data, BACKUP_SOCKET), resolve));
      try {
        const run = spawnCli(['backup', '--data', data, '--to', join(root, 'copy')]);
        await sending;
        // The staging directory is made before the copy is asked for: it is there now.
        assert.equal((await readdir(root)).filter((name) => name.startsWith('.copy.backup-partial-')).length, 1);
        run.child.kill(signal);
        assert.equal(await run.exited, signal === 'SIGINT' ? 130 : 143);
        assert.equal(run.stderr(), `halserve: backup interrupted (${signal}): nothing written\n`);
        assert.deepEqual((await readdir(root)).sort(), ['data']);
      } finally {
        await new Promise((resolve) => fake.close(resolve));
      }
    });
  }
});

describe('halserve backup killed (kill -9) while it copies into an existing DEST', () => {
  test('DEST holds only .backup-partial-… -> halserve --data DEST and halserve import --from DEST refuse it in one line, instead of taking it for a data set', async () => {
    const root = await tempDir();
    const data = join(root, 'data');
    const dest = join(root, 'copy');
    await mkdir(data);
    await mkdir(dest);
    await writeFile(join(data, '.halserve.lock'), `${process.pid}\n`);
    // A stand-in server: announces 1,000,000 bytes of one resource, sends some, and waits.
    let sent!: () => void;
    const sending = new Promise<void>((resolve) => (sent = resolve));
    const fake = net.createServer((socket) => {
      // The killed client resets the connection.
      socket.on('error', () => {});
      socket.once('data', () => {
        socket.write(`${JSON.stringify({ cursor: '7', forgotten: 0, heldMs: 0, resources: [{ name: 'things', bytes: 1_000_000 }] })}\n{"id":"a",`, () => sent());
      });
    });
    await new Promise<void>((resolve) => fake.listen(join(data, BACKUP_SOCKET), resolve));
    try {
      const run = spawnCli(['backup', '--data', data, '--to', dest]);
      await sending;
      run.child.kill('SIGKILL');
      assert.equal(await run.exited, 'SIGKILL');
    } finally {
      await new Promise((resolve) => fake.close(resolve));
    }
    const [partial, ...others] = await readdir(dest);
    assert.match(partial!, /^\.backup-partial-/);
    assert.deepEqual(others, []);
    // A server that starts on it (the defect) is stopped, and the test fails on its exit code.
    const server = spawnCli(['--port', '0', '--data', dest, '--log', 'off']);
    await eventually(() => server.child.exitCode !== null || server.stdout().includes('listening'), 'the server to exit or listen');
    if (server.child.exitCode === null) server.child.kill('SIGTERM');
    assert.equal(await server.exited, 1, server.stdout());
    assert.match(server.stderr(), /holds \.backup-partial-\S+: a halserve backup into it did not finish, so it is not a whole copy/);
    const imported = await halserve(['import', '--from', dest, '--to', 'postgres://127.0.0.1:1/db']);
    assertOneLineFailure(imported, /holds \.backup-partial-\S+: a halserve backup into it did not finish/);
    assert.deepEqual(await readdir(dest), [partial], 'nothing written into DEST');
  });
});

describe('halserve backup: which store, from its flags or the environment the server reads', () => {
  const url = 'postgres://u:p@db:5432/shop';
  test('neither --data nor --from -> the database of HALSERVE_STORE (then DATABASE_URL), schema files from HALSERVE_DATA; else HALSERVE_DATA', () => {
    assert.deepEqual(parseBackupArgs(['--to', 'b'], { HALSERVE_STORE: url, HALSERVE_DATA: '/data' }), { dir: '/data', url, to: 'b' });
    assert.deepEqual(parseBackupArgs(['--to', 'b'], { DATABASE_URL: url }), { dir: undefined, url, to: 'b' });
    assert.deepEqual(parseBackupArgs(['--to', 'b'], { HALSERVE_DATA: '/data' }), { dir: '/data', url: undefined, to: 'b' });
  });
  test('a flag wins over the environment: --data is a file backup, --from that database (without HALSERVE_DATA)', () => {
    assert.deepEqual(parseBackupArgs(['--data', 'd', '--to', 'b'], { HALSERVE_STORE: url }), { dir: 'd', url: undefined, to: 'b' });
    const other = 'postgres://x@h/other';
    assert.deepEqual(parseBackupArgs(['--from', other, '--to', 'b'], { HALSERVE_STORE: url, HALSERVE_DATA: '/data' }), { dir: undefined, url: other, to: 'b' });
  });
  test('HALSERVE_STORE that is not a postgres:// URL, or nothing at all -> a one-line error', () => {
    assert.throws(() => parseBackupArgs(['--to', 'b'], { HALSERVE_STORE: 'mysql://db/x' }), /HALSERVE_STORE \/ DATABASE_URL must be a postgres:\/\/ URL/);
    assert.throws(() => parseBackupArgs(['--to', 'b'], {}), /needs --data <data-dir> \(or HALSERVE_DATA\), or --from postgres:\/\//);
  });
});
