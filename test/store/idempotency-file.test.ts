import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ReplayedAnswer, type KeyedWrite, type StoredAnswer } from '../../src/store/idempotency.js';
import { discoverResources } from '../../src/store/log/data-dir.js';
import { openJsonlStore, type JsonlStore, type JsonlStoreOptions } from '../../src/store/log/jsonl-store.js';
import { nodeFs, type StoreFs } from '../../src/store/log/store-fs.js';
import { StoreWriteError, type EntityRecord } from '../../src/store/store.js';
import { eventually } from '../helpers/process.js';
import { removeDir, startServer } from './crash-harness.js';

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
  const claim = await store.idempotency.claim(name, fingerprint);
  if (claim.kind === 'replay') return claim.answer;
  claim.release();
  return undefined;
}

/** The node fs, with writes and syncs of files whose name ends in `suffix` replaced while `fault` is set. */
function seam(suffix: string): { fs: StoreFs; fault: { write?: () => Promise<number>; fdatasync?: () => Promise<void> } } {
  const names = new Map<number, string>();
  const fault: { write?: () => Promise<number>; fdatasync?: () => Promise<void> } = {};
  const mine = (fd: number): boolean => names.get(fd)?.endsWith(suffix) === true;
  return {
    fault,
    fs: {
      ...nodeFs,
      async open(file, flags, mode) {
        const fd = await nodeFs.open(file, flags, mode);
        names.set(fd, file);
        return fd;
      },
      write: (fd, buffer, offset, length, position) => (fault.write && mine(fd) ? fault.write() : nodeFs.write(fd, buffer, offset, length, position)),
      fdatasync: (fd) => (fault.fdatasync && mine(fd) ? fault.fdatasync() : nodeFs.fdatasync(fd)),
    },
  };
}

/** A copy of `dir` as a crash at this instant leaves it (the page cache survives a process's death). */
async function crashCopy(dir: string): Promise<string> {
  const copy = await tempDir();
  for (const name of await fs.readdir(dir)) if (!name.startsWith('.halserve')) await fs.copyFile(path.join(dir, name), path.join(copy, name));
  return copy;
}

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
  fault.fdatasync = () => Promise.reject(new Error('EIO'));
  await assert.rejects(store.create(record('a'), key('k')), StoreWriteError);
  delete fault.fdatasync;
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
  test('keyed create, reopen -> the key replays the same answer and writes nothing; the answers file is no resource', async () => {
    const dir = await tempDir();
    let store = await open(dir);
    const entity = await store.create(record('a'), key('k'));
    await store.close();
    store = await open(dir);
    const replay = await replayOf(store, 'k');
    assert.deepEqual(replay, { status: 201, headers: { location: '/items/a' }, body: entity.json });
    await assert.rejects(store.create(record('b'), key('k')), (e: unknown) => e instanceof ReplayedAnswer && e.answer.body === entity.json);
    assert.equal(store.size, 1);
    assert.deepEqual(await discoverResources(dir), ['items']);
    assert.ok((await fs.readdir(dir)).includes('_idempotency.items'));
    await store.close();
  });

  test('the log append fails -> the write fails, its answer is not kept, before or after reopening; the retry is processed', async () => {
    const store = await syncFailsThenRetry('items.jsonl');
    await store.close();
  });

  test('keyed write -> its answer is written before its log line, both files are synced at once, and it is acknowledged after both', async () => {
    const dir = await tempDir();
    const names = new Map<number, string>();
    const events: string[] = [];
    let hold = false;
    let release = (): void => {};
    const fsys: StoreFs = {
      ...nodeFs,
      async open(file, flags, mode) {
        const fd = await nodeFs.open(file, flags, mode);
        names.set(fd, path.basename(file));
        return fd;
      },
      write(fd, buffer, offset, length, position) {
        events.push(`write ${names.get(fd)}`);
        return nodeFs.write(fd, buffer, offset, length, position);
      },
      async fdatasync(fd) {
        events.push(`sync ${names.get(fd)}`);
        if (hold && names.get(fd) === '_idempotency.items') await new Promise<void>((resolve) => (release = resolve));
        return nodeFs.fdatasync(fd);
      },
    };
    const store = await open(dir, { fs: fsys });
    await store.create(record('first'));
    events.length = 0;
    hold = true;
    let acknowledged = false;
    const write = store.create(record('a'), key('k')).then(() => (acknowledged = true));
    // Both syncs begin while the answers' one is held: one sync's wait for the two files.
    await eventually(() => events.length === 4, 'both syncs began');
    assert.deepEqual(events.slice(0, 2), ['write _idempotency.items', 'write items.jsonl']);
    assert.deepEqual(events.slice(2).sort(), ['sync _idempotency.items', 'sync items.jsonl']);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(acknowledged, false);
    hold = false;
    release();
    await write;
    assert.equal((await replayOf(store, 'k'))?.headers['location'], '/items/a');
    await store.close();
  });

  test('the answers file sync fails -> the write fails, the log keeps no line of it, no answer; the retry is processed', async () => {
    const store = await syncFailsThenRetry('_idempotency.items', async (dir, size) => {
      assert.equal((await fs.stat(path.join(dir, 'items.jsonl'))).size, size);
    });
    assert.deepEqual([...store.values()].map((e) => e.id).sort(), ['a2', 'first', 'other']);
    await store.close();
  });

  test('crash after the answer is durable, before the log has the write -> no answer, no entity: the retry is processed', async () => {
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
    fault.fdatasync = () => {
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
    fault.fdatasync = () => {
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
    let store = await open(dir, { idempotency });
    for (let i = 0; i < 5; i++) await store.create(record(`e${i}`), key(`k${i}`));
    assert.equal(await replayOf(store, 'k0'), undefined);
    assert.ok(await replayOf(store, 'k4'));
    await store.close();
    store = await open(dir, { idempotency });
    assert.deepEqual(await Promise.all(['k1', 'k2', 'k3', 'k4'].map(async (k) => (await replayOf(store, k)) !== undefined)), [false, true, true, true]);
    now = 1000;
    assert.equal(await replayOf(store, 'k4'), undefined);
    await store.close();
    store = await open(dir, { idempotency });
    assert.equal((await fs.readFile(path.join(dir, '_idempotency.items'), 'utf8')), '');
    await store.close();
  });

  test('many keyed writes with few answers kept -> the answers file is rewritten, not grown without bound', async () => {
    const dir = await tempDir();
    const store = await open(dir, { idempotency: { maxAnswers: 4 } });
    for (let i = 0; i < 200; i++) await store.create(record(`e${i}`), key(`k${i}`));
    await store.settled();
    const lines = (await fs.readFile(path.join(dir, '_idempotency.items'), 'utf8')).trimEnd().split('\n').length;
    assert.ok(lines <= 2 * 64, `${lines} lines for 4 answers`);
    assert.ok(await replayOf(store, 'k199'));
    await store.close();
  });
});

describe('Idempotency-Key across kill -9 (a real server process)', () => {
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
});
