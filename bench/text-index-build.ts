/**
 * The CPU cost of building the token index for `q` (issue 15 point 5: the first `q` on a fresh
 * server waits for this build), without a server:
 *
 *   node --expose-gc --import tsx bench/text-index-build.ts [entities] [rounds] [baseline src dir]
 *
 * (1,000,000 and 5 by default). The `queries` workload's products (`bench/products.ts`, generated
 * once into `.bench/text-index-build/<entities>/`) are stamped as a server writes them (as
 * `bench/fairness.ts` does), read into one buffer and loaded as the file store loads them: a
 * `LoadedEntity` per line pointing into the buffer. Each round then builds the text index through
 * `IndexBuilds.wait([], true)`, as the first `q` does (in slices of the event loop), and measures
 * the process's CPU time (`process.cpuUsage`) across it, the wall time, the collector's pauses
 * and the CPU time of the threads other than the main one (V8's collector helpers).
 *
 * The machine this runs on is usually shared: CPU times of one build vary by ±30% from round to
 * round. Compare builds only within one run, and read the median of the rounds' ratios.
 *
 * With a baseline source directory (a copy of another commit's `src/`, e.g.
 * `git archive <commit> src | tar -x -C .bench/base`, then `.bench/base/src`), the two builds run
 * interleaved (baseline, current, baseline, current, …) over the same loaded entities, and the
 * medians are printed side by side. `--cpu-prof` around a run without a baseline profiles the
 * current build alone.
 */
import { readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { IndexBuilds } from '../src/store/index/index-builds.js';
import type { Rows } from '../src/store/index/rows.js';
import type { LoadedEntity } from '../src/store/log/jsonl-entity.js';
import { loadEntities, rowsOf } from './loaded-rows.js';
import { generateProducts } from './products.js';
import { fmt, median } from './stats.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

type Builds = new (rows: Rows<LoadedEntity>) => IndexBuilds<LoadedEntity>;

/** The products' lines, stamped as a server writes them, in one buffer. */
async function stampedProducts(entities: number): Promise<Buffer> {
  const dir = path.join(root, '.bench', 'text-index-build', String(entities));
  const file = path.join(dir, 'products.jsonl');
  const exists = await fs.stat(file).then(() => true, () => false);
  if (!exists) await generateProducts(dir, entities);
  const text = await fs.readFile(file, 'utf8');
  const lines = text.split('\n').filter((line) => line !== '');
  return Buffer.from(lines.map((line, i) => `${line.slice(0, -1)},"_change":"${i + 1}.c.1700000000"}\n`).join(''));
}

/**
 * CPU milliseconds of this process's main thread and of its other threads (V8's collector helpers
 * among them), from /proc (Linux only; zero elsewhere): a build that allocates less makes the
 * helpers mark the heap less often.
 */
function threadCpu(): { main: number; other: number } {
  let main = 0;
  let other = 0;
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ms = (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in 10 ms ticks
      if (tid === String(process.pid)) main += ms;
      else other += ms;
    }
  } catch {
    // No /proc: the split is left out.
  }
  return { main, other };
}

/** Milliseconds of garbage collection since the last call (a `gc` performance observer's entries). */
let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

/** One build: CPU, wall and GC milliseconds, and the bytes of array buffers it left held. */
async function build(Builds: Builds, rows: Rows<LoadedEntity>): Promise<{ cpu: number; wall: number; gc: number; others: number; held: number }> {
  globalThis.gc?.();
  const before = process.memoryUsage().arrayBuffers;
  const builds = new Builds(rows);
  // Entries of the collection above come in a later turn of the event loop.
  await new Promise((resolve) => setTimeout(resolve, 10));
  gcMs = 0;
  const cpu = process.cpuUsage();
  const t0 = threadCpu();
  const wall = performance.now();
  await builds.wait([], true);
  const used = process.cpuUsage(cpu);
  const t1 = threadCpu();
  const ms = performance.now() - wall;
  await new Promise((resolve) => setTimeout(resolve, 10));
  const gc = gcMs;
  globalThis.gc?.();
  const held = process.memoryUsage().arrayBuffers - before;
  if (builds.text === undefined) throw new Error('no text index');
  return { cpu: (used.user + used.system) / 1000, wall: ms, gc, others: t1.other - t0.other, held };
}

async function main(): Promise<void> {
  const entities = Number(process.argv[2] ?? 1_000_000);
  const rounds = Number(process.argv[3] ?? 5);
  const baseDir = process.argv[4];
  if (globalThis.gc === undefined) console.warn('(run with --expose-gc for steadier figures)');
  const rows = rowsOf(loadEntities(await stampedProducts(entities)));
  const variants: [string, Builds][] = [];
  if (baseDir !== undefined) {
    const url = pathToFileURL(path.resolve(baseDir, 'store/index/index-builds.ts')).href;
    variants.push(['baseline', ((await import(url)) as { IndexBuilds: Builds }).IndexBuilds]);
  }
  variants.push(['current', (await import('../src/store/index/index-builds.js')).IndexBuilds as Builds]);
  const figures = new Map(variants.map(([name]) => [name, { cpu: [] as number[], wall: [] as number[], gc: [] as number[], others: [] as number[], held: [] as number[] }]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, Builds] of variants) {
      const r = await build(Builds, rows);
      const f = figures.get(name)!;
      f.cpu.push(r.cpu);
      f.wall.push(r.wall);
      f.gc.push(r.gc);
      f.others.push(r.others);
      f.held.push(r.held);
      console.log(`round ${round + 1} ${name}: cpu ${fmt(r.cpu)} ms, wall ${fmt(r.wall)} ms, gc pauses ${fmt(r.gc)} ms, other threads ${fmt(r.others)} ms, held ${fmt(r.held / 2 ** 20)} MiB`);
    }
  }
  console.log(`\n${entities.toLocaleString('en')} products, ${rounds} rounds, medians:`);
  const base = figures.get('baseline');
  if (base !== undefined) {
    // Each round's pair: the machine's load drifts between rounds more than within one.
    const current = figures.get('current')!;
    console.log(`current / baseline build cpu, median of the rounds' ratios: ${fmt(median(current.cpu.map((cpu, i) => cpu / base.cpu[i]!)), 3)}`);
  }
  for (const [name, f] of figures) {
    console.log(`${name}: build cpu ${fmt(median(f.cpu))} ms, wall ${fmt(median(f.wall))} ms, gc pauses ${fmt(median(f.gc))} ms, other threads ${fmt(median(f.others))} ms, array buffers held ${fmt(median(f.held) / 2 ** 20)} MiB`);
  }
}

await main();
