import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startCli, tempDir } from '../helpers/process.js';
import { records, startItems } from '../helpers/server.js';

/**
 * Many clients writing the same ids at once, against the memory store and the real JSON-lines store
 * behind the CLI. Afterwards every way of reading agrees — GET of each entity, the collection's
 * total, a traversal by `next` links — and a restarted server shows exactly the same state.
 */

type Fetch = (path: string, init?: RequestInit) => Promise<Response>;
const JSON_HEADERS = { 'content-type': 'application/json' };

/** Runs `tasks` with at most `width` in flight. */
async function pool<T>(width: number, tasks: readonly (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array<T>(tasks.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await (tasks[i] as () => Promise<T>)();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, tasks.length) }, worker));
  return results;
}

/** A tiny deterministic generator, so a failing run can be repeated. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

interface Snapshot {
  /** Entity JSON text by id, from following `next` links. */
  readonly byTraversal: ReadonlyMap<string, string>;
  readonly total: number;
}

/** Reads the whole collection by following `next` from page 1, checking each page as it goes. */
async function traverse(request: Fetch, limit = 7): Promise<Snapshot> {
  const byTraversal = new Map<string, string>();
  let href: string | undefined = `/items?limit=${limit}`;
  let total = -1;
  for (let pages = 0; href !== undefined; pages++) {
    assert.ok(pages < 10_000, 'traversal does not end');
    const res = await request(href);
    assert.equal(res.status, 200);
    const page = (await res.json()) as { total: number; count: number; _links: { next?: { href: string } }; _embedded: { items: Record<string, unknown>[] } };
    if (total === -1) total = page.total;
    assert.equal(page.total, total, 'total changed during a traversal with no writes');
    assert.equal(page._embedded.items.length, page.count);
    for (const entity of page._embedded.items) {
      const id = String(entity['id']);
      assert.ok(!byTraversal.has(id), `entity ${id} seen twice`);
      byTraversal.set(id, JSON.stringify(entity));
    }
    href = page._links.next?.href;
  }
  assert.equal(byTraversal.size, total);
  return { byTraversal, total };
}

/** Every entity seen in the traversal reads back the same on its own; returns the snapshot. */
async function assertConsistent(request: Fetch): Promise<Snapshot> {
  const snapshot = await traverse(request);
  for (const [id, json] of snapshot.byTraversal) {
    const res = await request(`/items/${encodeURIComponent(id)}`);
    assert.equal(res.status, 200);
    assert.equal(JSON.stringify(await res.json()), json);
  }
  return snapshot;
}

/**
 * A storm of POST, PUT, PATCH and DELETE on shared ids; every created id joins `ids`, so later
 * requests fight over it too. Returns the count of each `METHOD status`; every status must be one
 * the contract allows for that request.
 */
