import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { nodeFs, writeFully, type StoreFs } from '../../src/store/log/store-fs.js';
import { StoreWriteError } from '../../src/store/store.js';
import { syncSeam, tempDir, warnings } from './helpers.js';
import { withoutStamps } from './stamps.js';

/** A line's id, `-<id>` for a delete. */
const idOrDelete = (line: string): string => {
  const parsed = JSON.parse(line) as { id: string; _deleted?: true };
  return parsed._deleted ? `-${parsed.id}` : parsed.id;
};

/**
 * The real file system with one call replaceable at a time; `synced: false` takes its synced
 * writes away (`StoreFs.syncedWrites`), so that the log writes, then calls `fdatasync`, as on a
 * platform without O_DSYNC.
 */
function faultyFs({ synced = true }: { synced?: boolean } = {}): { fs: StoreFs; fail: Partial<StoreFs> } {
  const fail: Partial<StoreFs> = {};
  const proxy = new Proxy(nodeFs, {
    get(target, key: keyof StoreFs) {
      if (key === 'syncedWrites' && !synced) return undefined;
      return fail[key] ?? target[key];
    },
  });
  return { fs: proxy, fail };
}

/** The flags the log at `file` was opened with, each time, and the fdatasyncs of its descriptors (a compaction's file's included). */
function watchLog(fail: Partial<StoreFs>, file: string): { opens: number[]; syncs: () => number } {
  const opens: number[] = [];
  const fds = new Set<number>();
  let syncs = 0;
  fail.open = async (name, flags, mode) => {
    const fd = await nodeFs.open(name, flags, mode);
    if (name === file) opens.push(flags);
    if (name === file || name === `${file}.tmp`) fds.add(fd);
    return fd;
  };
  fail.fdatasync = async (fd) => {
    if (fds.has(fd)) syncs++;
    await nodeFs.fdatasync(fd);
  };
  return { opens, syncs: () => syncs };
}

const SYNCED = nodeFs.syncedWrites;

const diskFull = (): Error => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
const ioError = (): Error => Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
const record = (id: string, n = 0) => ({ id, createdAt: 1, updatedAt: 1, n });

test('write fails after a partial write -> StoreWriteError, state and file as before, next write fine', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'w.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const store = await openJsonlStore({ file, fs: fsys });
  await store.create(record('a'));
  const before = await fs.readFile(file, 'utf8');
  // Half a line reaches the file, then the disk is full.
  fail.write = async (fd, buffer, offset, length, position) => {
    await nodeFs.write(fd, buffer, offset, Math.floor(length / 2), position);
    throw diskFull();
  };
  const results = await Promise.allSettled([store.create(record('b')), store.update('a', (c) => ({ ...c.record, n: 9 })), store.delete('a')]);
  for (const r of results) {
    assert.equal(r.status, 'rejected');
    assert.ok(r.reason instanceof StoreWriteError);
    assert.match(r.reason.message, /ENOSPC/);
  }
  assert.equal(store.size, 1);
  assert.equal(store.get('a')?.record.n, 0);
  assert.equal(store.get('b'), undefined);
  assert.equal(await fs.readFile(file, 'utf8'), before, 'the partial line was truncated away');
  delete fail.write;
  await store.create(record('c'));
  await store.close();
  const reopened = await openJsonlStore({ file });
  assert.deepEqual(Array.from(reopened.values(), (e) => e.id), ['a', 'c']);
  await reopened.close();
});

test('a batch fails after whole lines reached the disk -> the cut is synced before the batch is refused (a power loss then cannot bring the lines back)', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'p.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const store = await openJsonlStore({ file, fs: fsys });
  await store.create(record('a'));
  const calls: string[] = [];
  fail.write = async (fd, buffer, offset, length, position) => {
    // Through the synced descriptor: the line is on disk, then the disk is full.
    await nodeFs.write(fd, buffer, offset, length, position);
    throw diskFull();
  };
  fail.ftruncate = async (fd, length) => {
    calls.push('ftruncate');
    await nodeFs.ftruncate(fd, length);
  };
  fail.fdatasync = async (fd) => {
    calls.push('fdatasync');
    await nodeFs.fdatasync(fd);
  };
  await assert.rejects(store.create(record('b')), StoreWriteError);
  assert.deepEqual(calls, ['ftruncate', 'fdatasync']);
  assert.equal(store.get('b'), undefined);
  await store.close();
});

