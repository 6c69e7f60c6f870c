import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { mock, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BACKUP_SOCKET } from '../../src/store/log/backup-protocol.js';
import { LOCK_FILE, lockDirectory, lockText, pidNamespace, processIsAlive } from '../../src/store/log/dir-lock.js';
import { StoreOpenError } from '../../src/store/store.js';
import { tempDir } from './helpers.js';

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

test('a stale lock taken over by another process between this one judging it and moving it aside -> that lock put back, this one refused', async () => {
  const dir = await tempDir();
  const file = path.join(dir, LOCK_FILE);
  const dead = deadPid();
  const other = 1; // always running
  await fs.writeFile(file, `${dead}\n`);
  const judged: number[] = [];
  const messages: string[] = [];
  await assert.rejects(
    lockDirectory(dir, (m) => messages.push(m), process.pid, (pid) => {
      judged.push(pid);
      // The other process, meanwhile, takes the stale lock over: its own lock replaces it.
      if (pid === dead) spawnSync('sh', ['-c', `rm -f "${file}" && printf '${other}\\n' > "${file}.new" && mv "${file}.new" "${file}"`]);
      return pid === other;
    }),
    new StoreOpenError(
      `data directory ${dir} is in use by process ${other} (lock file ${file}); if process ${other} is not a halserve serving it (a lock an earlier halserve left before the machine restarted), remove the lock file`,
    ),
  );
  assert.deepEqual(judged, [dead, other]);
  assert.deepEqual(messages, [], 'nothing taken over');
  assert.equal(await fs.readFile(file, 'utf8'), `${other}\n`);
  assert.deepEqual((await fs.readdir(dir)).sort(), [LOCK_FILE], 'nothing left aside');
});

for (const stale of [false, true]) {
  test(`a full disk${stale ? ', a stale lock to take over' : ''} -> refused in one line naming the lock and ENOSPC; no file of this process left behind`, async (t) => {
    const dir = await tempDir();
    const file = path.join(dir, LOCK_FILE);
    if (stale) await fs.writeFile(file, `${deadPid()}\n`);
    // A full disk: files are created (an inode is free), their writes fail.
    const open = fs.open;
    mock.method(fs, 'open', async (...args: Parameters<typeof fs.open>) => {
      const handle = await open(...args);
      if (args[1] === 'wx') {
        handle.writeFile = async () => {
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        };
      }
      return handle;
    });
    t.after(() => mock.restoreAll());
    const messages: string[] = [];
    await assert.rejects(lockDirectory(dir, (m) => messages.push(m)), (error: unknown) => {
      assert.ok(error instanceof StoreOpenError, String(error));
      assert.equal(error.message, `cannot lock data directory ${dir} (${file}): ENOSPC: no space left on device, write`);
      return true;
    });
    mock.restoreAll();
    assert.deepEqual(await fs.readdir(dir), stale ? [LOCK_FILE] : [], 'nothing left but the lock that was there');
  });
}

test('a stale lock -> taken over; nothing of the takeover left in the directory; released -> gone', async () => {
  const dir = await tempDir();
  const file = path.join(dir, LOCK_FILE);
  await fs.writeFile(file, `${deadPid()}\n`);
  const lock = await lockDirectory(dir, () => {});
  assert.equal(await fs.readFile(file, 'utf8'), lockText(process.pid, pidNamespace()));
  assert.deepEqual(await fs.readdir(dir), [LOCK_FILE]);
  await lock.release();
  assert.deepEqual(await fs.readdir(dir), []);
});

const CHILD = fileURLToPath(new URL('./dir-lock-child.ts', import.meta.url));

