import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { ServerMetrics } from '../../src/metrics/server-metrics.js';
import { WebhookMetrics } from '../../src/metrics/webhook-metrics.js';
import { prometheusText } from '../../src/representations/prometheus.js';
import type { ChangeFeed } from '../../src/store/changes/change-feed.js';
import { LocalChangeLog } from '../../src/store/changes/local-feed.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { StoreChange } from '../../src/store/store.js';
import { DELIVERY_PAGE, realScheduler, type Scheduler } from '../../src/webhooks/delivery.js';
import { FilePositions, POSITIONS_FILE } from '../../src/webhooks/file-positions.js';
import type { Lease } from '../../src/webhooks/lease.js';
import { Webhooks, type WebhooksOptions } from '../../src/webhooks/webhooks.js';
import { sample } from '../helpers/metrics.js';
import { eventually } from '../helpers/process.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { closedPort, feedCursors, SECRET, startReceiver, type Receiver } from './receiver.js';

const JSON_HEADERS = { 'content-type': 'application/json' };
/** Retries at test scale: the same policy, milliseconds instead of seconds. */
const FAST = { firstMs: 20, capMs: 100 };

interface Setup {
  readonly server: TestServer;
  readonly webhooks: Webhooks;
  readonly warnings: string[];
  readonly metrics: ServerMetrics;
  readonly dir: string;
  readonly changes: LocalChangeLog;
  readonly feed: ChangeFeed;
  readonly json: (change: StoreChange) => string;
  /** Another deliverer over the same feed and positions (a restart of the deliveries). */
  restart(options?: Partial<WebhooksOptions>): Promise<Webhooks>;
}

/** Deliverers of the current test, stopped after it, before its directories are removed. */
const made: Webhooks[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const webhooks of made.splice(0)) await webhooks.stop(0);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
const stopAfter = (webhooks: Webhooks): Webhooks => (made.push(webhooks), webhooks);
async function positionsDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'halserve-webhooks-'));
  dirs.push(dir);
  return dir;
}

/** A server over `items` and `orders` (memory stores, one change log) whose changes go to `urls`. */
async function setup(urls: readonly string[], options: Partial<WebhooksOptions> & { dir?: string } = {}): Promise<Setup> {
  const changes = new LocalChangeLog();
  const metrics = new ServerMetrics();
  const webhookMetrics = new WebhookMetrics(metrics.registry);
  const dir = options.dir ?? (await positionsDir());
  const warnings: string[] = [];
  const make = (extra: Partial<WebhooksOptions> = {}): Webhooks =>
    stopAfter(new Webhooks({ urls, secret: SECRET, positions: new FilePositions(dir), metrics: webhookMetrics, warn: (m) => warnings.push(m), backoff: FAST, ...options, ...extra }));
  const webhooks = make();
  let started: { feed: ChangeFeed; json: (change: StoreChange) => string } | undefined;
  const server = await startServer({
    resources: [
      { name: 'items', store: createMemoryStore([], { resource: 'items', changes }) },
      { name: 'orders', store: createMemoryStore([], { resource: 'orders', changes }) },
    ],
    metrics,
    onFeed: (feed, json) => {
      started = { feed, json };
      webhooks.start(feed, json);
    },
  });
  const { feed, json } = started!;
  return {
    server,
    webhooks,
    warnings,
    metrics,
    dir,
    changes,
    feed,
    json,
    async restart(extra = {}) {
      const next = make(extra);
      next.start(feed, json);
      return next;
    },
  };
}

/** POST, PATCH and DELETE: `n` writes in all, alternating resources, some entities changed twice. */
async function writes(s: TestServer, n: number, resources = ['items', 'orders']): Promise<void> {
  const made: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = resources[i % resources.length]!;
    if (i % 5 === 3 && made.length > 0) {
      const res = await s.request(made[made.length - 1]!, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ n: i }) });
      assert.equal(res.status, 200);
    } else if (i % 7 === 6 && made.length > 0) {
      const res = await s.request(made.shift()!, { method: 'DELETE' });
      assert.equal(res.status, 204);
    } else {
      const res = await s.request(`/${name}`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n: i }) });
      assert.equal(res.status, 201);
      made.push(new URL(res.headers.get('location')!, s.url).pathname);
    }
  }
}

