/**
 * What checking links in the database costs a write (docs/relations.md over §8a): a halserve server over
 * the PostgreSQL store, `products.category` linking to `categories`, once with the checks in each
 * write's statement (`keepLinks`: the write function, the link index) and once with only the
 * in-process guard (which holds within one process alone). Both on one throwaway cluster, each in
 * a database of its own with the same data; rounds interleaved so both see the same background.
 *
 *   node --import tsx bench/pg-links.ts [requests per round] [rounds]
 *
 * Figures: POST of a product linking a category (one client: latency; 16 clients: throughput),
 * PATCH that changes the link, DELETE of a category nothing links to (the count the check adds).
 */
import type { AddressInfo } from 'node:net';
import { relationGraph } from '../src/conventions/relations.js';
import { compileSchema } from '../src/conventions/schema.js';
import type { ServedResource } from '../src/http/app.js';
import { createHalServer } from '../src/http/server.js';
import { openPostgres, type PostgresStores } from '../src/store/pg/open.js';
import { findPostgres, startCluster } from '../test/helpers/pg-cluster.js';
import { fmt, median } from './stats.js';

const REQUESTS = Number(process.argv[2] ?? 1000);
const ROUNDS = Number(process.argv[3] ?? 3);
const CATEGORIES = 50;
const PRELOAD = 20_000;
const SCHEMA = { type: 'object', properties: { name: { type: 'string' }, category: { type: 'string', 'x-link': 'categories' } } };
const JSON_BODY = { 'content-type': 'application/json' };

type Mode = 'database check' | 'in-process guard only';
interface Server {
  readonly url: string;
  close(): Promise<void>;
}

async function serve(stores: PostgresStores, mode: Mode): Promise<Server> {
  const resources: ServedResource[] = [
    { name: 'categories', store: stores.stores.get('categories')! },
    { name: 'products', store: stores.stores.get('products')!, schema: SCHEMA, validate: compileSchema(SCHEMA, 'products.schema.json') },
  ];
  const integrity = mode === 'database check' ? await stores.keepLinks(relationGraph(resources)) : undefined;
  const server = createHalServer({ resources, ...(integrity ? { linkIntegrity: () => integrity } : {}) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function timed(n: number, clients: number, request: (i: number) => Promise<Response>): Promise<{ p50: number; p99: number; perSecond: number }> {
  const samples: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < n) {
        const i = next++;
        const t = performance.now();
        const res = await request(i);
        await res.arrayBuffer();
        if (res.status >= 300) throw new Error(`status ${res.status}`);
        samples.push(performance.now() - t);
      }
    }),
  );
  const elapsed = performance.now() - started;
  samples.sort((a, b) => a - b);
  return { p50: quantile(samples, 0.5), p99: quantile(samples, 0.99), perSecond: (n / elapsed) * 1000 };
}

const found = findPostgres();
if ('missing' in found) throw new Error(found.missing);
const cluster = await startCluster(found.bin);
try {
  const modes: Mode[] = ['database check', 'in-process guard only'];
  const servers = new Map<Mode, Server>();
  const opened: PostgresStores[] = [];
  for (const mode of modes) {
    const url = cluster.url(await cluster.createDatabase(mode === 'database check' ? 'checked' : 'guarded'));
    const stores = await openPostgres({ url, resources: ['categories', 'products'], warn: (m) => console.error(m) });
    opened.push(stores);
    for (let c = 0; c < CATEGORIES; c++) await stores.stores.get('categories')!.create({ id: `c${c}`, createdAt: 1, updatedAt: 1, name: `C${c}` });
    await Promise.all(
      Array.from({ length: PRELOAD }, (_, i) => stores.stores.get('products')!.create({ id: `pre${i}`, createdAt: 1, updatedAt: 1, name: 'x', category: `c${i % CATEGORIES}` })),
    );
    servers.set(mode, await serve(stores, mode));
  }
  const figures = new Map<string, number[]>();
  const note = (key: string, value: number): void => void figures.set(key, [...(figures.get(key) ?? []), value]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? modes : [...modes].reverse()) {
      const { url } = servers.get(mode)!;
      const post = (i: number): Promise<Response> =>
        fetch(`${url}/products`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ name: `p${i}`, category: `c${i % CATEGORIES}` }) });
      const one = await timed(REQUESTS, 1, post);
      note(`${mode}|POST linked, 1 client, p50 ms`, one.p50);
      note(`${mode}|POST linked, 1 client, p99 ms`, one.p99);
      const many = await timed(REQUESTS * 4, 16, post);
      note(`${mode}|POST linked, 16 clients, req/s`, many.perSecond);
      const patch = await timed(REQUESTS, 1, (i) =>
        fetch(`${url}/products/pre${(round * REQUESTS + i) % PRELOAD}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ category: `c${(i + 1) % CATEGORIES}` }) }),
      );
      note(`${mode}|PATCH moving the link, 1 client, p50 ms`, patch.p50);
      // Categories nothing links to, created and deleted: the delete's count is what the check adds.
      const ids: string[] = [];
      for (let i = 0; i < REQUESTS / 4; i++) ids.push(((await (await fetch(`${url}/categories`, { method: 'POST', headers: JSON_BODY, body: '{"name":"spare"}' })).json()) as { id: string }).id);
      const remove = await timed(ids.length, 1, (i) => fetch(`${url}/categories/${ids[i]}`, { method: 'DELETE' }));
      note(`${mode}|DELETE of an unlinked category, 1 client, p50 ms`, remove.p50);
    }
  }
  const metrics = [...new Set([...figures.keys()].map((k) => k.split('|')[1]!))];
  console.log(`PostgreSQL ${cluster.version}; ${PRELOAD} products over ${CATEGORIES} categories preloaded; ${ROUNDS} rounds of ${REQUESTS} requests; medians over rounds\n`);
  console.log(`| figure | ${modes.join(' | ')} |\n|---|---|---|`);
  for (const metric of metrics) {
    const digits = metric.endsWith('req/s') ? 0 : 2;
    console.log(`| ${metric} | ${modes.map((m) => fmt(median(figures.get(`${m}|${metric}`) ?? []), digits)).join(' | ')} |`);
  }
  for (const server of servers.values()) await server.close();
  for (const stores of opened) await stores.close();
} finally {
  await cluster.stop();
}
