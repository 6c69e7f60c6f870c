import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sample } from '../helpers/metrics.js';
import { eventually, startCli, type CliProcess } from '../helpers/process.js';
import { feedCursors, SECRET, startReceiver, type Receiver } from '../webhooks/receiver.js';
import { freshDatabase, openStores, pgMissing } from './helpers.js';
import type { Sql } from '../../src/store/pg/driver.js';
import { ServerMetrics } from '../../src/metrics/server-metrics.js';
import { WebhookMetrics } from '../../src/metrics/webhook-metrics.js';
import { LocalChangeLog } from '../../src/store/changes/local-feed.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { realScheduler, type Scheduler } from '../../src/webhooks/delivery.js';
import { Webhooks } from '../../src/webhooks/webhooks.js';
import { startServer } from '../helpers/server.js';
import { PgLease } from '../../src/webhooks/pg-lease.js';
import { PgPositions } from '../../src/webhooks/pg-positions.js';
import { LEASE_TABLE } from '../../src/webhooks/pg-schema.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

/** Whether `cli` says it delivers (`halserve_webhook_delivering`). */
async function delivering(cli: CliProcess): Promise<boolean> {
  const text = await (await fetch(`${cli.url}/metrics`)).text();
  return sample(text, 'halserve_webhook_delivering') === 1;
}

/** `n` creates spread over `clis` in turn. */
async function writes(clis: readonly CliProcess[], n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i++) {
    const res = await fetch(`${clis[i % clis.length]!.url}/items`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n: i }) });
    assert.equal(res.status, 201);
  }
}

/**
 * Every event of the feed acknowledged, once the feed `url` reads shows `expected` events: a process
 * learns of the writes made through the others through the database, a moment later (under load,
 * later than the last POST's answer). How many deliveries were made for how many events.
 */
async function allAcknowledged(url: string, receiver: Receiver, expected: number): Promise<{ events: number; deliveries: number }> {
  let cursors: string[] = [];
  await eventually(async () => (cursors = await feedCursors(url)).length >= expected, `${expected} events in ${url}/changes`);
  await eventually(() => {
    const acked = new Set(receiver.acknowledged());
    return cursors.every((cursor) => acked.has(cursor));
  }, 'every event of /changes acknowledged');
  assert.deepEqual(receiver.invalid, []);
  return { events: cursors.length, deliveries: receiver.received.length };
}

