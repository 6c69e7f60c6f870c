import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LocalChangeLog } from '../../src/store/changes/local-feed.js';
import { openDataDir } from '../../src/store/log/data-dir.js';
import type { JsonlStore } from '../../src/store/log/jsonl-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { startServer as startProcess } from '../store/crash-harness.js';
import { tempDir } from '../store/helpers.js';
import { startServer } from '../helpers/server.js';
import { prng } from '../helpers/prng.js';
import { follow, listing, Mirror } from './mirror.js';

/*
 * The change feed's promise, end to end: a client that applies every event it receives, in order,
 * and resumes from its last id holds exactly what a full listing shows — through concurrent
 * writers, kill -9 of the server, restarts, a compaction, and resumes; no event id twice.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };

/** The latest cursor of the server at `url`. */
const latest = async (url: string): Promise<string> => ((await (await fetch(`${url}/changes?since=now`)).json()) as { cursor: string }).cursor;

/** Random writes by `clients` clients until `count` are sent; answers may be lost to a kill. */
async function write(url: string, seed: number, clients: number, count: number): Promise<void> {
  const random = prng(seed);
  let sent = 0;
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (sent < count) {
        sent++;
        const roll = random();
        const id = ids[Math.floor(random() * ids.length)];
        try {
          if (roll < 0.5 || id === undefined) {
            const res = await fetch(`${url}/items`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n: sent }) });
            if (res.status === 201) ids.push(((await res.json()) as { id: string }).id);
          } else if (roll < 0.85) {
            await (await fetch(`${url}/items/${id}`, { method: 'PATCH', headers: JSON_HEADERS, body: JSON.stringify({ n: sent }) })).text();
          } else {
            await (await fetch(`${url}/items/${id}`, { method: 'DELETE' })).text();
          }
        } catch {
          return; // the server was killed
        }
      }
    }),
  );
}

test('a real server killed with SIGKILL and restarted, writers and a follower throughout -> the follower holds exactly the listing, no id twice', async () => {
  const dir = await tempDir();
  const mirror = new Mirror();
  for (let cycle = 0; cycle < 3; cycle++) {
    const server = await startProcess(dir);
    let stop = false;
    const following = follow(server.url, mirror, () => stop);
    const before = mirror.seen.size;
    let writing: Promise<void> | undefined = write(server.url, 1000 + cycle, 4, 400);
    const done = writing.then(() => {
      writing = undefined;
    });
    // Killed while the writers are at it: once the follower has had 25 of this run's events.
    while (mirror.seen.size < before + 25 && writing !== undefined) await new Promise((resolve) => setImmediate(resolve));
    server.child.kill('SIGKILL');
    await done;
    await server.exited;
    stop = true;
    await following;
  }
  // A last, clean run: the follower resumes and catches up, then compares.
  const server = await startProcess(dir);
  await write(server.url, 7, 2, 40);
  let stop = false;
  const following = follow(server.url, mirror, () => stop);
  const end = await latest(server.url);
  while (mirror.lastId !== end) await new Promise((resolve) => setTimeout(resolve, 2));
  stop = true;
  await following;
  assert.deepEqual(mirror.entities, await listing(server.url, ['items']));
  assert.ok(mirror.seen.size >= 75, `${mirror.seen.size} events applied`);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});

test('writers, a compaction, deletes past retention and reopens in process -> a follower resuming each time holds the listing', async () => {
  const dir = await tempDir();
  let now = Date.UTC(2026, 0, 1);
  const mirror = new Mirror();
  for (let round = 0; round < 3; round++) {
    const data = await openDataDir({ dir, resources: ['items'], durability: 'none', repair: false, warn: () => {}, now: () => now, compaction: { auto: false } });
    const server = await startServer({ resources: [{ name: 'items', store: data.stores.get('items')! }], changes: data.changes });
    let stop = false;
    const following = follow(server.url, mirror, () => stop);
    await write(server.url, 50 + round, 3, 120);
    if (round === 1) assert.equal(await (data.stores.get('items') as JsonlStore).compact(), true);
    const end = await latest(server.url);
    while (mirror.lastId !== end) await new Promise((resolve) => setTimeout(resolve, 2));
    stop = true;
    await following;
    assert.deepEqual(mirror.entities, await listing(server.url, ['items']), `round ${round}`);
    await server.close();
    await data.close();
    // Within retention: a compaction keeps every delete the follower may not have had.
    now += 3600_000;
  }
});

