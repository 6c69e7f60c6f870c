/**
 * Issue 16's stream targets, in one process (server and clients share it: a conservative setup):
 * - a write visible on an open stream: time from the POST's response to the event's arrival on a
 *   stream of `/changes`, over sequential durable writes (p50, p99);
 * - `idle` open streams: the process's RSS per stream, and the time until one write has reached
 *   every one of them;
 * - the durable POST rate with `idle` streams open against none (1 client, sequential).
 *
 *   node --import tsx bench/stream-latency.ts [writes] [idle streams]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Agent } from 'node:http';
import http from 'node:http';
import { createHalServer } from '../src/http/server.js';
import { openDataDir } from '../src/store/log/data-dir.js';

const WRITES = Number(process.argv[2] ?? 500);
const IDLE = Number(process.argv[3] ?? 1000);
const dir = await mkdtemp(join(tmpdir(), 'halserve-bench-streams-'));
const data = await openDataDir({ dir, resources: ['items'], durability: 'full', repair: false, warn: () => {} });
const server = createHalServer({ resources: [{ name: 'items', store: data.stores.get('items')! }], changes: data.changes, streams: { maxStreams: IDLE + 10 } });
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;
const agent = new Agent({ keepAlive: true, maxSockets: IDLE + 10 });

/** Opens a stream with node:http (cheaper per connection than fetch); calls onEvent with each id. */
function openStream(onEvent: (id: string) => void): Promise<http.ClientRequest> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/changes', agent, headers: { accept: 'text/event-stream' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        for (let end; (end = text.indexOf('\n\n')) >= 0; text = text.slice(end + 2)) {
          const block = text.slice(0, end);
          if (block.startsWith('id: ')) onEvent(block.slice(4, block.indexOf('\n')));
        }
      });
      resolve(req);
    });
  });
}

const post = (): Promise<void> =>
  new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/items', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
    req.end('{"n":1}');
  });

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

// 1. Write -> event on a stream of the same process.
let arrived: (() => void) | undefined;
const watcher = await openStream(() => arrived?.());
const delays: number[] = [];
const ratesNone: number[] = [];
{
  const t0 = performance.now();
  for (let i = 0; i < WRITES; i++) {
    const seen = new Promise<number>((resolve) => (arrived = () => resolve(performance.now())));
    await post();
    const acked = performance.now();
    delays.push((await seen) - acked);
  }
  ratesNone.push(WRITES / ((performance.now() - t0) / 1000));
}

// 2. Idle streams: memory, and one write reaching all.
global.gc?.();
const rssBefore = process.memoryUsage().rss;
let reached = 0;
const streams: http.ClientRequest[] = [];
for (let i = 0; i < IDLE; i++) streams.push(await openStream(() => reached++));
global.gc?.();
const rssPerStream = (process.memoryUsage().rss - rssBefore) / IDLE;
const fanOut: number[] = [];
for (let round = 0; round < 5; round++) {
  reached = 0;
  const t = performance.now();
  await post();
  while (reached < IDLE) await new Promise((resolve) => setImmediate(resolve));
  fanOut.push(performance.now() - t);
}

// 3. The POST rate with the idle streams open.
arrived = undefined;
const t1 = performance.now();
for (let i = 0; i < WRITES; i++) await post();
const rateWith = WRITES / ((performance.now() - t1) / 1000);

process.stdout.write(
  [
    `| figure | value |`,
    `|---|---|`,
    `| write -> event on a stream of its process, p50 | ${pct(delays, 50).toFixed(2)} ms |`,
    `| the same, p99 (${WRITES} sequential durable writes) | ${pct(delays, 99).toFixed(2)} ms |`,
    `| RSS per idle stream (${IDLE} open; server and clients in one process) | ${(rssPerStream / 1024).toFixed(1)} KiB |`,
    `| one write reaching all ${IDLE} streams, worst of 5 (from the POST sent) | ${Math.max(...fanOut).toFixed(1)} ms |`,
    `| durable POSTs/s, 1 client, no other stream | ${ratesNone[0]!.toFixed(0)} |`,
    `| the same with ${IDLE} streams open | ${rateWith.toFixed(0)} (${(rateWith / ratesNone[0]!).toFixed(2)}x) |`,
    '',
  ].join('\n'),
);
for (const s of streams) s.destroy();
watcher.destroy();
agent.destroy();
server.closeAllConnections();
server.close();
await data.close();
await rm(dir, { recursive: true, force: true });