test('without synced writes: fdatasync fails -> StoreWriteError, unacknowledged line removed, reads go on', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 's.jsonl');
  const { fs: fsys, fail } = faultyFs({ synced: false });
  const store = await openJsonlStore({ file, fs: fsys });
  await store.create(record('a'));
  const before = await fs.readFile(file, 'utf8');
  fail.fdatasync = async () => {
    throw ioError();
  };
  await assert.rejects(store.create(record('b')), (error: unknown) => error instanceof StoreWriteError && /EIO/.test(error.message));
  assert.equal(store.get('b'), undefined);
  assert.deepEqual([...store.values()].map((e) => e.id), ['a']);
  assert.equal(await fs.readFile(file, 'utf8'), before);
  delete fail.fdatasync;
  const b = await store.create(record('b'));
  assert.equal(store.get('b'), b);
  await store.close();
  assert.equal(withoutStamps(await fs.readFile(file, 'utf8')), `${withoutStamps(before)}{"id":"b","createdAt":1,"updatedAt":1,"n":0}\n`);
});

test('write and the clean-up truncate both fail -> next write truncates first; file never holds debris', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 't.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const store = await openJsonlStore({ file, fs: fsys });
  await store.create(record('a'));
  const before = await fs.readFile(file, 'utf8');
  fail.write = async (fd, buffer, offset, length, position) => {
    await nodeFs.write(fd, buffer, offset, length - 3, position);
    throw diskFull();
  };
  fail.ftruncate = async () => {
    throw ioError();
  };
  await assert.rejects(store.create(record('a-long-id-so-that-debris-is-longer')), StoreWriteError);
  assert.notEqual(await fs.readFile(file, 'utf8'), before, 'debris is there while truncate fails');
  delete fail.write;
  // Truncation still failing: the next write must not append after the debris.
  await assert.rejects(store.create(record('x')), StoreWriteError);
  delete fail.ftruncate;
  await store.create(record('y'));
  assert.equal(withoutStamps(await fs.readFile(file, 'utf8')), `${withoutStamps(before)}{"id":"y","createdAt":1,"updatedAt":1,"n":0}\n`);
  await store.close();
});

test('first write cannot create the file -> StoreWriteError; later write creates it', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'new.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const store = await openJsonlStore({ file, fs: fsys });
  fail.open = async () => {
    throw Object.assign(new Error('EACCES: permission denied, open'), { code: 'EACCES' });
  };
  await assert.rejects(store.create(record('a')), /EACCES/);
  assert.equal(store.size, 0);
  delete fail.open;
  await store.create(record('a'));
  assert.equal(store.size, 1);
  await store.close();
});

test('directory sync fails after creating the file -> write not acknowledged, retried next time', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'd.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const store = await openJsonlStore({ file, fs: fsys });
  let dirSyncs = 0;
  fail.fsync = async () => {
    dirSyncs++;
    throw ioError();
  };
  await assert.rejects(store.create(record('a')), StoreWriteError);
  assert.equal(store.size, 0);
  delete fail.fsync;
  await store.create(record('b'));
  assert.equal(dirSyncs, 1);
  assert.equal(withoutStamps(await fs.readFile(file, 'utf8')), '{"id":"b","createdAt":1,"updatedAt":1,"n":0}\n');
  await store.close();
});

