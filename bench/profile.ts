/**
 * Profiles halserve under one workload: `node --import tsx bench/profile.ts [workload] [seconds] [limit]`.
 * With `limit` as third argument it profiles the limit server instead, over halserve's captured answers
 * (`durable`: the durable limit, which also parses, appends and syncs each write).
 * Runs halserve with `node --cpu-prof`, drives it with the same load generator as the harness, and
 * prints where its CPU time goes: self time, and inclusive time of halserve's own functions.
 * The .cpuprofile is kept in .bench/profiles/ (open it in Chrome DevTools or speedscope).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { readConfig } from './config.js';
import { copyDataset, generateDataset } from './dataset.js';
import { measure } from './measure.js';
import { BENCH_TOKEN, startHalserve, startLimit } from './servers.js';
import { capture } from './capture.js';
import { fmt } from './stats.js';
import { workloads } from './workloads.js';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

export const frameName = (f: CallFrame): string => {
  const file = f.url === '' ? '' : ` ${f.url.replace(/^file:\/\/.*?\/(dist|src|node_modules)\//, '$1/').replace(/^node:/, 'node:')}:${f.lineNumber + 1}`;
  return `${f.functionName || '(anonymous)'}${file}`;
};

/** Self and inclusive sample counts per function (a recursive function counts once per sample). */
export function summarise(profile: CpuProfile): { total: number; self: Map<string, number>; inclusive: Map<string, number> } {
  return { total: profile.samples.length, ...summariseSamples(profile, profile.samples) };
}

/** The same over some of the profile's samples (one phase of a run). */
export function summariseSamples(profile: CpuProfile, samples: readonly number[]): { self: Map<string, number>; inclusive: Map<string, number> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const id of samples) {
    const node = byId.get(id);
    if (!node) continue;
    const name = frameName(node.callFrame);
    self.set(name, (self.get(name) ?? 0) + 1);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at);
      if (frame) seen.add(frameName(frame.callFrame));
    }
    for (const s of seen) inclusive.set(s, (inclusive.get(s) ?? 0) + 1);
  }
  return { self, inclusive };
}

export function top(map: Map<string, number>, total: number, count: number, filter: (name: string) => boolean = () => true): string[] {
  return [...map.entries()]
    .filter(([name]) => filter(name))
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, n]) => `${fmt((100 * n) / total, 1).padStart(5)}%  ${name}`);
}

async function main(): Promise<void> {
  const config = readConfig();
  const name = process.argv[2] ?? 'get-entity';
  const seconds = Number(process.argv[3] ?? 8);
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-profile-'));
  const profiles = path.join(config.work, 'profiles');
  await fs.mkdir(profiles, { recursive: true });
  try {
    const small = await generateDataset(path.join(tmp, 'small'), config.entities, false, true);
    const workload = workloads(small, undefined).find((w) => w.name === name);
    // BENCH_CONTENDER picks another of the workload's halserve columns (1: embed=category of `embed`).
    const contender = workload?.contenders.filter((c) => c.server === 'halserve')[Number(process.env['BENCH_CONTENDER'] ?? 0)];
    if (!contender) throw new Error(`no workload ${name}`);
    const data = await copyDataset(small, path.join(tmp, 'halserve'));
    const before = new Set(await fs.readdir(profiles));
    const profiling = ['--cpu-prof', '--cpu-prof-dir', profiles, '--cpu-prof-interval', '200'];
    const ofLimit = process.argv[4] === 'limit' || process.argv[4] === 'durable';
    const durable = process.argv[4] === 'durable' ? path.join(tmp, 'durable.jsonl') : undefined;
    // As deployed: the workloads' requests send BENCH_TOKEN.
    const halserve = await startHalserve(config.root, data.dir, config.pin, ofLimit ? [] : profiling, ['--token', BENCH_TOKEN]);
    let server = halserve;
    let sample: Awaited<ReturnType<typeof measure>>;
    try {
      if (ofLimit) {
        const file = path.join(tmp, 'capture.json');
        await fs.writeFile(file, JSON.stringify(await capture(halserve.port, contender.requests)));
        server = await startLimit(config.root, file, config.pin, profiling, durable);
      }
      sample = await measure({ ...config, duration: seconds, warmup: 1 }, server, contender.requests, name, contender.order);
    } finally {
      // Stopped whatever happened: a failed load generator once left a profiled server running for an hour.
      await server.stop();
      if (server !== halserve) await halserve.stop();
    }
    const file = (await fs.readdir(profiles)).find((f) => !before.has(f) && f.endsWith('.cpuprofile'));
    if (!file) throw new Error('no profile written (did halserve exit cleanly on SIGTERM?)');
    const target = path.join(profiles, `${name}-${ofLimit ? (process.argv[4] ?? 'limit') : 'halserve'}-${file}`);
    await fs.rename(path.join(profiles, file), target);
    const summary = summarise(JSON.parse(await fs.readFile(target, 'utf8')) as CpuProfile);
    const own = (n: string): boolean => n.includes(' dist/') || n.includes(' src/') || n.includes('limit-server');
    console.log(`${name}: ${fmt(sample.rps)} req/s, ${fmt(sample.cpuUs, 1)} µs/req (with the profiler on); ${summary.total} samples`);
    console.log(`profile: ${path.relative(config.root, target)}\n\nSelf time, top 25:`);
    console.log(top(summary.self, summary.total, 25).join('\n'));
    console.log(`\nInclusive time of the server's own functions, top 25:`);
    console.log(top(summary.inclusive, summary.total, 25, own).join('\n'));
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

// Run as a script; imported (by profile-queries.ts) for `summarise` only.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
