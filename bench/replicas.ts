/**
 * The `replicas` workload (issue 9): halserve on PostgreSQL against halserve on files, side by side.
 *
 * - GET an entity and a page of 20 from a replica on PostgreSQL and from the file store, the same
 *   data, interleaved rounds; the ratio is the median of per-round ratios.
 * - Durable POSTs through PostgreSQL with 64 connections, against `pgbench` inserting the same rows
 *   (same table, trigger included, same body) with 64 clients, interleaved.
 * - A write on one replica visible on another: sequential PATCHes on A, each followed by GETs on B
 *   until B serves the new ETag; the latency counts from A's acknowledgement.
 * - `halserve import` of the large data set, a replica's start-up on it, and `halserve export`.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BenchConfig } from './config.js';
import { copyDataset, generateDataset, postBody, RESOURCE } from './dataset.js';
import { measure, type Sample } from './measure.js';
import { findPostgres, startCluster, type PgCluster } from './pg.js';
import { memoryMiB } from './proc.js';
import { startHalserve, type Running } from './servers.js';
import { fmt, median, pairedRatio } from './stats.js';

const run = promisify(execFile);

export const BEGIN = '<!-- replicas:begin -->';
export const END = '<!-- replicas:end -->';

/** Connections of the write comparison (the issue's figure). */
const WRITERS = 64;

export interface ReplicasResult {
  readonly pgVersion: string;
  readonly entities: number;
  readonly reads: readonly { label: string; file: Sample[]; pg: Sample[] }[];
  readonly post: { halserve: Sample[]; pgbenchTps: number[] };
  readonly visibility: { samples: number; p50: number; p99: number; max: number };
  readonly large: { entities: number; fileMiB: number; importS: number; startupMs: number[]; rssMiB: number; exportS: number };
  readonly notes: string[];
}

type Log = (message: string) => void;

const ACCEPT = { accept: 'application/json' } as const;

async function cli(config: BenchConfig, args: readonly string[]): Promise<number> {
  const started = performance.now();
  await run(process.execPath, [path.join(config.root, 'dist', 'cli.js'), ...args], { cwd: config.root, maxBuffer: 64 << 20 });
  return (performance.now() - started) / 1000;
}

function replica(config: BenchConfig, url: string, emptyDir: string): Promise<Running> {
  return startHalserve(config.root, emptyDir, config.pin, [], ['--store', url, '--resource', RESOURCE]);
}

/** pgbench inserting rows like halserve's POSTs into the same table, `WRITERS` clients, one run. */
async function pgbench(config: BenchConfig, bin: string, cluster: PgCluster, database: string, dir: string): Promise<number> {
  const body = postBody().replace(/^\{/, '{"id":"ID","createdAt":1700000000,"updatedAt":1700000000,');
  const script = path.join(dir, 'insert.sql');
  await fs.writeFile(
    script,
    `INSERT INTO halserve.entities (resource, id, pos, rev, body) VALUES ('pgbench', md5(random()::text || clock_timestamp()::text), nextval('halserve.creation'), 1, '${body}');\n`,
  );
  // pgbench, unlike initdb, runs as any user: it connects as postgres over the socket.
  const { stdout } = await run(path.join(bin, 'pgbench'), ['-n', '-M', 'prepared', '-c', String(WRITERS), '-j', '2', '-T', String(config.duration), '-f', script, '-h', cluster.socketDir, '-p', String(cluster.port), '-U', 'postgres', database]);
  const tps = /tps = ([\d.]+)/.exec(stdout);
  if (!tps) throw new Error(`pgbench printed no tps: ${stdout}`);
  return Number(tps[1]);
}

/** Sequential PATCHes on `a`, each then read back from `b` until `b` serves the new ETag. */
async function visibility(a: Running, b: Running, ids: readonly string[], samples: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const id = ids[i % ids.length]!;
    const response = await fetch(`http://127.0.0.1:${a.port}/${RESOURCE}/${id}`, {
      method: 'PATCH',
      headers: { ...ACCEPT, 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ stock: 100_000 + i }),
    });
    await response.arrayBuffer();
    const tag = response.headers.get('etag');
    if (response.status !== 200 || !tag) throw new Error(`PATCH on A: ${response.status}`);
    const acked = performance.now();
    for (;;) {
      const read = await fetch(`http://127.0.0.1:${b.port}/${RESOURCE}/${id}`, { headers: ACCEPT });
      await read.arrayBuffer();
      if (read.headers.get('etag') === tag) break;
      if (performance.now() - acked > 10_000) throw new Error(`B never served ${tag} for ${id}`);
    }
    out.push(performance.now() - acked);
  }
  return out;
}