test('synced write fails at its sync (EIO once its bytes are in the file) -> StoreWriteError, unacknowledged line removed, reads go on', { skip: SYNCED === undefined }, async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'e.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const store = await openJsonlStore({ file, fs: fsys });
  await store.create(record('a'));
  const before = await fs.readFile(file, 'utf8');
  fail.write = async (fd, buffer, offset, length, position) => {
    await nodeFs.write(fd, buffer, offset, length, position);
    throw ioError();
  };
  await assert.rejects(store.create(record('b')), (error: unknown) => error instanceof StoreWriteError && /EIO/.test(error.message));
  assert.equal(store.get('b'), undefined);
  assert.deepEqual([...store.values()].map((e) => e.id), ['a']);
  assert.equal(await fs.readFile(file, 'utf8'), before, 'the unacknowledged line was truncated away');
  delete fail.write;
  const b = await store.create(record('b'));
  assert.equal(store.get('b'), b);
  await store.close();
  assert.equal(withoutStamps(await fs.readFile(file, 'utf8')), `${withoutStamps(before)}{"id":"b","createdAt":1,"updatedAt":1,"n":0}\n`);
});

test('durable log -> opened with synced writes (O_DSYNC): one write per batch, no fdatasync, also after a compaction reopens it', { skip: SYNCED === undefined }, async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'd.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const log = watchLog(fail, file);
  let writes = 0;
  fail.write = async (fd, buffer, offset, length, position) => {
    writes++;
    return nodeFs.write(fd, buffer, offset, length, position);
  };
  const store = await openJsonlStore({ file, fs: fsys, compaction: { auto: false } });
  await store.create(record('a'));
  await Promise.all([store.create(record('b')), store.create(record('c'))]);
  assert.equal(log.opens.length, 1);
  assert.equal(log.opens[0]! & SYNCED!, SYNCED, 'the log is opened with synced writes');
  assert.equal(writes, 2, 'one write per batch');
  assert.equal(log.syncs(), 0, 'no fdatasync after a synced write');
  await store.delete('a');
  assert.equal(await store.compact(), true);
  assert.equal(log.opens.length, 2, 'the compacted file is opened again by its name');
  assert.equal(log.opens[1]! & SYNCED!, SYNCED);
  const compacted = log.syncs();
  await store.create(record('d'));
  assert.equal(log.syncs(), compacted, 'appends after the compaction are synced writes too');
  await store.close();
  // The delete is kept for the change feed's retention.
  assert.deepEqual((await fs.readFile(file, 'utf8')).trimEnd().split('\n').map(idOrDelete), ['-a', 'b', 'c', 'd']);
});

test('synced writes, the compacted file cannot be opened again -> its own descriptor serves, with an fdatasync after each write', { skip: SYNCED === undefined }, async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'r.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const log = watchLog(fail, file);
  const store = await openJsonlStore({ file, fs: fsys, compaction: { auto: false } });
  await store.create(record('a'));
  await store.create(record('b'));
  await store.delete('a');
  const open = fail.open!;
  fail.open = async (name, flags, mode) => {
    if (name === file) throw Object.assign(new Error('EMFILE: too many open files, open'), { code: 'EMFILE' });
    return open(name, flags, mode);
  };
  assert.equal(await store.compact(), true);
  fail.open = open;
  const compacted = log.syncs();
  await store.create(record('c'));
  assert.equal(log.syncs() - compacted, 1, 'the append after the compaction was synced by fdatasync');
  await store.close();
  const reopened = await openJsonlStore({ file });
  assert.deepEqual(Array.from(reopened.values(), (e) => e.id), ['b', 'c']);
  await reopened.close();
});

test('durability none -> no fdatasync per write; one at close', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'n.jsonl');
  const { fs: fsys, fail } = faultyFs();
  let syncs = 0;
  fail.fdatasync = async () => {
    syncs++;
  };
  const store = await openJsonlStore({ file, fs: fsys, durability: 'none' });
  await Promise.all([store.create(record('a')), store.create(record('b'))]);
  await store.create(record('c'));
  assert.equal(syncs, 0);
  await store.close();
  assert.equal(syncs, 1);
  assert.equal((await fs.readFile(file, 'utf8')).split('\n').length, 4);
});

