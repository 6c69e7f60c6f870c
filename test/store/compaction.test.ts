import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { mock, test } from 'node:test';
import { openJsonlStore, type JsonlStore } from '../../src/store/log/jsonl-store.js';
import { nodeFs, type StoreFs } from '../../src/store/log/store-fs.js';
import { tempDir } from './helpers.js';
import { manualClock, withoutStamps } from './stamps.js';

const record = (id: string, n = 0) => ({ id, createdAt: 1, updatedAt: 1, n });
/** The file's lines without their change stamps. */
const fileLines = async (file: string): Promise<string[]> => withoutStamps(await fs.readFile(file, 'utf8')).trimEnd().split('\n');
/** Eight days: past the default retention of deletes (7 days), so that a compaction forgets them. */
const PAST_RETENTION_MS = 8 * 24 * 3600 * 1000;
const state = (store: JsonlStore): [string, string][] => Array.from(store.values(), (e) => [e.id, e.json]);

test('compact with no writes under way, deletes past retention -> one line per live entity, in creation order', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'a.jsonl');
  const clock = manualClock();
  const store = await openJsonlStore({ file, compaction: { auto: false }, now: clock.now });
  for (let i = 0; i < 100; i++) await store.create(record(`e${i}`));
  for (let i = 0; i < 100; i += 3) await store.update(`e${i}`, (c) => ({ ...c.record, n: 1 }));
  for (let i = 0; i < 100; i += 4) await store.delete(`e${i}`);
  clock.advance(PAST_RETENTION_MS);
  const before = state(store);
  assert.equal(await store.compact(), true);
  assert.deepEqual(await fileLines(file), before.map(([, json]) => json));
  assert.equal(store.lineCount, before.length);
  assert.equal(store.fileSize, (await fs.stat(file)).size);
  assert.deepEqual(state(store), before);
  await store.create(record('after'));
  await store.close();
  const reopened = await openJsonlStore({ file });
  assert.deepEqual(state(reopened), [...before, ['after', JSON.stringify(record('after'))]]);
  await reopened.close();
});

test('compaction during concurrent writes -> no write lost or blocked; file then reloads to the same state', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'b.jsonl');
  // The temporary file's sync waits until the clients have had 20 writes acknowledged, so that the
  // compaction surely overlaps the writes, however fast or busy the machine.
  const tmpFds = new Set<number>();
  let acknowledgedDuring = 0;
  let overlapped: () => void = () => {};
  const overlap = new Promise<void>((resolve) => (overlapped = resolve));
  const slowTmpSync: StoreFs = {
    ...nodeFs,
    open: async (name, flags, mode) => {
      const fd = await nodeFs.open(name, flags, mode);
      if (name.endsWith('.tmp')) tmpFds.add(fd);
      return fd;
    },
    fdatasync: async (fd) => {
      if (tmpFds.has(fd)) await overlap;
      await nodeFs.fdatasync(fd);
    },
  };
  const clock = manualClock();
  const store = await openJsonlStore({ file, fs: slowTmpSync, compaction: { auto: false }, now: clock.now });
  await Promise.all(Array.from({ length: 5000 }, (_, i) => store.create(record(`e${i}`))));
  await Promise.all(Array.from({ length: 5000 }, (_, i) => (i % 2 ? store.delete(`e${i}`) : store.update(`e${i}`, (c) => ({ ...c.record, n: 1 })))));
  let done = false;
  // Four clients keep writing until the compaction has finished.
  const clients = Array.from({ length: 4 }, async (_, c) => {
    for (let i = 0; !done; i++) {
      const id = `c${c}-${i}`;
      await store.create(record(id));
      if (!done && ++acknowledgedDuring === 20) overlapped();
      await store.update(id, (cur) => ({ ...cur.record, n: 2 }));
      if (i % 3 === 0) await store.delete(id);
      if (i % 5 === 0) await store.update(`e${i * 2}`, (cur) => ({ ...cur.record, n: 3 }));
    }
  });
  const compacted = await store.compact();
  done = true;
  await Promise.all(clients);
  assert.equal(compacted, true);
  assert.ok(acknowledgedDuring >= 20, 'writes went on during the compaction');
  await store.settled();
  const before = state(store);
  await store.close();
  clock.advance(PAST_RETENTION_MS);
  const reopened = await openJsonlStore({ file, compaction: { auto: false }, now: clock.now });
  assert.deepEqual(state(reopened), before);
  // Compacted again while idle, every delete past retention: exactly the live entities.
  assert.equal(await reopened.compact(), true);
  assert.deepEqual(await fileLines(file), before.map(([, json]) => json));
  await reopened.close();
});

