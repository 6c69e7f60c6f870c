/**
 * Issue 15's targets 4, 5 and 6 in one run, each printed beside its target:
 *
 *   node --import tsx bench/fairness.ts [entities] [rounds]      (1,000,000 and 3 by default)
 *
 * (also the last section of `npm run bench:queries`). On the `queries` workload's products
 * (`bench/products.ts`), each round starts fresh servers of the built `dist/cli.js`
 * (`BENCH_HALSERVE` for another build; `BENCH_FAIR_ENTRIES=a/cli.js,b/cli.js` for builds side by side,
 * interleaved) on a copy of the products with their change stamps, as a
 * server writes its file (`stampLines`), and measures:
 *
 * - **first search**: the first `q` on a fresh server (its status, and when a 200 came from the
 *   first send, retried every 250 ms), then 15 searches right after it (the same word, other page
 *   sizes: these run while the token index builds in the background), 15 right after the index is
 *   built (a word with a non-ASCII letter waits for it) and 15 a few seconds later, and the same
 *   for the first `stock[gte]` filter: p50 of each;
 * - **RSS with four fields indexed**: a fresh server after the first query on `stock`, `status`,
 *   `category` and `price`, a second later each again, against 2 × the file + 100 MiB; and the
 *   same on the generated file without stamps, which the server's first start stamps (appending a
 *   stamped copy of every line, as with `bench/queries.ts`'s data), against 2 × that file + 100 MiB;
 * - **GET under heavy queries**: a server that has answered the first query of every kind
 *   (`kinds()` of `bench/queries.ts`), then `GET /products/<id>` from a probe in a process of its
 *   own (`bench/fairness-probe.mjs`) while 8 clients in this process send uncached heavy queries,
 *   10 s (`BENCH_AB_SECONDS`); the server's garbage collections meanwhile, from a `perf_hooks`
 *   observer preloaded into it (`bench/gc-observer.mjs`).
 *
 * The server is pinned to the server core, this process and the probe to the load core (as the
 * rest of the harness does). Medians over rounds, with the load average.
 */
import { Agent } from 'node:http';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readConfig } from './config.js';
import { memoryMiB, runNanoseconds } from './proc.js';
import { generateProducts, NOUNS, PRODUCTS } from './products.js';
import { FILTERS, halserveQuery, heavyQueries, percentile, untilOkSpec, url, type QuerySpec } from './queries.js';
import { LOAD_CPU, startHalserve, type Running } from './servers.js';
import { fmt, median } from './stats.js';

type Figures = Record<string, number>;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