for (const synced of [true, false]) {
  test(`concurrent writes -> share syncs (group commit)${synced ? '' : ', without synced writes'}`, async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'g.jsonl');
    // The log's durability points: its synced writes, or its fdatasyncs.
    const { fs: seamFs, events } = syncSeam((name) => name === file);
    const { syncedWrites, ...unsynced } = seamFs;
    const fsys: StoreFs = synced ? { ...unsynced, ...(syncedWrites === undefined ? {} : { syncedWrites }) } : unsynced;
    const store = await openJsonlStore({ file, fs: fsys });
    await Promise.all(Array.from({ length: 200 }, (_, i) => store.create(record(`g${i}`))));
    assert.equal(store.size, 200);
    const syncs = events.filter((e) => e === 'sync g.jsonl').length;
    assert.ok(syncs >= 1 && syncs <= 2, `200 concurrent creates took ${syncs} syncs`);
    await store.close();
  });
}

test('compaction whose temporary file cannot be written -> warning, log untouched, writes go on', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'c.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const { warn, messages } = warnings();
  const store = await openJsonlStore({ file, fs: fsys, warn, compaction: { auto: false } });
  for (let i = 0; i < 10; i++) await store.create(record(`c${i}`));
  for (let i = 0; i < 5; i++) await store.delete(`c${i}`);
  const before = await fs.readFile(file, 'utf8');
  fail.write = async (fd, buffer, offset, length, position) => {
    // Only the temporary file is written from position 0 during compaction.
    if (position === 0) throw diskFull();
    return nodeFs.write(fd, buffer, offset, length, position);
  };
  assert.equal(await store.compact(), false);
  assert.equal(messages.length, 1);
  assert.match(messages[0]!, /c\.jsonl: compaction failed: ENOSPC/);
  assert.equal(await fs.readFile(file, 'utf8'), before);
  await assert.rejects(fs.stat(`${file}.tmp`), { code: 'ENOENT' });
  await store.create(record('after'));
  delete fail.write;
  assert.equal(await store.compact(), true);
  assert.deepEqual(
    (await fs.readFile(file, 'utf8')).trimEnd().split('\n').map(idOrDelete),
    // Deletes within retention (7 days) stay, as tombstones before the live entities.
    ['-c0', '-c1', '-c2', '-c3', '-c4', 'c5', 'c6', 'c7', 'c8', 'c9', 'after'],
  );
  await store.close();
});

test('directory sync fails after compaction renamed the file -> warning; next write syncs it before acknowledging', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'r.jsonl');
  const { fs: fsys, fail } = faultyFs();
  const { warn, messages } = warnings();
  const store = await openJsonlStore({ file, fs: fsys, warn, compaction: { auto: false } });
  for (let i = 0; i < 4; i++) await store.create(record(`r${i}`));
  await store.delete('r0');
  fail.fsync = async () => {
    throw ioError();
  };
  assert.equal(await store.compact(), true);
  assert.equal(messages.length, 1);
  assert.match(messages[0]!, /directory sync after compaction failed: EIO/);
  // Still failing: a write cannot be acknowledged while the rename may not be durable.
  await assert.rejects(store.create(record('x')), StoreWriteError);
  let directorySyncs = 0;
  fail.fsync = async (fd) => {
    directorySyncs++;
    await nodeFs.fsync(fd);
  };
  await store.create(record('y'));
  assert.equal(directorySyncs, 1);
  await store.create(record('z'));
  assert.equal(directorySyncs, 1);
  await store.close();
  assert.deepEqual(
    (await fs.readFile(file, 'utf8')).trimEnd().split('\n').map(idOrDelete),
    ['-r0', 'r1', 'r2', 'r3', 'y', 'z'],
  );
});