describe('webhooks on PostgreSQL: one deliverer per database', { skip: pgMissing }, () => {
  test('three processes, one receiver -> each event delivered about once; the deliverer killed -> another takes over, nothing skipped', async () => {
    const url = await freshDatabase();
    const receiver = await startReceiver();
    const args = ['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--webhook', receiver.url, '--webhook-secret', SECRET, '--webhook-lease', '2s'];
    const clis: CliProcess[] = [];
    for (let i = 0; i < 3; i++) clis.push(await startCli(args));
    await eventually(async () => (await Promise.all(clis.map(delivering))).filter(Boolean).length === 1, 'one process delivering');
    await writes(clis, 150);
    const first = await allAcknowledged(clis[0]!.url, receiver, 150);
    assert.equal(first.events, 150);
    assert.ok(first.deliveries <= 150 * 1.05, `${first.deliveries} deliveries for 150 events`);
    assert.equal((await Promise.all(clis.map(delivering))).filter(Boolean).length, 1, 'still one deliverer');

    const states = await Promise.all(clis.map(delivering));
    const deliverer = clis[states.indexOf(true)]!;
    deliverer.child.kill('SIGKILL');
    await deliverer.exited;
    const survivors = clis.filter((cli) => cli !== deliverer);
    await writes(survivors, 60, 150);
    const second = await allAcknowledged(survivors[0]!.url, receiver, 210);
    assert.equal(second.events, 210);
    assert.ok(second.deliveries <= 210 * 1.05, `${second.deliveries} deliveries for 210 events`);
    await eventually(async () => (await Promise.all(survivors.map(delivering))).filter(Boolean).length === 1, 'one survivor delivering');
    for (const cli of survivors) {
      cli.child.kill('SIGTERM');
      assert.equal(await cli.exited, 0);
    }
  });

  test('a resource another process serves and this one does not -> neither its /changes, its streams nor its webhooks carry that resource\'s events', async () => {
    const url = await freshDatabase();
    const receiver = await startReceiver();
    // `narrow` opens the database before `orders` has a row, so it serves `items` alone; it delivers.
    const narrow = await startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--webhook', receiver.url, '--webhook-secret', SECRET, '--webhook-lease', '2s']);
    const wide = await startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--resource', 'orders']);
    await eventually(() => delivering(narrow), 'the narrow process delivering');
    const stream = new AbortController();
    const streamed = await fetch(`${narrow.url}/changes`, { headers: { accept: 'text/event-stream' }, signal: stream.signal });
    assert.equal(streamed.status, 200);
    for (const name of ['orders', 'items']) {
      assert.equal((await fetch(`${wide.url}/${name}`, { method: 'POST', headers: JSON_HEADERS, body: '{"n":1}' })).status, 201);
    }
    // Both events are in the database's feed, as the wide process serves it (once its feed has read them).
    await eventually(async () => (await feedCursors(wide.url)).length === 2, 'both events in the wide feed');
    const wideFeed = (await (await fetch(`${wide.url}/changes`)).json()) as { _embedded: { changes: { resource: string; type: string }[] } };
    assert.deepEqual(wideFeed._embedded.changes.map((e) => `${e.type} ${e.resource}`), ['created orders', 'created items']);
    // The narrow one's page, stream and deliveries hold the items event alone, with its entity.
    await eventually(async () => (await feedCursors(narrow.url)).length === 1, 'the items event in the narrow feed');
    const narrowFeed = (await (await fetch(`${narrow.url}/changes`)).json()) as { _embedded: { changes: { resource: string; entity?: unknown }[] } };
    assert.deepEqual(narrowFeed._embedded.changes.map((e) => [e.resource, e.entity !== undefined]), [['items', true]]);
    const reader = streamed.body!.getReader();
    let text = '';
    while (!text.includes('event: created')) text += new TextDecoder().decode((await reader.read()).value);
    stream.abort();
    assert.equal(text.match(/^data: .*$/gm)!.map((line) => (JSON.parse(line.slice(6)) as { resource: string }).resource).join(), 'items');
    // Events are delivered in order: once the items event is acknowledged, an orders one would have come first.
    const [itemsCursor] = await feedCursors(narrow.url);
    await eventually(() => receiver.acknowledged().includes(itemsCursor!), 'the items event delivered');
    assert.deepEqual(receiver.received.map((r) => `${r.event.type} ${r.event.resource} ${r.event.entity !== undefined}`), ['created items true']);
    for (const cli of [narrow, wide]) {
      cli.child.kill('SIGTERM');
      assert.equal(await cli.exited, 0);
    }
  });

  test('the lease: one holder at a time; released -> the next takes it; not renewed -> lost, and its holder can no longer save positions', async () => {
    const db = await openStores(await freshDatabase());
    const warnings: string[] = [];
    let bDown = false;
    const down = { unsafe: () => Promise.reject(Object.assign(new Error('connection lost'), { code: 'ECONNRESET' })) } as unknown as Sql;
    const lease = (holder: string, sql: () => Sql): PgLease => new PgLease({ sql, holder, ttlMs: 900, scheduler: realScheduler, warn: (m) => warnings.push(`${holder}: ${m}`) });
    const sql = (): Sql => db.database.sql;
    const [a, b, c] = [lease('a', sql), lease('b', () => (bDown ? down : sql())), lease('c', sql)];
    const stop = new AbortController();
    const lostA = (await a.acquire(stop.signal))!;
    const takingB = b.acquire(stop.signal);
    const positionsA = new PgPositions(sql, 'a');
    await positionsA.save(new Map([['http://r/x', { cursor: '1.1', at: 1 }]]));
    assert.deepEqual(await positionsA.load(), new Map([['http://r/x', { cursor: '1.1', at: 1 }]]));
    await a.release();
    assert.equal(lostA.aborted, true);
    const lostB = (await takingB)!;
    // A deposed holder's save changes nothing.
    await positionsA.save(new Map([['http://r/x', { cursor: '0.0', at: 2 }]]));
    await new PgPositions(sql, 'b').save(new Map([['http://r/x', { cursor: '2.2', at: 3 }]]));
    assert.deepEqual(await positionsA.load(), new Map([['http://r/x', { cursor: '2.2', at: 3 }]]));
    // b loses the database: its lease ends on its own clock, and c takes over once the row expired.
    const takingC = c.acquire(stop.signal);
    bDown = true;
    await eventually(() => lostB.aborted, 'b to count its lease lost');
    const lostC = (await takingC)!;
    assert.equal(lostC.aborted, false);
    assert.ok(warnings.includes('b: webhook lease not renewed in time (PostgreSQL unreachable or slow): delivery stops until this process holds it again'), warnings.join('\n'));
    stop.abort();
    await c.release();
    await b.release();
    assert.equal(await lease('d', sql).acquire(AbortSignal.abort()), undefined);
  });

  test('the deliverer\'s clock passes its lease while an answer is on its way (a stalled event loop) -> the next event is not sent: it no longer holds the lease', async () => {
    const db = await openStores(await freshDatabase());
    const sql = (): Sql => db.database.sql;
    // The process's clock, moved by hand; no timer of the scheduler ever fires on its own, as when
    // the event loop stalled and handles an answer before its timers.
    let clock = Math.floor(Date.now() / 1000) * 1000;
    const scheduler: Scheduler = { now: () => clock, monotonic: () => clock, random: () => 0.5, sleep: (_ms, signal) => new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }))) };
    const warnings: string[] = [];
    const lease = new PgLease({ sql, holder: 'stalled', ttlMs: 3_000, scheduler, warn: (m) => warnings.push(m) });
    // The first delivery's answer comes after a stall longer than the lease.
    const receiver = await startReceiver({ behaviour: () => ((clock += 10_000), 204) });
    const metrics = new ServerMetrics();
    const webhooks = new Webhooks({ urls: [receiver.url], secret: SECRET, positions: new PgPositions(sql, 'stalled'), lease, metrics: new WebhookMetrics(metrics.registry), warn: (m) => warnings.push(m), scheduler });
    const changes = new LocalChangeLog();
    const server = await startServer({ resources: [{ name: 'items', store: createMemoryStore([], { resource: 'items', changes }) }], metrics, onFeed: (feed, json) => webhooks.start(feed, json) });
    // Once it holds the lease, another process takes it over in the database (its term there has
    // not run out by the database's clock, but this process's renewals never come: their timers
    // wait on the stalled loop). So the lost lease cannot simply be taken again on this process's
    // next look, and what this process sends after its clock passed the term is what is measured.
    const holder = async (): Promise<string | undefined> => (await sql().unsafe<{ holder: string }[]>(`SELECT holder FROM ${LEASE_TABLE}`).catch(() => []))[0]?.holder;
    await eventually(async () => (await holder()) === 'stalled', 'the lease taken');
    await sql().unsafe(`UPDATE ${LEASE_TABLE} SET holder = 'another', expires = clock_timestamp() + interval '1 hour'`);
    for (let i = 0; i < 2; i++) assert.equal((await server.request('/items', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n: i }) })).status, 201);
    await eventually(() => warnings.length > 0 || receiver.received.length > 1, 'the lease counted lost, or a second delivery');
    assert.equal(receiver.received.length, 1, 'nothing sent once the lease ran out');
    assert.deepEqual(warnings, ['webhook lease not renewed in time (PostgreSQL unreachable or slow): delivery stops until this process holds it again']);
    await webhooks.stop(0);
  });
});
