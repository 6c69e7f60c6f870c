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
