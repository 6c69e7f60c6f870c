import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { EventSource } from 'eventsource';
import { wantsEventStream } from '../../src/conventions/event-stream.js';
import { HttpProblem } from '../../src/conventions/problem.js';
import { Streams, type Every } from '../../src/http/event-stream.js';
import type { StreamWriter } from '../../src/http/reply.js';
import { ServerMetrics } from '../../src/metrics/server-metrics.js';
import { LocalChangeLog } from '../../src/store/changes/local-feed.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { HandlerOptions } from '../../src/http/app.js';
import { eventually } from '../helpers/process.js';
import { startServer, type TestServer } from '../helpers/server.js';

const JSON_HEADERS = { 'content-type': 'application/json' };
const STREAM = { accept: 'text/event-stream' };

const nextIds: string[] = [];
async function start(extra: Partial<HandlerOptions> = {}): Promise<TestServer> {
  const changes = new LocalChangeLog();
  return startServer({
    resources: [
      { name: 'items', store: createMemoryStore([], { resource: 'items', changes }) },
      { name: 'orders', store: createMemoryStore([], { resource: 'orders', changes }) },
    ],
    newId: () => nextIds.shift() ?? 'none',
    now: () => 1_700_000_000,
    ...extra,
  });
}
const post = async (s: TestServer, name: string, id: string, body: Record<string, unknown> = {}): Promise<void> => {
  nextIds.push(id);
  assert.equal((await s.request(`/${name}`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) })).status, 201);
};
const patch = async (s: TestServer, path: string, body: Record<string, unknown>): Promise<void> => {
  assert.equal((await s.request(path, { method: 'PATCH', headers: JSON_HEADERS, body: JSON.stringify(body) })).status, 200);
};

interface Message {
  id: string;
  event: string;
  data: { cursor: string; type: string; resource: string; id: string; entity?: Record<string, unknown> };
}

