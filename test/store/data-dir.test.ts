import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { discoverResources, numbersMetTwice, openDataDir } from '../../src/store/log/data-dir.js';
import { LOCK_FILE, lockText, pidNamespace } from '../../src/store/log/dir-lock.js';
import { StoreOpenError } from '../../src/store/store.js';
import { line, tempDir, warnings } from './helpers.js';
import { withoutStamps } from './stamps.js';

const options = (dir: string, resources: string[], warn: (m: string) => void = () => {}) => ({
  dir,
  resources,
  durability: 'full' as const,
  repair: false,
  warn,
});

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

test('directory with logs, links, temporaries, rejects and others -> the .jsonl file names, sorted', async () => {
  const dir = await tempDir();
  for (const name of ['b.jsonl', 'a.jsonl', 'a.jsonl.tmp', 'a.jsonl.rejected', 'c.json', '.jsonl', 'a.schema.json']) {
    await fs.writeFile(path.join(dir, name), '');
  }
  await fs.mkdir(path.join(dir, 'd.jsonl'));
  await fs.symlink(path.join(dir, 'b.jsonl'), path.join(dir, 'linked.jsonl'));
  await fs.symlink(path.join(dir, 'absent'), path.join(dir, 'dangling.jsonl'));
  assert.deepEqual(await discoverResources(dir), ['a', 'b', 'linked']);
});

test('missing data directory -> StoreOpenError from discover and open', async () => {
  const dir = path.join(await tempDir(), 'absent');
  await assert.rejects(discoverResources(dir), new StoreOpenError(`data directory ${dir} does not exist`));
  await assert.rejects(openDataDir(options(dir, ['a'])), new StoreOpenError(`data directory ${dir} does not exist`));
});

test('open -> stores for every resource, lock file with our pid; close -> synced and lock gone', async () => {
  const dir = await tempDir();
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${line('i1')}\n`);
  const data = await openDataDir(options(dir, ['items', 'orders']));
  assert.deepEqual([...data.stores.keys()], ['items', 'orders']);
  assert.equal(data.stores.get('items')?.size, 1);
  assert.equal(data.stores.get('orders')?.size, 0);
  assert.equal(await fs.readFile(path.join(dir, LOCK_FILE), 'utf8'), lockText(process.pid, pidNamespace()));
  const pending = data.stores.get('orders')!.create({ id: 'o1', createdAt: 1, updatedAt: 1 });
  await data.close();
  await pending;
  assert.equal(withoutStamps(await fs.readFile(path.join(dir, 'orders.jsonl'), 'utf8')), '{"id":"o1","createdAt":1,"updatedAt":1}\n');
  await assert.rejects(fs.stat(path.join(dir, LOCK_FILE)), { code: 'ENOENT' });
});

test('second open of a directory in use -> StoreOpenError naming the holder and the lock file', async () => {
  const dir = await tempDir();
  const first = await openDataDir(options(dir, ['items']));
  await assert.rejects(
    openDataDir(options(dir, ['items'])),
    new StoreOpenError(`data directory ${dir} is in use by this process (lock file ${path.join(dir, LOCK_FILE)})`),
  );
  await first.close();
  // A live process of someone else holds it (pid 1 always runs).
  await fs.writeFile(path.join(dir, LOCK_FILE), '1\n');
  await assert.rejects(
    openDataDir(options(dir, ['items'])),
    new StoreOpenError(
      `data directory ${dir} is in use by process 1 (lock file ${path.join(dir, LOCK_FILE)}); if process 1 is not a halserve serving it (a lock an earlier halserve left before the machine restarted), remove the lock file`,
    ),
  );
  assert.equal(await fs.readFile(path.join(dir, LOCK_FILE), 'utf8'), '1\n');
});

test('lock left by a dead process -> taken over with a warning', async () => {
  const dir = await tempDir();
  const dead = deadPid();
  await fs.writeFile(path.join(dir, LOCK_FILE), `${dead}\n`);
  const { warn, messages } = warnings();
  const data = await openDataDir(options(dir, ['items'], warn));
  assert.deepEqual(messages, [`${path.join(dir, LOCK_FILE)}: stale lock of process ${dead} (no longer running) taken over`]);
  assert.equal(await fs.readFile(path.join(dir, LOCK_FILE), 'utf8'), lockText(process.pid, pidNamespace()));
  await data.close();
});

test('empty lock file -> taken over as unreadable', async () => {
  const dir = await tempDir();
  await fs.writeFile(path.join(dir, LOCK_FILE), '');
  const { warn, messages } = warnings();
  const data = await openDataDir(options(dir, ['items'], warn));
  assert.deepEqual(messages, [`${path.join(dir, LOCK_FILE)}: unreadable lock file taken over`]);
  await data.close();
});

test('corrupt store -> StoreOpenError file:line, the lock released, other stores closed', async () => {
  const dir = await tempDir();
  await fs.writeFile(path.join(dir, 'a.jsonl'), `${line('a1')}\n`);
  await fs.writeFile(path.join(dir, 'b.jsonl'), `${line('b1')}\n{oops}\n${line('b2')}\n`);
  await assert.rejects(openDataDir(options(dir, ['a', 'b'])), (error: unknown) => {
    assert.ok(error instanceof StoreOpenError);
    assert.match(error.message, new RegExp(`^${path.join(dir, 'b.jsonl')}:2: `));
    return true;
  });
  await assert.rejects(fs.stat(path.join(dir, LOCK_FILE)), { code: 'ENOENT' });
  const repaired = await openDataDir({ ...options(dir, ['a', 'b']), repair: true });
  assert.equal(repaired.stores.get('b')?.size, 2);
  await repaired.close();
});

test('durability none -> says so at start-up', async () => {
  const dir = await tempDir();
  const { warn, messages } = warnings();
  const data = await openDataDir({ ...options(dir, ['a'], warn), durability: 'none' });
  assert.deepEqual(messages, ['durability none: writes are not synced to disk; a crash can lose acknowledged writes']);
  await data.close();
});

test('data path that is a file -> StoreOpenError', async () => {
  const file = path.join(await tempDir(), 'plain');
  await fs.writeFile(file, '');
  await assert.rejects(openDataDir(options(file, ['a'])), new StoreOpenError(`data directory ${file} is not a directory`));
});

test('numbersMetTwice -> for each log, the numbers an earlier log holds too, ascending; the same by the merge past the bit set', () => {
  const small = [Float64Array.from([1, 3, 5]), Float64Array.from([2, 3, 6]), Float64Array.from([3, 5]), Float64Array.from([])];
  assert.deepEqual(numbersMetTwice(small).map((set) => [...set]), [[], [3], [3, 5], []]);
  const huge = 2 ** 40;
  const far = [Float64Array.from([1, huge]), Float64Array.from([huge, huge + 1]), Float64Array.from([1, 2, huge + 1])];
  assert.deepEqual(numbersMetTwice(far).map((set) => [...set]), [[], [huge], [1, huge + 1]]);
});