/**
 * The receiver's acknowledged deliveries against `GET /changes`: each event of the feed was
 * acknowledged, with the same JSON; acknowledgements came in cursor order; no duplicates when
 * `exactlyOnce`.
 */
async function checkAgainstFeed(s: TestServer, receiver: Receiver, { resources, exactlyOnce = true }: { resources?: string; exactlyOnce?: boolean } = {}): Promise<void> {
  assert.deepEqual(receiver.invalid, []);
  const feed = await feedCursors(s.url);
  const page = (await (await s.request(`/changes?limit=200${resources ? `&resource=${resources}` : ''}`)).json()) as { _embedded: { changes: { cursor: string }[] } };
  const expected = page._embedded.changes;
  const acked = receiver.received.filter((r) => r.status >= 200 && r.status < 300);
  const byCursor = new Map(acked.map((r) => [r.id, r.event]));
  for (const event of expected) assert.deepEqual(byCursor.get(event.cursor), event, `event ${event.cursor} delivered as /changes shows it`);
  for (let i = 1; i < acked.length; i++) {
    const [a, b] = [Number(acked[i - 1]!.id), Number(acked[i]!.id)];
    if (exactlyOnce) assert.ok(b > a, `acknowledgements in cursor order: ${a} then ${b}`);
  }
  if (exactlyOnce) assert.equal(new Set(acked.map((r) => r.id)).size, acked.length, 'no event acknowledged twice');
  assert.ok(feed.length >= expected.length);
}

const metricText = (metrics: ServerMetrics): string => prometheusText(metrics.registry.metrics);
const metricLines = (metrics: ServerMetrics, prefix: string): string[] =>
  metricText(metrics)
    .split('\n')
    .filter((line) => line.startsWith(prefix));

