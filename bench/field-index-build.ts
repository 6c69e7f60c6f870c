/**
 * The CPU cost of building one field's index (the first filter, sort or facet naming the field on
 * a fresh server waits for it), and of a facet over every entity, without a server:
 *
 *   node --expose-gc --import tsx bench/field-index-build.ts [entities] [rounds] [baseline src dir]
 *
 * (1,000,000 and 5 by default). Each entity has `tags`, an array of three strings of which two are
 * (nearly) its own (`t<random below 400,000>`, one of 12 words, `u<n>`), so that almost every array is distinct,
 * and `code`, unique. The lines are stamped as a server writes them, read into one buffer and
 * loaded as the file store loads them (a `LoadedEntity` per line pointing into the buffer). Each
 * round builds the index of `tags` through `IndexBuilds.wait`, as the first `?tags=…` does (in
 * slices of the event loop), then of `code`, and counts `?facets=code` and `?facets=tags` on a
 * `QueryEngine` whose indexes are built (twice each: a second request of the same revision, which
 * the engine may answer from what it kept).
 *
 * As `text-index-build.ts`: compare only within one run, and read medians. With a baseline
 * source directory (`git archive <commit> src | tar -x -C .bench/base`, then `.bench/base/src`)
 * both run interleaved over the same loaded entities. `--cpu-prof` profiles a run.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { IndexBuilds } from '../src/store/index/index-builds.js';
import type { QueryEngine } from '../src/store/index/query-engine.js';
import type { Rows } from '../src/store/index/rows.js';
import type { LoadedEntity } from '../src/store/log/jsonl-entity.js';
import { loadEntities, rowsOf } from './loaded-rows.js';
import type { StoreQuery } from '../src/store/store.js';
import { prng } from './dataset.js';
import { fmt, median } from './stats.js';

type Builds = new (rows: Rows<LoadedEntity>) => IndexBuilds<LoadedEntity>;
type Engine = new (rows: Rows<LoadedEntity>) => QueryEngine<LoadedEntity>;

const WORDS = ['red', 'blue', 'green', 'small', 'large', 'steel', 'oak', 'linen', 'glass', 'wool', 'round', 'flat'];

/** The entities' lines, stamped, in one buffer. */
function lines(entities: number): Buffer {
  const random = prng(42);
  const parts: string[] = [];
  for (let n = 0; n < entities; n++) {
    const at = 1_700_000_000 + Math.floor(n / 10);
    const record = { id: `it${n.toString(36).padStart(8, '0')}`, createdAt: at, updatedAt: at, code: `C-${n}`, name: `item ${n}`, tags: [`t${Math.floor(random() * 400_000)}`, WORDS[n % WORDS.length], `u${n}`] };
    parts.push(`${JSON.stringify(record).slice(0, -1)},"_change":"${n + 1}.c.1700000000"}\n`);
  }
  return Buffer.from(parts.join(''));
}

/** CPU and wall milliseconds of `work`. */
async function measure(work: () => unknown): Promise<{ cpu: number; wall: number }> {
  const cpu = process.cpuUsage();
  const wall = performance.now();
  await work();
  const used = process.cpuUsage(cpu);
  return { cpu: (used.user + used.system) / 1000, wall: performance.now() - wall };
}

const facetQuery = (field: string): StoreQuery => ({ filters: [], sort: [], search: [], offset: 0, limit: 20, facets: [[field]] });

async function round(Builds: Builds, Engine: Engine, rows: Rows<LoadedEntity>): Promise<Record<string, number>> {
  globalThis.gc?.();
  const out: Record<string, number> = {};
  const builds = new Builds(rows);
  out['build tags'] = (await measure(() => builds.wait([['tags']], false))).cpu;
  out['build code'] = (await measure(() => builds.wait([['code']], false))).cpu;
  globalThis.gc?.();
  const engine = new Engine(rows);
  // Builds both indexes (a sort names them) without counting a facet, which the engine would keep.
  await engine.query({ filters: [], sort: [{ field: 'code', path: ['code'], descending: false }, { field: 'tags', path: ['tags'], descending: false }], search: [], offset: 0, limit: 1 });
  for (const field of ['code', 'tags']) {
    out[`facets=${field}`] = (await measure(() => engine.facets(facetQuery(field)))).cpu;
    out[`facets=${field} again`] = (await measure(() => engine.facets(facetQuery(field)))).cpu;
  }
  return out;
}

async function main(): Promise<void> {
  const entities = Number(process.argv[2] ?? 1_000_000);
  const rounds = Number(process.argv[3] ?? 5);
  const baseDir = process.argv[4];
  if (globalThis.gc === undefined) console.warn('(run with --expose-gc for steadier figures)');
  const rows = rowsOf(loadEntities(lines(entities)));
  const variants: [string, Builds, Engine][] = [];
  if (baseDir !== undefined) {
    const at = (file: string): string => pathToFileURL(path.resolve(baseDir, 'store/index', file)).href;
    variants.push(['baseline', ((await import(at('index-builds.ts'))) as { IndexBuilds: Builds }).IndexBuilds, ((await import(at('query-engine.ts'))) as { QueryEngine: Engine }).QueryEngine]);
  }
  variants.push(['current', (await import('../src/store/index/index-builds.js')).IndexBuilds as Builds, (await import('../src/store/index/query-engine.js')).QueryEngine as Engine]);
  const figures = new Map<string, Map<string, number[]>>(variants.map(([name]) => [name, new Map()]));
  for (let r = 0; r < rounds; r++) {
    for (const [name, Builds, Engine] of variants) {
      const result = await round(Builds, Engine, rows);
      const f = figures.get(name)!;
      for (const [what, ms] of Object.entries(result)) f.set(what, [...(f.get(what) ?? []), ms]);
      console.log(`round ${r + 1} ${name}: ${Object.entries(result).map(([what, ms]) => `${what} ${fmt(ms)}`).join(', ')} (CPU ms)`);
    }
  }
  console.log(`\n${entities.toLocaleString('en')} entities, ${rounds} rounds, CPU ms, medians:`);
  for (const [name, f] of figures) console.log(`${name}: ${[...f].map(([what, ms]) => `${what} ${fmt(median(ms))}`).join(', ')}`);
}

await main();
