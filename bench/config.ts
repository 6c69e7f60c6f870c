/**
 * Settings of one benchmark run, read from the environment so that a smoke run (`BENCH_QUICK=1`)
 * and a full run share every line of code.
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Every knob of a run. Durations are in seconds. */
export interface BenchConfig {
  readonly quick: boolean;
  /** Interleaved rounds per workload (A B C, B C A, C A B, …: each round starts one contender later); medians are taken over them. */
  readonly rounds: number;
  /** Measured seconds per server per round. */
  readonly duration: number;
  /** Unmeasured seconds of the same load before each measured run (JIT, caches, sockets). */
  readonly warmup: number;
  /** Concurrent connections of the load generator (the p99 target is stated at 50). */
  readonly connections: number;
  /** Fixed request rate for every server (diagnostic; unset: as fast as each server goes). */
  readonly rate: number | undefined;
  /** Entities in the data set every server gets for the side-by-side workloads. */
  readonly entities: number;
  /** Sizes measured for start-up time and memory; the largest also serves last-vs-first page. */
  readonly largeSizes: readonly number[];
  /** Entities loaded through the API before the `deployed` workloads (issue 21). */
  readonly deployedSizes: readonly number[];
  /** Products generated for the `queries` workload (issue 8). */
  readonly queryEntities: number;
  /** Workload names to run (all when empty). */
  readonly only: readonly string[];
  /**
   * Query kinds of the `queries` workload to measure (all when empty). When set, only those kinds
   * run, on one server, and the sections that time something else (fresh servers, POST, GET under
   * load, churn) are skipped: `BENCH_QUERY_KINDS=facets-filtered,facets-whole` times the facets alone.
   */
  readonly queryKinds: readonly string[];
  /** Servers to run (all when empty): `halserve,limit` skips json-server while tuning. */
  readonly servers: readonly string[];
  /** Pin the server and the load generator to different cores with taskset. */
  readonly pin: boolean;
  /** Where the Markdown report goes. */
  readonly out: string;
  /** Where the raw figures (JSON) go. */
  readonly rawOut: string;
  /** The repository root. */
  readonly root: string;
  /** Ignored folder for peers and raw output. */
  readonly work: string;
}

function number(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return value;
}

function list(name: string): string[] {
  return (process.env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The report's sections that a run of them alone replaces in bench/RESULTS.md, keeping the rest (main.ts). */
const SECTIONS: readonly string[] = ['queries', 'replicas', 'streams', 'fairness'];

/** Whether `only` names report sections alone (`SECTIONS`), which such a run splices into the full report. */
export function isSectionsOnly(only: readonly string[]): boolean {
  return only.length > 0 && only.every((name) => SECTIONS.includes(name));
}

/** Whether `only` runs part of the benchmark whose report is not spliced into the full one: it is written apart. */
function isPartial(only: readonly string[]): boolean {
  return only.length > 0 && !isSectionsOnly(only);
}

/** Reads the run's settings from `BENCH_*` environment variables. */
export function readConfig(): BenchConfig {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const work = path.join(root, '.bench');
  const quick = process.env['BENCH_QUICK'] === '1';
  // The side-by-side part of a full run: 6 workloads x 4-5 servers x 3 rounds x (1 s + 5 s), about 8 minutes on 2 cores.
  const rounds = Math.round(number('BENCH_ROUNDS', quick ? 1 : 3));
  const largeSizes = list('BENCH_LARGE').map(Number);
  const deployedSizes = list('BENCH_DEPLOYED').map(Number);
  // `node bench/run.mjs queries startup` is the same as BENCH_ONLY=queries,startup.
  const only = [...list('BENCH_ONLY'), ...process.argv.slice(2).filter((a) => !a.startsWith('-'))];
  const stamp = quick ? 'quick' : isPartial(only) ? only.join('-').replace(/[^a-z0-9-]/gi, '_') : 'full';
  return {
    quick,
    rounds,
    duration: number('BENCH_DURATION', quick ? 1 : 5),
    warmup: number('BENCH_WARMUP', quick ? 0.5 : 1),
    connections: Math.round(number('BENCH_CONNECTIONS', 50)),
    rate: process.env['BENCH_RATE'] ? number('BENCH_RATE', 1) : undefined,
    entities: Math.round(number('BENCH_ENTITIES', quick ? 2_000 : 10_000)),
    largeSizes: largeSizes.length > 0 ? largeSizes : quick ? [100_000] : [100_000, 1_000_000],
    deployedSizes: deployedSizes.length > 0 ? deployedSizes : quick ? [5_000] : [10_000, 100_000],
    queryEntities: Math.round(number('BENCH_QUERY_ENTITIES', quick ? 50_000 : 1_000_000)),
    only,
    queryKinds: list('BENCH_QUERY_KINDS'),
    servers: list('BENCH_SERVERS'),
    pin: process.env['BENCH_NO_PIN'] !== '1' && os.availableParallelism() >= 2,
    // A smoke run must not overwrite the committed results, nor a run of some workloads alone: its
    // report would replace the full one with the part it ran (a run of report sections alone
    // splices them into the full one instead: `isSectionsOnly`).
    out: process.env['BENCH_OUT'] ?? (quick || isPartial(only) ? path.join(work, `RESULTS.${stamp}.md`) : path.join(root, 'bench', 'RESULTS.md')),
    rawOut: path.join(work, `results.${stamp}.json`),
    root,
    work,
  };
}
