import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, describe, test } from 'node:test';
import { ledgerKey, ledgerTarget, legacyFingerprint, requestFingerprint } from '../../src/conventions/idempotency-key.js';
import { ReplayedAnswer, type KeyedWrite, type StoredAnswer } from '../../src/store/idempotency.js';
import { discoverResources } from '../../src/store/log/data-dir.js';
import { openJsonlStore, type JsonlStore, type JsonlStoreOptions } from '../../src/store/log/jsonl-store.js';
import { AnswerFile, lineHash } from '../../src/store/log/answer-file.js';
import { nodeFs, type StoreFs } from '../../src/store/log/store-fs.js';
import { StoreWriteError, type EntityRecord } from '../../src/store/store.js';
import { eventually } from '../helpers/process.js';
import { removeDir, startServer as startCrashServer, type Server } from './crash-harness.js';
import { syncSeam } from './helpers.js';

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await removeDir(dir);
});
const tempDir = async (): Promise<string> => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-idem-'));
  dirs.push(dir);
  return dir;
};

const record = (id: string, n = 0): EntityRecord => ({ id, createdAt: 1, updatedAt: 1, n });

/** A key whose answer is the entity's JSON with a 201, or a 404 without one. */
function key(name: string, fingerprint = 'f'): KeyedWrite {
  return {
    key: name,
    fingerprint,
    answer: (outcome): StoredAnswer | undefined =>
      'error' in outcome ? undefined : outcome.entity === undefined ? { status: 404, headers: {}, body: 'missing' } : { status: 201, headers: { location: `/items/${outcome.entity.id}` }, body: outcome.entity.json },
  };
}

async function replayOf(store: JsonlStore, name: string, fingerprint = 'f'): Promise<StoredAnswer | undefined> {
  const claim = await store.idempotency.claim(name, () => fingerprint);
  if (claim.kind === 'replay') return claim.answer;
  claim.release();
  return undefined;
}

/** The node fs, with writes and the durability point of files whose name ends in `suffix` replaced while `fault` is set (`syncSeam`). */
function seam(suffix: string): { fs: StoreFs; fault: { write?: () => Promise<number>; sync?: () => Promise<void> } } {
  const { fs: fsys, fault } = syncSeam((file) => file.endsWith(suffix));
  return { fs: fsys, fault };
}

/** A copy of `dir` as a crash at this instant leaves it (the page cache survives a process's death). */
async function crashCopy(dir: string): Promise<string> {
  const copy = await tempDir();
  for (const name of await fs.readdir(dir)) if (!name.startsWith('.halserve')) await fs.copyFile(path.join(dir, name), path.join(copy, name));
  return copy;
}

/** The lines of an answers file. */
const answerFileLines = (text: string): string[] => text.split('\n').filter((line) => line !== '');

const open = (dir: string, extra: Partial<JsonlStoreOptions> = {}): Promise<JsonlStore> => openJsonlStore({ file: path.join(dir, 'items.jsonl'), ...extra });

/**
 * A keyed write whose `file`'s fdatasync fails (`failed` checks more right after, given the log's
 * size before it): the write fails, its answer is not kept before or after reopening, and the
 * retry with the same key is processed. Resolves with the reopened store, still open.
 */
async function syncFailsThenRetry(file: string, failed: (dir: string, logSize: number) => Promise<void> = async () => {}): Promise<JsonlStore> {
  const dir = await tempDir();
  const { fs: fsys, fault } = seam(file);
  let store = await open(dir, { fs: fsys });
  await store.create(record('first'));
  const { size } = await fs.stat(path.join(dir, 'items.jsonl'));
  fault.sync = () => Promise.reject(new Error('EIO'));
  await assert.rejects(store.create(record('a'), key('k')), StoreWriteError);
  delete fault.sync;
  await failed(dir, size);
  assert.equal(store.get('a'), undefined);
  assert.equal(await replayOf(store, 'k'), undefined);
  await store.create(record('other'));
  await store.close();
  store = await open(dir);
  assert.equal(await replayOf(store, 'k'), undefined);
  assert.equal(store.get('a'), undefined);
  await store.create(record('a2'), key('k'));
  assert.equal((await replayOf(store, 'k'))?.headers['location'], '/items/a2');
  return store;
}

