/**
 * `npm run bench`: prepares peers and data, runs every workload against halserve, the limit and
 * json-server in interleaved rounds, and writes bench/RESULTS.md. Settings: see config.ts.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { capture, maskDate, rawExchange } from './capture.js';
import { isSectionsOnly, readConfig, type BenchConfig } from './config.js';
import { copyDataset, generateDataset, RESOURCE, type Dataset } from './dataset.js';
import { measure, type Sample } from './measure.js';
import { memoryMiB, ownCpuList, restoreCpuList, untilQuiet } from './proc.js';
import { renderReport, renderStreams, STREAMS_BEGIN, STREAMS_END, type RunResult, type StartupResult, type StreamsBench, type WorkloadResult } from './report.js';
import { startHalserve, startHalserveWithJwt, startHalserveWithToken, startJsonServer, startLimit, type Running, type ServerKind } from './servers.js';
import { fmt } from './stats.js';
import { workloads, type Workload } from './workloads.js';
import { runQueries, type QueriesResult } from './queries.js';
import { FAIRNESS_BEGIN, FAIRNESS_END, renderFairness, runFairness, type FairnessResult } from './fairness.js';
import { renderQueries, spliceQueries, spliceSection } from './queries-report.js';
import { runDeployed, type DeployedResult } from './deployed.js';
import { BEGIN as REPLICAS_BEGIN, END as REPLICAS_END, renderReplicas, runReplicas, type ReplicasResult } from './replicas.js';

const PEERS = { 'json-server': '0.17.4', autocannon: '8.0.0' } as const;

const log = (message: string): void => {
  process.stderr.write(`[bench] ${message}\n`);
};

/** Installs the peers into the ignored `.bench/` folder, never into the project's dependencies. */
function ensurePeers(config: BenchConfig): void {
  const missing = Object.entries(PEERS).filter(([name, version]) => {
    const file = path.join(config.work, 'node_modules', name, 'package.json');
    return !existsSync(file) || (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version !== version;
  });
  if (missing.length === 0) return;
  const specs = Object.entries(PEERS).map(([name, version]) => `${name}@${version}`);
  log(`installing ${specs.join(', ')} into .bench/`);
  execFileSync('npm', ['install', '--prefix', config.work, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', ...specs], {
    cwd: config.root,
    stdio: 'inherit',
  });
}

function build(config: BenchConfig): void {
  if (process.env['BENCH_NO_BUILD'] === '1' || process.env['BENCH_HALSERVE'] !== undefined) return;
  log('npm run build');
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: config.root, stdio: 'inherit' });
}

const wanted = (config: BenchConfig, name: string): boolean => config.only.length === 0 || config.only.includes(name);

/** Checks that the limit answers GETs with halserve's bytes, Date aside. */
async function verifyReplay(halserve: Running, limit: Running, workload: Workload): Promise<string> {
  const gets = [...new Map(workload.contenders.filter((c) => c.server === 'limit').flatMap((c) => c.requests).filter((r) => r.method === 'GET').map((r) => [r.path, r])).values()].slice(0, 3);
  for (const r of gets) {
    const [a, b] = [maskDate(await rawExchange(halserve.port, r)), maskDate(await rawExchange(limit.port, r))];
    if (a !== b) {
      const [x, y] = [a.split('\r\n'), b.split('\r\n')];
      const line = x.findIndex((l, i) => l !== y[i]);
      const show = (l: string | undefined): string => JSON.stringify((l ?? '<none>').slice(0, 120));
      return `Replay check FAILED for GET ${r.path}: first difference at line ${line + 1}: halserve ${show(x[line])}, limit ${show(y[line])}.`;
    }
  }
  return gets.length === 0 ? 'Replay of write answers is not re-checked (each halserve answer carries a new id or time).' : `Replay check: ${gets.length} GET answers of the limit byte-identical to halserve's (Date masked).`;
}

