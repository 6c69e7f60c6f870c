import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import postgres from 'postgres';
import { legacyFingerprint, requestFingerprint } from '../../src/conventions/idempotency-key.js';
import { ReplayedAnswer, type KeyedWrite, type StoredAnswer } from '../../src/store/idempotency.js';
import { CREATE_CALL_ANSWERED } from '../../src/store/pg/create-function.js';
import { SCHEMA } from '../../src/store/pg/layout.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { relationGraph } from '../../src/conventions/relations.js';
import { compileSchema } from '../../src/conventions/schema.js';
import type { ServedResource } from '../../src/http/app.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { record } from '../store/store-suite.js';
import { startServer } from '../helpers/server.js';
import { startCli, tempDir } from '../helpers/process.js';
import { freshDatabase, openStores, pgCluster, pgMissing, until, untilWritten } from './helpers.js';

/*
 * Idempotency-Key on PostgreSQL: the answer is inserted by the statement that makes the write, so
 * every process of the database replays it, and no outage can separate the two.
 */

const PRODUCT_SCHEMA = { type: 'object', required: ['name'], properties: { name: { type: 'string' }, category: { type: 'string', 'x-link': 'categories' } } };

const headers = (key: string): Record<string, string> => ({ 'content-type': 'application/json', 'idempotency-key': key });

/** A key whose answer is the entity's id with a 201. */
function key(name: string, fingerprint = 'f'): KeyedWrite {
  return {
    key: name,
    fingerprint,
    answer: (outcome): StoredAnswer | undefined => ('error' in outcome || outcome.entity === undefined ? undefined : { status: 201, headers: { location: `/items/${outcome.entity.id}` }, body: outcome.entity.json }),
  };
}

/**
 * A TCP proxy to `port` that, on the first connection whose client sent `marker` (a statement's
 * text), drops every byte of the database's replies from the statement's result on (the first
 * reply holding a `SELECT` command tag; the statement's description before it passes, so the
 * driver sends its execution): a commit whose answer is lost on the way back. Once, so that a
 * retry sending the same statement is answered.
 */
