/**
 * Two (or more) builds of halserve, each loaded through the API with the same entities, then
 * measured interleaved (A B, A B, …) on one workload of the `deployed` section, so that both see the
 * same background load:
 *
 *   node --import tsx bench/ab-deployed.ts hot|uniform <rounds> <entities> <server entry>...
 *
 * (an entry is a built `cli.js`, e.g. a copy of `dist/` made before a change). Prints each round's
 * requests per second and server CPU per request, then the medians, with the load average.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { BenchRequest } from './capture.js';
import { readConfig } from './config.js';
import { RESOURCE } from './dataset.js';
import { bulkLoad, emptyData, uniform } from './deployed.js';
import { measure, type Sample } from './measure.js';
import { startHalserveWithToken, type Running } from './servers.js';
import { fmt, median } from './stats.js';
import { withToken } from './workloads.js';

const [kind = 'hot', roundsText = '3', entitiesText = '100000', ...entries] = process.argv.slice(2);
if (entries.length === 0 || (kind !== 'hot' && kind !== 'uniform')) {
  console.error('usage: node --import tsx bench/ab-deployed.ts hot|uniform <rounds> <entities> <server entry>...');
  process.exit(1);
}
const config = readConfig();
const entities = Number(entitiesText);
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-ab-deployed-'));
const servers: { entry: string; server: Running; requests: BenchRequest[] }[] = [];
const samples = new Map<string, Sample[]>();
try {
  for (const [i, entry] of entries.entries()) {
    process.env['BENCH_HALSERVE'] = entry;
    const data = await emptyData(path.join(tmp, String(i)));
    const server = await startHalserveWithToken(config.root, data.dir, config.pin);
    const ids = await bulkLoad(server.port, entities);
    const get = (id: string): BenchRequest => ({ method: 'GET', path: `/${RESOURCE}/${id}`, headers: { accept: 'application/json' } });
    servers.push({ entry, server, requests: withToken(kind === 'hot' ? [get(ids[ids.length >> 1]!)] : uniform(ids, 10_000, entities).map(get)) });
    samples.set(entry, []);
    process.stderr.write(`[ab] ${entry}: ${fmt(entities)} loaded\n`);
  }
  for (let round = 1; round <= Number(roundsText); round++) {
    for (const { entry, server, requests } of servers) {
      const sample = await measure(config, server, requests, entry, kind === 'uniform' ? 'global' : 'per-connection');
      samples.get(entry)!.push(sample);
      console.log(`round ${round} ${entry}: ${fmt(sample.rps)} req/s, ${fmt(sample.cpuUs, 1)} µs/req${sample.problem ? ` INVALID: ${sample.problem}` : ''}, load ${os.loadavg()[0]!.toFixed(1)}`);
    }
  }
  for (const [entry, list] of samples) console.log(`median ${entry}: ${fmt(median(list.map((s) => s.rps)))} req/s, ${fmt(median(list.map((s) => s.cpuUs)), 1)} µs/req`);
} finally {
  for (const { server } of servers) await server.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}