async function runWorkload(config: BenchConfig, tmp: string, workload: Workload, data: Dataset): Promise<WorkloadResult> {
  const dir = path.join(tmp, workload.name);
  const uses = (kind: ServerKind): boolean => workload.contenders.some((c) => c.server === kind);
  const servers = new Map<ServerKind, Running>();
  const notes: string[] = [];
  const stopServers = async (): Promise<void> => {
    for (const [kind, server] of servers) {
      const code = await server.stop();
      if (code !== 0 && code !== null) log(`${kind} exited with ${code}`);
    }
    servers.clear();
  };
  try {
    // Read-only workloads on the large set use it in place; the others get fresh copies.
    const halData = workload.data === 'large' ? data : await copyDataset(data, path.join(dir, 'halserve'));
    const copies = new Map<ServerKind, Dataset>();
    for (const kind of ['halserve-no-token', 'halserve-keyed', 'halserve-nonce', 'halserve-jwt', 'json-server'] as const) if (uses(kind)) copies.set(kind, await copyDataset(data, path.join(dir, kind)));
    /** Every server of the workload on its data (again, for a workload that restarts them each round). */
    const startServers = async (): Promise<void> => {
      // As deployed: with a token, which every request to it sends (issue 15).
      servers.set('halserve', await startHalserveWithToken(config.root, halData.dir, config.pin));
      const copy = (kind: ServerKind): string => copies.get(kind)!.dir;
      if (uses('halserve-no-token')) servers.set('halserve-no-token', await startHalserve(config.root, copy('halserve-no-token'), config.pin, [], [], 'halserve-no-token'));
      if (uses('halserve-keyed')) servers.set('halserve-keyed', await startHalserveWithToken(config.root, copy('halserve-keyed'), config.pin, [], 'halserve-keyed'));
      if (uses('halserve-nonce')) servers.set('halserve-nonce', await startHalserveWithToken(config.root, copy('halserve-nonce'), config.pin, [], 'halserve-nonce'));
      if (uses('halserve-jwt')) servers.set('halserve-jwt', await startHalserveWithJwt(config.root, copy('halserve-jwt'), config.pin));
      if (uses('limit') || uses('durable-limit') || uses('durable-limit-dsync')) {
        const file = path.join(dir, 'capture.json');
        if (!existsSync(file)) {
          const requests = workload.contenders.filter((c) => c.server === 'limit' || c.server === 'durable-limit' || c.server === 'durable-limit-dsync').flatMap((c) => c.requests);
          await fs.writeFile(file, JSON.stringify(await capture(servers.get('halserve')!.port, requests)));
        }
        if (uses('limit')) {
          const limit = await startLimit(config.root, file, config.pin);
          servers.set('limit', limit);
          if (notes.length === 0) notes.push(await verifyReplay(servers.get('halserve')!, limit, workload));
        }
        if (uses('durable-limit')) servers.set('durable-limit', await startLimit(config.root, file, config.pin, [], path.join(dir, 'durable-limit.jsonl')));
        if (uses('durable-limit-dsync')) servers.set('durable-limit-dsync', await startLimit(config.root, file, config.pin, [], path.join(dir, 'durable-limit-dsync.jsonl'), true));
      }
      if (uses('json-server')) servers.set('json-server', await startJsonServer(config.root, path.join(copy('json-server'), 'db.json'), config.pin));
    };
    await startServers();
    const samples = workload.contenders.map((): Sample[] => []);
    const rounds = config.quick ? config.rounds : Math.max(config.rounds, workload.minRounds ?? 0);
    for (let round = 1; round <= rounds; round++) {
      if (workload.restartEachRound && round > 1) {
        await stopServers();
        await startServers();
      }
      // Each round starts one contender later (A B C, B C A, C A B, …), so that none always follows
      // the same one (bench/NOTES.md, "a ring allocated once": a build's place in its round moved it
      // by 6–9% in bench/ab-deployed.ts).
      const count = workload.contenders.length;
      for (let k = 0; k < count; k++) {
        const i = (k + round - 1) % count;
        const contender = workload.contenders[i]!;
        const server = servers.get(contender.server);
        if (!server) throw new Error(`no ${contender.server} server`);
        // Every server of the workload at rest first (proc.ts untilQuiet): none still busy with the last run's queue.
        await untilQuiet([...servers.values()].map((s) => s.pid));
        const sample = await measure(config, server, contender.requests, contender.label, contender.order, contender.fresh);
        samples[i]!.push(sample);
        log(
          `${workload.name} round ${round}/${rounds} ${contender.label}: ${fmt(sample.rps)} req/s, p99 ${sample.p99} ms, ${fmt(sample.cpuUs, 1)} µs/req${sample.problem ? ` INVALID: ${sample.problem}` : ''}`,
        );
      }
    }
    return {
      name: workload.name,
      title: workload.title,
      contenders: workload.contenders.map((c, i) => ({ label: c.label, server: c.server, samples: samples[i]! })),
      notes,
    };
  } finally {
    await stopServers();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function measureStartup(config: BenchConfig, data: Dataset): Promise<StartupResult> {
  const runs: { ms: number; rssMiB: number; peakMiB: number }[] = [];
  for (let round = 1; round <= config.rounds; round++) {
    const server = await startHalserve(config.root, data.dir, config.pin);
    try {
      const memory = memoryMiB(server.pid);
      runs.push({ ms: server.startupMs, rssMiB: memory.rss, peakMiB: memory.peak });
      log(`startup ${fmt(data.size)} round ${round}: ${fmt(server.startupMs)} ms, ${fmt(memory.rss)} MiB`);
      await untilCompacted(data.dir);
    } finally {
      await server.stop();
    }
  }
  const { size } = await fs.stat(path.join(data.dir, `${RESOURCE}.jsonl`));
  return { size: data.size, bytesPerEntity: data.bytesPerEntity, fileMiB: size / 2 ** 20, runs };
}

/**
 * Waits (a minute at most) while a compaction of the resource is under way. The first start on the
 * generated file, whose lines have no change stamp, appends a stamped copy of each and compacts in
 * the background; a server stopped at once, as each round stops its own, left every later round a
 * log of each line twice (a start-up compacts it again, and is stopped again), where a server that
 * runs for seconds leaves one line per entity: the later rounds measure a restart on that log.
 */
async function untilCompacted(dir: string): Promise<void> {
  const tmp = path.join(dir, `${RESOURCE}.jsonl.tmp`);
  const deadline = Date.now() + 60_000;
  await new Promise((resolve) => setTimeout(resolve, 250));
  while (existsSync(tmp) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** Runs `bench/<file>` with `args` in a child process and keeps what it prints (killed after `timeoutMs`). */
async function scriptBench(config: BenchConfig, file: string, args: readonly string[], timeoutMs = 300_000): Promise<{ file: string; output: string }> {
  log(`running bench/${file}`);
  const child = spawn(process.execPath, ['--import', 'tsx', path.join('bench', file), ...args], {
    cwd: config.root,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: process.env,
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { file: `bench/${file}`, output: code === 0 ? output : `${output}\n(exited with ${code})` };
}

/**
 * The `streams` section (issue 16): `bench/streams.ts` (a write on a stream of its process and of
 * another process of one PostgreSQL, 10,000 idle streams, the POST rate with 1,000 streams) and
 * `bench/changes-resume.ts` (a resume 1,000,000 changes back at 1,000,000 entities), one after the other.
 */
async function streamsBench(config: BenchConfig): Promise<StreamsBench> {
  const streams = await scriptBench(config, 'streams.ts', config.quick ? ['quick'] : [], 900_000);
  const resume = await scriptBench(config, 'changes-resume.ts', [config.quick ? '100000' : '1000000'], 900_000);
  return { streams: streams.output, resume: resume.output };
}

/** Runs `bench/lru-bench.ts` (the recency structure alone) and keeps its table. */
async function lruBench(config: BenchConfig): Promise<string> {
  return (await scriptBench(config, 'lru-bench.ts', config.quick ? ['quick'] : [])).output;
}

/** Runs the store engineer's `bench/store-*.ts` and keeps what each prints. */
async function storeBench(config: BenchConfig): Promise<{ file: string; output: string }[]> {
  const files = (await fs.readdir(path.join(config.root, 'bench'))).filter((f) => /^store-.*\.ts$/.test(f)).sort();
  const out: { file: string; output: string }[] = [];
  // Their argument is the entity count: the largest start-up size (1,000,000 in a full run).
  for (const file of files) out.push(await scriptBench(config, file, [String(Math.max(...config.largeSizes))]));
  return out;
}

async function main(): Promise<void> {
  const config = readConfig();
  const started = Date.now();
  const loadBefore = os.loadavg();
  const cores = os.availableParallelism();
  // The CPUs this run started on, kept for every section (proc.ts restoreCpuList).
  const cpus = ownCpuList();
  const keepCpus = (): void => {
    const found = restoreCpuList(cpus);
    if (found !== undefined) log(found);
  };
  await fs.mkdir(config.work, { recursive: true });
  // The streams section runs halserve and its own clients only: no load generator, no json-server.
  if (!(config.only.length > 0 && config.only.every((name) => name === 'streams'))) ensurePeers(config);
  build(config);
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-bench-'));
  const results: WorkloadResult[] = [];
  const startup: StartupResult[] = [];
  let store: { file: string; output: string }[] = [];
  let auth: { file: string; output: string } | undefined;
  let queries: QueriesResult | undefined;
  let fairness: FairnessResult | undefined;
  let replicas: ReplicasResult | { skipped: string } | undefined;
  let deployed: DeployedResult | undefined;
  let lru: string | undefined;
  let streams: StreamsBench | undefined;
  let small: Dataset | undefined;
  // `BENCH_ONLY=queries`, `replicas`, `streams` and/or `fairness` (or `node bench/run.mjs queries`) replaces only their sections of the report.
  const sectionsOnly = isSectionsOnly(config.only);
  try {
    // The side-by-side data set is made only when one of its workloads is wanted (their names
    // do not depend on the data).
    const names = workloads({ dir: '', size: 0, sampleIds: [], bytesPerEntity: 0 }, undefined).map((w) => w.name);
    if (names.some((name) => wanted(config, name))) {
      log(`generating ${fmt(config.entities)} entities`);
      small = await generateDataset(path.join(tmp, 'small'), config.entities, true, true);
      const side = workloads(small, undefined)
        .filter((w) => wanted(config, w.name))
        .map((w) => ({ ...w, contenders: w.contenders.filter((c) => config.servers.length === 0 || config.servers.includes(c.server)) }));
      for (const w of side) results.push(await runWorkload(config, tmp, w, small));
    }

    // `rate-limit` alone runs the rate limiter's workload of the `deployed` section without the bulk loads.
    if (wanted(config, 'deployed') || wanted(config, 'rate-limit')) deployed = await runDeployed(config, tmp, wanted(config, 'deployed') ? config.deployedSizes : [], log);
    if (wanted(config, 'lru')) lru = await lruBench(config);

    const sizes = [...config.largeSizes].sort((a, b) => a - b);
    const largest = sizes[sizes.length - 1];
    for (const size of sizes) {
      const lastVsFirst = size === largest && wanted(config, 'last-vs-first');
      if (!wanted(config, 'startup') && !lastVsFirst) continue;
      log(`generating ${fmt(size)} entities`);
      const data = await generateDataset(path.join(tmp, `large-${size}`), size, false);
      if (wanted(config, 'startup')) startup.push(await measureStartup(config, data));
      if (lastVsFirst) {
        const w = workloads(small ?? data, data).find((x) => x.name === 'last-vs-first');
        if (w) results.push(await runWorkload(config, tmp, w, data));
      }
      await fs.rm(data.dir, { recursive: true, force: true });
    }
    if (wanted(config, 'queries')) queries = await runQueries(config, tmp, log);
    keepCpus();
    // Issue 15's targets 4-6 (fairness under heavy queries, the first search, RSS): with the queries, or alone.
    if (wanted(config, 'queries') || wanted(config, 'fairness')) fairness = await runFairness(config.queryEntities, config.rounds, (m) => log(`queries: ${m}`));
    keepCpus();
    if (wanted(config, 'replicas')) replicas = await runReplicas(config, tmp, log);
    if (wanted(config, 'streams')) streams = await streamsBench(config);
    if (wanted(config, 'store')) store = await storeBench(config);
    // A few seconds, in one process: the cost of authentication checks (issue 17).
    if (wanted(config, 'auth')) auth = await scriptBench(config, 'auth.ts', []);
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }

  const cpuInfo = os.cpus();
  const result: RunResult = {
    date: new Date().toISOString(),
    machine: {
      cpuModel: cpuInfo[0]?.model.trim() ?? 'unknown',
      cores,
      node: process.version,
      os: `${os.type()} ${os.release()}`,
      memoryGiB: os.totalmem() / 2 ** 30,
      loadBefore,
      loadAfter: os.loadavg(),
    },
    config,
    entities: config.entities,
    bytesPerEntity: small?.bytesPerEntity ?? 0,
    workloads: results,
    startup,
    storeBench: store,
    ...(auth ? { authBench: auth } : {}),
    ...(queries ? { queries } : {}),
    ...(replicas ? { replicas } : {}),
    ...(deployed ? { deployed } : {}),
    ...(lru !== undefined ? { lru } : {}),
    ...(streams ? { streams } : {}),
    wallSeconds: (Date.now() - started) / 1000,
  };
  await fs.mkdir(path.dirname(config.out), { recursive: true });
  if (sectionsOnly) {
    // Keep every other section of the report as the last full run wrote it.
    const rawOut = config.rawOut.replace(/results\./, `results.${config.only.join('-')}.`);
    await fs.writeFile(rawOut, JSON.stringify(result, null, 2));
    let report = existsSync(config.out) ? await fs.readFile(config.out, 'utf8') : '# halserve benchmark results\n';
    if (queries) report = spliceQueries(report, renderQueries(queries, config, result.date));
    if (replicas) report = spliceSection(report, renderReplicas(replicas, config, result.date), REPLICAS_BEGIN, REPLICAS_END);
    if (streams) report = spliceSection(report, renderStreams(streams, result.date), STREAMS_BEGIN, STREAMS_END);
    if (fairness) report = spliceSection(report, renderFairness(fairness, result.date), FAIRNESS_BEGIN, FAIRNESS_END);
    await fs.writeFile(config.out, report);
    log(`wrote the ${config.only.join(' and ')} section of ${path.relative(config.root, config.out)} (raw figures: ${path.relative(config.root, rawOut)}) in ${fmt(result.wallSeconds)} s`);
    return;
  }
  await fs.writeFile(config.rawOut, JSON.stringify(result, null, 2));
  await fs.writeFile(config.out, fairness ? spliceSection(renderReport(result), renderFairness(fairness, result.date), FAIRNESS_BEGIN, FAIRNESS_END) : renderReport(result));
  log(`wrote ${path.relative(config.root, config.out)} (raw figures: ${path.relative(config.root, config.rawOut)}) in ${fmt(result.wallSeconds)} s`);
}

await main();