test('six processes taking over one stale lock at once, five times -> exactly one holds it each time', async () => {
  for (let round = 0; round < 5; round++) {
    const dir = await tempDir();
    await fs.writeFile(path.join(dir, LOCK_FILE), `${deadPid()}\n`);
    const go = path.join(dir, 'go');
    const children = Array.from({ length: 6 }, () => spawn(process.execPath, ['--import', 'tsx', CHILD, dir, go], { stdio: ['pipe', 'pipe', 'inherit'] }));
    const outcomes = children.map(
      (child) =>
        new Promise<string>((resolve) => {
          let out = '';
          child.stdout.on('data', (chunk: Buffer) => {
            out += chunk.toString();
            if (out.includes('\n') && out.trim() !== 'ready') resolve(out.trim().split('\n').pop()!);
          });
        }),
    );
    const exited = children.map((child) => new Promise((resolve) => child.on('exit', resolve)));
    try {
      // Every child waits for the same file before it tries: they start together.
      await Promise.all(children.map((child) => new Promise<void>((resolve) => child.stdout.once('data', () => resolve()))));
      await fs.writeFile(go, '');
      const results = await Promise.all(outcomes);
      assert.equal(results.filter((r) => r === 'locked').length, 1, results.join(', '));
      assert.ok(results.every((r) => r === 'locked' || r.startsWith('refused: data directory')), results.join(', '));
      for (const child of children) child.stdin.end();
    } finally {
      // Whatever happened, no child outlives the test (one waiting for its go would hold the run).
      for (const child of children) if (child.exitCode === null) child.kill();
      await Promise.all(exited);
    }
  }
});

/**
 * Two containers on one volume: each server is pid 1 of its own PID namespace, so a pid in the lock
 * says nothing about the other's process. The lock names its namespace; another's is judged by
 * whether its holder renews it (its mtime), not by probing the pid.
 */
const OTHER_CONTAINER = 'boot-of-this-host pid:[4026532999]';
const QUICK = { renewEveryMs: 20, staleAfterMs: 400 };

/** The other container's server renewing its lock every `everyMs` (its mtime set to now); cleared by the caller. */
const renewing = (file: string, everyMs: number): NodeJS.Timeout =>
  setInterval(() => {
    const now = new Date();
    void fs.utimes(file, now, now).catch(() => {});
  }, everyMs);

test('a lock of another PID namespace holding the same pid, renewed -> refused, the lock left as it was', async () => {
  const dir = await tempDir();
  const file = path.join(dir, LOCK_FILE);
  await fs.writeFile(file, `1\n${OTHER_CONTAINER}\n`);
  // The other container's server renews its lock.
  const renewal = renewing(file, QUICK.renewEveryMs);
  const messages: string[] = [];
  try {
    await assert.rejects(
      lockDirectory(dir, (m) => messages.push(m), 1, () => true, QUICK, 'boot-of-this-host pid:[4026531836]'),
      (error: Error) => error instanceof StoreOpenError && /^data directory .* is in use by process 1 of another container or PID namespace, which renews its lock \(.*\); stop that server first/.test(error.message),
    );
  } finally {
    clearInterval(renewal);
  }
  assert.deepEqual(messages, [`${file}: held by process 1 of another container or PID namespace; waiting 0.4 s to see whether its lock is renewed`]);
  assert.equal(await fs.readFile(file, 'utf8'), `1\n${OTHER_CONTAINER}\n`);
});

test('a lock of another PID namespace, renewed, while this process\'s wall clock steps forward during the watch -> still refused: the watch is not cut short', async () => {
  const dir = await tempDir();
  const file = path.join(dir, LOCK_FILE);
  await fs.writeFile(file, `1\n${OTHER_CONTAINER}\n`);
  // The other container's server renews its lock, less often than this process first looks again.
  const renewal = renewing(file, 300);
  // This process's wall clock steps two hours forward (NTP, a VM resumed) once the watch has begun.
  let step = 0;
  const wall = Date.now.bind(Date);
  const clock = mock.method(Date, 'now', () => wall() + step);
  const messages: string[] = [];
  try {
    await assert.rejects(
      lockDirectory(dir, (m) => (messages.push(m), queueMicrotask(() => (step = 2 * 3_600_000))), 1, () => true, { renewEveryMs: 100, staleAfterMs: 3_000 }, 'boot-of-this-host pid:[4026531836]'),
      (error: Error) => error instanceof StoreOpenError && /^data directory .* is in use by process 1 of another container or PID namespace, which renews its lock/.test(error.message),
    );
  } finally {
    clock.mock.restore();
    clearInterval(renewal);
  }
  assert.deepEqual(messages, [`${file}: held by process 1 of another container or PID namespace; waiting 3 s to see whether its lock is renewed`]);
  assert.equal(await fs.readFile(file, 'utf8'), `1\n${OTHER_CONTAINER}\n`);
});

