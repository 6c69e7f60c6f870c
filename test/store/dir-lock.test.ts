import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LOCK_FILE, lockDirectory } from '../../src/store/log/dir-lock.js';
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
    new StoreOpenError(`data directory ${dir} is in use by process ${other} (lock file ${file})`),
  );
  assert.deepEqual(judged, [dead, other]);
  assert.deepEqual(messages, [], 'nothing taken over');
  assert.equal(await fs.readFile(file, 'utf8'), `${other}\n`);
  assert.deepEqual((await fs.readdir(dir)).sort(), [LOCK_FILE], 'nothing left aside');
});

test('a stale lock -> taken over; nothing of the takeover left in the directory; released -> gone', async () => {
  const dir = await tempDir();
  const file = path.join(dir, LOCK_FILE);
  await fs.writeFile(file, `${deadPid()}\n`);
  const lock = await lockDirectory(dir, () => {});
  assert.equal(await fs.readFile(file, 'utf8'), `${process.pid}\n`);
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