for (const [what, gone] of [
  ['removed', (file: string) => fs.rm(file)],
  ['moved away (mv)', (file: string) => fs.rename(file, `${file}.elsewhere`)],
] as const) {
  test(`the log ${what} under the store -> every later write refused with ESTALE (nothing acknowledged that would vanish), reads go on`, async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'r.jsonl');
    const store = await openJsonlStore({ file });
    await store.create(record('a'));
    await gone(file);
    for (const write of [() => store.create(record('b')), () => store.update('a', (c) => ({ ...c.record, n: 1 }))]) {
      await assert.rejects(write(), (error: unknown) => error instanceof StoreWriteError && error.code === 'ESTALE' && /r\.jsonl was removed or moved away while the server ran/.test(error.message));
    }
    assert.deepEqual([...store.values()].map((e) => [e.id, e.record.n]), [['a', 0]]);
    assert.equal(store.ready, false, 'not ready: /readyz tells the load balancer');
    await store.close();
  });
}

/** A store of a fresh log in a temporary directory, holding a, b and c. */
async function storeOfThree(): Promise<{ dir: string; file: string; store: Awaited<ReturnType<typeof openJsonlStore>> }> {
  const dir = await tempDir();
  const file = path.join(dir, 'c.jsonl');
  const store = await openJsonlStore({ file });
  for (const id of ['a', 'b', 'c']) await store.create(record(id));
  return { dir, file, store };
}

test('the log replaced by a copy under the store -> writes refused with ESTALE; the copy is left exactly as it was written', async () => {
  const { file, store } = await storeOfThree();
  // `cp other.jsonl c.jsonl`: the same file, cut and written anew, shorter and longer.
  for (const copy of [`${JSON.stringify(record('x'))}\n`, `${JSON.stringify(record('y', 123456789))}\n`.repeat(5)]) {
    await fs.writeFile(file, copy);
    await assert.rejects(store.create(record('d')), (error: unknown) => error instanceof StoreWriteError && error.code === 'ESTALE' && /c\.jsonl was changed by another program/.test(error.message));
    assert.equal(await fs.readFile(file, 'utf8'), copy);
  }
  await store.close();
});

test('writeFully: a short write (a disk that fills) -> the rest written by the next call, and its ENOSPC thrown, never a file cut short and taken as whole', async () => {
  const written: number[] = [];
  let room = 5;
  const handle = {
    async write(buffer: Uint8Array, offset: number, length: number): Promise<{ bytesWritten: number }> {
      if (room === 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      const n = Math.min(length, room, 3);
      room -= n;
      written.push(...buffer.subarray(offset, offset + n));
      return { bytesWritten: n };
    },
  };
  await writeFully(handle, Buffer.from([1, 2, 3, 4]));
  assert.deepEqual(written, [1, 2, 3, 4]);
  await assert.rejects(writeFully(handle, Buffer.from([5, 6, 7])), { code: 'ENOSPC' });
  assert.deepEqual(written, [1, 2, 3, 4, 5]);
});

test('a log that holds only a byte order mark (an editor\'s empty UTF-8 file) -> the first write is accepted', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'bom.jsonl');
  await fs.writeFile(file, Buffer.from([0xef, 0xbb, 0xbf]));
  const store = await openJsonlStore({ file });
  try {
    await store.create(record('a'));
    assert.equal(store.ready, true);
  } finally {
    await store.close();
  }
  const again = await openJsonlStore({ file });
  assert.deepEqual([...again.values()].map((e) => e.id), ['a']);
  await again.create(record('b'));
  await again.close();
});

test('the log replaced under the store (mv restored.jsonl over it) -> a compaction after the ESTALE renames nothing over the replacement, and writes stay refused', async () => {
  const { dir, file, store } = await storeOfThree();
  const restored = `${JSON.stringify(record('restored'))}\n`;
  await fs.writeFile(path.join(dir, 'restored.jsonl'), restored);
  await fs.rename(path.join(dir, 'restored.jsonl'), file);
  await assert.rejects(store.create(record('d')), { code: 'ESTALE' });
  assert.equal(store.ready, false);
  await store.compact();
  const after = await fs.readFile(file, 'utf8');
  // Still refused afterwards, as /readyz says.
  let accepted = false;
  try {
    await store.create(record('e'));
    accepted = true;
  } catch {}
  await store.close();
  assert.deepEqual({ file: after, accepted, ready: store.ready }, { file: restored, accepted: false, ready: false });
});
