/**
 * Two (or more) builds of halserve, each loaded through the API with the same entities, then
 * measured interleaved (A B, B A, …: each round starts one later) on one workload of the `deployed` section, so that both see the
 * same background load:
 *
 *   node --import tsx bench/ab-deployed.ts hot|uniform|page-20|page-200|post|patch <rounds> <entities> <server entry>...
 *
 * (an entry is a built `cli.js`, e.g. a copy of `dist/` made before a change; `keyed:<cli.js>`, for
 * `post`, a server of that build sent a fresh `Idempotency-Key` with every POST; `nonce:<cli.js>`,
 * the same requests with the header named `X-Request-Nonce`, which the server does not read: the
 * same bytes, built by the same code of the load generator). The entry `limit`
 * adds the limit (bare node:http replaying the first build's answers; for `post`, the durable
 * limit, as for `patch`; `limit-dsync`, for `post` and `patch`, the durable limit with O_DSYNC, one
 * synced write per batch, as halserve's log syncs), so that a build's ratio to it is measured in the same rounds. Prints each round's
 * requests per second and server CPU per request, then the medians and each column's median of
 * per-round ratios to the last column, with the load average and the host's steal share (`bench/proc.ts`
 * `stealShare`: a ratio measured under much steal is not a quiet host's; bench/NOTES.md, 2026-12-03).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { capture, type BenchRequest } from './capture.js';
import { readConfig } from './config.js';
import { postBody, RESOURCE } from './dataset.js';
import { bulkLoad, emptyData, uniform } from './deployed.js';
import { measure, type RequestOrder, type Sample } from './measure.js';
import { untilQuiet } from './proc.js';
import { startHalserveWithToken, startLimit, type Running } from './servers.js';
import { fmt, median, pairedRatio, percent } from './stats.js';
import { withToken } from './workloads.js';

const KINDS = ['hot', 'uniform', 'page-20', 'page-200', 'post', 'patch'] as const;
type Kind = (typeof KINDS)[number];
const [kindText = 'hot', roundsText = '3', entitiesText = '100000', ...entries] = process.argv.slice(2);
const kind = kindText as Kind;
if (entries.length === 0 || !KINDS.includes(kind)) {
  console.error(`usage: node --import tsx bench/ab-deployed.ts ${KINDS.join('|')} <rounds> <entities> <server entry | limit | limit-dsync>...`);
  process.exit(1);
}
const config = readConfig();
const entities = Number(entitiesText);
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-ab-deployed-'));
const servers: { entry: string; server: Running; requests: BenchRequest[]; fresh: string | undefined }[] = [];
const samples = new Map<string, Sample[]>();
const ACCEPT = { accept: 'application/json' } as const;
const order: RequestOrder = kind === 'uniform' ? 'global' : 'per-connection';

/** The workload's requests over the loaded ids. */
function requestsOf(ids: readonly string[]): BenchRequest[] {
  const get = (id: string): BenchRequest => ({ method: 'GET', path: `/${RESOURCE}/${id}`, headers: ACCEPT });
  const pages = (limit: number): BenchRequest[] => {
    const last = Math.max(1, Math.ceil(entities / limit));
    return Array.from({ length: 20 }, (_, i) => ({ method: 'GET', path: `/${RESOURCE}?page=${1 + Math.floor((i * (last - 1)) / 19)}&limit=${limit}`, headers: ACCEPT }));
  };
  if (kind === 'hot') return withToken([get(ids[ids.length >> 1]!)]);
  if (kind === 'uniform') return withToken(uniform(ids, 10_000, entities).map(get));
  if (kind === 'post') return withToken([{ method: 'POST', path: `/${RESOURCE}`, headers: { ...ACCEPT, 'content-type': 'application/json' }, body: postBody() }]);
  // As the PATCH workload of `npm run bench`: a merge patch of `stock` to 100 ids spread over the set.
  if (kind === 'patch') return withToken(Array.from({ length: 100 }, (_, n) => ({ method: 'PATCH', path: `/${RESOURCE}/${ids[Math.floor((n * ids.length) / 100)]}`, headers: { ...ACCEPT, 'content-type': 'application/json' }, body: JSON.stringify({ stock: n }) })));
  return withToken(pages(kind === 'page-20' ? 20 : 200));
}