test('a lock of another PID namespace, not renewed -> taken over once it has stayed unrenewed, with a warning that says so', async () => {
  const dir = await tempDir();
  const file = path.join(dir, LOCK_FILE);
  await fs.writeFile(file, `1\n${OTHER_CONTAINER}\n`);
  const messages: string[] = [];
  const ours = 'boot-of-this-host pid:[4026531836]';
  const lock = await lockDirectory(dir, (m) => messages.push(m), 1, () => true, QUICK, ours);
  assert.deepEqual(messages, [
    `${file}: held by process 1 of another container or PID namespace; waiting 0.4 s to see whether its lock is renewed`,
    `${file}: stale lock of process 1 (of another container or PID namespace, not renewed for 0.4 s) taken over`,
  ]);
  assert.equal(await fs.readFile(file, 'utf8'), `1\n${ours}\n`);
  await lock.release();
  assert.deepEqual(await fs.readdir(dir), []);
});

test('released while another PID namespace holds the lock with the same pid -> its lock left in place', async () => {
  const dir = await tempDir();
  const file = path.join(dir, LOCK_FILE);
  const lock = await lockDirectory(dir, () => {}, 1, () => true, QUICK, 'boot-of-this-host pid:[4026531836]');
  // Taken over meanwhile by a server of another container, pid 1 there too.
  await fs.writeFile(file, `1\n${OTHER_CONTAINER}\n`);
  await lock.release();
  assert.equal(await fs.readFile(file, 'utf8'), `1\n${OTHER_CONTAINER}\n`);
  lock.releaseNow();
  assert.equal(await fs.readFile(file, 'utf8'), `1\n${OTHER_CONTAINER}\n`);
});

test('an earlier halserve\'s lock (its pid alone) naming this pid, its server answering on the backup socket -> refused; once it has stopped -> taken over', async (t) => {
  const dir = await tempDir();
  const file = path.join(dir, LOCK_FILE);
  // An earlier halserve in another container, pid 1 there as the starting one is here: its lock
  // says nothing more, and is never renewed.
  await fs.writeFile(file, '1\n');
  const earlier = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => earlier.listen(path.join(dir, BACKUP_SOCKET), resolve));
  t.after(() => {
    if (earlier.listening) earlier.close();
  });
  const messages: string[] = [];
  const ours = 'boot-of-this-host pid:[4026531836]';
  await assert.rejects(
    lockDirectory(dir, (m) => messages.push(m), 1, () => true, QUICK, ours),
    new StoreOpenError(
      `data directory ${dir} is in use by process 1 of an earlier halserve, of another container or PID namespace: it answers on ${BACKUP_SOCKET} (lock file ${file}); stop that server first (two servers on one data directory lose writes)`,
    ),
  );
  assert.deepEqual(messages, []);
  assert.equal(await fs.readFile(file, 'utf8'), '1\n');
  // Killed: its socket file is left, and refuses.
  await new Promise((resolve) => earlier.close(resolve));
  const killed = spawn(process.execPath, ['-e', `require('node:net').createServer().listen(${JSON.stringify(path.join(dir, BACKUP_SOCKET))}, () => console.log('ready'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => killed.kill('SIGKILL'));
  await new Promise((resolve) => killed.stdout.once('data', resolve));
  killed.kill('SIGKILL');
  await new Promise((resolve) => killed.once('exit', resolve));
  const later: string[] = [];
  const lock = await lockDirectory(dir, (m) => later.push(m), 1, () => true, QUICK, ours);
  assert.deepEqual(later, [`${file}: stale lock of process 1 (no longer running) taken over`]);
  assert.equal(await fs.readFile(file, 'utf8'), `1\n${ours}\n`);
  await lock.release();
});

test('a held lock is renewed (its mtime moves on) until released', async () => {
  const dir = await tempDir();
  const file = path.join(dir, LOCK_FILE);
  const lock = await lockDirectory(dir, () => {}, process.pid, processIsAlive, QUICK);
  const first = (await fs.stat(file)).mtimeMs;
  // Only a bound for liveness: the renewal comes every 20 ms.
  for (let tries = 0; (await fs.stat(file)).mtimeMs === first; tries++) {
    assert.ok(tries < 500, 'the lock was never renewed');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await lock.release();
  assert.deepEqual(await fs.readdir(dir), []);
});
