import assert from 'node:assert/strict';
import { test } from 'node:test';
import { streamChanges } from '../../src/http/change-stream.js';
import type { StreamWriter } from '../../src/http/reply.js';
import type { ChangeFeed } from '../../src/store/changes/change-feed.js';
import { LocalChangeLog } from '../../src/store/changes/local-feed.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { StoreChange } from '../../src/store/store.js';
import { eventually } from '../helpers/process.js';

/** A stream's body as the fan-out writes it: each write's bytes and event count. */
function writer(): StreamWriter & { writes: { bytes: Buffer; events: number }[] } {
  const writes: { bytes: Buffer; events: number }[] = [];
  const cleanups: (() => void)[] = [];
  return {
    writes,
    closed: false,
    behind: false,
    write(text, events = 0) {
      writes.push({ bytes: typeof text === 'string' ? Buffer.from(text) : text.bytes, events });
    },
    ready: () => Promise.resolve(),
    end() {
      for (const cleanup of cleanups.splice(0)) cleanup();
    },
    onClose(cleanup) {
      cleanups.push(cleanup);
    },
  };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('three writes in one turn, two streams of the same selection and one of another -> one write per stream; the alike share one buffer', async () => {
  const changes = new LocalChangeLog();
  const items = createMemoryStore([], { resource: 'items', changes });
  const orders = createMemoryStore([], { resource: 'orders', changes });
  const json = (change: StoreChange): string => JSON.stringify({ id: change.id });
  const select = (change: StoreChange): StoreChange['type'] => change.type;
  const open = (resources: ReadonlySet<string> | undefined, shared: string | undefined): ReturnType<typeof writer> => {
    const out = writer();
    streamChanges(out, { feed: changes, after: changes.latest, resources, select, json, ...(shared === undefined ? {} : { shared }) });
    return out;
  };
  const a = open(undefined, '*');
  const b = open(undefined, '*');
  const onlyOrders = open(new Set(['orders']), 'orders');
  const unshared = open(undefined, undefined);
  await turn();
  await Promise.all([items.create({ id: 'i1', createdAt: 1, updatedAt: 1 }), orders.create({ id: 'o1', createdAt: 1, updatedAt: 1 }), items.create({ id: 'i2', createdAt: 1, updatedAt: 1 })]);
  await turn();
  await turn();
  assert.equal(a.writes.length, 1);
  assert.equal(a.writes[0]!.events, 3);
  assert.equal(b.writes[0]!.bytes, a.writes[0]!.bytes, 'the same buffer');
  assert.deepEqual(unshared.writes.map((w) => w.bytes.toString()), a.writes.map((w) => w.bytes.toString()));
  assert.deepEqual(
    onlyOrders.writes.map((w) => [w.events, w.bytes.toString()]),
    [[1, `id: ${changes.latestOf('orders')}\nevent: created\ndata: {"id":"o1"}\n\n`]],
  );
  const ids = [...a.writes[0]!.bytes.toString().matchAll(/^id: (.*)$/gm)].map((m) => m[1]);
  assert.deepEqual(ids, [...ids].sort((p, q) => changes.compare(p!, q!)));
  for (const out of [a, b, onlyOrders, unshared]) out.end();
  // Every stream closed: the fan-out stops following, and a later write goes nowhere.
  await items.create({ id: 'i3', createdAt: 1, updatedAt: 1 });
  await turn();
  assert.equal(a.writes.length, 1);
});

test('1,200 streams (a pass in slices), a write during the pass -> every stream gets the first batch, then the second, in order', async () => {
  const changes = new LocalChangeLog();
  const items = createMemoryStore([], { resource: 'items', changes });
  const json = (change: StoreChange): string => JSON.stringify({ id: change.id });
  const select = (change: StoreChange): StoreChange['type'] => change.type;
  const outs = Array.from({ length: 1200 }, () => {
    const out = writer();
    streamChanges(out, { feed: changes, after: changes.latest, resources: undefined, select, json, shared: '*' });
    return out;
  });
  await turn();
  await items.create({ id: 'a', createdAt: 1, updatedAt: 1 });
  // The first slice is out; the write lands while the rest wait for their turn.
  await turn();
  await items.create({ id: 'b', createdAt: 1, updatedAt: 1 });
  await eventually(() => outs.every((out) => out.writes.length >= 2), 'both batches on every stream');
  for (const out of outs) assert.deepEqual(out.writes.map((w) => /data: (.*)/.exec(w.bytes.toString())![1]), ['{"id":"a"}', '{"id":"b"}']);
  for (const out of outs) out.end();
});

/** `changes` as a feed whose pages `read` gives (a test watches or holds them). */
function readThrough(changes: LocalChangeLog, read: ChangeFeed['read']): ChangeFeed {
  return {
    get latest() {
      return changes.latest;
    },
    latestOf: (resource) => changes.latestOf(resource),
    read,
    follow: (listener) => changes.follow(listener),
    compare: (a, b) => changes.compare(a, b),
    check: (since) => changes.check(since),
  };
}

test('1,000 writes land while a catch-up reads a page (more than it holds for later) -> it reads them from the feed again; every event sent once, in order', async () => {
  const changes = new LocalChangeLog();
  const items = createMemoryStore([], { resource: 'items', changes });
  const origin = changes.latest;
  for (let i = 0; i < 10; i++) await items.create({ id: `a${i}`, createdAt: 1, updatedAt: 1 });
  // A feed whose first page is read now but answered later, as a database's is: the writes made
  // meanwhile reach the stream only through its follower.
  let answer: (() => void) | undefined;
  const feed = readThrough(changes, (since, limit, resources) => {
    const page = changes.read(since, limit, resources);
    if (answer !== undefined || since !== origin) return page;
    return new Promise((resolve) => (answer = () => resolve(page)));
  });
  const out = writer();
  const json = (change: StoreChange): string => JSON.stringify({ id: change.id });
  streamChanges(out, { feed, after: origin, resources: undefined, select: (change) => change.type, json });
  await eventually(() => answer !== undefined, 'the first page asked for');
  for (let i = 0; i < 1000; i++) await items.create({ id: `w${i}`, createdAt: 1, updatedAt: 1 });
  await turn();
  await turn();
  answer!();
  await eventually(() => out.writes.reduce((n, w) => n + w.events, 0) === 1010, 'every event sent');
  const ids = out.writes.flatMap((w) => [...w.bytes.toString().matchAll(/^data: (.*)$/gm)].map((m) => (JSON.parse(m[1]!) as { id: string }).id));
  assert.deepEqual(ids, [...Array.from({ length: 10 }, (_, i) => `a${i}`), ...Array.from({ length: 1000 }, (_, i) => `w${i}`)]);
  out.end();
});

test('a live stream whose reader is behind when a batch comes -> nothing more queued for it; once the reader has taken what it had, a catch-up sends every change since its last event, once, in order, then it is live again', async () => {
  const changes = new LocalChangeLog();
  const items = createMemoryStore([], { resource: 'items', changes });
  const json = (change: StoreChange): string => JSON.stringify({ id: change.id });
  const select = (change: StoreChange): StoreChange['type'] => change.type;
  const base = writer();
  let taken: () => void = () => {};
  let behind = false;
  const out: typeof base = Object.assign(base, {
    ready: (): Promise<void> => (behind ? new Promise<void>((resolve) => (taken = resolve)) : Promise.resolve()),
  });
  Object.defineProperty(out, 'behind', { get: () => behind });
  streamChanges(out, { feed: changes, after: changes.latest, resources: undefined, select, json, shared: '*' });
  await turn();
  await items.create({ id: 'a', createdAt: 1, updatedAt: 1 });
  await eventually(() => out.writes.length === 1, 'the first batch, live');
  behind = true;
  for (const id of ['b', 'c', 'd']) {
    await items.create({ id, createdAt: 1, updatedAt: 1 });
    await turn();
    await turn();
  }
  assert.equal(out.writes.length, 1, 'nothing queued for a reader that is behind');
  behind = false;
  taken();
  await eventually(() => out.writes.reduce((n, w) => n + w.events, 0) === 4, 'the catch-up');
  await items.create({ id: 'e', createdAt: 1, updatedAt: 1 });
  await eventually(() => out.writes.reduce((n, w) => n + w.events, 0) === 5, 'live again');
  const ids = out.writes.flatMap((w) => [...w.bytes.toString().matchAll(/"id":"(\w)"/g)].map((m) => m[1]));
  assert.deepEqual(ids, ['a', 'b', 'c', 'd', 'e']);
  out.end();
});

test('a batch larger than one catch-up write for a stream with a text of its own -> sent in writes of about 64 KiB at the reader\'s pace, every event once, in order', async () => {
  const changes = new LocalChangeLog();
  const items = createMemoryStore([], { resource: 'items', changes });
  const select = (change: StoreChange): StoreChange['type'] => change.type;
  const json = (change: StoreChange): string => JSON.stringify({ id: change.id, text: change.entity?.record['text'] });
  const out = writer();
  streamChanges(out, { feed: changes, after: changes.latest, resources: undefined, select, json });
  await turn();
  const text = 'x'.repeat(10_000);
  await Promise.all(Array.from({ length: 30 }, (_, i) => items.create({ id: `e${String(i).padStart(2, '0')}`, createdAt: 1, updatedAt: 1, text })));
  await eventually(() => out.writes.reduce((n, w) => n + w.events, 0) === 30, 'every event');
  assert.ok(out.writes.length >= 4, `${out.writes.length} writes`);
  for (const w of out.writes) assert.ok(w.bytes.length < 64 * 1024 + 11_000, `a write of ${w.bytes.length} bytes`);
  const ids = out.writes.flatMap((w) => [...w.bytes.toString().matchAll(/"id":"(e\d+)"/g)].map((m) => m[1]));
  assert.deepEqual(ids, Array.from({ length: 30 }, (_, i) => `e${String(i).padStart(2, '0')}`));
  out.end();
});

test('a catch-up over 1,000 changes to a reader that takes everything at once (ready never waits) -> at most a page or two read per turn of the event loop, not all of them in one; every event once, in order', async () => {
  const changes = new LocalChangeLog();
  const items = createMemoryStore([], { resource: 'items', changes });
  const origin = changes.latest;
  for (let i = 0; i < 1000; i++) await items.create({ id: `e${String(i).padStart(4, '0')}`, createdAt: 1, updatedAt: 1 });
  let reads = 0;
  const feed = readThrough(changes, (since, limit, resources) => {
    reads++;
    return changes.read(since, limit, resources);
  });
  const out = writer();
  const json = (change: StoreChange): string => JSON.stringify({ id: change.id });
  streamChanges(out, { feed, after: origin, resources: undefined, select: (change) => change.type, json });
  const sent = (): number => out.writes.reduce((n, w) => n + w.events, 0);
  // Five pages of 200 (and the short one that ends it): a million changes would hold every other
  // request for seconds if one turn read them all.
  let turns = 0;
  while (sent() < 1000) {
    const before = reads;
    await turn();
    assert.ok(reads - before <= 2, `${reads - before} pages read in one turn`);
    assert.ok(++turns < 100, 'the catch-up ends');
  }
  const ids = out.writes.flatMap((w) => [...w.bytes.toString().matchAll(/"id":"(e\d+)"/g)].map((m) => m[1]));
  assert.deepEqual(ids, Array.from({ length: 1000 }, (_, i) => `e${String(i).padStart(4, '0')}`));
  out.end();
});