describe('Idempotency-Key answers in the JSON-lines store', () => {
  test('keyed create, reopen -> the key replays the same answer and writes nothing; after a compaction the answers file holds it, and is no resource', async () => {
    const dir = await tempDir();
    let store = await open(dir, { compaction: { auto: false } });
    const entity = await store.create(record('a'), key('k'));
    await store.close();
    for (let round = 0; round < 3; round++) {
      // Reopened three times: the answers file's rewrite at each open keeps its last answer too.
      store = await open(dir, { compaction: { auto: false } });
      const replay = await replayOf(store, 'k');
      assert.deepEqual(replay, { status: 201, headers: { location: '/items/a' }, body: entity.json }, `open ${round + 1}`);
      // Its line came after its batch's answers line: the version it was answered with holds (If-Match after a restart).
      if (round === 0) assert.equal(store.get('a')?.version, entity.version);
      await assert.rejects(store.create(record('b'), key('k')), (e: unknown) => e instanceof ReplayedAnswer && e.answer.body === entity.json);
      assert.equal(store.size, 1);
      if (round === 0) {
        assert.equal(await store.compact(), true);
        assert.ok(!(await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8')).includes('_answers'), 'the compacted log has no answers line');
        assert.ok((await fs.readdir(dir)).includes('_idempotency.items'));
        assert.deepEqual(await discoverResources(dir), ['items']);
      }
      await store.close();
    }
  });

  test('keyed create, its entity changed since, reopen -> the replay is the first answer: its body, given in the log by reference to its own line, is joined from that line', async () => {
    const dir = await tempDir();
    let store = await open(dir, { compaction: { auto: false } });
    const entity = await store.create(record('a'), key('k'));
    await store.update('a', (current) => ({ ...current.record, n: 1 }));
    await store.update('a', (current) => ({ ...current.record, n: 2 }));
    await store.close();
    const log = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
    const answers = JSON.parse(log.split('\n').find((line) => line.startsWith('{"_answers"'))!) as { a: { b?: string; bp?: number; bx?: string }[] };
    assert.equal(answers.a[0]!.b, undefined, 'the body is not written whole');
    assert.equal(typeof answers.a[0]!.bp, 'number');
    assert.ok(!log.includes(JSON.stringify(entity.json).slice(1, -1)), 'nor escaped anywhere in the log');
    for (const compact of [false, true]) {
      store = await open(dir, { compaction: { auto: false } });
      assert.equal(store.get('a')?.record['n'], 2);
      assert.deepEqual(await replayOf(store, 'k'), { status: 201, headers: { location: '/items/a' }, body: entity.json }, compact ? 'from the answers file' : 'from the log');
      if (compact) assert.ok(!(await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8')).includes('"n":0'), 'the first line is gone from the log');
      else assert.equal(await store.compact(), true);
      await store.close();
    }
  });

  test('the log append fails -> the write fails, its answer is not kept, before or after reopening; the retry is processed', async () => {
    const store = await syncFailsThenRetry('items.jsonl');
    await store.close();
  });

  test('keyed write -> its answer is in the same append as its write, before it: one file written, one sync, acknowledged after it', async () => {
    const dir = await tempDir();
    // Every file's writes and durability points: the log's sync is the fdatasync after its write,
    // or, opened with synced writes (O_DSYNC), the end of the write itself.
    const { fs: fsys, fault, events } = syncSeam(() => true);
    let release = (): void => {};
    const store = await open(dir, { fs: fsys });
    await store.create(record('first'));
    const { size } = await fs.stat(path.join(dir, 'items.jsonl'));
    events.length = 0;
    fault.sync = () => new Promise<void>((resolve) => (release = resolve));
    let acknowledged = false;
    const write = store.create(record('a'), key('k')).then(() => (acknowledged = true));
    await eventually(() => events.length === 2, 'the sync began');
    assert.deepEqual(events, ['write items.jsonl', 'sync items.jsonl']);
    const appended = (await fs.readFile(path.join(dir, 'items.jsonl'))).subarray(size).toString('utf8').trimEnd().split('\n');
    assert.equal(appended.length, 2);
    assert.match(appended[0]!, /^\{"_answers":\d+,"last":\d+,"a":\[\{"k":"k",/);
    assert.match(appended[1]!, /^\{"id":"a",/);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(acknowledged, false);
    assert.equal(await replayOf(store, 'k'), undefined, 'no replay before the sync');
    delete fault.sync;
    release();
    await write;
    assert.equal((await replayOf(store, 'k'))?.headers['location'], '/items/a');
    assert.deepEqual(events, ['write items.jsonl', 'sync items.jsonl']);
    await store.close();
  });

  test('the answers file cannot be written before a compaction -> the log is not replaced, and every answer still replays after reopening', async () => {
    const dir = await tempDir();
    const { fs: fsys, fault } = seam('_idempotency.items.tmp');
    const store = await open(dir, { fs: fsys, compaction: { auto: false } });
    for (let i = 0; i < 4; i++) await store.create(record(`x${i}`));
    await store.create(record('a'), key('k'));
    for (let i = 0; i < 4; i++) await store.delete(`x${i}`);
    const before = await fs.readFile(path.join(dir, 'items.jsonl'));
    fault.sync = () => Promise.reject(new Error('EIO'));
    assert.equal(await store.compact(), false);
    delete fault.sync;
    assert.deepEqual(await fs.readFile(path.join(dir, 'items.jsonl')), before, 'the log is as it was');
    assert.equal((await replayOf(store, 'k'))?.headers['location'], '/items/a');
    await store.close();
    const reopened = await open(dir);
    assert.equal((await replayOf(reopened, 'k'))?.headers['location'], '/items/a');
    await assert.rejects(reopened.create(record('b'), key('k')), ReplayedAnswer);
    assert.deepEqual([...reopened.values()].map((e) => e.id), ['a']);
    await reopened.close();
  });

  test('the disk fills while answers are saved before a compaction -> what the failed save wrote is given back (no temporary file, the file cut back), so the log\'s writes get the room', async () => {
    const dir = await tempDir();
    const file = path.join(dir, '_idempotency.items');
    // A disk with `room` bytes left for the answers files: a write takes what fits, the next fails.
    let room = Infinity;
    const answerFds = new Set<number>();
    const full: StoreFs = {
      ...nodeFs,
      async open(name, flags, mode) {
        const fd = await nodeFs.open(name, flags, mode);
        if (path.basename(name).startsWith('_idempotency.')) answerFds.add(fd);
        else answerFds.delete(fd);
        return fd;
      },
      async write(fd, buffer, offset, length, position) {
        if (!answerFds.has(fd)) return nodeFs.write(fd, buffer, offset, length, position);
        if (room <= 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        const n = await nodeFs.write(fd, buffer, offset, Math.min(length, room), position);
        room -= n;
        return n;
      },
    };
    const store = await open(dir, { fs: full, compaction: { auto: false } });
    await store.create(record('a', 1), key('ka'));
    room = 40;
    // The first save rewrites the file: its temporary file goes with the failure.
    assert.equal(await store.compact(), false);
    assert.deepEqual((await fs.readdir(dir)).filter((name) => name.startsWith('_idempotency.')), [], 'no partial temporary file left');
    room = Infinity;
    assert.equal(await store.compact(), true);
    const saved = await fs.readFile(file);
    // A later save appends: what it wrote before the disk filled is cut off again.
    await store.create(record('b', 2), key('kb'));
    room = 40;
    assert.equal(await store.compact(), false);
    assert.deepEqual(await fs.readFile(file), saved, 'the answers file as it was');
    room = Infinity;
    assert.equal(await store.compact(), true);
    await store.close();
    const reopened = await open(dir);
    assert.equal((await replayOf(reopened, 'ka'))?.headers['location'], '/items/a');
    assert.equal((await replayOf(reopened, 'kb'))?.headers['location'], '/items/b');
    await reopened.close();
  });

  test('answers waiting for a save are bounded as the book is: those it pushed out are let go as it does; a save writes exactly the live ones', async () => {
    const dir = await tempDir();
    const file = new AnswerFile(path.join(dir, '_idempotency.items'), nodeFs, false, { maxAnswers: 1000, maxBytes: 50_000 });
    const book = file.book;
    const body = 'x'.repeat(1000);
    for (let i = 0; i < 20_000; i++) {
      file.put(`k${i}`, { fingerprint: 'f', at: Date.now(), answer: { status: 201, headers: {}, body } });
      // ~1,100 bytes each in a ring of 32 KiB: the book holds 29 of them, and no more wait.
      assert.ok(file.waiting <= book.size, `${file.waiting} waiting, ${book.size} kept`);
    }
    await file.save();
    const saved = answerFileLines(await fs.readFile(path.join(dir, '_idempotency.items'), 'utf8')).map((line) => (JSON.parse(line) as { a: [{ k: string }] }).a[0].k);
    assert.deepEqual(saved, [...book.entries()].map(([k]) => k));
    assert.equal(saved.at(-1), 'k19999');
    assert.equal(file.waiting, 0);
  });

  test('closing during a compaction -> close waits for the save of answers it started, even when the compaction stops before its swap', async () => {
    const dir = await tempDir();
    // The compaction's copy of the log and the save of answers each held at their first write.
    const names = new Map<number, string>();
    const held = new Map<string, { entered: Promise<void>; enter: () => void; release: () => void; gate: Promise<void> }>();
    for (const suffix of ['items.jsonl.tmp', '_idempotency.items.tmp']) {
      let enter = (): void => {};
      let release = (): void => {};
      const entered = new Promise<void>((resolve) => (enter = resolve));
      const gate = new Promise<void>((resolve) => (release = resolve));
      held.set(suffix, { entered, enter, release, gate });
    }
    const fsys: StoreFs = {
      ...nodeFs,
      async open(file, flags, mode) {
        const fd = await nodeFs.open(file, flags, mode);
        names.set(fd, file);
        return fd;
      },
      async write(fd, buffer, offset, length, position) {
        const hold = [...held].find(([suffix]) => names.get(fd)?.endsWith(suffix))?.[1];
        if (hold) {
          hold.enter();
          await hold.gate;
        }
        return nodeFs.write(fd, buffer, offset, length, position);
      },
    };
    const store = await open(dir, { fs: fsys, compaction: { auto: false } });
    await store.create(record('a'), key('ka'));
    const compacted = store.compact();
    await held.get('items.jsonl.tmp')!.entered;
    await held.get('_idempotency.items.tmp')!.entered;
    const closing = store.close();
    // The copy goes on and meets the abort: the compaction ends without its swap.
    held.get('items.jsonl.tmp')!.release();
    assert.equal(await compacted, false);
    held.get('_idempotency.items.tmp')!.release();
    await closing;
    // Closed: the save has ended (renamed into place), nothing of it is left running.
    assert.deepEqual((await fs.readdir(dir)).filter((name) => name.endsWith('.tmp')), [], 'no temporary file left');
    assert.ok((await fs.readFile(path.join(dir, '_idempotency.items'), 'utf8')).includes('"ka"'));
    const reopened = await open(dir);
    assert.equal((await replayOf(reopened, 'ka'))?.headers['location'], '/items/a');
    await reopened.close();
  });

  test('appending to the answers file fails -> the log is not replaced; the next compaction rewrites the file whole; every answer replays after reopening', async () => {
    const dir = await tempDir();
    const { fs: fsys, fault } = seam('_idempotency.items');
    const file = path.join(dir, '_idempotency.items');
    const store = await open(dir, { fs: fsys, compaction: { auto: false } });
    await store.create(record('a'), key('ka'));
    assert.equal(await store.compact(), true);
    await store.create(record('b'), key('kb'));
    const before = await fs.readFile(path.join(dir, 'items.jsonl'));
    // Part of a long line reaches the file, then the write fails.
    fault.write = () => Promise.reject(new Error('ENOSPC'));
    await fs.appendFile(file, `{"a":[{"k":"kb","b":"${'x'.repeat(4000)}`);
    assert.equal(await store.compact(), false);
    delete fault.write;
    assert.deepEqual(await fs.readFile(path.join(dir, 'items.jsonl')), before, 'the log is as it was');
    assert.equal(await store.compact(), true);
    assert.deepEqual(answerFileLines(await fs.readFile(file, 'utf8')).map((line) => (JSON.parse(line) as { a: [{ k: string }] }).a[0].k), ['ka', 'kb'], 'rewritten whole: no partial line');
    await store.close();
    const reopened = await open(dir);
    assert.equal((await replayOf(reopened, 'ka'))?.headers['location'], '/items/a');
    assert.equal((await replayOf(reopened, 'kb'))?.headers['location'], '/items/b');
    await reopened.close();
  });

  test('crash before the batch append reached the log -> no answer, no entity: the retry is processed', async () => {
    const dir = await tempDir();
    const { fs: fsys, fault } = seam('items.jsonl');
    const store = await open(dir, { fs: fsys });
    await store.create(record('first'));
    let entered = false;
    fault.write = () => {
      entered = true;
      return new Promise<number>(() => {}); // the process dies here
    };
    void store.create(record('a'), key('k'));
    await eventually(() => entered, 'the log append began');
    const reopened = await open(await crashCopy(dir));
    assert.equal(await replayOf(reopened, 'k'), undefined);
    assert.equal(reopened.get('a'), undefined);
    assert.equal(reopened.size, 1);
    await reopened.close();
  });

  test('crash after the log has the write, before it was acknowledged -> the retry replays it, one entity', async () => {
    const dir = await tempDir();
    const { fs: fsys, fault } = seam('items.jsonl');
    const store = await open(dir, { fs: fsys });
    let entered = false;
    fault.sync = () => {
      entered = true;
      return new Promise<void>(() => {}); // written, not yet synced: the process dies here
    };
    void store.create(record('a'), key('k'));
    await eventually(() => entered, 'the log sync began');
    const reopened = await open(await crashCopy(dir));
    assert.equal((await replayOf(reopened, 'k'))?.headers['location'], '/items/a');
    await assert.rejects(reopened.create(record('b'), key('k')), ReplayedAnswer);
    assert.deepEqual([...reopened.values()].map((e) => e.id), ['a']);
    await reopened.close();
  });

  test('crash with the log line torn -> the torn write is not made and its key has no answer', async () => {
    const dir = await tempDir();
    const { fs: fsys, fault } = seam('items.jsonl');
    const store = await open(dir, { fs: fsys });
    await store.create(record('first'));
    let entered = false;
    fault.sync = () => {
      entered = true;
      return new Promise<void>(() => {});
    };
    void store.create(record('a', 12345), key('k'));
    await eventually(() => entered, 'the log sync began');
    const copy = await crashCopy(dir);
    const log = path.join(copy, 'items.jsonl');
    const { size } = await fs.stat(log);
    await fs.truncate(log, size - 5);
    const reopened = await open(copy);
    assert.equal(await replayOf(reopened, 'k'), undefined);
    assert.equal(reopened.get('a'), undefined);
    await reopened.close();
  });

  /**
   * One batch of three keyed writes (create a, a PATCH of a missing id: 404, create c) whose sync
   * never returns: the process dies there. Resolves with a copy of the directory as the crash left
   * it, and where the batch's lines begin in its log.
   */
  async function crashedBatch(): Promise<{ copy: string; log: string; batchStart: number }> {
    const dir = await tempDir();
    const { fs: fsys, fault } = seam('items.jsonl');
    const store = await open(dir, { fs: fsys });
    await store.create(record('first'));
    const batchStart = (await fs.stat(path.join(dir, 'items.jsonl'))).size;
    let syncs = 0;
    let release = (): void => {};
    fault.sync = () => {
      syncs++;
      // The first sync is held while the three queue behind it; the second is the crash.
      return syncs === 1 ? new Promise<void>((resolve) => (release = resolve)).then(() => nodeFs.fdatasync(-1).catch(() => {})) : new Promise<void>(() => {});
    };
    const held = store.create(record('held'));
    await eventually(() => syncs === 1, 'the first sync began');
    void store.create(record('a'), key('ka'));
    void store.update('missing', (c) => c.record, key('kb'));
    void store.create(record('c'), key('kc'));
    release();
    await held;
    await eventually(() => syncs === 2, 'the batch of three is being synced');
    const copy = await crashCopy(dir);
    const log = path.join(copy, 'items.jsonl');
    const lines = (await fs.readFile(log, 'utf8')).slice(batchStart).trimEnd().split('\n');
    assert.deepEqual(lines.map((l) => (l.startsWith('{"_answers":') ? 'answers' : (JSON.parse(l) as { id: string }).id)), ['held', 'answers', 'a', 'c'], 'one batch: its answers line, then its changes');
    return { copy, log, batchStart: batchStart + Buffer.byteLength(lines[0]!) + 1 };
  }

  /** The log of `copy` cut `keep` bytes into its last batch, reopened: which keys replay, which entities exist. */
  async function reopenCut(copy: string, log: string, cutAt: number): Promise<{ replays: string[]; ids: string[] }> {
    await fs.truncate(log, cutAt);
    const reopened = await open(copy);
    const replays: string[] = [];
    for (const k of ['ka', 'kb', 'kc']) if ((await replayOf(reopened, k)) !== undefined) replays.push(k);
    const ids = [...reopened.values()].map((e) => e.id).sort();
    await reopened.close();
    return { replays, ids };
  }

  test('crash, the whole batch of keyed writes in the log -> every answer replays, the 404 too', async () => {
    const { copy, log } = await crashedBatch();
    const { size } = await fs.stat(log);
    assert.deepEqual(await reopenCut(copy, log, size), { replays: ['ka', 'kb', 'kc'], ids: ['a', 'c', 'first', 'held'] });
  });

  test('crash mid-batch, its last line torn -> the made write replays; the torn one and the 404 are processed afresh', async () => {
    const { copy, log } = await crashedBatch();
    const { size } = await fs.stat(log);
    assert.deepEqual(await reopenCut(copy, log, size - 5), { replays: ['ka'], ids: ['a', 'first', 'held'] });
  });

  test('crash with only the answers line of a batch in the log -> no answer, no entity of it', async () => {
    const { copy, log, batchStart } = await crashedBatch();
    const answers = (await fs.readFile(log, 'utf8')).slice(batchStart).split('\n')[0]!;
    assert.deepEqual(await reopenCut(copy, log, batchStart + Buffer.byteLength(answers) + 1), { replays: [], ids: ['first', 'held'] });
    // Torn inside the answers line itself: the same.
    assert.deepEqual(await reopenCut(copy, log, batchStart + 20), { replays: [], ids: ['first', 'held'] });
  });

  test('an answers file of an earlier version (answers naming their lines) -> the batch in doubt keeps exactly the answers whose lines are in the log', async () => {
    const dir = await tempDir();
    const store = await open(dir, { compaction: { auto: false } });
    const a = await store.create(record('a'));
    await store.close();
    const logText = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
    const line = logText.trimEnd();
    const range = [0, Buffer.byteLength(line), lineHash(Buffer.from(line))];
    const entry = (k: string, r?: unknown[]) => ({ k, f: 'f', t: Date.now(), s: 201, h: { location: `/items/${k}` }, b: a.json, ...(r ? { r } : {}) });
    const file = path.join(dir, '_idempotency.items');
    // A settled batch, then the batch in doubt: one answer whose line is in the log, one whose line is not, one that wrote nothing.
    await fs.writeFile(file, [
      JSON.stringify({ a: [entry('settled', [0, 1, 'x'])] }), JSON.stringify({ done: 'ok' }),
      JSON.stringify({ a: [entry('made', range), entry('lost', [range[1], (range[1] as number) + 40, 'y']), entry('nothing')] }),
    ].join('\n') + '\n');
    const reopened = await open(dir);
    assert.deepEqual(await Promise.all(['settled', 'made', 'lost', 'nothing'].map(async (k) => (await replayOf(reopened, k)) !== undefined)), [true, true, false, false]);
    await reopened.close();
    // Rewritten without ranges at that open: the next keeps the same answers.
    assert.ok(!(await fs.readFile(file, 'utf8')).includes('"r":'));
    const again = await open(dir);
    assert.deepEqual(await Promise.all(['settled', 'made', 'lost', 'nothing'].map(async (k) => (await replayOf(again, k)) !== undefined)), [true, true, false, false]);
    await again.close();
  });

  test('answers an earlier version recorded under its keys (the path under --base-path), in the answers file and in the log -> reopened, each replays to this version\'s key of its write, and the file is rewritten with those keys', async () => {
    const dir = await tempDir();
    const earlier = (method: string, target: string, client: string): string => ledgerKey('token:t', method, target, client);
    const current = (client: string, id?: string): string => ledgerKey('token:t', id === undefined ? 'POST' : 'PATCH', ledgerTarget('items', id), client);
    // As the earlier version's HTTP layer named them, under --base-path /api.
    let store = await open(dir, { compaction: { auto: false } });
    const a = await store.create(record('a'), key(earlier('POST', '/api/items', 'ka')));
    const patched = await store.update('a', (c) => ({ ...c.record, n: 1 }), key(earlier('PATCH', '/api/items/a', 'kp')));
    // Moved to the answers file; then one more, left in the log.
    assert.equal(await store.compact(), true);
    const b = await store.create(record('b'), key(earlier('POST', '/api/v1/items', 'kb')));
    await store.close();
    const file = path.join(dir, '_idempotency.items');
    assert.ok((await fs.readFile(file, 'utf8')).includes('/api/items'));
    store = await open(dir, { compaction: { auto: false } });
    assert.equal((await replayOf(store, current('ka')))?.body, a.json);
    assert.equal((await replayOf(store, current('kp', 'a')))?.body, patched!.json);
    assert.equal((await replayOf(store, current('kb')))?.body, b.json);
    await assert.rejects(store.create(record('c'), key(current('ka'))), ReplayedAnswer);
    assert.equal(store.size, 2);
    await store.close();
    assert.ok(!(await fs.readFile(file, 'utf8')).includes('/api/'), 'the answers file holds this version\'s keys');
  });

  test('an answers file with a line of JSON of another shape (damaged) -> StoreOpenError naming the answers file and its line, not the log nor JavaScript\'s own words', async () => {
    const dir = await tempDir();
    const store = await open(dir, { compaction: { auto: false } });
    await store.create(record('a'));
    await store.close();
    const file = path.join(dir, '_idempotency.items');
    const good = JSON.stringify({ a: [{ k: 'k', f: 'f', t: Date.now(), s: 201, h: {}, b: '{}' }] });
    for (const damaged of ['null', '5', '{"a":5}', '{"a":[null]}', '{"a":[{}]}', '{"a":[{"k":"k"}]}', '{}']) {
      await fs.writeFile(file, `${good}\n${damaged}\n${good}\n`);
      await assert.rejects(open(dir), (error: Error) => {
        assert.equal(error.name, 'StoreOpenError');
        assert.equal(error.message, `${file}:2: not a line of remembered answers`, damaged);
        return true;
      });
    }
  });

  test('keyed write, compaction renumbers the log, crash -> the answer still replays', async () => {
    const dir = await tempDir();
    const store = await open(dir, { compaction: { auto: false } });
    for (let i = 0; i < 5; i++) await store.create(record(`x${i}`));
    await store.create(record('a'), key('k'));
    for (let i = 0; i < 5; i++) await store.delete(`x${i}`);
    assert.equal(await store.compact(), true);
    const reopened = await open(await crashCopy(dir));
    assert.equal((await replayOf(reopened, 'k'))?.headers['location'], '/items/a');
    await reopened.close();
    await store.close();
  });

  test('answers expire after their time to live (injected clock) and are bounded in number, in memory and on disk', async () => {
    const dir = await tempDir();
    let now = 0;
    const idempotency = { now: () => now, ttlMs: 1000, maxAnswers: 3 };
    const options = { idempotency, compaction: { auto: false } };
    let store = await open(dir, options);
    for (let i = 0; i < 5; i++) await store.create(record(`e${i}`), key(`k${i}`));
    assert.equal(await replayOf(store, 'k0'), undefined);
    assert.ok(await replayOf(store, 'k4'));
    await store.close();
    store = await open(dir, options);
    assert.deepEqual(await Promise.all(['k1', 'k2', 'k3', 'k4'].map(async (k) => (await replayOf(store, k)) !== undefined)), [false, true, true, true]);
    assert.equal(await store.compact(), true);
    assert.equal((await fs.readFile(path.join(dir, '_idempotency.items'), 'utf8')).trimEnd().split('\n').length, 3);
    now = 1000;
    assert.equal(await replayOf(store, 'k4'), undefined);
    await store.create(record('late'), key('k5'));
    await store.close();
    store = await open(dir, options);
    assert.equal(await replayOf(store, 'k4'), undefined, 'expired in the answers file');
    assert.ok(await replayOf(store, 'k5'));
    now = 2000;
    await store.close();
    store = await open(dir, options);
    assert.equal(await replayOf(store, 'k5'), undefined, 'expired in the log');
    assert.equal(await fs.readFile(path.join(dir, '_idempotency.items'), 'utf8'), '');
    await store.close();
  });

  test('keyed writes during a slow compaction -> their answers lines, carried over, still count: the next compaction drops those no longer kept', async () => {
    const dir = await tempDir();
    const { fs: fsys, fault, events } = syncSeam((file) => file.endsWith('.tmp'));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    fault.sync = () => held;
    // One answer kept: each keyed write lets the one before it go, and its answers line becomes waste.
    const store = await open(dir, { fs: fsys, compaction: { minBytes: 0 }, idempotency: { maxAnswers: 1 } });
    /** A key whose answer is much larger than its entity's line. */
    const large = (name: string): KeyedWrite => ({ key: name, fingerprint: 'f', answer: () => ({ status: 201, headers: {}, body: 'x'.repeat(4000) }) });
    await store.create(record('first'), large('k0'));
    assert.equal(events.some((e) => e.endsWith('.tmp')), false, 'the answers line of an answer still kept is no waste: no compaction');
    await store.create(record('second'), large('kA'));
    await store.create(record('third'), large('kB'));
    // The answers lines of k0 and kA, no longer kept, are most of the log: a compaction starts, and waits at the sync of its new file.
    await eventually(() => events.some((e) => e.endsWith('.tmp')), 'the compaction reached its sync');
    for (let i = 1; i <= 10; i++) await store.create(record(`e${i}`), large(`k${i}`));
    delete fault.sync;
    release();
    await store.settled();
    const log = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
    const answers = log.split('\n').filter((line) => line.startsWith('{"_answers":'));
    const answerBytes = answers.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
    assert.ok(answers.length < 10, `${answers.length} answers lines: those carried over were dropped`);
    assert.ok(answerBytes * 2 <= Buffer.byteLength(log) + 2 * (Buffer.byteLength(answers.at(-1) ?? '') + 1), `${answers.length} answers lines, ${answerBytes} bytes of ${Buffer.byteLength(log)}`);
    assert.ok(await replayOf(store, 'k10'), 'the answer kept replays');
    await store.close();
  });

  test('a load of keyed creates whose answers are all kept -> no compaction: their lines would only move to the answers file', async () => {
    const dir = await tempDir();
    const store = await open(dir, { compaction: { minBytes: 0 } });
    for (let i = 0; i < 100; i++) await store.create(record(`e${i}`), key(`k${i}`));
    await store.settled();
    const log = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
    assert.equal(log.split('\n').filter((line) => line.startsWith('{"_answers":')).length, 100, 'every answers line still in the log');
    await assert.rejects(fs.stat(path.join(dir, '_idempotency.items')), { code: 'ENOENT' }, 'no compaction saved answers');
    for (let i = 0; i < 100; i += 33) assert.ok(await replayOf(store, `k${i}`));
    await store.close();
  });

  test("many keyed writes with few answers kept -> compactions drop the log's answers lines; the answers file holds the live ones", async () => {
    const dir = await tempDir();
    const options = { idempotency: { maxAnswers: 4 }, compaction: { minBytes: 0 } };
    let store = await open(dir, options);
    for (let i = 0; i < 200; i++) await store.create(record(`e${i}`), key(`k${i}`));
    await store.settled();
    const log = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
    const answers = log.split('\n').filter((line) => line.startsWith('{"_answers":'));
    const answerBytes = answers.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0);
    // The policy compacts once answers lines are more than half the log's bytes: after the last
    // batch's check, at most one more answers line than that.
    assert.ok(answers.length < 200, 'compacted at least once');
    assert.ok(answerBytes <= Buffer.byteLength(log) / 2 + Buffer.byteLength(answers.at(-1) ?? '') + 1, `${answerBytes} bytes of answers lines in ${Buffer.byteLength(log)}`);
    // Saves append; the file is rewritten once it holds more than twice the answers kept.
    assert.ok(answerFileLines(await fs.readFile(path.join(dir, '_idempotency.items'), 'utf8')).length <= 2 * 4);
    await store.close();
    store = await open(dir, options);
    assert.ok(await replayOf(store, 'k199'));
    assert.equal(await replayOf(store, 'k0'), undefined);
    assert.equal(store.size, 200);
    await store.close();
  });

  test('a compaction appends the answers recorded since the last one; past twice the answers kept the file is rewritten with the live ones; reopening keeps exactly the live ones', async () => {
    const dir = await tempDir();
    const options = { idempotency: { maxAnswers: 15 }, compaction: { auto: false } };
    const file = path.join(dir, '_idempotency.items');
    let store = await open(dir, options);
    const batch = async (from: number): Promise<void> => {
      for (let i = from; i < from + 10; i++) await store.create(record(`e${i}`), key(`k${i}`));
      assert.equal(await store.compact(), true);
    };
    const keys = (lines: readonly string[]): string[] => lines.map((line) => (JSON.parse(line) as { a: [{ k: string }] }).a[0].k);
    const range = (from: number, to: number): string[] => Array.from({ length: to - from }, (_, i) => `k${from + i}`);
    await batch(0);
    const first = await fs.readFile(file, 'utf8');
    assert.deepEqual(keys(answerFileLines(first)), range(0, 10));
    await batch(10);
    const second = await fs.readFile(file, 'utf8');
    assert.ok(second.startsWith(first), 'appended: the earlier lines are as they were');
    assert.deepEqual(keys(answerFileLines(second)), range(0, 20), 'k0–k4 have left the book; their lines stay until a rewrite');
    await batch(20);
    assert.deepEqual(keys(answerFileLines(await fs.readFile(file, 'utf8'))), range(0, 30), '30 lines: twice the 15 kept');
    await store.close();
    // Reopened: the dead lines of the file are not taken for answers.
    store = await open(dir, options);
    for (const k of range(0, 15)) assert.equal(await replayOf(store, k), undefined, k);
    for (const k of range(15, 30)) assert.equal((await replayOf(store, k))?.headers['location'], `/items/e${k.slice(1)}`, k);
    assert.deepEqual(keys(answerFileLines(await fs.readFile(file, 'utf8'))), range(15, 30), 'rewritten at start-up with the live ones');
    await batch(30);
    assert.deepEqual(keys(answerFileLines(await fs.readFile(file, 'utf8'))), range(15, 40), 'appended again');
    await batch(40);
    assert.deepEqual(keys(answerFileLines(await fs.readFile(file, 'utf8'))), range(35, 50), 'past twice the answers kept: rewritten with the live ones');
    await store.close();
  });
});

describe('Idempotency-Key across kill -9 (a real server process)', () => {
  /** Every server a test started: killed after it, so that a failing assertion fails the test at once rather than leaving a child that keeps the file's process waiting for its timeout. */
  const started: Server[] = [];
  const startServer = async (dir: string): Promise<Server> => {
    const server = await startCrashServer(dir);
    started.push(server);
    return server;
  };
  afterEach(async () => {
    for (const server of started.splice(0)) {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
      await server.exited;
    }
  });

  test('keyed POSTs in flight, kill -9, restart, every key retried -> an acknowledged key replays its answer; each key made one entity', async () => {
    const dir = await tempDir();
    let server = await startServer(dir);
    const post = (url: string, key: string): Promise<Response> =>
      fetch(`${url}/items`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify({ sku: key }) });
    const acknowledged = new Map<string, { location: string | null; body: string }>();
    const keys: string[] = [];
    // 16 clients keep posting with fresh keys; the server is killed once some have been answered.
    let stop = false;
    const clients = Array.from({ length: 16 }, async (_, c) => {
      for (let n = 0; !stop; n++) {
        const key = `k-${c}-${n}`;
        keys.push(key);
        try {
          const response = await post(server.url, key);
          const body = await response.text();
          if (response.status === 201) acknowledged.set(key, { location: response.headers.get('location'), body });
        } catch {
          return; // the server died with this request in flight
        }
      }
    });
    await eventually(() => acknowledged.size >= 40, '40 keyed POSTs acknowledged');
    server.child.kill('SIGKILL');
    stop = true;
    await Promise.all(clients);
    await server.exited;
    server = await startServer(dir);
    const made = new Set<string>();
    for (const key of keys) {
      const again = await post(server.url, key);
      const body = await again.text();
      assert.equal(again.status, 201, `${key}: ${body}`);
      const first = acknowledged.get(key);
      if (first !== undefined) {
        assert.equal(again.headers.get('idempotency-replayed'), 'true', key);
        assert.equal(again.headers.get('location'), first.location);
        assert.equal(body, first.body);
      }
      made.add(again.headers.get('location') ?? '');
    }
    // Each key is one entity (made before the crash and replayed, or made by its retry), and no other.
    assert.equal(made.size, keys.length);
    const list = (await (await fetch(`${server.url}/items?limit=1000`)).json()) as { total: number };
    assert.equal(list.total, keys.length);
    server.child.kill('SIGKILL');
    await server.exited;
  });

  test('keyed POST and PATCH answered (non-ASCII text), the entity changed since, kill -9, restart -> each replays its first answer byte for byte, its body joined from its line', async () => {
    const dir = await tempDir();
    const json = { 'content-type': 'application/json' };
    let server = await startServer(dir);
    try {
      const created = await fetch(`${server.url}/items`, { method: 'POST', headers: { ...json, 'idempotency-key': 'c-1' }, body: '{"sku":"x","note":"café 𝄞 ✓ \\u2028"}' });
      assert.equal(created.status, 201);
      const createdBody = await created.text();
      const location = created.headers.get('location')!;
      const patched = await fetch(`${server.url}${location}`, { method: 'PATCH', headers: { ...json, 'idempotency-key': 'p-1' }, body: '{"note":"naïve — 𝄞𝄞"}' });
      assert.equal(patched.status, 200);
      const patchedBody = await patched.text();
      assert.equal((await fetch(`${server.url}${location}`, { method: 'PATCH', headers: json, body: '{"note":"later"}' })).status, 200);
      const log = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
      assert.equal((log.match(/"bp":/g) ?? []).length, 2, 'both bodies given by reference');
      server.child.kill('SIGKILL');
      await server.exited;
      server = await startServer(dir);
      const again = await fetch(`${server.url}/items`, { method: 'POST', headers: { ...json, 'idempotency-key': 'c-1' }, body: '{"sku":"x","note":"café 𝄞 ✓ \\u2028"}' });
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.equal(await again.text(), createdBody);
      const patchAgain = await fetch(`${server.url}${location}`, { method: 'PATCH', headers: { ...json, 'idempotency-key': 'p-1' }, body: '{"note":"naïve — 𝄞𝄞"}' });
      assert.equal(patchAgain.status, 200);
      assert.equal(patchAgain.headers.get('idempotency-replayed'), 'true');
      assert.equal(await patchAgain.text(), patchedBody);
      assert.equal(((await (await fetch(`${server.url}${location}`)).json()) as { note: string }).note, 'later');
    } finally {
      // Also when an assertion fails: a server left running would keep the test process alive.
      server.child.kill('SIGKILL');
      await server.exited;
    }
  });

  test('keyed POST answered, kill -9, restart, the same POST -> the same answer replayed, one entity; 16 concurrent retries -> still one', async () => {
    const dir = await tempDir();
    const headers = { 'content-type': 'application/json', 'idempotency-key': '"order-7"' };
    let server = await startServer(dir);
    const first = await fetch(`${server.url}/items`, { method: 'POST', headers, body: '{"sku":"x"}' });
    assert.equal(first.status, 201);
    const firstBody = await first.text();
    server.child.kill('SIGKILL');
    await server.exited;
    server = await startServer(dir);
    const again = await fetch(`${server.url}/items`, { method: 'POST', headers, body: '{"sku":"x"}' });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.equal(again.headers.get('location'), first.headers.get('location'));
    assert.equal(again.headers.get('etag'), first.headers.get('etag'));
    assert.equal(await again.text(), firstBody);
    const burst = await Promise.all(Array.from({ length: 16 }, () => fetch(`${server.url}/items`, { method: 'POST', headers: { ...headers, 'idempotency-key': 'burst' }, body: '{"sku":"y"}' })));
    const statuses = burst.map((r) => r.status);
    assert.ok(statuses.every((s) => s === 201 || s === 409), JSON.stringify(statuses));
    assert.equal(new Set(burst.filter((r) => r.status === 201).map((r) => r.headers.get('location'))).size, 1);
    const list = (await (await fetch(`${server.url}/items`)).json()) as { total: number };
    assert.equal(list.total, 2);
    server.child.kill('SIGKILL');
    await server.exited;
  });

  test('an answer recorded by an earlier version (its fingerprint of the body as JSON) -> the same bytes replay it after the upgrade; another body is a 422', async () => {
    const dir = await tempDir();
    const headers = { 'content-type': 'application/json', 'idempotency-key': 'order-8' };
    // Spaced: the bytes' digest and the JSON value's digest differ.
    const body = '{ "sku": "x", "n": 1 }';
    let server = await startServer(dir);
    const first = await fetch(`${server.url}/items`, { method: 'POST', headers, body });
    assert.equal(first.status, 201);
    const firstBody = await first.text();
    server.child.kill('SIGTERM');
    await server.exited;
    // The log as an earlier version wrote it: the answer's fingerprint is of the body as JSON.
    const log = path.join(dir, 'items.jsonl');
    const text = await fs.readFile(log, 'utf8');
    const now = requestFingerprint(Buffer.from(body));
    assert.ok(text.includes(`"f":"${now}"`));
    await fs.writeFile(log, text.replace(`"f":"${now}"`, `"f":"${legacyFingerprint(JSON.parse(body))}"`));
    server = await startServer(dir);
    const again = await fetch(`${server.url}/items`, { method: 'POST', headers, body });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.equal(await again.text(), firstBody);
    const other = await fetch(`${server.url}/items`, { method: 'POST', headers, body: '{"sku":"y"}' });
    assert.equal(other.status, 422);
    const list = (await (await fetch(`${server.url}/items`)).json()) as { total: number };
    assert.equal(list.total, 1);
    server.child.kill('SIGKILL');
    await server.exited;
  });
});