async function withServer<T>(file: string, gcLog: string | undefined, run: (server: Running, agent: Agent) => Promise<T>): Promise<T> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-fair-'));
  // A copy: the server appends to its file (a stamp for every unstamped line on its first start).
  await fs.copyFile(file, path.join(dir, `${PRODUCTS}.jsonl`));
  const config = readConfig();
  const nodeArgs = gcLog === undefined ? [] : ['--import', path.join(root, 'bench', 'gc-observer.mjs')];
  // BENCH_FAIR_PROFILE=<dir>: a CPU profile of the loaded server there (where the loop is held).
  const profileDir = process.env['BENCH_FAIR_PROFILE'];
  if (gcLog !== undefined && profileDir) nodeArgs.push('--cpu-prof', '--cpu-prof-interval', '250', '--cpu-prof-dir', profileDir);
  if (gcLog !== undefined) process.env['BENCH_GC_LOG'] = gcLog;
  const server = await startHalserve(config.root, dir, config.pin, nodeArgs, ['--durability', 'full']);
  delete process.env['BENCH_GC_LOG'];
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    return await run(server, agent);
  } finally {
    agent.destroy();
    await server.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** p50 of the answers' times; NaN when any was not a 200. */
async function p50Of(agent: Agent, port: number, specs: readonly QuerySpec[]): Promise<number> {
  const times: number[] = [];
  for (const spec of specs) {
    const a = await halserveQuery(agent, port, spec);
    if (a.status !== 200) return NaN;
    times.push(a.ms);
  }
  return median(times);
}

/** Target 5: the first `q` on a fresh server, and queries right after an index build against later ones. */
async function firstSearch(server: Running, agent: Agent): Promise<Figures> {
  const q = (word: string, limit: number): QuerySpec => ({ http: url(`q=${word}`, 1, limit), sql: '' });
  let cpu = runNanoseconds(server.pid);
  const first = await untilOkSpec(agent, server.port, () => q(NOUNS[0]!, 20));
  const firstCpu = (runNanoseconds(server.pid) - cpu) / 1e6;
  // Right after the first answer: since the first search is answered by a scan, these run while
  // the token index builds in the background.
  const qAfter = await p50Of(agent, server.port, Array.from({ length: 15 }, (_, i) => q(NOUNS[0]!, 5 + i)));
  // A word with a letter outside ASCII is never scanned: its answer waits for the index (promoting
  // its build), so what follows is right after the index build.
  const built = await untilOkSpec(agent, server.port, () => q(`${NOUNS[1]!}%C3%A9`, 20));
  const qAfterBuild = await p50Of(agent, server.port, Array.from({ length: 15 }, (_, i) => q(NOUNS[0]!, 36 + i)));
  const stock = (bound: number, limit = 20): QuerySpec => ({ http: url(`stock[gte]=${bound}`, 1, limit), sql: '' });
  cpu = runNanoseconds(server.pid);
  const firstStock = await untilOkSpec(agent, server.port, () => stock(500));
  const firstStockCpu = (runNanoseconds(server.pid) - cpu) / 1e6;
  const stockAfter = await p50Of(agent, server.port, Array.from({ length: 15 }, (_, i) => stock(501 + i)));
  await new Promise((r) => setTimeout(r, 3000));
  const qLater = await p50Of(agent, server.port, Array.from({ length: 15 }, (_, i) => q(NOUNS[0]!, 21 + i)));
  const stockLater = await p50Of(agent, server.port, Array.from({ length: 15 }, (_, i) => stock(601 + i)));
  return {
    'first q status': first.status,
    'first q 200 after ms': first.readyMs ?? NaN,
    'first q CPU ms': firstCpu,
    'q after p50 ms': qAfter,
    'index built after ms': built.readyMs ?? NaN,
    'q after build p50 ms': qAfterBuild,
    'q later p50 ms': qLater,
    'first stock 200 after ms': firstStock.readyMs ?? NaN,
    'first stock CPU ms': firstStockCpu,
    'stock after p50 ms': stockAfter,
    'stock later p50 ms': stockLater,
  };
}

/** Target 6: RSS of a fresh server once `stock`, `status`, `category` and `price` are indexed. */
async function rss(server: Running, agent: Agent): Promise<Figures> {
  const out: Figures = { 'RSS start MiB': memoryMiB(server.pid).rss };
  const fields: [string, string][] = [['stock', 'stock[gte]=500'], ...FILTERS];
  for (const [, params] of fields) await untilOkSpec(agent, server.port, (attempt) => ({ http: url(params, attempt), sql: '' }));
  await new Promise((r) => setTimeout(r, 1000));
  for (const [, params] of fields) await halserveQuery(agent, server.port, { http: url(params, 2), sql: '' });
  out['RSS 4 fields MiB'] = memoryMiB(server.pid).rss;
  return out;
}

function probe(port: number, seconds: number, ids: readonly string[], pin: boolean): Promise<{ latencies: number[]; failures: number }> {
  const args = [path.join(root, 'bench', 'fairness-probe.mjs'), String(port), String(seconds), ids.join(',')];
  const [command, all] = pin ? ['taskset', ['-c', LOAD_CPU, process.execPath, ...args]] : [process.execPath, args];
  return new Promise((resolve, reject) => {
    execFile(command, all, { maxBuffer: 64 * 2 ** 20 }, (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout) as { latencies: number[]; failures: number })));
  });
}

