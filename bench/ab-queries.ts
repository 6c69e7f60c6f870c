/**
 * Two (or more) builds of halserve side by side on the `queries` workload's data, interleaved
 * (A B, B A, …) so that both see the same background load:
 *
 *   node --import tsx bench/ab-queries.ts rss|load <rounds> <server entry>... [entities]
 *
 * (an entry is a built `cli.js`, e.g. a copy of `dist/` made before a change). `rss`: a fresh
 * server, the first query on `stock`, `status`, `category` and `price`, a second later each again,
 * then RSS (the "RSS with 4 fields indexed" target). `load`: a server that has answered the first
 * query of every kind, then `GET /products/<id>` while 8 clients send uncached heavy queries for
 * 10 s (`BENCH_AB_SECONDS`), exactly as `bench/queries.ts` measures it. Prints each round and the
 * medians, with the load average.
 */
import { Agent } from 'node:http';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readConfig } from './config.js';
import { memoryMiB } from './proc.js';
import { generateProducts, PRODUCTS, prng } from './products.js';
import { FILTERS, halserveQuery, heavyQueries, percentile, underLoadHalserve, untilOkSpec, url } from './queries.js';
import { startHalserve, type Running } from './servers.js';
import { fmt, median } from './stats.js';

type Figures = Record<string, number>;

async function withServer(entry: string, file: string, run: (server: Running, agent: Agent) => Promise<Figures>): Promise<Figures> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-ab-'));
  // A copy, not a link: a server's first start appends a stamped copy of every unstamped line to
  // its file, which would change the data of every later round.
  await fs.copyFile(file, path.join(dir, `${PRODUCTS}.jsonl`));
  process.env['BENCH_HALSERVE'] = entry;
  const server = await startHalserve(readConfig().root, dir, readConfig().pin, [], ['--durability', 'full']);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    return { startupMs: server.startupMs, ...(await run(server, agent)) };
  } finally {
    agent.destroy();
    await server.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function rss(server: Running, agent: Agent): Promise<Figures> {
  const out: Figures = { rssStartMiB: memoryMiB(server.pid).rss };
  const fields: [string, string][] = [['stock', 'stock[gte]=500'], ...FILTERS];
  for (const [field, params] of fields) {
    const first = await untilOkSpec(agent, server.port, (attempt) => ({ http: url(params, attempt), sql: '' }));
    out[`first ${field} ms`] = first.readyMs ?? NaN;
  }
  await new Promise((r) => setTimeout(r, 1000));
  for (const [, params] of fields) await halserveQuery(agent, server.port, { http: url(params, 2), sql: '' });
  out['rssIndexedMiB'] = memoryMiB(server.pid).rss;
  return out;
}

async function load(server: Running, agent: Agent, ids: readonly string[]): Promise<Figures> {
  const heavy = await heavyQueries(agent, server.port);
  const loadAverage = os.loadavg()[0]!;
  const r = await underLoadHalserve(server, Number(process.env['BENCH_AB_SECONDS'] ?? 10), heavy, ids, prng(9));
  return { gets: r.gets.length, 'GET p50 ms': median(r.gets), 'GET p99 ms': percentile(r.gets, 99), 'GET max ms': Math.max(...r.gets), heavy: r.heavyDone, 'load average': loadAverage };
}

async function main(): Promise<void> {
  const [mode, roundsText, ...rest] = process.argv.slice(2);
  const entities = rest.length > 0 && /^\d+$/.test(rest.at(-1)!) ? Number(rest.pop()) : 1_000_000;
  if ((mode !== 'rss' && mode !== 'load') || rest.length === 0) throw new Error('usage: bench/ab-queries.ts rss|load <rounds> <server entry>... [entities]');
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-ab-data-'));
  try {
    const products = await generateProducts(tmp, entities);
    await fs.rm(products.tsv);
    const results = new Map<string, Figures[]>(rest.map((entry) => [entry, []]));
    for (let round = 1; round <= Number(roundsText); round++) {
      for (const entry of round % 2 === 1 ? rest : [...rest].reverse()) {
        const figures = await withServer(entry, products.jsonl, (server, agent) => (mode === 'rss' ? rss(server, agent) : load(server, agent, products.sampleIds)));
        results.get(entry)!.push(figures);
        console.log(`round ${round} ${entry}: ${Object.entries(figures).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ')}`);
      }
    }
    for (const [entry, list] of results) {
      console.log(`median ${entry}: ${Object.keys(list[0]!).map((k) => `${k} ${fmt(median(list.map((f) => f[k]!)), 2)}`).join(', ')}`);
    }
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

await main();