const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};

export async function runReplicas(config: BenchConfig, tmp: string, log: Log): Promise<ReplicasResult | { skipped: string }> {
  const found = findPostgres(log);
  if (!('bin' in found)) return { skipped: found.missing };
  const dir = path.join(tmp, 'replicas');
  await fs.mkdir(dir, { recursive: true });
  const empty = path.join(dir, 'empty');
  await fs.mkdir(empty);
  const cluster = await startCluster(found.bin, config.pin, true);
  const stopOnSignal = (): void => cluster.stopSync();
  process.once('SIGINT', stopOnSignal);
  const notes: string[] = [];
  const servers: Running[] = [];
  try {
    // The same small data set in files and in PostgreSQL.
    const data = await generateDataset(path.join(dir, 'small'), config.entities, false);
    const database = await cluster.createDatabase('replicas');
    const url = cluster.url(database);
    await cli(config, ['import', '--from', data.dir, '--to', url]);
    const fileCopy = await copyDataset(data, path.join(dir, 'files'));
    const file = await startHalserve(config.root, fileCopy.dir, config.pin);
    servers.push(file);
    const pgA = await replica(config, url, empty);
    servers.push(pgA);
    const pages = Array.from({ length: 20 }, (_, i) => ({ method: 'GET', path: `/${RESOURCE}?page=${1 + Math.floor((i * (data.size / 20 - 1)) / 19)}&limit=20`, headers: ACCEPT }));
    const entityGets = data.sampleIds.map((id) => ({ method: 'GET', path: `/${RESOURCE}/${id}`, headers: ACCEPT }));
    const reads: ReplicasResult['reads'] = [
      { label: 'GET an entity', file: [], pg: [] },
      { label: 'GET a page, limit=20', file: [], pg: [] },
    ];
    for (let round = 1; round <= config.rounds; round++) {
      for (const [i, requests] of [entityGets, pages].entries()) {
        const f = await measure(config, file, requests, `file ${reads[i]!.label}`);
        const p = await measure(config, pgA, requests, `pg ${reads[i]!.label}`);
        reads[i]!.file.push(f);
        reads[i]!.pg.push(p);
        log(`replicas round ${round} ${reads[i]!.label}: files ${fmt(f.rps)} req/s, PostgreSQL replica ${fmt(p.rps)} req/s${f.problem || p.problem ? ` INVALID: ${f.problem ?? ''} ${p.problem ?? ''}` : ''}`);
      }
    }

    // A write on one replica, seen on another.
    const pgB = await replica(config, url, empty);
    servers.push(pgB);
    const latencies = await visibility(pgA, pgB, data.sampleIds, config.quick ? 100 : 500);
    const seen = { samples: latencies.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) };
    log(`replicas: a write on A visible on B after p50 ${fmt(seen.p50, 2)} ms, p99 ${fmt(seen.p99, 2)} ms`);
    await pgB.stop();
    servers.pop();

    // Durable POSTs, 64 at once, against pgbench's inserts of the same rows.
    const writes = { ...config, connections: WRITERS };
    const post = { method: 'POST', path: `/${RESOURCE}`, headers: { ...ACCEPT, 'content-type': 'application/json' }, body: postBody() };
    const postResult: ReplicasResult['post'] = { halserve: [], pgbenchTps: [] };
    for (let round = 1; round <= config.rounds; round++) {
      const h = await measure(writes, pgA, [post], 'POST through PostgreSQL');
      const tps = await pgbench(config, found.bin, cluster, database, dir);
      postResult.halserve.push(h);
      postResult.pgbenchTps.push(tps);
      log(`replicas round ${round} POST x${WRITERS}: halserve ${fmt(h.rps)} req/s, pgbench ${fmt(tps)} tps${h.problem ? ` INVALID: ${h.problem}` : ''}`);
    }
    for (const s of servers.splice(0)) await s.stop();

    // The large data set: import, a replica's start-up, export.
    const size = Math.max(...config.largeSizes);
    log(`replicas: generating ${fmt(size)} entities`);
    const large = await generateDataset(path.join(dir, 'large'), size, false);
    const fileMiB = (await fs.stat(path.join(large.dir, `${RESOURCE}.jsonl`))).size / 2 ** 20;
    const bigDb = await cluster.createDatabase('large');
    const bigUrl = cluster.url(bigDb);
    const importS = await cli(config, ['import', '--from', large.dir, '--to', bigUrl]);
    log(`replicas: import of ${fmt(size)} entities in ${fmt(importS, 1)} s`);
    await fs.rm(large.dir, { recursive: true, force: true });
    const startupMs: number[] = [];
    let rssMiB = NaN;
    for (let round = 1; round <= config.rounds; round++) {
      const r = await replica(config, bigUrl, empty);
      startupMs.push(r.startupMs);
      rssMiB = memoryMiB(r.pid).rss;
      await r.stop();
      log(`replicas: start-up on ${fmt(size)} entities ${fmt(r.startupMs)} ms, ${fmt(rssMiB)} MiB`);
    }
    const exportS = await cli(config, ['export', '--from', bigUrl, '--to', path.join(dir, 'exported')]);
    log(`replicas: export in ${fmt(exportS, 1)} s`);
    return {
      pgVersion: cluster.version,
      entities: data.size,
      reads,
      post: postResult,
      visibility: seen,
      large: { entities: size, fileMiB, importS, startupMs, rssMiB, exportS },
      notes,
    };
  } finally {
    for (const s of servers) await s.stop();
    process.removeListener('SIGINT', stopOnSignal);
    await cluster.stop();
  }
}

