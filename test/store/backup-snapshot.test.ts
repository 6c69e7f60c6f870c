/**
 * A data directory's snapshot (`DataDir.snapshot`, log-prefix.ts): every resource as of one
 * cursor, even while batches of two resources are durable out of order, and readable as taken
 * while a compaction replaces the files. In-process, on temporary directories, with the file
 * system seam holding one store's sync open.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { changesText, parseChangesText } from '../../src/store/log/changes-file.js';
import { openDataDir, type DataDir, type DataSnapshot } from '../../src/store/log/data-dir.js';
import type { JsonlStore } from '../../src/store/log/jsonl-store.js';
import { prefixThrough } from '../../src/store/log/log-prefix.js';
import type { StoreFs } from '../../src/store/log/store-fs.js';
import { readCursor } from '../../src/store/changes/local-feed.js';
import { syncSeam, tempDir } from './helpers.js';

const rec = (id: string, n = 0) => ({ id, createdAt: 1, updatedAt: 1, n });
const store = (data: DataDir, name: string): JsonlStore => data.stores.get(name) as JsonlStore;

/** The file system, with the durability points of files whose name contains `held` waiting for `release` (`syncSeam`). */
function holdingSyncs(held: string): { fs: StoreFs; holding: () => number; release: () => void } {
  const { fs: fsys, fault } = syncSeam((file) => file.includes(held));
  let waiting: (() => void)[] = [];
  fault.sync = () => new Promise<void>((resolve) => waiting.push(resolve));
  return {
    fs: fsys,
    holding: () => waiting.length,
    release: () => {
      delete fault.sync;
      for (const resolve of waiting) resolve();
      waiting = [];
    },
  };
}

/** Every resource's bytes of the snapshot through its cursor. */
async function copied(snap: DataSnapshot): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const { name, view } of snap.resources) {
    if (view === undefined) {
      files.set(name, '');
      continue;
    }
    const end = await prefixThrough(view.read, view.size, snap.seq);
    const buffer = Buffer.alloc(end);
    await view.read(buffer, end, 0);
    files.set(name, buffer.toString('utf8'));
  }
  return files;
}