describe('webhook delivery (in process, a real receiver that verifies with standardwebhooks)', () => {
  test('creates, updates and deletes -> every event POSTed once, in cursor order, signed, as /changes shows it', async () => {
    const receiver = await startReceiver();
    const s = await setup([receiver.url]);
    await writes(s.server, 40);
    const latest = s.feed.latest;
    await eventually(() => receiver.acknowledged().at(-1) === latest, 'the last event acknowledged');
    await checkAgainstFeed(s.server, receiver);
    // Events of one entity may coalesce when delivery is behind (a later state replaces an earlier one).
    assert.ok(receiver.received.length <= 40);
    assert.deepEqual(receiver.received.map((r) => r.event.cursor), receiver.received.map((r) => r.id), 'webhook-id is the cursor');
    await s.webhooks.stop();
    const stored = JSON.parse(await readFile(join(s.dir, POSITIONS_FILE), 'utf8')) as Record<string, { cursor: string }>;
    assert.equal(stored[receiver.url]!.cursor, latest);
    assert.deepEqual(metricLines(s.metrics, 'halserve_webhook_deliveries_total'), [`halserve_webhook_deliveries_total{url="http://127.0.0.1:${receiver.port}/hook"} ${receiver.received.length}`]);
  });

  test('URLs configured, before any event -> each label\'s deliveries, misses and failures of every cause at 0 (a first failure visible to increase()); URLs that share a label, one series', async () => {
    const receiver = await startReceiver();
    const other = await startReceiver();
    const s = await setup([`${receiver.url}?t=a`, `${receiver.url}?t=b`, other.url]);
    const labels = [`http://127.0.0.1:${receiver.port}/hook`, `http://127.0.0.1:${other.port}/hook`];
    assert.deepEqual(metricLines(s.metrics, 'halserve_webhook_deliveries_total'), labels.map((url) => `halserve_webhook_deliveries_total{url="${url}"} 0`));
    assert.deepEqual(metricLines(s.metrics, 'halserve_webhook_missed_total'), labels.map((url) => `halserve_webhook_missed_total{url="${url}"} 0`));
    assert.deepEqual(
      metricLines(s.metrics, 'halserve_webhook_failures_total'),
      labels.flatMap((url) => ['status', 'timeout', 'connection'].map((cause) => `halserve_webhook_failures_total{url="${url}",cause="${cause}"} 0`)),
    );
    assert.deepEqual(receiver.received, []);
  });

  test('a URL configured after events were written -> starts with the first event after it is configured', async () => {
    const receiver = await startReceiver();
    const dir = await positionsDir();
    // Events before the URL: written through a server with no webhooks on the same feed.
    const s = await setup([], { dir });
    await writes(s.server, 5);
    const before = s.feed.latest;
    const webhooks = stopAfter(new Webhooks({ urls: [receiver.url], secret: SECRET, positions: new FilePositions(dir), metrics: new WebhookMetrics(new ServerMetrics().registry), warn: () => {} }));
    webhooks.start(s.feed, s.json);
    await eventually(async () => (await new FilePositions(dir).load()).get(receiver.url)?.cursor === before, 'the position stored');
    await writes(s.server, 3);
    await eventually(() => receiver.acknowledged().length === 3, 'three deliveries');
    assert.ok(receiver.acknowledged().every((cursor) => Number(cursor) > Number(before)));
  });

  test('500s, then 2xx -> retried with backoff, later events wait, order kept; failures counted by cause', async () => {
    const receiver = await startReceiver({ behaviour: ({ attempt }) => (attempt <= 3 ? 500 : 200) });
    const s = await setup([receiver.url]);
    await writes(s.server, 6);
    const latest = s.feed.latest;
    await eventually(() => receiver.acknowledged().at(-1) === latest, 'every event delivered');
    await checkAgainstFeed(s.server, receiver);
    // Each event: three 500s before its 2xx, and no later event in between.
    const ids = receiver.received.map((r) => r.id);
    assert.deepEqual(ids, ids.flatMap((id, i) => (i % 4 === 0 ? [id] : [])).flatMap((id) => [id, id, id, id]));
    const label = `http://127.0.0.1:${receiver.port}/hook`;
    assert.deepEqual(metricLines(s.metrics, 'halserve_webhook_failures_total'), [
      `halserve_webhook_failures_total{url="${label}",cause="status"} ${3 * new Set(ids).size}`,
      `halserve_webhook_failures_total{url="${label}",cause="timeout"} 0`,
      `halserve_webhook_failures_total{url="${label}",cause="connection"} 0`,
    ]);
    assert.ok(s.warnings.some((w) => w.startsWith(`webhook ${label}: delivery of event `) && w.includes('answered 500')), s.warnings.join('\n'));
    assert.ok(s.warnings.some((w) => w === `webhook ${label}: delivering again after 3 failed attempts`), s.warnings.join('\n'));
  });

  test('a 3xx -> a failure (redirects are not followed)', async () => {
    const receiver = await startReceiver({ behaviour: ({ attempt }) => (attempt === 1 ? 302 : 200) });
    const s = await setup([receiver.url]);
    await writes(s.server, 1);
    await eventually(() => receiver.acknowledged().length === 1, 'delivered');
    assert.deepEqual(receiver.received.map((r) => r.status), [302, 200]);
  });

  test('a receiver that hangs past the timeout -> the attempt is dropped (cause timeout) and retried', async () => {
    const receiver = await startReceiver({ behaviour: ({ attempt }) => (attempt === 1 ? 'hang' : 204) });
    const s = await setup([receiver.url], { timeoutMs: 200 });
    await writes(s.server, 3);
    const latest = s.feed.latest;
    await eventually(() => receiver.acknowledged().at(-1) === latest, 'every event delivered');
    await checkAgainstFeed(s.server, receiver);
    const label = `http://127.0.0.1:${receiver.port}/hook`;
    assert.deepEqual(metricLines(s.metrics, 'halserve_webhook_failures_total'), [
      `halserve_webhook_failures_total{url="${label}",cause="status"} 0`,
      `halserve_webhook_failures_total{url="${label}",cause="timeout"} 3`,
      `halserve_webhook_failures_total{url="${label}",cause="connection"} 0`,
    ]);
  });

  test('a closed port -> failures with cause connection until a receiver listens there, then everything in order', async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/hook`;
    const s = await setup([url]);
    await writes(s.server, 5);
    await eventually(() => (sample(metricText(s.metrics), `halserve_webhook_failures_total{url="${url}",cause="connection"}`) ?? 0) > 0, 'a connection failure');
    const receiver = await startReceiver({ port });
    const latest = s.feed.latest;
    await eventually(() => receiver.acknowledged().at(-1) === latest, 'every event delivered');
    await checkAgainstFeed(s.server, receiver);
  });

  test('--webhook-resource items -> only items\' events, in order', async () => {
    const receiver = await startReceiver();
    const s = await setup([receiver.url], { resources: ['items'] });
    await writes(s.server, 20);
    const last = s.feed.latestOf('items');
    await eventually(() => receiver.acknowledged().at(-1) === last, 'the last items event delivered');
    assert.ok(receiver.received.every((r) => r.event.resource === 'items'));
    await checkAgainstFeed(s.server, receiver, { resources: 'items' });
  });

  test('two URLs, one dead -> the other gets everything; the dead one\'s metrics show pending, lag and failures', async () => {
    const good = await startReceiver();
    const dead = await startReceiver({ behaviour: () => 503 });
    const s = await setup([good.url, dead.url]);
    await writes(s.server, 10);
    const latest = s.feed.latest;
    await eventually(() => good.acknowledged().at(-1) === latest, 'the good URL has every event');
    await checkAgainstFeed(s.server, good);
    assert.ok(dead.received.every((r) => r.id === dead.received[0]!.id), 'the dead URL is retried its first event only');
    const label = `http://127.0.0.1:${dead.port}/hook`;
    // At least the events /changes holds (coalesced), at most one per write.
    const held = (await feedCursors(s.server.url)).length;
    const pending = (): number => Number(metricLines(s.metrics, `halserve_webhook_pending_events{url="${label}"}`)[0]?.split(' ')[1]);
    await eventually(() => pending() >= held && pending() <= 10, 'the pending events counted');
    const lines = prometheusText(s.metrics.registry.metrics).split('\n');
    assert.ok(lines.some((l) => l.startsWith(`halserve_webhook_lag_seconds{url="${label}"} `)));
    assert.ok(lines.some((l) => l.startsWith(`halserve_webhook_position_age_seconds{url="${label}"} `)));
    assert.ok(lines.includes(`halserve_webhook_pending_events{url="http://127.0.0.1:${good.port}/hook"} 0`));
  });

  test('two URLs that differ only in their query (one metrics label) -> its gauges count both: a dead one is not hidden by a healthy one', async () => {
    const receiver = await startReceiver({ behaviour: ({ url }) => (url.includes('t=dead') ? 503 : 204) });
    const s = await setup([`${receiver.url}?t=dead`, `${receiver.url}?t=ok`]);
    await writes(s.server, 3, ['items']);
    const label = `http://127.0.0.1:${receiver.port}/hook`;
    await eventually(() => receiver.received.filter((r) => r.status === 204).length === 3, 'the healthy URL has every event');
    // The dead URL's three events are pending, whichever URL was tracked last.
    await eventually(
      () => metricLines(s.metrics, `halserve_webhook_pending_events{url="${label}"}`)[0] === `halserve_webhook_pending_events{url="${label}"} 3`,
      'the dead URL\'s events pending',
    );
    assert.equal(metricLines(s.metrics, 'halserve_webhook_lag_seconds').length, 1, 'one series per label');
  });

  test('stop, then a restart on the same positions -> nothing acknowledged is sent again, nothing skipped', async () => {
    const receiver = await startReceiver();
    const s = await setup([receiver.url]);
    await writes(s.server, 10);
    await eventually(() => receiver.acknowledged().at(-1) === s.feed.latest, 'caught up');
    await s.webhooks.stop();
    await writes(s.server, 10);
    await s.restart();
    const latest = s.feed.latest;
    await eventually(() => receiver.acknowledged().at(-1) === latest, 'caught up after the restart');
    await checkAgainstFeed(s.server, receiver);
  });

  test('stop with a delivery in flight -> dropped after the grace, its position not moved; a restart sends it again', async () => {
    const receiver = await startReceiver({ behaviour: ({ attempt }) => (attempt === 1 ? 'hang' : 204) });
    const s = await setup([receiver.url]);
    const before = s.feed.latest;
    await writes(s.server, 1);
    await eventually(() => receiver.received.length === 1, 'the delivery in flight');
    await s.webhooks.stop(50);
    assert.equal((await new FilePositions(s.dir).load()).get(receiver.url)?.cursor, before);
    await s.restart();
    await eventually(() => receiver.acknowledged().length === 1, 'sent again and acknowledged');
    assert.deepEqual(receiver.received.map((r) => r.id), [s.feed.latest, s.feed.latest]);
  });

  test('a position older than the feed\'s retention -> one line, halserve_webhook_missed_total, and delivery from the oldest event held', async () => {
    const receiver = await startReceiver();
    const s = await setup([], {});
    await writes(s.server, 6);
    // The URL last acknowledged cursor 1; then a delete after it was forgotten (compaction past retention).
    await new FilePositions(s.dir).save(new Map([[receiver.url, { cursor: '1', at: 0 }]]));
    s.changes.forgot(3);
    const metrics = new ServerMetrics();
    const warnings: string[] = [];
    const webhooks = stopAfter(new Webhooks({ urls: [receiver.url], secret: SECRET, positions: new FilePositions(s.dir), metrics: new WebhookMetrics(metrics.registry), warn: (m) => warnings.push(m), backoff: FAST }));
    webhooks.start(s.feed, s.json);
    const latest = s.feed.latest;
    await eventually(() => receiver.acknowledged().at(-1) === latest, 'caught up');
    const label = `http://127.0.0.1:${receiver.port}/hook`;
    assert.ok(warnings.some((w) => w.startsWith(`webhook ${label}: events were missed: its position cannot be resumed (cursor 1 is older than a delete`)), warnings.join('\n'));
    assert.deepEqual(metricLines(metrics, 'halserve_webhook_missed_total'), [`halserve_webhook_missed_total{url="${label}"} 1`]);
    const oldest = (await feedCursors(s.server.url))[0]!;
    assert.equal(receiver.acknowledged()[0], oldest);
  });

  test('a position that cannot resume -> halserve_webhook_pending_events counts the events delivery will send, from the oldest held (not 0)', async () => {
    // The receiver never answers: the first event stays in flight, and every event is still pending.
    const receiver = await startReceiver({ behaviour: () => 'hang' });
    const s = await setup([], {});
    await writes(s.server, 6);
    await new FilePositions(s.dir).save(new Map([[receiver.url, { cursor: '1', at: 0 }]]));
    s.changes.forgot(3);
    const metrics = new ServerMetrics();
    const webhooks = stopAfter(new Webhooks({ urls: [receiver.url], secret: SECRET, positions: new FilePositions(s.dir), metrics: new WebhookMetrics(metrics.registry), warn: () => {}, backoff: FAST }));
    webhooks.start(s.feed, s.json);
    await eventually(() => receiver.received.length === 1, 'the first delivery in flight');
    const held = (await feedCursors(s.server.url)).length;
    assert.ok(held > 0);
    const label = `http://127.0.0.1:${receiver.port}/hook`;
    assert.deepEqual(metricLines(metrics, `halserve_webhook_pending_events{url="${label}"}`), [`halserve_webhook_pending_events{url="${label}"} ${held}`]);
  });

  test('a position that cannot resume and no event held of the URL\'s resources -> the miss said once, not at every idle poll', async () => {
    const receiver = await startReceiver();
    const s = await setup([], {});
    await writes(s.server, 6, ['items']);
    await new FilePositions(s.dir).save(new Map([[receiver.url, { cursor: '1', at: 0 }]]));
    s.changes.forgot(3);
    // Idle polls (5 s) at test scale: every wait of a caught-up delivery comes after 5 ms.
    let polls = 0;
    const scheduler: Scheduler = { ...realScheduler, sleep: (ms, signal) => (ms === 5_000 && polls++, realScheduler.sleep(ms === 5_000 ? 5 : ms, signal)) };
    const metrics = new ServerMetrics();
    const warnings: string[] = [];
    const webhooks = stopAfter(
      new Webhooks({ urls: [receiver.url], secret: SECRET, resources: ['orders'], positions: new FilePositions(s.dir), metrics: new WebhookMetrics(metrics.registry), warn: (m) => warnings.push(m), backoff: FAST, scheduler }),
    );
    webhooks.start(s.feed, s.json);
    await eventually(() => polls >= 5, 'idle polls');
    const label = `http://127.0.0.1:${receiver.port}/hook`;
    assert.equal(warnings.filter((w) => w.includes('events were missed')).length, 1, warnings.join('\n'));
    assert.deepEqual(metricLines(metrics, 'halserve_webhook_missed_total'), [`halserve_webhook_missed_total{url="${label}"} 1`]);
    // An event of the URL's resources is then delivered as any other.
    const res = await s.server.request('/orders', { method: 'POST', headers: JSON_HEADERS, body: '{}' });
    assert.equal(res.status, 201);
    await eventually(() => receiver.acknowledged().at(-1) === s.feed.latest, 'delivered');
    assert.deepEqual(metricLines(metrics, 'halserve_webhook_missed_total'), [`halserve_webhook_missed_total{url="${label}"} 1`]);
  });

  test('a position older than a forgotten delete, more than a page of events before it -> each event delivered once, in order, then caught up (no loop from the oldest)', async () => {
    const receiver = await startReceiver();
    const s = await setup([], {});
    const post = async (id: string): Promise<void> => {
      const res = await s.server.request('/items', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n: id }) });
      assert.equal(res.status, 201);
    };
    for (let i = 0; i < DELIVERY_PAGE + 5; i++) await post(`e${i}`);
    const made = await s.server.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{}' });
    assert.equal((await s.server.request(new URL(made.headers.get('location')!, s.server.url).pathname, { method: 'DELETE' })).status, 204);
    await post('late');
    await new FilePositions(s.dir).save(new Map([[receiver.url, { cursor: '1', at: 0 }]]));
    // The delete is forgotten (compaction past retention): every event before it has a cursor below it.
    const deleted = DELIVERY_PAGE + 7;
    s.changes.forgot(deleted);
    const items = s.changes.resource('items');
    const deletes = items.deletesBefore(Number.MAX_SAFE_INTEGER);
    assert.deepEqual(deletes.map((d) => d.seq), [deleted]);
    items.forget(deletes);
    const metrics = new ServerMetrics();
    const webhooks = stopAfter(new Webhooks({ urls: [receiver.url], secret: SECRET, positions: new FilePositions(s.dir), metrics: new WebhookMetrics(metrics.registry), warn: () => {}, backoff: FAST }));
    webhooks.start(s.feed, s.json);
    const latest = s.feed.latest;
    await eventually(() => receiver.acknowledged().at(-1) === latest, 'caught up');
    const cursors = await feedCursors(s.server.url);
    assert.equal(cursors.length, DELIVERY_PAGE + 6);
    assert.deepEqual(receiver.received.map((r) => r.id), cursors);
    assert.deepEqual(metricLines(metrics, 'halserve_webhook_missed_total'), [`halserve_webhook_missed_total{url="http://127.0.0.1:${receiver.port}/hook"} 1`]);
  });

  test('--webhook-resource orders, caught up, then a delete of items forgotten -> no miss: the next orders event is delivered, nothing sent again', async () => {
    const receiver = await startReceiver();
    // Idle polls (5 s) at test scale, counted.
    let polls = 0;
    const scheduler: Scheduler = { ...realScheduler, sleep: (ms, signal) => (ms === 5_000 && polls++, realScheduler.sleep(ms === 5_000 ? 5 : ms, signal)) };
    const s = await setup([receiver.url], { resources: ['orders'], scheduler });
    const post = async (name: string): Promise<string> => {
      const res = await s.server.request(`/${name}`, { method: 'POST', headers: JSON_HEADERS, body: '{}' });
      assert.equal(res.status, 201);
      return new URL(res.headers.get('location')!, s.server.url).pathname;
    };
    await post('orders');
    await eventually(() => receiver.acknowledged().length === 1, 'the orders event delivered');
    // Events of another resource, the last a delete; the URL is caught up: it idles past them.
    assert.equal((await s.server.request(await post('items'), { method: 'DELETE' })).status, 204);
    const seen = polls;
    await eventually(() => polls >= seen + 2, 'idle polls after the items events');
    // The delete is forgotten (compaction past retention): it lies after the orders event's cursor.
    const items = s.changes.resource('items');
    const deletes = items.deletesBefore(Number.MAX_SAFE_INTEGER);
    s.changes.forgot(deletes[0]!.seq);
    items.forget(deletes);
    await post('orders');
    const last = s.feed.latestOf('orders');
    await eventually(() => receiver.acknowledged().at(-1) === last, 'the next orders event delivered');
    assert.deepEqual(s.warnings.filter((w) => w.includes('events were missed')), []);
    assert.deepEqual(metricLines(s.metrics, 'halserve_webhook_missed_total'), [`halserve_webhook_missed_total{url="http://127.0.0.1:${receiver.port}/hook"} 0`]);
    assert.deepEqual(receiver.received.map((r) => r.event.resource), ['orders', 'orders']);
  });

  test('an injected scheduler -> the waits between retries follow the backoff policy (first within 5 s, doubling)', async () => {
    const receiver = await startReceiver({ behaviour: ({ attempt }) => (attempt <= 4 ? 500 : 200) });
    const waits: number[] = [];
    // A pinned clock near the real one: receivers refuse timestamps more than 5 minutes off.
    const pinned = Math.floor(Date.now() / 1000) * 1000;
    const scheduler: Scheduler = {
      now: () => pinned,
      monotonic: () => pinned,
      random: () => 0.5,
      sleep: (ms, signal) => {
        if (ms !== 5_000) waits.push(ms);
        return ms === 5_000 ? realScheduler.sleep(ms, signal) : Promise.resolve();
      },
    };
    const s = await setup([receiver.url], { scheduler, backoff: undefined as never });
    await writes(s.server, 1);
    await eventually(() => receiver.acknowledged().length === 1, 'delivered');
    assert.deepEqual(waits, [3_750, 7_500, 15_000, 30_000]);
    assert.deepEqual(new Set(receiver.received.map((r) => r.timestamp)), new Set([pinned / 1000]), 'signed with the injected clock');
  });

  test('the lease lost while behind (PostgreSQL: another process delivers now) -> no per-URL gauges here, not a lag that grows with the clock beside the deliverer\'s', async () => {
    const receiver = await startReceiver({ behaviour: () => 500 });
    const term = new AbortController();
    let terms = 0;
    // Held for one term, then lost; never held again (another process holds it).
    const lease: Lease = {
      acquire: (signal) => (terms++ === 0 ? Promise.resolve(term.signal) : new Promise((resolve) => signal.addEventListener('abort', () => resolve(undefined), { once: true }))),
      holds: () => !term.signal.aborted,
      release: () => Promise.resolve(),
    };
    const s = await setup([receiver.url], { lease });
    await writes(s.server, 1);
    await eventually(() => receiver.received.length > 0, 'an attempt');
    await eventually(() => metricLines(s.metrics, 'halserve_webhook_pending_events').length === 1, 'the URL\'s gauges');
    // The receiver has the attempt before its 500 is counted: the lease is lost only once it is, so
    // that the counter asserted below is one a lost lease must leave, not an attempt it cut short.
    const failures = `halserve_webhook_failures_total{url="http://127.0.0.1:${receiver.port}/hook",cause="status"}`;
    await eventually(() => (sample(metricText(s.metrics), failures) ?? 0) > 0, 'a failed attempt counted');
    term.abort();
    await eventually(() => metricLines(s.metrics, 'halserve_webhook_delivering ').join() === 'halserve_webhook_delivering 0', 'not delivering');
    for (const gauge of ['pending_events', 'lag_seconds', 'position_age_seconds']) assert.deepEqual(metricLines(s.metrics, `halserve_webhook_${gauge}`), [], gauge);
    assert.ok((sample(metricText(s.metrics), failures) ?? 0) > 0, 'its counters stay');
  });
});
