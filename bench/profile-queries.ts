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
import { summariseSamples, top, type CpuProfile } from './profile.js';
import { generateProducts, NOUNS, PRODUCTS, prng } from './products.js';
import { startHalserve } from './servers.js';
import { fmt } from './stats.js';


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

/**
 * Assigns each non-idle sample to the phase whose window holds its time. V8 stamps a profile with
 * the monotonic clock in µs, the clock `process.hrtime` reads in every process of this machine, so
 * the harness's marks and the server's samples share one time line. Work a phase leaves running in
 * the background (an index build goes on after a 503) counts in that phase, up to the next mark.
 */
function phases(profile: CpuProfile & { startTime: number }, marksUs: readonly number[]): number[][] {
  const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const out: number[][] = marksUs.map(() => []);
  let t = profile.startTime;
  for (const [i, id] of profile.samples.entries()) {
    t += profile.timeDeltas?.[i] ?? 0;
    if (idle.has(id)) continue;
    let phase = 0;
    while (phase + 1 < marksUs.length && t >= marksUs[phase + 1]!) phase++;
    out[phase]!.push(id);
  }
  return out;
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
    const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);
    // Phase 0 (start-up) runs from the first sample to the first mark.
    const marks: number[] = [0];
    const labels: string[] = ['start-up'];
    const run = async (label: string, paths: readonly string[]): Promise<void> => {
      await pause();
      marks.push(nowUs());
      labels.push(label);
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
    /** The first query of a kind, again every 250 ms (other pages) until a 200: where indexes are built. */
    const build = async (label: string, params: string): Promise<void> => {
      await pause();
      marks.push(nowUs());
      labels.push(label);
      const t = performance.now();
      let tries = 0;
      for (;;) {
        tries++;
        const r = await get(agent, port, q(params, tries));
        if (r.status === 200 || performance.now() - t > 60_000) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      timings.push(`${label}: a 200 after ${fmt(performance.now() - t)} ms (${tries} tries)`);
    };
    const random = prng(3);
    const q = (s: string, page = 1): string => `/${PRODUCTS}?${s}&page=${page}&limit=20`;
    const frs = (bound: number): string => `status=active&price[gte]=${bound}&price[lt]=500&sort=-price,name`;
    await build('build: stock[gte]=500', 'stock[gte]=500');
    await build('build: status=paused', 'status=paused');
    await build('build: price[gte]=10&price[lt]=500', 'price[gte]=10&price[lt]=500');
    await build('build: filter+range+sort (-price,name)', frs(10));
    await run('filter+range+sort, 60 first pages with new bounds', Array.from({ length: 60 }, (_, i) => q(frs((1001 + i) / 100))));
    await build('build: q (text index)', `q=${NOUNS[99]!}`);
    await run('q, 30 words not searched before', NOUNS.slice(0, 30).map((w) => q(`q=${w}`)));
    await run('q, the same 30 words again (limit 19)', NOUNS.slice(0, 30).map((w) => `/${PRODUCTS}?q=${w}&page=1&limit=19`));
    await run('status=paused, 200 random pages', Array.from({ length: 200 }, () => q('status=paused', 1 + Math.floor(random() * 16_000))));
    await run('sort=-price, 200 random pages', Array.from({ length: 200 }, () => q('sort=-price', 1 + Math.floor(random() * 50_000))));
    await pause();
    marks.push(nowUs());
    labels.push('shutdown');
    agent.destroy();
    await server.stop();
    const file = (await fs.readdir(profiles)).find((f) => !before.has(f) && f.endsWith('.cpuprofile'));
    if (!file) throw new Error('no profile written (did halserve exit cleanly on SIGTERM?)');
    const target = path.join(profiles, `queries-${entities}-${file}`);
    await fs.rename(path.join(profiles, file), target);
    const profile = JSON.parse(await fs.readFile(target, 'utf8')) as CpuProfile & { startTime: number };
    const own = (n: string): boolean => n.includes(' dist/') || n.includes(' src/');
    console.log(`halserve on ${fmt(entities)} products; profile: ${path.relative(config.root, target)} (sampling every 250 µs)\n`);
    console.log(timings.join('\n'));
    const parts = phases(profile, marks);
    for (const [i, samples] of parts.entries()) {
      const { self, inclusive } = summariseSamples(profile, samples);
      if (samples.length === 0) continue;
      console.log(`\n## ${labels[i] ?? `phase ${i + 1}`}: ${samples.length} samples (~${fmt((samples.length * 250) / 1000)} ms of CPU)\n\nSelf time, top 12:`);
      console.log(top(self, samples.length, 12).join('\n'));
      console.log(`\nhalserve's own functions, inclusive, top 12:`);
      console.log(top(inclusive, samples.length, 12, own).join('\n'));
    }
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

await main();