test('more than twice the lines needed, over the size threshold -> compacted automatically', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'c.jsonl');
  const store = await openJsonlStore({ file, compaction: { minBytes: 500 } });
  for (let i = 0; i < 10; i++) await store.create(record(`e${i}`));
  for (let round = 0; round < 30; round++) await store.update(`e${round % 10}`, (c) => ({ ...c.record, n: round }));
  await store.settled();
  assert.ok(store.lineCount <= 20, `${store.lineCount} lines for 10 entities`);
  assert.equal(store.fileSize, (await fs.stat(file)).size);
  const before = state(store);
  await store.close();
  const reopened = await openJsonlStore({ file });
  assert.deepEqual(state(reopened), before);
  await reopened.close();
});

test('under the size threshold -> no automatic compaction', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'd.jsonl');
  const store = await openJsonlStore({ file });
  await store.create(record('only'));
  for (let i = 0; i < 50; i++) await store.update('only', (c) => ({ ...c.record, n: i }));
  await store.settled();
  assert.equal(store.lineCount, 51);
  await store.close();
});

test('every entity deleted, past retention -> compaction leaves an empty file', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'e.jsonl');
  const clock = manualClock();
  const store = await openJsonlStore({ file, compaction: { auto: false }, now: clock.now });
  for (let i = 0; i < 5; i++) await store.create(record(`e${i}`));
  for (let i = 0; i < 5; i++) await store.delete(`e${i}`);
  clock.advance(PAST_RETENTION_MS);
  assert.equal(await store.compact(), true);
  assert.equal(await fs.readFile(file, 'utf8'), '');
  await store.create(record('new'));
  await store.close();
  assert.deepEqual(await fileLines(file), [JSON.stringify(record('new'))]);
});

test('close while a compaction runs -> it finishes or is abandoned; no temporary file; data intact', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'f.jsonl');
  const store = await openJsonlStore({ file, compaction: { auto: false } });
  await Promise.all(Array.from({ length: 3000 }, (_, i) => store.create(record(`e${i}`))));
  const before = state(store);
  const compaction = store.compact();
  await store.close();
  await compaction;
  await assert.rejects(fs.stat(`${file}.tmp`), { code: 'ENOENT' });
  const reopened = await openJsonlStore({ file });
  assert.deepEqual(state(reopened), before);
  await reopened.close();
});

test('the wall clock steps two hours forward while a compaction runs -> no warning that it took two hours', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'a.jsonl');
  const wall = Date.now.bind(Date);
  let step = 0;
  // The step (NTP, a VM resumed) comes while the temporary file is synced.
  const stepping: StoreFs = {
    ...nodeFs,
    fdatasync: async (fd) => {
      step = 2 * 3600 * 1000;
      await nodeFs.fdatasync(fd);
    },
  };
  const warnings: string[] = [];
  const clock = manualClock();
  const store = await openJsonlStore({ file, fs: stepping, compaction: { auto: false }, now: clock.now, warn: (m) => warnings.push(m) });
  for (let i = 0; i < 10; i++) await store.create(record(`e${i}`));
  const stepped = mock.method(Date, 'now', () => wall() + step);
  try {
    assert.equal(await store.compact(), true);
  } finally {
    stepped.mock.restore();
  }
  assert.deepEqual(warnings, []);
  await store.close();
});