test('a client that resumes one event late (the cursor logic broken) -> its copy differs from the listing: the check catches it', async () => {
  const changes = new LocalChangeLog();
  const store = createMemoryStore([], { resource: 'items', changes });
  const server = await startServer({ resources: [{ name: 'items', store }], changes, newId: (() => { let n = 0; return () => `x${++n}`; })() });
  for (let i = 0; i < 3; i++) await fetch(`${server.url}/items`, { method: 'POST', headers: JSON_HEADERS, body: '{}' });
  const honest = new Mirror();
  const late = new Mirror();
  const page = (await (await fetch(`${server.url}/changes`)).json()) as { _embedded: { changes: { cursor: string; type: string; resource: string; id: string; entity?: Record<string, unknown> }[] } };
  const events = page._embedded.changes.map((e) => ({ id: e.cursor, type: e.type, resource: e.resource, entityId: e.id, entity: e.entity }));
  honest.apply(events[0]!);
  late.apply(events[0]!);
  // The honest client resumes after its last id; the broken one after the next event's.
  for (const event of events.slice(1)) honest.apply(event);
  for (const event of events.slice(2)) late.apply(event);
  const listed = await listing(server.url, ['items']);
  assert.deepEqual(honest.entities, listed);
  assert.notDeepEqual(late.entities, listed);
  // And a repeated id is refused by the client model itself.
  assert.throws(() => honest.apply(events[2]!), /delivered twice/);
});

test('a filtered stream (/items?status=active&q=lamp), resumed twice by Last-Event-ID, under random writes -> its model equals the filtered listing', async () => {
  const changes = new LocalChangeLog();
  const store = createMemoryStore([], { resource: 'items', changes });
  const server = await startServer({ resources: [{ name: 'items', store }], changes });
  const path = '/items?status=active&q=lamp';
  const mirror = new Mirror();
  const random = prng(99);
  const ids: string[] = [];
  const statuses = ['active', 'paused'];
  const names = ['desk lamp', 'chair', 'floor lamp'];
  for (let round = 0; round < 3; round++) {
    let stop = false;
    const following = follow(server.url, mirror, () => stop, {}, path);
    // The stream is open once its preamble is out: wait for the server to count it.
    while (!(await (await fetch(`${server.url}/metrics`)).text()).includes('halserve_streams_open 1')) await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 60; i++) {
      const roll = random();
      const id = ids[Math.floor(random() * ids.length)];
      const fields = { status: statuses[Math.floor(random() * 2)], name: names[Math.floor(random() * 3)] };
      if (roll < 0.4 || id === undefined) {
        const res = await fetch(`${server.url}/items`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(fields) });
        ids.push(((await res.json()) as { id: string }).id);
      } else if (roll < 0.85) await (await fetch(`${server.url}/items/${id}`, { method: 'PATCH', headers: JSON_HEADERS, body: JSON.stringify(fields) })).text();
      else await (await fetch(`${server.url}/items/${id}`, { method: 'DELETE' })).text();
    }
    const end = changes.latestOf('items');
    while (mirror.lastId !== end) await new Promise((resolve) => setTimeout(resolve, 2));
    stop = true;
    await following;
  }
  const filtered = await listing(server.url, ['items'], {}, '&status=active&q=lamp');
  assert.ok(filtered.size > 0 && filtered.size < ids.length);
  assert.deepEqual(mirror.entities, filtered);
});