/** Target 4: GET by id from a probe process while 8 clients send heavy queries; the server's GC pauses meanwhile. */
async function underLoad(file: string, ids: readonly string[], seconds: number): Promise<Figures> {
  const gcLog = path.join(os.tmpdir(), `halserve-gc-${process.pid}-${Date.now()}.json`);
  let window: [number, number] = [0, 0];
  const result = await withServer(file, gcLog, async (server, agent) => {
    const heavy = await heavyQueries(agent, server.port);
    const loadAverage = os.loadavg()[0]!;
    const end = performance.now() + seconds * 1000 + 300;
    let heavyDone = 0;
    let heavyFailed = 0;
    const heavyLoop = async (): Promise<void> => {
      const a = new Agent({ keepAlive: true, maxSockets: 1 });
      while (performance.now() < end) {
        const r = await halserveQuery(a, server.port, heavy());
        if (r.status === 200) heavyDone++;
        else heavyFailed++;
      }
      a.destroy();
    };
    const loops = Array.from({ length: 8 }, heavyLoop);
    await new Promise((r) => setTimeout(r, 200));
    window = [Date.now(), Date.now() + seconds * 1000];
    process.kill(server.pid, 'SIGUSR2'); // the observer's loop-delay histogram starts here
    const got = await probe(server.port, seconds, ids, readConfig().pin);
    await Promise.all(loops);
    const gets = got.latencies;
    return {
      GETs: gets.length,
      'GET failures': got.failures,
      'GET p50 ms': median(gets),
      'GET p99 ms': percentile(gets, 99),
      'GET max ms': Math.max(...gets),
      heavy: heavyDone,
      'heavy not 200': heavyFailed,
      'load average': loadAverage,
    };
  });
  const { gc, delay } = JSON.parse(await fs.readFile(gcLog, 'utf8')) as { gc: [number, number, number][]; delay: Record<string, number> };
  await fs.rm(gcLog, { force: true });
  const during = gc.filter(([at]) => at >= window[0] && at <= window[1]);
  const pauses = during.map(([, ms]) => ms);
  const major = during.filter(([, , kind]) => kind === 4).map(([, ms]) => ms);
  return {
    ...result,
    'GCs': pauses.length,
    'GC p50 ms': median(pauses),
    'GC p99 ms': percentile(pauses, 99),
    'GC max ms': pauses.length > 0 ? Math.max(...pauses) : 0,
    'GC total ms': pauses.reduce((a, b) => a + b, 0),
    'major GCs': major.length,
    'major GC max ms': major.length > 0 ? Math.max(...major) : 0,
    'loop delay p99 ms': delay['p99']!,
    'loop delay max ms': delay['max']!,
  };
}

/**
 * The products as a server writes them: each line ends in its change stamp
 * (src/store/changes/change-stamp.ts), numbered in file order, so that a server starts on them
 * without stamping anything. Returns the new file's size.
 */
async function stampLines(from: string, to: string): Promise<number> {
  const text = await fs.readFile(from, 'utf8');
  const lines = text.split('\n').filter((line) => line !== '');
  const out = lines.map((line, i) => `${line.slice(0, -1)},"_change":"${i + 1}.c.1700000000"}\n`).join('');
  await fs.writeFile(to, out);
  return Buffer.byteLength(out);
}

const prefixed = (prefix: string, figures: Figures): Figures => Object.fromEntries(Object.entries(figures).map(([k, v]) => [`${prefix}${k}`, v]));

/** Targets beside the medians: [figure, target, true when the figure must stay at or below it]. */
function verdicts(m: Figures, fileMiB: number, unstampedMiB: number): string[] {
  const rows: [string, number, number][] = [
    ['GET p99 ms', m['GET p99 ms']!, 10],
    ['first q 200 after ms', m['first q 200 after ms']!, 2000],
    ['q after build p50 ms', m['q after build p50 ms']!, m['q later p50 ms']! * 1.5],
    ['stock after p50 ms', m['stock after p50 ms']!, m['stock later p50 ms']! * 1.5],
    ['RSS 4 fields MiB', m['RSS 4 fields MiB']!, 2 * fileMiB + 100],
    ['unstamped RSS 4 fields MiB', m['unstamped RSS 4 fields MiB']!, 2 * unstampedMiB + 100],
  ];
  return rows.filter(([, value]) => value !== undefined).map(([name, value, target]) => `${name}: ${fmt(value, 2)} (target ≤ ${fmt(target, 1)}) ${value <= target ? 'met' : 'MISSED'}`);
}

export interface FairnessResult {
  readonly entities: number;
  readonly rounds: number;
  readonly fileMiB: number;
  /** Medians per build (one unless BENCH_FAIR_ENTRIES names several). */
  readonly medians: Readonly<Record<string, Figures>>;
  readonly verdicts: Readonly<Record<string, readonly string[]>>;
  readonly load: { readonly before: readonly number[]; readonly after: readonly number[] };
}

export const FAIRNESS_BEGIN = '<!-- fairness:begin -->';
export const FAIRNESS_END = '<!-- fairness:end -->';