async function replyDropper(port: number, marker: string): Promise<{ port: number; dropped(): boolean }> {
  const sockets: net.Socket[] = [];
  let dropped = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    let armed = false;
    let mute = false;
    sockets.push(client, upstream);
    client.on('data', (chunk: Buffer) => {
      if (!dropped && chunk.includes(marker)) armed = true;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (armed && chunk.includes('SELECT ')) mute = dropped = true;
      if (!mute) client.write(chunk);
    });
    for (const socket of [client, upstream]) socket.on('error', () => {}).on('close', () => [client, upstream].forEach((s) => s.destroy()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { port: (server.address() as net.AddressInfo).port, dropped: () => dropped };
}

async function liveRows(url: string, where = ''): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return (await sql.unsafe(`SELECT id FROM ${SCHEMA}.entities WHERE body IS NOT NULL ${where}`)).map((r) => r.id as string);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

describe('Idempotency-Key on PostgreSQL', { skip: pgMissing }, () => {
  test('keyed POST through process A, the retry through process B -> B replays A\'s answer; 16 concurrent retries over both -> one entity', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([0, 1].map(async () => startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--data', await tempDir()])));
    const first = await fetch(`${a!.url}/items`, { method: 'POST', headers: headers('"k-1"'), body: '{"n":1}' });
    assert.equal(first.status, 201);
    const firstBody = await first.text();
    const retry = await fetch(`${b!.url}/items`, { method: 'POST', headers: headers('k-1'), body: '{"n":1}' });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotency-replayed'), 'true');
    assert.equal(retry.headers.get('location'), first.headers.get('location'));
    assert.equal(retry.headers.get('etag'), first.headers.get('etag'));
    assert.equal(await retry.text(), firstBody);
    assert.equal((await fetch(`${b!.url}/items`, { method: 'POST', headers: headers('k-1'), body: '{"n":2}' })).status, 422);

    const burst = await Promise.all(Array.from({ length: 16 }, (_, i) => fetch(`${[a, b][i % 2]!.url}/items`, { method: 'POST', headers: headers('burst'), body: '{"n":16}' })));
    const statuses = burst.map((r) => r.status);
    assert.ok(statuses.every((s) => s === 201 || s === 409), JSON.stringify(statuses));
    assert.equal(new Set(burst.filter((r) => r.status === 201).map((r) => r.headers.get('location'))).size, 1);
    assert.equal((await liveRows(url)).length, 2);
    for (const p of [a!, b!]) {
      p.child.kill('SIGTERM');
      assert.equal(await p.exited, 0);
    }
  });

  test('keyed writes whose answers begin as their rows (by reference in the statement), of every kind of text -> replayed byte for byte by another process', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([0, 1].map(async () => startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--data', await tempDir()])));
    const names = ['plain ascii', 'Zoë, naïve café', 'emoji 😀 and 𝄞', '"quoted" \\ back\\slash', 'line\nbreak \u2028 tab\t', 'ÿ'.repeat(40)];
    for (const [i, name] of names.entries()) {
      const body = JSON.stringify({ name, i });
      const first = await fetch(`${a!.url}/items`, { method: 'POST', headers: headers(`text-${i}`), body });
      assert.equal(first.status, 201);
      const firstBody = await first.text();
      const retry = await fetch(`${b!.url}/items`, { method: 'POST', headers: headers(`text-${i}`), body });
      assert.equal(retry.headers.get('idempotency-replayed'), 'true', name);
      assert.equal(await retry.text(), firstBody, name);
      // And a PATCH's 200, whose body is the patched row's representation.
      const patch = JSON.stringify({ name: `${name} again` });
      const location = first.headers.get('location')!;
      const patchHeaders = { ...headers(`patch-${i}`), 'content-type': 'application/merge-patch+json' };
      const patched = await fetch(`${a!.url}${location}`, { method: 'PATCH', headers: patchHeaders, body: patch });
      assert.equal(patched.status, 200, name);
      const patchedBody = await patched.text();
      const repatched = await fetch(`${b!.url}${location}`, { method: 'PATCH', headers: patchHeaders, body: patch });
      assert.equal(repatched.headers.get('idempotency-replayed'), 'true', name);
      assert.equal(await repatched.text(), patchedBody, name);
    }
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      // The stored bodies are whole, whichever way the statement sent them.
      const stored = await sql.unsafe(`SELECT body FROM ${SCHEMA}.answers`);
      assert.equal(stored.length, 2 * names.length);
      for (const row of stored) assert.match(row.body as string, /^\{"id":"[^"]+",.*"_links":\{"self":\{"href":"\/items\/[^"]+"\}\}\}$/s);
    } finally {
      await sql.end({ timeout: 1 });
    }
    for (const p of [a!, b!]) {
      p.child.kill('SIGTERM');
      assert.equal(await p.exited, 0);
    }
  });

  test('an answer an earlier version recorded (its fingerprint of the body as JSON) -> the same bytes replay it; another body is a 422', async () => {
    const url = await freshDatabase();
    const server = await startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--data', await tempDir()]);
    // Spaced: the digest of the bytes and the digest of the JSON value differ.
    const body = '{ "n": 3 }';
    const first = await fetch(`${server.url}/items`, { method: 'POST', headers: headers('k-old'), body });
    assert.equal(first.status, 201);
    const firstBody = await first.text();
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const changed = await sql.unsafe(`UPDATE ${SCHEMA}.answers SET fingerprint = $1 WHERE fingerprint = $2`, [legacyFingerprint(JSON.parse(body)), requestFingerprint(Buffer.from(body))]);
      assert.equal(changed.count, 1);
    } finally {
      await sql.end();
    }
    const again = await fetch(`${server.url}/items`, { method: 'POST', headers: headers('k-old'), body });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.equal(await again.text(), firstBody);
    assert.equal((await fetch(`${server.url}/items`, { method: 'POST', headers: headers('k-old'), body: '{"n":4}' })).status, 422);
    assert.equal((await liveRows(url)).length, 1);
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  });

  test('keyed POST and PATCH under --base-path, retried after restarts without it and with another; answers an earlier version recorded under its base path -> replayed, renamed at start-up; one entity', async () => {
    const url = await freshDatabase();
    const data = await tempDir();
    const serve = (basePath: string) => startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--data', data, ...(basePath === '' ? [] : ['--base-path', basePath])]);
    const post = { method: 'POST', headers: headers('k-moved'), body: '{"n":1}' };
    const patch = { method: 'PATCH', headers: { ...headers('k-moved-edit'), 'content-type': 'application/merge-patch+json' }, body: '{"n":2}' };
    const stop = async (server: Awaited<ReturnType<typeof serve>>): Promise<void> => {
      server.child.kill('SIGTERM');
      assert.equal(await server.exited, 0);
    };
    const api = await serve('/api');
    const first = await fetch(`${api.url}/api/items`, post);
    assert.equal(first.status, 201);
    const location = first.headers.get('location')!;
    const id = location.slice(location.lastIndexOf('/') + 1);
    const firstBody = await first.text();
    const patched = await fetch(`${api.url}${location}`, patch);
    assert.equal(patched.status, 200);
    const patchedBody = await patched.text();
    // Without the prefix, to the same collection.
    assert.equal((await fetch(`${api.url}/items`, post)).headers.get('idempotency-replayed'), 'true');
    await stop(api);
    const retried = async (server: Awaited<ReturnType<typeof serve>>, prefix: string): Promise<void> => {
      const again = await fetch(`${server.url}${prefix}/items`, post);
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.equal(again.headers.get('location'), location);
      assert.equal(await again.text(), firstBody);
      const repatched = await fetch(`${server.url}${prefix}/items/${id}`, patch);
      assert.equal(repatched.headers.get('idempotency-replayed'), 'true');
      assert.equal(await repatched.text(), patchedBody);
    };
    const plain = await serve('');
    await retried(plain, '');
    await stop(plain);
    // As the earlier version named them: by the paths under its base path.
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const changed = await sql.unsafe(`UPDATE ${SCHEMA}.answers SET key = replace(key, '","/items', '","/api/items')`);
      assert.equal(changed.count, 2);
      // And the POST's answer once more, as the version before 2026-12-02 named it (the path as the
      // request spelled it): both names are this version's one key, which keeps one answer.
      const copied = await sql.unsafe(
        `INSERT INTO ${SCHEMA}.answers SELECT resource, replace(key, '","/api/items"', '","/api/v1/items"'), fingerprint, at, status, headers, body FROM ${SCHEMA}.answers WHERE strpos(key, '","POST","/api/items"') > 0`,
      );
      assert.equal(copied.count, 1);
      const v2 = await serve('/v2');
      await retried(v2, '/v2');
      await stop(v2);
      const targets = (await sql.unsafe(`SELECT key FROM ${SCHEMA}.answers`)).map((r) => (JSON.parse(r.key as string) as string[])[2]).sort();
      assert.deepEqual(targets, ['/items', `/items/${id}`]);
    } finally {
      await sql.end({ timeout: 1 });
    }
    assert.deepEqual(await liveRows(url), [id]);
  });

  test('a keyed write committed, its reply lost (503) -> the retry replays it, one entity', async () => {
    const url = new URL(await freshDatabase());
    // The statement of a batch of keyed creates (create-function.ts), the only one with this text.
    const proxy = await replyDropper(Number(url.port), CREATE_CALL_ANSWERED.slice(CREATE_CALL_ANSWERED.indexOf('$6')));
    const through = new URL(url);
    through.port = String(proxy.port);
    const opened = await openStores(through.toString(), ['items'], { deadlineMs: 400 });
    const store = opened.stores.get('items')!;
    // On a loaded machine the first write (new connections through the proxy) may pass the short deadline.
    await untilWritten(() => store.create(record('warm-up')), 'the warm-up write');
    // The write's statement reaches the database and commits; its reply never comes back.
    await assert.rejects(store.create(record('a', { n: 1 }), key('k')), StoreUnavailableError);
    assert.equal(proxy.dropped(), true);
    assert.deepEqual((await liveRows(url.toString())).sort(), ['a', 'warm-up']);
    let replayed: StoredAnswer | undefined;
    await until(async () => {
      try {
        await store.create(record('a2', { n: 1 }), key('k'));
        return true;
      } catch (error) {
        if (error instanceof ReplayedAnswer) replayed = error.answer;
        else if (!(error instanceof StoreUnavailableError)) throw error;
        return replayed !== undefined;
      }
    }, 'the retry answered');
    assert.equal(replayed?.headers['location'], '/items/a');
    assert.deepEqual((await liveRows(url.toString())).sort(), ['a', 'warm-up']);
  });

  test('keyed POST and PATCH making links (the write function\'s statement) -> 201/200, retries replay, one entity; a dangling link -> 400, nothing written', async () => {
    const url = await freshDatabase();
    const opened = await openStores(url, ['categories', 'products']);
    await opened.stores.get('categories')!.create(record('c1', { name: 'Lamps' }));
    const served = (categories: Store, products: Store): ServedResource[] => [
      { name: 'categories', store: categories },
      { name: 'products', store: products, schema: PRODUCT_SCHEMA, validate: compileSchema(PRODUCT_SCHEMA, 'products.schema.json') },
    ];
    const integrity = await opened.keepLinks(relationGraph(served(createMemoryStore(), createMemoryStore())));
    const s = await startServer({ resources: served(opened.stores.get('categories')!, opened.stores.get('products')!), linkIntegrity: () => integrity });
    const post = (k: string, body: unknown): Promise<Response> => s.request('/products', { method: 'POST', headers: headers(k), body: JSON.stringify(body) });
    const first = await post('p', { name: 'Lamp', category: 'c1' });
    assert.equal(first.status, 201);
    const again = await post('p', { name: 'Lamp', category: 'c1' });
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.equal(again.headers.get('location'), first.headers.get('location'));
    const path = first.headers.get('location')!;
    const patch = (): Promise<Response> => s.request(path, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json', 'idempotency-key': 'q' }, body: '{"name":"Desk lamp"}' });
    const patched = await patch();
    assert.equal(patched.status, 200);
    const repatched = await patch();
    assert.equal(repatched.headers.get('idempotency-replayed'), 'true');
    assert.equal(await repatched.text(), await patched.text());
    const dangling = await post('d', { name: 'Lamp', category: 'nowhere' });
    assert.equal(dangling.status, 400);
    const danglingBody = await dangling.text();
    // Refused before the write (its link checked first), remembered all the same: the retry
    // replays it, another body with the key is a 422.
    const retried = await post('d', { name: 'Lamp', category: 'nowhere' });
    assert.equal(retried.status, 400);
    assert.equal(retried.headers.get('idempotency-replayed'), 'true');
    assert.equal(await retried.text(), danglingBody);
    assert.equal((await post('d', { name: 'Lamp', category: 'elsewhere' })).status, 422);
    // A dangling link set (refused before the write), then the entity deleted: the retry replays
    // the first 400, not a 404.
    const invalid = (): Promise<Response> => s.request(path, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json', 'idempotency-key': 'v' }, body: '{"category":"nowhere"}' });
    const refused = await invalid();
    assert.equal(refused.status, 400);
    const refusedBody = await refused.text();
    assert.equal((await liveRows(url, "AND resource = 'products'")).length, 1);
    const other = await post('o', { name: 'Other', category: 'c1' });
    assert.equal(other.status, 201);
    assert.equal((await s.request(other.headers.get('location')!, { method: 'DELETE' })).status, 204);
    assert.equal((await s.request(path, { method: 'DELETE' })).status, 204);
    const replayed = await invalid();
    assert.equal(replayed.status, 400);
    assert.equal(replayed.headers.get('idempotency-replayed'), 'true');
    assert.equal(await replayed.text(), refusedBody);
    assert.equal((await liveRows(url, "AND resource = 'products'")).length, 0);
  });

  test('an answer past its time to live (injected clock) -> the key is processed afresh and the old answer deleted', async () => {
    const url = await freshDatabase();
    let now = 1_000_000;
    const opened = await openStores(url, ['items'], { idempotency: { now: () => now, ttlMs: 1000 } });
    const store = opened.stores.get('items')!;
    await store.create(record('old'), key('t'));
    now += 999;
    await assert.rejects(store.create(record('new'), key('t')), ReplayedAnswer);
    now += 1;
    await store.create(record('new'), key('t'));
    await assert.rejects(store.create(record('newer'), key('t')), (e: unknown) => e instanceof ReplayedAnswer && e.answer.headers['location'] === '/items/new');
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      assert.deepEqual((await sql.unsafe(`SELECT key, at::text AS at FROM ${SCHEMA}.answers`)).map((r) => [r.key, r.at]), [['t', String(now)]]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  test('a database laid out with the first B-tree of the answers\' time -> opened, it holds the BRIN index instead; answers expire and replay as before', async () => {
    const url = await freshDatabase();
    let now = 5_000_000;
    const first = await openStores(url, ['items'], { idempotency: { now: () => now, ttlMs: 1000 } });
    await first.stores.get('items')!.create(record('a'), key('old'));
    await first.close();
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    const indexes = async (): Promise<string[]> =>
      (await sql.unsafe(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = '${SCHEMA}' AND tablename = 'answers' ORDER BY indexname`)).map((r) => `${r.indexname}: ${/USING (\w+)/.exec(r.indexdef)?.[1]}`);
    try {
      assert.deepEqual(await indexes(), ['answers_at_brin: brin', 'answers_pkey: btree']);
      // As the first layout had it.
      await sql.unsafe(`DROP INDEX ${SCHEMA}.answers_at_brin; CREATE INDEX answers_at ON ${SCHEMA}.answers (resource, at)`);
      assert.deepEqual(await indexes(), ['answers_at: btree', 'answers_pkey: btree']);
      const opened = await openStores(url, ['items'], { idempotency: { now: () => now, ttlMs: 1000 } });
      assert.deepEqual(await indexes(), ['answers_at_brin: brin', 'answers_pkey: btree']);
      const store = opened.stores.get('items')!;
      await assert.rejects(store.create(record('b'), key('old')), ReplayedAnswer);
      now += 1000;
      await store.create(record('c'), key('old'));
      assert.deepEqual((await sql.unsafe(`SELECT key, at::text AS at FROM ${SCHEMA}.answers`)).map((r) => [r.key, r.at]), [['old', String(now)]]);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });

  test('keyed POST during a database outage -> 503; the retries once it is back -> one 201, then replays; never two entities', async () => {
    const cluster = await pgCluster();
    const url = await freshDatabase();
    const server = await startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--data', await tempDir()]);
    assert.equal((await fetch(`${server.url}/items`, { method: 'POST', headers: headers('before'), body: '{"n":0}' })).status, 201);
    await cluster.pause('fast');
    const post = async (): Promise<Response | undefined> => {
      try {
        return await fetch(`${server.url}/items`, { method: 'POST', headers: headers('outage'), body: '{"marker":"outage"}' });
      } catch {
        return undefined;
      }
    };
    await until(async () => (await post())?.status === 503, 'a keyed write refused during the outage');
    await cluster.resume();
    let created: Response | undefined;
    await until(async () => {
      const res = await post();
      if (res?.status === 201) created = res;
      return created !== undefined;
    }, 'the keyed write answered once the database is back');
    const again = await post();
    assert.equal(again?.status, 201);
    assert.equal(again?.headers.get('idempotency-replayed'), 'true');
    assert.equal(again?.headers.get('location'), created!.headers.get('location'));
    assert.equal((await liveRows(url, `AND body::json->>'marker' = 'outage'`)).length, 1);
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  });
});