test('random writes to two resources, compactions forgetting deletes, reopens; paged readers with random limits resuming from random earlier cursors -> every page holds its writes\' states in order, no gap, 410 only past a forgotten delete, the head holds the listing', async () => {
  const dir = await tempDir();
  let now = Date.UTC(2026, 0, 1);
  const random = prng(7);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const names = ['items', 'other'];
  type State = Record<string, unknown>;
  const strip = (entity: State | undefined): State | null => {
    if (entity === undefined) return null;
    const { _links: _ignored, ...state } = entity;
    return state;
  };
  /** Every acknowledged write, in cursor order (one writer), with the state it left. */
  const writes: { seq: number; key: string; type: string; state: State | null }[] = [];
  const ids: Record<string, string[]> = { items: [], other: [] };
  const seqOf = (cursor: string): number => Number(cursor.split('_')[0]);
  const stateOf = (resources: readonly string[], through = Infinity): Map<string, State> => {
    const out = new Map<string, State>();
    for (const w of writes) if (w.seq <= through && resources.includes(w.key.split('/')[0]!)) (w.state === null ? out.delete(w.key) : out.set(w.key, w.state));
    return out;
  };
  interface Reader { resources: string[]; cursor: string | undefined; mirror: Map<string, State>; kept: { cursor: string | undefined; mirror: Map<string, State> }[] }
  const readers: Reader[] = [['items'], ['other'], ['items', 'other']].map((resources) => ({ resources, cursor: undefined, mirror: new Map(), kept: [] }));
  let gone = 0;
  for (let round = 0; round < 4; round++) {
    const data = await openDataDir({ dir, resources: names, durability: 'none', repair: false, warn: () => {}, now: () => now, retentionMs: 60_000, compaction: { auto: false } });
    const server = await startServer({ resources: names.map((name) => ({ name, store: data.stores.get(name)! })), changes: data.changes });
    const step = async (reader: Reader): Promise<boolean> => {
      if (random() < 0.15 && reader.kept.length > 0) Object.assign(reader, structuredClone(pick(reader.kept)));
      const limit = 1 + Math.floor(random() * 12);
      const since = reader.cursor;
      const res = await fetch(`${server.url}/changes?limit=${limit}&resource=${reader.resources.join(',')}${since === undefined ? '' : `&since=${since}`}`);
      if (res.status === 410) {
        // Only past a delete forgotten after the cursor (a cursor listed at a horizon names it).
        const horizon = since!.includes('_') ? Number(since!.split('_')[1]) : seqOf(since!);
        assert.ok(data.changes.forgotten > horizon, `410 for ${since}, forgotten ${data.changes.forgotten}`);
        gone++;
        Object.assign(reader, { cursor: undefined, mirror: new Map(), kept: [] });
        return false;
      }
      assert.equal(res.status, 200);
      const page = (await res.json()) as { cursor: string; _embedded: { changes: { cursor: string; type: string; resource: string; id: string; entity?: State }[] } };
      const events = page._embedded.changes;
      const got = new Set(events.map((e) => seqOf(e.cursor)));
      let last = since === undefined ? 0 : seqOf(since);
      const from = last;
      for (const e of events) {
        const write = writes.find((w) => w.seq === seqOf(e.cursor));
        assert.ok(write !== undefined && seqOf(e.cursor) > last, `${e.cursor} after ${last}`);
        last = seqOf(e.cursor);
        assert.deepEqual([`${e.resource}/${e.id}`, e.type, strip(e.entity)], [write.key, write.type, write.state]);
        if (e.type === 'deleted') reader.mirror.delete(write.key);
        else reader.mirror.set(write.key, write.state!);
      }
      // A write left out has a later one of its entity, or is a delete forgotten before the read began.
      const horizon = since === undefined ? Infinity : since.includes('_') ? Number(since.split('_')[1]) : 0;
      for (const w of writes) {
        if (w.seq <= from || w.seq > last || got.has(w.seq) || !reader.resources.includes(w.key.split('/')[0]!)) continue;
        const superseded = writes.some((x) => x.key === w.key && x.seq > w.seq);
        assert.ok(superseded || (w.type === 'deleted' && w.seq <= Math.min(horizon, data.changes.forgotten)), `write ${w.seq} left out of (${from}, ${last}]`);
      }
      reader.cursor = page.cursor;
      reader.kept.push(structuredClone({ cursor: reader.cursor, mirror: reader.mirror }));
      if (events.length > 0) return false;
      assert.deepEqual(reader.mirror, stateOf(reader.resources), `at the head ${page.cursor}`);
      return true;
    };
    /** List, then watch: the listing is the state as of its page's cursor, and that cursor resumes. */
    const listThenWatch = async (name: string): Promise<void> => {
      const page = (await (await fetch(`${server.url}/${name}?limit=200`)).json()) as { _links: { changes: { href: string } }; _embedded: Record<string, State[]> };
      const cursor = /^\/changes\?since=([^&]+)&resource=(\w+)$/.exec(page._links.changes.href)![1]!;
      assert.deepEqual(new Map((page._embedded[name] ?? []).map((e) => [`${name}/${String(e['id'])}`, strip(e)!])), stateOf([name], seqOf(cursor)));
      assert.equal((await fetch(`${server.url}${page._links.changes.href}`)).status, 200, page._links.changes.href);
    };
    /** One write of `name` (`id` undefined: a POST), recorded with its cursor and the state it left. */
    const write = async (name: string, id: string | undefined, method: string, body: State): Promise<void> => {
      const res = await fetch(`${server.url}/${name}${id === undefined ? '' : `/${id}`}`, { method, headers: JSON_HEADERS, body: method === 'DELETE' ? null : JSON.stringify(body) });
      assert.ok(res.ok, `${method} ${res.status}`);
      const state = method === 'DELETE' ? (await res.text(), null) : strip((await res.json()) as State);
      const key = `${name}/${id ?? String(state!['id'])}`;
      if (id === undefined) ids[name]!.push(key.split('/')[1]!);
      if (method === 'DELETE') ids[name]!.splice(ids[name]!.indexOf(id!), 1);
      writes.push({ seq: seqOf(await latest(server.url)), key, type: method === 'POST' ? 'created' : method === 'DELETE' ? 'deleted' : 'updated', state });
    };
    for (let i = 0; i < 60; i++) {
      const name = random() < 0.6 ? 'items' : 'other';
      const id = ids[name]!.length < 3 || random() < 0.35 ? undefined : pick(ids[name]!);
      const roll = random();
      await write(name, id, id === undefined ? 'POST' : roll < 0.5 ? 'PATCH' : roll < 0.7 ? 'PUT' : 'DELETE', { n: i, round });
      if (random() < 0.3) await step(pick(readers));
      if (random() < 0.1) await listThenWatch(pick(names));
      if (i === 30) {
        // The newest change a delete of one resource, both listed, then that delete forgotten.
        await write('other', undefined, 'POST', {});
        await write('other', ids['other']!.at(-1), 'DELETE', {});
        for (const name of names) await listThenWatch(name);
        now += round === 2 ? 120_000 : 45_000;
        for (const name of names) assert.equal(await (data.stores.get(name) as JsonlStore).compact(), true);
        for (const name of names) await listThenWatch(name);
      }
    }
    for (const reader of readers) while (!(await step(reader)));
    for (const name of names) await listThenWatch(name);
    await server.close();
    await data.close();
  }
  assert.ok(gone > 0, 'some reader resumed from before a forgotten delete');
});
