/**
 * Where halserve's CPU goes in the `queries` workload: `node --import tsx bench/profile-queries.ts [entities]`
 * (default 1,000,000). One server under `node --cpu-prof` on the generated products goes through
 * phases separated by idle gaps: the first query on `stock` (an index built on first use), the first
 * on `status` and `price`, 60 first pages of filter + range + two-key sort with new bounds, 30 `q`
 * words not searched before, 200 random pages of `status=paused` and of `sort=-price`. The profile is
 * cut at the idle gaps and each phase summarised: self time and halserve's own functions (inclusive).
 * The .cpuprofile is kept in .bench/profiles/.
 */
import { Agent, request } from 'node:http';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readConfig } from './config.js';
import { frameName, top, type CpuProfile } from './profile.js';
import { generateProducts, NOUNS, PRODUCTS, prng } from './products.js';
import { startHalserve } from './servers.js';
import { fmt } from './stats.js';

const PHASES = ['start-up', 'first stock[gte]', 'first status, price', 'filter+range+sort, first pages', 'q, new words', 'status=paused, random pages', 'sort=-price, random pages'];

function get(agent: Agent, port: number, p: string): Promise<{ status: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    const req = request({ host: '127.0.0.1', port, path: p, agent, headers: { accept: 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Splits the samples where the process was idle for more than `gapMs`; returns each busy stretch's sample ids. */
function phases(profile: CpuProfile, gapMs: number): number[][] {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const out: number[][] = [[]];
  let idleSince: number | undefined;
  let t = 0;
  for (const [i, id] of profile.samples.entries()) {
    t += (profile.timeDeltas?.[i] ?? 0) / 1000;
    if (idle.has(id)) {
      idleSince ??= t;
      continue;
    }
    if (idleSince !== undefined && t - idleSince > gapMs && out.at(-1)!.length > 0) out.push([]);
    idleSince = undefined;
    out.at(-1)!.push(id);
  }
  return out;
}

function summariseSamples(profile: CpuProfile, samples: readonly number[]): { self: Map<string, number>; inclusive: Map<string, number> } {
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

async function main(): Promise<void> {
  const config = readConfig();
  const entities = Number(process.argv[2] ?? 1_000_000);
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-profile-queries-'));
  const profiles = path.join(config.work, 'profiles');
  await fs.mkdir(profiles, { recursive: true });
  const pause = (): Promise<void> => new Promise((r) => setTimeout(r, 1500));
  try {
    const products = await generateProducts(path.join(tmp, 'gen'), entities);
    const dir = path.join(tmp, 'data');
    await fs.mkdir(dir);
    await fs.rename(products.jsonl, path.join(dir, `${PRODUCTS}.jsonl`));
    await fs.rm(products.tsv);
    const before = new Set(await fs.readdir(profiles));
    const server = await startHalserve(config.root, dir, config.pin, ['--cpu-prof', '--cpu-prof-dir', profiles, '--cpu-prof-interval', '250'], ['--durability', 'full']);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const port = server.port;
    const timings: string[] = [];
    const run = async (label: string, paths: readonly string[]): Promise<void> => {
      await pause();
      const ms: number[] = [];
      const statuses = new Map<number, number>();
      for (const p of paths) {
        const r = await get(agent, port, p);
        ms.push(r.ms);
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
      ms.sort((a, b) => a - b);
      timings.push(`${label}: ${paths.length} requests, median ${fmt(ms[ms.length >> 1]!, 1)} ms, max ${fmt(ms.at(-1)!, 1)} ms, statuses ${[...statuses].map(([s, n]) => `${n}× ${s}`).join(', ')}`);
    };
    const random = prng(3);
    const q = (s: string, page = 1): string => `/${PRODUCTS}?${s}&page=${page}&limit=20`;
    await run(PHASES[1]!, [q('stock[gte]=500')]);
    await run(PHASES[2]!, [q('status=paused'), q('price[gte]=10&price[lt]=500')]);
    await run(PHASES[3]!, Array.from({ length: 60 }, (_, i) => q(`status=active&price[gte]=${(1001 + i) / 100}&price[lt]=500&sort=-price,name`)));
    await run(PHASES[4]!, NOUNS.slice(0, 30).map((w) => q(`q=${w}`)));
    await run(PHASES[5]!, Array.from({ length: 200 }, () => q('status=paused', 1 + Math.floor(random() * 16_000))));
    await run(PHASES[6]!, Array.from({ length: 200 }, () => q('sort=-price', 1 + Math.floor(random() * 50_000))));
    await pause();
    agent.destroy();
    await server.stop();
    const file = (await fs.readdir(profiles)).find((f) => !before.has(f) && f.endsWith('.cpuprofile'));
    if (!file) throw new Error('no profile written (did halserve exit cleanly on SIGTERM?)');
    const target = path.join(profiles, `queries-${entities}-${file}`);
    await fs.rename(path.join(profiles, file), target);
    const profile = JSON.parse(await fs.readFile(target, 'utf8')) as CpuProfile;
    const own = (n: string): boolean => n.includes(' dist/') || n.includes(' src/');
    console.log(`halserve on ${fmt(entities)} products; profile: ${path.relative(config.root, target)} (sampling every 250 µs)\n`);
    console.log(timings.join('\n'));
    const parts = phases(profile, 800);
    for (const [i, samples] of parts.entries()) {
      const { self, inclusive } = summariseSamples(profile, samples);
      console.log(`\n## ${PHASES[i] ?? `phase ${i + 1}`}: ${samples.length} samples (~${fmt((samples.length * 250) / 1000)} ms of CPU)\n\nSelf time, top 12:`);
      console.log(top(self, samples.length, 12).join('\n'));
      console.log(`\nhalserve's own functions, inclusive, top 12:`);
      console.log(top(inclusive, samples.length, 12, own).join('\n'));
    }
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

await main();