async function storm(request: Fetch, ids: string[], operations: number, seed: number): Promise<Map<string, number>> {
  const next = random(seed);
  const counts = new Map<string, number>();
  const tasks = Array.from({ length: operations }, (_, i) => async (): Promise<void> => {
    const roll = next();
    const id = ids[Math.floor(next() * ids.length)] ?? '';
    let method: string;
    let path = `/items/${id}`;
    let body: string | undefined = JSON.stringify({ op: i, [`f${i % 13}`]: i });
    if (roll < 0.3) {
      method = 'POST';
      path = '/items';
    } else if (roll < 0.5) method = 'PUT';
    else if (roll < 0.8) method = 'PATCH';
    else {
      method = 'DELETE';
      body = undefined;
    }
    const res = await request(path, { method, headers: JSON_HEADERS, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    if (method === 'POST' && res.status === 201) ids.push((JSON.parse(text) as { id: string }).id);
    const allowed = method === 'POST' ? [201] : method === 'DELETE' ? [204, 404] : [200, 404];
    assert.ok(allowed.includes(res.status), `${method} ${path} -> ${res.status}`);
    const key = `${method} ${res.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  });
  await pool(24, tasks);
  return counts;
}

describe('memory store', () => {
  test('60 concurrent POSTs -> 60 distinct ids, total 60, traversal sees each once', async () => {
    const s = await startItems();
    const ids = await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ i }) });
        assert.equal(res.status, 201);
        return ((await res.json()) as { id: string }).id;
      }),
    );
    assert.equal(new Set(ids).size, 60);
    const snapshot = await assertConsistent(s.request);
    assert.equal(snapshot.total, 60);
  });

  test('40 concurrent PATCHes of different fields on one id -> every field present, none lost', async () => {
    const s = await startItems(records(1));
    const statuses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        s.request('/items/e000', { method: 'PATCH', headers: JSON_HEADERS, body: JSON.stringify({ [`f${i}`]: i }) }).then(async (r) => (await r.arrayBuffer(), r.status)),
      ),
    );
    assert.ok(statuses.every((status) => status === 200));
    const record = s.store.get('e000')?.record ?? { id: '', createdAt: 0, updatedAt: 0 };
    for (let i = 0; i < 40; i++) assert.equal(record[`f${i}`], i);
  });

  test('20 concurrent DELETEs of one id -> exactly one 204, the rest 404, then GET 404', async () => {
    const s = await startItems(records(2));
    const statuses = await Promise.all(Array.from({ length: 20 }, () => s.request('/items/e000', { method: 'DELETE' }).then(async (r) => (await r.arrayBuffer(), r.status))));
    assert.equal(statuses.filter((status) => status === 204).length, 1);
    assert.equal(statuses.filter((status) => status === 404).length, 19);
    assert.equal((await s.request('/items/e000')).status, 404);
    assert.equal((await assertConsistent(s.request)).total, 1);
  });

  test('PATCHes racing a DELETE on one id -> each 200 or 404; afterwards gone everywhere', async () => {
    const s = await startItems(records(1));
    const patches = Array.from({ length: 30 }, (_, i) =>
      s.request('/items/e000', { method: 'PATCH', headers: JSON_HEADERS, body: JSON.stringify({ i }) }).then(async (r) => (await r.arrayBuffer(), r.status)),
    );
    const deleted = s.request('/items/e000', { method: 'DELETE' }).then((r) => r.status);
    const statuses = await Promise.all(patches);
    assert.equal(await deleted, 204);
    assert.ok(statuses.every((status) => status === 200 || status === 404));
    assert.equal((await s.request('/items/e000')).status, 404);
    assert.equal((await assertConsistent(s.request)).total, 0);
  });

  test('400 mixed writes on 5 shared ids -> every answer allowed; GET, total and traversal agree', async () => {
    const s = await startItems(records(5));
    await storm(s.request, ['e000', 'e001', 'e002', 'e003', 'e004'], 400, 1);
    const snapshot = await assertConsistent(s.request);
    assert.equal(snapshot.total, s.store.size);
  });
});

describe('JSON-lines store behind the CLI', () => {
  /** The CLI on `dir`, with a `request` bound to it. */
  async function serve(dir: string): Promise<{ request: Fetch; stop(signal?: NodeJS.Signals): Promise<number | string> }> {
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off']);
    return {
      request: (path, init) => fetch(`${cli.url}${path}`, init),
      stop: (signal = 'SIGTERM') => {
        cli.child.kill(signal);
        return cli.exited;
      },
    };
  }

  test('200 mixed writes on shared ids, hostile values, 1 MiB bodies, 100 more writes during compaction, 20 racing If-Match -> consistent, one racer wins; SIGTERM and restart -> the same state', async () => {
    const dir = await tempDir('halserve-qa-');
    const first = await serve(dir);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await first.request('/items', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ seed: i }) });
      ids.push(((await res.json()) as { id: string }).id);
    }
    const counts = [await storm(first.request, ids, 200, 2)];

    // Values that look like the log's own syntax, or that sit on read-block boundaries at start-up.
    const hostile = [
      '{"note":"\\n{\\"id\\":\\"x\\",\\"_deleted\\":true}\\n"}',
      '{"nested":{"_deleted":true,"id":"other"}}',
      '{"list":[{"_deleted":true}],"\\"_deleted\\"":true}',
      '{"sep":"\\u2028\\u2029\\r\\u0000","lone":"\\ud800","emoji":"😀"}',
      '{"__proto__":{"x":1},"":"empty key","a\\"b":"quote in key"}',
      `{"deep":${'['.repeat(1000)}${']'.repeat(1000)}}`,
      '{"big":12345678901234567890,"small":-0.0000001,"exp":1e-300}',
      // Multi-byte characters, so that byte and character offsets differ across read blocks.
      ...[0, 1, 2].map((i) => JSON.stringify({ i, text: `${'é'.repeat(100_000 + i)}${'x'.repeat(800_000)}😀` })),
    ];
    for (const body of hostile) {
      const res = await first.request('/items', { method: 'POST', headers: JSON_HEADERS, body });
      assert.equal(res.status, 201, body.slice(0, 100));
      await res.arrayBuffer();
    }
    // The log is now over 1 MiB with most lines dead, so compaction starts: write on through it.
    counts.push(await storm(first.request, ids, 100, 4));
    const target = ids[0] ?? '';
    const patched = await first.request(`/items/${target}`, { method: 'PATCH', headers: JSON_HEADERS, body: '{"_deleted":true,"id":"moved"}' });
    assert.ok(patched.status === 200 || patched.status === 404, `PATCH -> ${patched.status}`);
    // Twenty writers holding the same ETag: the store's write order lets exactly one through.
    const live = (await traverse(first.request)).byTraversal.keys().next().value ?? '';
    const etag = (await first.request(`/items/${live}`)).headers.get('etag') ?? '';
    const racers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        first
          .request(`/items/${live}`, { method: 'PATCH', headers: { ...JSON_HEADERS, 'if-match': etag }, body: JSON.stringify({ racer: i }) })
          .then(async (r) => (await r.arrayBuffer(), r.status)),
      ),
    );
    assert.deepEqual(
      racers.filter((status) => status !== 412),
      [200],
    );
    const before = await assertConsistent(first.request);
    assert.equal(await first.stop(), 0);

    const second = await serve(dir);
    const after = await assertConsistent(second.request);
    assert.deepEqual([...after.byTraversal], [...before.byTraversal]);
    assert.equal(await second.stop(), 0);
    // Every line is one JSON object: nothing a client sent split or merged lines.
    const lines = (await readFile(join(dir, 'items.jsonl'), 'utf8')).split('\n').filter((line) => line !== '');
    for (const line of lines) assert.equal(typeof JSON.parse(line), 'object');
    // Each successful PUT, PATCH or DELETE left one dead line; fewer dead lines than that means
    // compaction ran, with the second storm writing through it.
    const obsoleting = counts.reduce((n, c) => n + (c.get('PUT 200') ?? 0) + (c.get('PATCH 200') ?? 0) + (c.get('DELETE 204') ?? 0), 0);
    assert.ok(lines.length - after.total < obsoleting, `${lines.length} lines, ${after.total} live, ${obsoleting} obsoleting writes: no compaction`);
  });

  test('acknowledged writes, then SIGKILL and restart -> the same state', async () => {
    const dir = await tempDir('halserve-qa-');
    const first = await serve(dir);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await first.request('/items', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ seed: i }) });
      ids.push(((await res.json()) as { id: string }).id);
    }
    await storm(first.request, ids, 100, 3);
    const before = await assertConsistent(first.request);
    await first.stop('SIGKILL');

    const second = await serve(dir);
    const after = await assertConsistent(second.request);
    assert.deepEqual([...after.byTraversal], [...before.byTraversal]);
    assert.equal(await second.stop(), 0);
  });
});