/** A raw stream read with fetch: its messages parsed as they arrive, comments kept apart. */
async function openRaw(s: TestServer, path: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const res = await s.request(path, { headers: { ...STREAM, ...headers }, signal: controller.signal });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const messages: Message[] = [];
  const comments: string[] = [];
  let ended = false;
  const pump = async (): Promise<void> => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) {
        ended = true;
        return;
      }
      text += decoder.decode(value, { stream: true });
      let split: number;
      while ((split = text.indexOf('\n\n')) >= 0) {
        const block = text.slice(0, split);
        text = text.slice(split + 2);
        if (block.startsWith(':')) comments.push(block);
        else if (block.startsWith('id:')) {
          const field = (name: string): string => block.split('\n').find((l) => l.startsWith(`${name}: `))!.slice(name.length + 2);
          messages.push({ id: field('id'), event: field('event'), data: JSON.parse(field('data')) as Message['data'] });
        }
      }
    }
  };
  const pumping = pump();
  const until = async (condition: () => boolean): Promise<void> => {
    while (!condition()) {
      if (ended) throw new Error(`stream ended first; got ${JSON.stringify(messages)}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return {
    res,
    messages,
    comments,
    get ended() {
      return ended;
    },
    until,
    close: async () => {
      controller.abort();
      await pumping;
    },
  };
}

describe('event streams (text/event-stream)', () => {
  test('Accept: text/event-stream on /changes -> 200 at once; each write arrives as created, updated, deleted with its cursor as id (eventsource client)', async () => {
    const s = await start();
    const source = new EventSource(`${s.url}/changes`);
    const got: { type: string; id: string; data: Message['data'] }[] = [];
    for (const type of ['created', 'updated', 'deleted']) {
      source.addEventListener(type, (event) => got.push({ type, id: (event as MessageEvent).lastEventId, data: JSON.parse((event as MessageEvent).data as string) as Message['data'] }));
    }
    await new Promise<void>((resolve, reject) => {
      source.onopen = () => resolve();
      source.onerror = () => reject(new Error('could not open'));
    });
    await post(s, 'items', 'a', { n: 1 });
    await patch(s, '/items/a', { n: 2 });
    assert.equal((await s.request('/items/a', { method: 'DELETE' })).status, 204);
    while (got.length < 3) await new Promise((resolve) => setImmediate(resolve));
    source.close();
    assert.deepEqual(got.map((g) => `${g.type} ${g.data.id}`), ['created a', 'updated a', 'deleted a']);
    for (const g of got) assert.equal(g.id, g.data.cursor);
    assert.equal(got[1]!.data.entity!['n'], 2);
    assert.equal(got[2]!.data.entity, undefined);
  });

  test('reconnect with Last-Event-ID -> continues after it: no gap, no repeat; since=<cursor> -> catches up, then live', async () => {
    const s = await start();
    await post(s, 'items', 'a');
    await post(s, 'orders', 'o');
    const first = await openRaw(s, '/changes?since=0');
    await first.until(() => first.messages.length === 2);
    assert.equal(first.res.headers.get('content-type'), 'text/event-stream');
    await first.close();
    await post(s, 'items', 'b');
    await patch(s, '/items/a', { n: 1 });
    const again = await openRaw(s, '/changes?since=0', { 'last-event-id': first.messages[1]!.id });
    await again.until(() => again.messages.length === 2);
    await post(s, 'items', 'c');
    await again.until(() => again.messages.length === 3);
    await again.close();
    assert.deepEqual(again.messages.map((m) => `${m.event} ${m.data.id}`), ['created b', 'updated a', 'created c']);
  });

  test('resuming with more than the 1 MiB bound of events to catch up (250 of 6 kB) -> every event arrives to a reader that keeps reading, not an empty reply', async () => {
    const metrics = new ServerMetrics();
    const s = await start({ metrics });
    const text = 'x'.repeat(6000);
    for (let i = 0; i < 250; i++) await post(s, 'items', `big${i}`, { text });
    const stream = await openRaw(s, '/changes?since=0');
    await stream.until(() => stream.messages.length === 250);
    await post(s, 'items', 'after');
    await stream.until(() => stream.messages.length === 251);
    await stream.close();
    assert.deepEqual(stream.messages.map((m) => m.data.id), [...Array.from({ length: 250 }, (_, i) => `big${i}`), 'after']);
    assert.equal(metrics.slowReaders.series().value, 0);
  });

  test('/metrics -> open streams and events sent', async () => {
    const s = await start();
    const stream = await openRaw(s, '/changes');
    await post(s, 'items', 'm');
    await stream.until(() => stream.messages.length === 1);
    const text = await (await s.request('/metrics')).text();
    assert.match(text, /^halserve_streams_open 1$/m);
    assert.match(text, /^halserve_stream_events_total 1$/m);
    await stream.close();
  });

  test('resource=orders on a stream -> only its changes', async () => {
    const s = await start();
    const stream = await openRaw(s, '/changes?resource=orders');
    await post(s, 'items', 'i');
    await post(s, 'orders', 'o');
    await stream.until(() => stream.messages.length === 1);
    await stream.close();
    assert.equal(stream.messages[0]!.data.id, 'o');
  });

  test('a collection URL with a filter -> created and updated while it matches, removed when an update takes it out or it is deleted; since is a filter there', async () => {
    const s = await start();
    const stream = await openRaw(s, '/items?status=active&sort=-n&page=3&since=x');
    await post(s, 'items', 'a', { status: 'active', since: 'x' });
    await post(s, 'items', 'b', { status: 'paused', since: 'x' });
    await patch(s, '/items/a', { status: 'paused' });
    await patch(s, '/items/b', { status: 'active' });
    assert.equal((await s.request('/items/b', { method: 'DELETE' })).status, 204);
    await stream.until(() => stream.messages.length === 5);
    await stream.close();
    assert.deepEqual(stream.messages.map((m) => `${m.event} ${m.data.id}`), ['created a', 'removed b', 'removed a', 'updated b', 'removed b']);
    assert.equal(stream.messages[2]!.data.entity!['status'], 'paused', 'removed by an update: with its entity');
    assert.equal(stream.messages[4]!.data.entity, undefined);
  });

  test('q on a collection stream -> only changes whose entity holds the words', async () => {
    const s = await start();
    const stream = await openRaw(s, '/items?q=lamp');
    await post(s, 'items', 'x', { name: 'Desk LAMP' });
    await stream.until(() => stream.messages.length === 1);
    await stream.close();
    assert.equal(stream.messages[0]!.event, 'created');
  });

  test('heartbeat timer ticks -> a comment line, no id', async () => {
    const ticks: (() => void)[] = [];
    const every: Every = (_ms, run) => {
      ticks.push(run);
      return () => {};
    };
    const s = await start({ streams: { every } });
    const stream = await openRaw(s, '/changes');
    while (ticks.length === 0) await new Promise((resolve) => setImmediate(resolve));
    ticks[0]!();
    await stream.until(() => stream.comments.length === 1);
    await stream.close();
    assert.deepEqual(stream.comments, [': keep-alive']);
    assert.equal(stream.messages.length, 0);
  });

  test('more streams than --max-streams -> 503 problem with Retry-After; once one closes, another opens', async () => {
    const s = await start({ streams: { maxStreams: 1 } });
    const one = await openRaw(s, '/changes');
    const refused = await s.request('/changes', { headers: STREAM });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    assert.match((await refused.json()).detail, /1 open streams/);
    await one.close();
    let status = 503;
    // The server notices the first stream's end when its socket closes: ask until it has.
    for (let attempt = 0; status === 503 && attempt < 1000; attempt++) {
      const res = await s.request('/changes', { headers: STREAM, signal: AbortSignal.timeout(5000) });
      status = res.status;
      await res.body?.cancel();
    }
    assert.equal(status, 200);
  });

  test('more streams of one client than --max-streams-per-client -> 429 problem with Retry-After for it; another client still opens one; once its stream closes, it opens again', async () => {
    const s = await start({ tokens: ['token-a', 'token-b'], streams: { maxStreamsPerClient: 1 } });
    const a = { authorization: 'Bearer token-a' };
    const one = await openRaw(s, '/changes', a);
    assert.equal(one.res.status, 200);
    const refused = await s.request('/items', { headers: { ...STREAM, ...a } });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    assert.match((await refused.json()).detail, /This client has 1 open streams/);
    const other = await openRaw(s, '/changes', { authorization: 'Bearer token-b' });
    assert.equal(other.res.status, 200, 'the limit is per client, not the server\'s');
    // A page is no stream: the same client still reads.
    assert.equal((await s.request('/changes', { headers: a })).status, 200);
    await one.close();
    let status = 429;
    for (let attempt = 0; status === 429 && attempt < 1000; attempt++) {
      const res = await s.request('/changes', { headers: { ...STREAM, ...a }, signal: AbortSignal.timeout(5000) });
      status = res.status;
      await res.body?.cancel();
    }
    assert.equal(status, 200);
    await other.close();
  });

  test('a reader that stops reading during a catch-up (a paused socket, 12 MB behind) -> disconnected once heartbeats stay unsent, counted; its slot is free again', async () => {
    const ticks: (() => void)[] = [];
    const every: Every = (_ms, run) => {
      ticks.push(run);
      return () => {};
    };
    const metrics = new ServerMetrics();
    const s = await start({ metrics, streams: { every, maxStreams: 1 } });
    const text = 'x'.repeat(24_000);
    for (let i = 0; i < 500; i++) await post(s, 'items', `big${i}`, { text });
    const socket = connect(Number(new URL(s.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.pause();
    let closed = false;
    socket.once('close', () => (closed = true));
    socket.write('GET /changes?since=0 HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
    await eventually(() => ticks.length === 1, 'the stream to start');
    // Each tick is a heartbeat interval; the reader takes nothing, so once the kernel's buffers are
    // full, heartbeats stay queued behind the catch-up and the third tick finds two unsent.
    await eventually(async () => {
      ticks[0]!();
      await new Promise((resolve) => setImmediate(resolve));
      return metrics.slowReaders.series().value === 1;
    }, 'the stalled reader to be disconnected');
    socket.resume();
    await eventually(() => closed, 'the connection to close');
    const again = await openRaw(s, '/changes');
    assert.equal(again.res.status, 200, 'the slot was given back');
    await again.close();
  });

  test('bad input -> a problem before any stream: entity URL 406, malformed Last-Event-ID 400, malformed since 400; the server goes on', async () => {
    const s = await start();
    await post(s, 'items', 'a');
    const entity = await s.request('/items/a', { headers: STREAM });
    assert.equal(entity.status, 406);
    assert.match((await entity.json()).detail, /watch \/changes\?resource=items/);
    for (const bad of ['nope', '99', 'now', '1 2']) {
      const res = await s.request('/changes', { headers: { ...STREAM, 'last-event-id': bad } });
      assert.equal(res.status, 400, `Last-Event-ID ${JSON.stringify(bad)}`);
      assert.match((await res.json()).detail, /^Last-Event-ID/);
    }
    assert.equal((await s.request('/items', { headers: { ...STREAM, 'last-event-id': 'x' } })).status, 400);
    assert.equal((await s.request('/changes?since=%7E%7E', { headers: STREAM })).status, 400);
    assert.equal((await s.request('/changes?bogus=1', { headers: STREAM })).status, 400);
    assert.equal((await s.request('/items/a')).status, 200);
    // An empty Last-Event-ID is none (a client with no id yet): the stream starts.
    const empty = await s.request('/changes', { headers: { ...STREAM, 'last-event-id': '' } });
    assert.equal(empty.status, 200);
    await empty.body?.cancel();
  });

  test('shutdown (the closing signal) -> every open stream ends with its last chunk; new ones are refused', async () => {
    const closing = new AbortController();
    const s = await start({ streams: { closing: closing.signal } });
    const a = await openRaw(s, '/changes');
    const b = await openRaw(s, '/items');
    closing.abort();
    while (!a.ended || !b.ended) await new Promise((resolve) => setImmediate(resolve));
    assert.equal((await s.request('/changes', { headers: STREAM })).status, 503);
  });

  test('a stream chosen by Accept says Vary: Accept (the URL answers JSON to other clients); with CORS, Vary: Accept, Origin', async () => {
    for (const [options, vary] of [[{}, 'Accept'], [{ corsOrigin: 'https://app.example' }, 'Accept, Origin']] as const) {
      const s = await start(options);
      for (const path of ['/changes', '/items']) {
        const aborted = new AbortController();
        const res = await s.request(path, { headers: { ...STREAM, origin: 'https://app.example' }, signal: aborted.signal });
        assert.equal(res.headers.get('content-type'), 'text/event-stream', path);
        assert.equal(res.headers.get('vary'), vary, path);
        aborted.abort();
        await res.body?.cancel().catch(() => {});
      }
    }
  });

  test('Accept: TEXT/EVENT-STREAM (media types are case-insensitive) -> the stream', async () => {
    const s = await start();
    const aborted = new AbortController();
    const res = await s.request('/changes', { headers: { accept: 'TEXT/EVENT-STREAM' }, signal: aborted.signal });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    aborted.abort();
    await res.body?.cancel().catch(() => {});
  });

  test('Accept naming JSON above the stream, or only a wildcard -> the JSON page, not a stream', async () => {
    const s = await start();
    for (const accept of ['*/*', 'application/json, text/event-stream;q=0.5', 'application/hal+json;q=1, text/event-stream;q=1']) {
      const res = await s.request('/items', { headers: { accept } });
      assert.equal(res.status, 200, accept);
      assert.notEqual(res.headers.get('content-type'), 'text/event-stream', accept);
    }
    assert.equal(wantsEventStream('text/event-stream, application/json;q=0.9'), true);
    assert.equal(wantsEventStream('text/event-stream;q=0'), false);
    // Media types are case-insensitive (RFC 9110 §8.3.1).
    assert.equal(wantsEventStream('TEXT/EVENT-STREAM'), true);
    assert.equal(wantsEventStream('text/Event-Stream, application/json;q=0.5'), true);
  });

  test('one store served by two handlers under different base paths (README, "Embedding") -> each stream links to its own handler', async () => {
    const changes = new LocalChangeLog();
    const store = createMemoryStore([], { resource: 'items', changes });
    const a = await startServer({ resources: [{ name: 'items', store }], basePath: '/a' });
    const b = await startServer({ resources: [{ name: 'items', store }], basePath: '/b' });
    const streams = [await openRaw(a, '/a/changes'), await openRaw(a, '/a/items'), await openRaw(b, '/b/changes'), await openRaw(b, '/b/items')];
    assert.equal((await a.request('/a/items', { method: 'POST', headers: JSON_HEADERS, body: '{}' })).status, 201);
    for (const stream of streams) await stream.until(() => stream.messages.length === 1);
    for (const stream of streams) await stream.close();
    const selfOf = (m: Message): unknown => (m.data.entity!['_links'] as { self: { href: string } }).self.href;
    const id = streams[0]!.messages[0]!.data.id;
    assert.deepEqual(streams.map((stream) => selfOf(stream.messages[0]!)), [`/a/items/${id}`, `/a/items/${id}`, `/b/items/${id}`, `/b/items/${id}`]);
  });
});

describe('a slow reader', () => {
  /** A response whose socket takes nothing: what it is written stays queued. */
  class StuckResponse extends EventEmitter {
    writableLength = 0;
    destroyed = false;
    ended = false;
    writeHead(): this {
      return this;
    }
    write(chunk: string): boolean {
      this.writableLength += Buffer.byteLength(chunk);
      return false;
    }
    end(): void {
      this.ended = true;
      this.emit('close');
    }
    destroy(): void {
      this.destroyed = true;
      this.emit('close');
    }
  }

  /** A response whose socket takes everything it is written, soon after. */
  class TakingResponse extends StuckResponse {
    override write(_chunk: string, taken?: () => void): boolean {
      if (taken !== undefined) setImmediate(taken);
      return true;
    }
  }

  test('a reader more than the bound behind -> disconnected and counted; its stream closed, nothing more buffered', () => {
    const metrics = new ServerMetrics();
    const streams = new Streams({ maxBufferedBytes: 1000, every: () => () => {} }, metrics.streamCounters);
    const res = new StuckResponse();
    let ended = 0;
    let writes = 0;
    streams.start({ method: 'GET' } as IncomingMessage, res as unknown as ServerResponse, streams.reply({}, (out) => {
      for (let i = 0; i < 100 && !out.closed; i++) {
        out.write(`id: ${i}\nevent: created\ndata: ${'x'.repeat(100)}\n\n`);
        writes++;
      }
    }, 'client'), {}, () => ended++);
    assert.equal(res.destroyed, true);
    assert.ok(writes < 100 && res.writableLength <= 1000 + 200, `stopped at the bound: ${res.writableLength} bytes queued`);
    assert.equal(ended, 1);
    assert.equal(streams.size, 0);
    assert.equal(metrics.slowReaders.series().value, 1);
  });

  test('a client gone before its stream starts (its cursor checked asynchronously meanwhile) -> no slot taken, told done at once', () => {
    const metrics = new ServerMetrics();
    const streams = new Streams({ maxStreams: 1, every: () => () => {} }, metrics.streamCounters);
    const gone = new StuckResponse();
    gone.destroyed = true;
    let ended = 0;
    streams.start({ method: 'GET' } as IncomingMessage, gone as unknown as ServerResponse, streams.reply({}, () => {}, 'a'), {}, () => ended++);
    assert.equal(ended, 1);
    assert.equal(streams.size, 0);
    streams.reply({}, () => {}, 'a'); // the one slot is still free: no 503
  });

  test('stream replies made together, before any starts (their cursors checked at once) -> each takes its slot when made: the limits hold; a slot comes back when its stream ends or its client has gone', () => {
    const metrics = new ServerMetrics();
    const streams = new Streams({ maxStreams: 3, maxStreamsPerClient: 2, every: () => () => {} }, metrics.streamCounters);
    const first = streams.reply({}, () => {}, 'a');
    const second = streams.reply({}, () => {}, 'a');
    assert.throws(() => streams.reply({}, () => {}, 'a'), (error: HttpProblem) => error.status === 429);
    const third = streams.reply({}, () => {}, 'b');
    assert.throws(() => streams.reply({}, () => {}, 'c'), (error: HttpProblem) => error.status === 503);
    const open = new TakingResponse();
    streams.start({ method: 'GET' } as IncomingMessage, open as unknown as ServerResponse, first, {}, () => {});
    const gone = new StuckResponse();
    gone.destroyed = true;
    streams.start({ method: 'GET' } as IncomingMessage, gone as unknown as ServerResponse, second, {}, () => {});
    assert.equal(streams.size, 1);
    streams.reply({}, () => {}, 'a'); // the slot of the client gone is back: 'a' holds 2 again, the server 3
    assert.throws(() => streams.reply({}, () => {}, 'c'), (error: HttpProblem) => error.status === 503);
    const head = new TakingResponse();
    streams.start({ method: 'HEAD' } as IncomingMessage, head as unknown as ServerResponse, third, {}, () => {});
    streams.reply({}, () => {}, 'c'); // the HEAD's stream ended at once: its slot is back
  });

  test('heartbeats a reader never takes -> disconnected at the third, counted; heartbeats it takes -> never', async () => {
    const metrics = new ServerMetrics();
    const ticks: (() => void)[] = [];
    const streams = new Streams({ every: (_ms, run) => (ticks.push(run), () => {}) }, metrics.streamCounters);
    const stuck = new StuckResponse();
    streams.start({ method: 'GET' } as IncomingMessage, stuck as unknown as ServerResponse, streams.reply({}, () => {}, 'a'), {}, () => {});
    const taking = new TakingResponse();
    streams.start({ method: 'GET' } as IncomingMessage, taking as unknown as ServerResponse, streams.reply({}, () => {}, 'b'), {}, () => {});
    for (let i = 0; i < 2; i++) {
      for (const tick of ticks) tick();
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(stuck.destroyed, false, 'two heartbeats unsent: not yet');
    for (const tick of ticks) tick();
    assert.equal(stuck.destroyed, true);
    assert.equal(metrics.slowReaders.series().value, 1);
    for (let i = 0; i < 10; i++) {
      for (const tick of ticks) tick();
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal(taking.destroyed, false);
    assert.equal(streams.size, 1);
  });

  test('one write larger than the bound to a reader that had taken everything -> sent; the reader is cut off only if it is still behind at the next write', () => {
    const metrics = new ServerMetrics();
    const streams = new Streams({ maxBufferedBytes: 1000, every: () => () => {} }, metrics.streamCounters);
    const res = new StuckResponse();
    let out: StreamWriter | undefined;
    streams.start({ method: 'GET' } as IncomingMessage, res as unknown as ServerResponse, streams.reply({}, (writer) => (out = writer), 'client'), {}, () => {});
    out!.write(`id: 1\nevent: created\ndata: ${'x'.repeat(5000)}\n\n`);
    assert.equal(res.destroyed, false, 'a batch of large entities is no slow reader');
    res.writableLength = 0; // the reader took it
    out!.write(`id: 2\nevent: created\ndata: ${'x'.repeat(5000)}\n\n`);
    assert.equal(res.destroyed, false);
    out!.write('id: 3\nevent: created\ndata: {}\n\n');
    assert.equal(res.destroyed, true, 'still more than the bound behind at the next write');
    assert.equal(metrics.slowReaders.series().value, 1);
  });
});