const stamps = (text: string): number[] => text.split('\n').filter((l) => l !== '').map((l) => Number(/"_change":"(\d+)\./.exec(l)![1]));

test('a batch durable but not yet published (an earlier one of another resource still syncing) -> left out of a snapshot now; the backup\'s snapshot waits for it', async () => {
  const dir = await tempDir();
  const gate = holdingSyncs('orders');
  const data = await openDataDir({ dir, resources: ['items', 'orders'], durability: 'full', repair: false, warn: () => {}, fs: gate.fs, compaction: { auto: false } });
  await store(data, 'items').create(rec('i1'));
  const o1 = store(data, 'orders').create(rec('o1')); // numbered 2, its sync held
  while (gate.holding() === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  // items' batch is numbered after the held one: durable, not yet published (nor acknowledged).
  const i2 = store(data, 'items').create(rec('i2'));
  await store(data, 'items').settled();
  const snap = data.snapshot();
  assert.equal(snap.cursor, '1');
  const files = await copied(snap);
  assert.deepEqual(stamps(files.get('items')!), [1], 'i2 (numbered 3) is left out');
  assert.equal(files.get('orders'), '');
  // The backup's snapshot waits until every batch numbered before it is published.
  let taken = false;
  const pending = data.snapshotAfterPending().then((s) => ((taken = true), s));
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(taken, false, 'not while the held batch is in flight');
  gate.release();
  await Promise.all([o1, i2]);
  const later = await pending;
  const again = await copied(later);
  assert.deepEqual([...stamps(again.get('items')!), ...stamps(again.get('orders')!)].sort((a, b) => a - b), [1, 2, 3], 'every change through the new cursor, none twice');
  assert.equal(later.cursor, '3');
  await snap.release();
  await later.release();
  await data.close();
});

test('a write durable while an earlier batch of another resource still syncs -> acknowledged only once published: the feed holds it when the write resolves', async () => {
  const dir = await tempDir();
  const gate = holdingSyncs('orders');
  const data = await openDataDir({ dir, resources: ['items', 'orders'], durability: 'full', repair: false, warn: () => {}, fs: gate.fs, compaction: { auto: false } });
  const items = store(data, 'items');
  await items.create(rec('i1'));
  const o1 = store(data, 'orders').create(rec('o1')); // numbered 2, its sync held
  while (gate.holding() === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  /** What a client told its write is done would read: the feed and the latest cursor, taken as the write resolves. */
  let atAck: { ids: string[]; latest: string } | undefined;
  const feed = (): { ids: string[]; latest: string } => ({ ids: data.changes.read(undefined, 10).changes.map((c) => c.id), latest: data.changes.latest });
  const i2 = items.create(rec('i2')).then(() => void (atAck = feed()));
  await items.settled(); // i2 is durable and in the index; it is numbered 3, after the held batch
  assert.equal(items.get('i2')?.id, 'i2');
  assert.equal(atAck, undefined, 'not acknowledged while a change numbered before it is unpublished');
  assert.deepEqual(feed(), { ids: ['i1'], latest: '1' });
  // A 404 decided in a later batch, against the state i2 left: answered after i2 is published, too.
  let refusedAtAnswer: { ids: string[]; latest: string } | undefined;
  const refused = items.update('absent', (c) => c.record).then(() => void (refusedAtAnswer = feed()));
  await items.settled();
  assert.equal(refusedAtAnswer, undefined);
  gate.release();
  await o1;
  await i2;
  assert.deepEqual(atAck, { ids: ['i1', 'o1', 'i2'], latest: '3' });
  await refused;
  assert.deepEqual(refusedAtAnswer, { ids: ['i1', 'o1', 'i2'], latest: '3' });
  await data.close();
});

test('a compaction while a snapshot is held -> the snapshot reads the bytes it was taken with', async () => {
  const dir = await tempDir();
  const data = await openDataDir({ dir, resources: ['items'], durability: 'full', repair: false, warn: () => {}, compaction: { auto: false } });
  const items = store(data, 'items');
  for (let i = 0; i < 20; i++) await items.create(rec(`i${i}`, i));
  for (let i = 0; i < 20; i++) await items.update(`i${i}`, (c) => ({ ...c.record, n: -i }));
  for (let i = 0; i < 10; i++) await items.delete(`i${i}`);
  const before = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
  const snap = data.snapshot();
  assert.equal(await items.compact(), true);
  await items.create(rec('after'));
  const after = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
  assert.notEqual(after.length, before.length, 'the log was rewritten');
  assert.equal((await copied(snap)).get('items'), before);
  await snap.release();
  await data.close();
});

test('a resource never written -> no file, an empty copy', async () => {
  const dir = await tempDir();
  const data = await openDataDir({ dir, resources: ['none'], durability: 'full', repair: false, warn: () => {} });
  const snap = data.snapshot();
  assert.deepEqual([...(await copied(snap))], [['none', '']]);
  assert.equal(snap.cursor, '0');
  await snap.release();
  await data.close();
});

/** A file's bytes as a `ReadAt`. */
const reader = (text: string) => {
  const bytes = Buffer.from(text);
  return async (buffer: Buffer, length: number, position: number): Promise<number> => bytes.copy(buffer, 0, position, position + length);
};
const stamped = (id: string, seq: number, pad = 0): string => `{"id":"${id}","x":"${'y'.repeat(pad)}","_change":"${seq}.c.1"}\n`;

test('prefixThrough -> the end of the last line at or below the cursor', async () => {
  const cases: [string, string, number, number][] = [
    ['empty file', '', 5, 0],
    ['all below', stamped('a', 1) + stamped('b', 2), 2, (stamped('a', 1) + stamped('b', 2)).length],
    ['a tail above', stamped('a', 1) + stamped('b', 2) + stamped('c', 3) + stamped('d', 4), 2, (stamped('a', 1) + stamped('b', 2)).length],
    ['all above', stamped('a', 3) + stamped('b', 4), 2, 0],
    ['an unstamped line ends it', '{"id":"u"}\n' + stamped('a', 3), 2, '{"id":"u"}\n'.length],
    ['a last line without its newline', '{"id":"u"}', 0, '{"id":"u"}'.length],
    ['lines longer than the window', stamped('a', 1, 100_000) + stamped('b', 2, 200_000) + stamped('c', 3, 70_000), 2, stamped('a', 1, 100_000).length + stamped('b', 2, 200_000).length],
    ['many lines above, across windows', stamped('a', 1) + Array.from({ length: 5000 }, (_, i) => stamped(`x${i}`, i + 2)).join(''), 1, stamped('a', 1).length],
  ];
  for (const [what, text, seq, end] of cases) assert.equal(await prefixThrough(reader(text), Buffer.byteLength(text), seq), end, what);
});

test('cursors of a named data set -> <name>-<seq>; another data set\'s -> "other"; malformed -> undefined', () => {
  const cases: [string, string | undefined, number | 'other' | undefined][] = [
    ['5', undefined, 5],
    ['5', 'b0123abcd', 'other'],
    ['b0123abcd-5', 'b0123abcd', 5],
    ['b0123abcd-5', undefined, 'other'],
    ['bffff0000-5', 'b0123abcd', 'other'],
    ['b0123abcd-05', 'b0123abcd', undefined],
    ['abc', undefined, undefined],
    ['123.4', 'b0123abcd', 'other'],
    ['123.4', undefined, undefined],
    // A PostgreSQL database's cursor, named with its data set: another data set's on a named directory.
    ['p0123456789abcdef-123.4', 'b0123abcd', 'other'],
    ['p0123456789abcdef-123.4', undefined, undefined],
    ['B0123abcd-5', 'b0123abcd', undefined],
  ];
  for (const [cursor, dataset, expected] of cases) assert.equal(readCursor(cursor, dataset), expected, `${cursor} in ${dataset}`);
});

test('_changes with a data set name -> read back, and kept by a later write of the horizon', async () => {
  assert.deepEqual(parseChangesText(changesText({ forgotten: 3, dataset: 'b0123abcd' })), { forgotten: 3, dataset: 'b0123abcd' });
  assert.deepEqual(parseChangesText('{"forgotten":0}\n'), { forgotten: 0, dataset: undefined });
  assert.throws(() => parseChangesText('{"forgotten":0,"dataset":"Not one"}'), /dataset/);
  const dir = await tempDir();
  await fs.writeFile(path.join(dir, '_changes'), changesText({ forgotten: 0, dataset: 'b0123abcd' }));
  await fs.writeFile(path.join(dir, 'items.jsonl'), `{"id":"a","_deleted":true,"_change":"1.d.1"}\n{"id":"b","createdAt":1,"updatedAt":1,"_change":"2.c.1"}\n`);
  let now = 10 * 86_400_000;
  const data = await openDataDir({ dir, resources: ['items'], durability: 'full', repair: false, warn: () => {}, now: () => now, retentionMs: 1000, compaction: { auto: false } });
  assert.equal(data.changes.latest, 'b0123abcd-2');
  now += 2000;
  assert.equal(await store(data, 'items').compact(), true);
  assert.deepEqual(parseChangesText(await fs.readFile(path.join(dir, '_changes'), 'utf8')), { forgotten: 1, dataset: 'b0123abcd' });
  await data.close();
});