const verdict = (ok: boolean): string => (ok ? 'met' : '**missed**');

/** The section of RESULTS.md, between the markers. */
export function renderReplicas(r: ReplicasResult | { skipped: string }, config: BenchConfig, date: string): string {
  const out = [BEGIN, '## Replicas on PostgreSQL (issue 9)', ''];
  if ('skipped' in r) {
    out.push(`Skipped: ${r.skipped}.`, '', END, '');
    return out.join('\n');
  }
  const rps = (samples: readonly Sample[]): number => median(samples.map((s) => s.rps));
  const [entity, page] = r.reads;
  const ratio = (x: { file: Sample[]; pg: Sample[] } | undefined): number => (x ? pairedRatio(x.pg.map((s) => s.rps), x.file.map((s) => s.rps)) : NaN);
  const postRatio = pairedRatio(r.post.halserve.map((s) => s.rps), r.post.pgbenchTps);
  const startup = median(r.large.startupMs);
  out.push(
    `${date}, ${os.availableParallelism()} cores, Node ${process.version}, PostgreSQL ${r.pgVersion} (a throwaway cluster on the same machine). ` +
      `${config.rounds} interleaved rounds of ${config.duration} s (${config.warmup} s warm-up); reads with ${config.connections} connections on ${fmt(r.entities)} entities; ratios are medians of per-round ratios.`,
    '',
    '| Measure | Files | PostgreSQL | Ratio | Target | |',
    '|---|---:|---:|---:|---|---|',
    `| ${entity?.label ?? ''} (req/s) | ${fmt(rps(entity?.file ?? []))} | ${fmt(rps(entity?.pg ?? []))} | ${fmt(ratio(entity), 2)}× | ≥ 0.9× | ${verdict(ratio(entity) >= 0.9)} |`,
    `| ${page?.label ?? ''} (req/s) | ${fmt(rps(page?.file ?? []))} | ${fmt(rps(page?.pg ?? []))} | ${fmt(ratio(page), 2)}× | ≥ 0.9× | ${verdict(ratio(page) >= 0.9)} |`,
    `| durable POST, ${WRITERS} concurrent: halserve on PostgreSQL (req/s) vs pgbench inserting the same rows (tps) | ${fmt(median(r.post.pgbenchTps))} (pgbench) | ${fmt(rps(r.post.halserve))} | ${fmt(postRatio, 2)}× | ≥ 0.5× | ${verdict(postRatio >= 0.5)} |`,
    `| a write on one replica visible on another (${r.visibility.samples} sequential PATCHes) | | p50 ${fmt(r.visibility.p50, 2)} ms, p99 ${fmt(r.visibility.p99, 2)} ms, max ${fmt(r.visibility.max, 1)} ms | | p99 ≤ 100 ms | ${verdict(r.visibility.p99 <= 100)} |`,
    `| start-up of a replica at ${fmt(r.large.entities)} entities (${fmt(r.large.fileMiB)} MiB of JSON lines) | | ${fmt(startup)} ms (median of ${r.large.startupMs.length}), RSS ${fmt(r.large.rssMiB)} MiB | | ≤ 5 s | ${verdict(startup <= 5000)} |`,
    `| \`halserve import\` of ${fmt(r.large.entities)} entities | | ${fmt(r.large.importS, 1)} s | | ≤ 60 s | ${verdict(r.large.importS <= 60)} |`,
    `| \`halserve export\` of ${fmt(r.large.entities)} entities | | ${fmt(r.large.exportS, 1)} s | | reported | |`,
    '',
  );
  for (const n of r.notes) out.push(`- ${n}`);
  out.push(END, '');
  return out.join('\n');
}