try {
  for (const [i, entry] of entries.entries()) {
    if (entry === 'limit' || entry === 'limit-dsync') {
      const first = servers[0];
      if (!first) throw new Error('the limit replays the first build: name a build before it');
      const file = path.join(tmp, 'capture.json');
      await fs.writeFile(file, JSON.stringify(await capture(first.server.port, first.requests)));
      const writes = kind === 'post' || kind === 'patch';
      if (entry === 'limit-dsync' && !writes) throw new Error('limit-dsync is for post and patch only');
      const server = await startLimit(config.root, file, config.pin, [], writes ? path.join(tmp, `${entry}.jsonl`) : undefined, entry === 'limit-dsync');
      servers.push({ entry, server, requests: first.requests, fresh: undefined });
    } else {
      const mark = /^(keyed|nonce):/.exec(entry);
      const fresh = mark === null ? undefined : mark[1] === 'keyed' ? 'idempotency-key' : 'x-request-nonce';
      if (fresh !== undefined && kind !== 'post') throw new Error('keyed:<entry> and nonce:<entry> are for post only');
      process.env['BENCH_HALSERVE'] = entry.slice(mark === null ? 0 : mark[0].length);
      const data = await emptyData(path.join(tmp, String(i)));
      const server = await startHalserveWithToken(config.root, data.dir, config.pin);
      const ids = await bulkLoad(server.port, entities);
      servers.push({ entry, server, requests: requestsOf(ids), fresh });
      process.stderr.write(`[ab] ${entry}: ${fmt(entities)} loaded\n`);
    }
    samples.set(entry, []);
  }
  for (let round = 1; round <= Number(roundsText); round++) {
    // Each round starts one server later (A B C, B C A, C A B, …): no build always follows the same
    // one, whose last run may still weigh on the machine (its compaction, its collector, the
    // kernel writing back its log). Measured without this, a build moved by 6–9% between first and
    // second place in its round (bench/NOTES.md, "a ring allocated once").
    for (let k = 0; k < servers.length; k++) {
      const { entry, server, requests, fresh } = servers[(k + round - 1) % servers.length]!;
      // Every server at rest first, as the full run waits (proc.ts untilQuiet).
      await untilQuiet(servers.map((s) => s.server.pid));
      const sample = await measure(config, server, requests, entry, order, fresh);
      samples.get(entry)!.push(sample);
      console.log(`round ${round} ${entry}: ${fmt(sample.rps)} req/s, ${fmt(sample.cpuUs, 1)} µs/req${sample.problem ? ` INVALID: ${sample.problem}` : ''}, load ${os.loadavg()[0]!.toFixed(1)}, host steal ${percent(sample.steal)}`);
    }
  }
  const last = samples.get(entries[entries.length - 1]!)!;
  for (const [entry, list] of samples) {
    const rps = pairedRatio(list.map((s) => s.rps), last.map((s) => s.rps));
    const cpu = pairedRatio(last.map((s) => s.cpuUs), list.map((s) => s.cpuUs));
    console.log(`median ${entry}: ${fmt(median(list.map((s) => s.rps)))} req/s, ${fmt(median(list.map((s) => s.cpuUs)), 1)} µs/req; ÷ ${entries[entries.length - 1]}: req/s ${fmt(rps, 2)}×, by CPU ${fmt(cpu, 2)}×; host steal ${percent(median(list.map((s) => s.steal)))}`);
  }
} finally {
  for (const { server } of servers) await server.stop();
  await fs.rm(tmp, { recursive: true, force: true });
}