/** The section of `RESULTS.md`: each build's medians, the targets beside them. */
export function renderFairness(r: FairnessResult, date: string): string {
  const lines = [
    FAIRNESS_BEGIN,
    `## Fairness, first search, memory (issue 15, points 4-6): ${fmt(r.entities)} products`,
    '',
    `${date}, \`bench/fairness.ts\`, ${r.rounds} rounds (medians), file ${fmt(r.fileMiB)} MiB with its change stamps; load average ${r.load.before.map((l) => fmt(l, 2)).join(' ')} before, ${r.load.after.map((l) => fmt(l, 2)).join(' ')} after. How it measures: the top of \`bench/fairness.ts\`.`,
    '',
  ];
  for (const [entry, medians] of Object.entries(r.medians)) {
    lines.push(`**${entry}**`, '', ...r.verdicts[entry]!.map((v) => `- ${v}`), '', `All medians: ${Object.entries(medians).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ')}`, '');
  }
  lines.push(FAIRNESS_END);
  return lines.join('\n');
}

export async function runFairness(entities: number, rounds: number, log: (m: string) => void): Promise<FairnessResult> {
  const loadBefore = os.loadavg();
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-fair-data-'));
  const seconds = Number(process.env['BENCH_AB_SECONDS'] ?? 10);
  // BENCH_FAIR_ONLY=search,rss,load: some of the three measures.
  const parts = (process.env['BENCH_FAIR_ONLY'] ?? 'search,rss,load').split(',');
  const affinity = /list:\s*(\S+)/.exec(execFileSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8' }))?.[1];
  if (readConfig().pin) execFileSync('taskset', ['-a', '-p', '-c', LOAD_CPU, String(process.pid)], { stdio: 'ignore' });
  try {
    const products = await generateProducts(tmp, entities);
    await fs.rm(products.tsv);
    const unstampedMiB = products.fileBytes / 2 ** 20;
    const stamped = path.join(tmp, 'stamped.jsonl');
    const fileMiB = (await stampLines(products.jsonl, stamped)) / 2 ** 20;
    log(`fairness: ${fmt(entities)} products, ${fmt(fileMiB)} MiB (${fmt(unstampedMiB)} MiB without stamps), load average ${os.loadavg().map((l) => fmt(l, 2)).join(' ')}`);
    // BENCH_FAIR_ENTRIES=a/cli.js,b/cli.js: builds side by side, interleaved (A B, B A, …).
    const entries = (process.env['BENCH_FAIR_ENTRIES'] ?? process.env['BENCH_HALSERVE'] ?? 'dist/cli.js').split(',');
    const all = new Map<string, Figures[]>(entries.map((entry) => [entry, []]));
    for (let round = 1; round <= rounds; round++) {
      for (const entry of round % 2 === 1 ? entries : [...entries].reverse()) {
        process.env['BENCH_HALSERVE'] = entry;
        const figures: Figures = {
          ...(parts.includes('search') ? await withServer(stamped, undefined, firstSearch) : {}),
          ...(parts.includes('rss') ? await withServer(stamped, undefined, rss) : {}),
          ...(parts.includes('rss') ? prefixed('unstamped ', await withServer(products.jsonl, undefined, rss)) : {}),
          ...(parts.includes('load') ? await underLoad(stamped, products.sampleIds, seconds) : {}),
        };
        all.get(entry)!.push(figures);
        log(`fairness round ${round}/${rounds} ${entry}: ${Object.entries(figures).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ')}`);
      }
    }
    const byEntry: Record<string, Figures> = {};
    const verdictsOf: Record<string, string[]> = {};
    for (const [entry, list] of all) {
      const medians: Figures = {};
      for (const k of Object.keys(list[0]!)) medians[k] = median(list.map((f) => f[k]!));
      log(`fairness medians ${entry}: ${Object.entries(medians).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ')}; load average after ${os.loadavg().map((l) => fmt(l, 2)).join(' ')}`);
      byEntry[entry] = medians;
      verdictsOf[entry] = verdicts(medians, fileMiB, unstampedMiB);
      for (const line of verdictsOf[entry]) log(`fairness ${entry}: ${line}`);
    }
    return { entities, rounds, fileMiB, medians: byEntry, verdicts: verdictsOf, load: { before: loadBefore, after: os.loadavg() } };
  } finally {
    if (affinity && readConfig().pin) execFileSync('taskset', ['-a', '-p', '-c', affinity, String(process.pid)], { stdio: 'ignore' });
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [entitiesText, roundsText] = process.argv.slice(2);
  await runFairness(Number(entitiesText ?? 1_000_000), Number(roundsText ?? 3), (m) => console.log(m));
}
