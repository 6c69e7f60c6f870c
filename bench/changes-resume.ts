/**
 * Issue 16's resume target: a feed read from a cursor 1,000,000 changes back, at 1,000,000
 * entities, answers its first page in ≤ 50 ms. One process: a LocalChangeLog with one resource of
 * N entities, each created then (every other one) updated, so that half the order is holes before
 * re-packing; then pages read from the oldest cursor, from the middle and from the latest, through
 * the port (`read`) and through HTTP (`GET /changes?since=…`, the HAL document with the entities).
 *
 *   node --import tsx bench/changes-resume.ts [entities]
 */
import { performance } from 'node:perf_hooks';
import { LocalChangeLog } from '../src/store/changes/local-feed.js';
import { createMemoryStore } from '../src/store/memory-store.js';
import type { AddressInfo } from 'node:net';
import { createHalServer } from '../src/http/server.js';
import type { HandlerOptions } from '../src/http/app.js';

async function startServer(options: HandlerOptions): Promise<{ url: string; close(): Promise<void> }> {
  const server = createHalServer(options);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const N = Number(process.argv[2] ?? 1_000_000);
const changes = new LocalChangeLog();
const started = performance.now();
const store = createMemoryStore(
  (function* () {
    for (let i = 0; i < N; i++) yield { id: `p${i}`, createdAt: 1_700_000_000, updatedAt: 1_700_000_000, name: `product ${i}`, price: i % 1000 };
  })(),
  { resource: 'products', changes },
);
for (let i = 0; i < N; i += 2) await store.update(`p${i}`, (c) => ({ ...c.record, price: -1 }));
const loadMs = performance.now() - started;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const time = async (run: () => unknown | Promise<unknown>, rounds = 21): Promise<number> => {
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    await run();
    samples.push(performance.now() - t);
  }
  return median(samples);
};

const latest = Number(changes.latest);
const server = await startServer({ resources: [{ name: 'products', store }], changes });
const rows: [string, number][] = [];
for (const [label, since] of [
  [`${latest - 1} changes back (the oldest)`, '1'],
  ['half way', String(Math.floor(latest / 2))],
  ['at the latest', String(latest)],
] as const) {
  rows.push([`read(since ${label}, 20)`, await time(() => changes.read(since, 20))]);
  rows.push([`read(since ${label}, 200)`, await time(() => changes.read(since, 200))]);
  rows.push([`GET /changes?since=… ${label}, limit 20`, await time(async () => (await fetch(`${server.url}/changes?since=${since}&limit=20`)).arrayBuffer())]);
}
await server.close();
process.stdout.write(`${N.toLocaleString('en')} entities, ${latest.toLocaleString('en')} changes made (${(loadMs / 1000).toFixed(1)} s to make them)\n\n| read | median ms (21 rounds) |\n|---|---|\n`);
for (const [label, ms] of rows) process.stdout.write(`| ${label} | ${ms.toFixed(3)} |\n`);
