/**
 * Store-level measurements at scale (issue 3): `node --import tsx bench/store-bench.ts [entities]`.
 *
 * Writes a log of N entities (default 1,000,000, ~250 bytes each) to a temporary directory, then in
 * a fresh process (so that resident memory is the store's alone) measures start-up, resident
 * memory against the file size, the first and last collection page, pages after scattered deletes,
 * a full compaction, and group-committed write throughput. Prints a markdown table.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openJsonlStore } from '../src/store/log/jsonl-store.js';
import type { QueryResult, StoredEntity } from '../src/store/store.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** A random URL-safe id of 16 characters, like the HTTP layer's. */
function id(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let out = '';
  for (let i = 0; i < 16; i++) out += alphabet[Math.floor(Math.random() * 64)];
  return out;
}

/** Compiles this script and the store it imports to plain JavaScript under `outDir`. */
async function compileChild(outDir: string): Promise<string> {
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
  const args = [tsc, 'bench/store-bench.ts', '--outDir', outDir, '--rootDir', '.', '--target', 'es2022', '--module', 'nodenext',
    '--moduleResolution', 'nodenext', '--types', 'node', '--skipLibCheck', '--strict'];
  await run(process.execPath, args);
  await fs.writeFile(path.join(outDir, 'package.json'), '{"type":"module"}\n');
  return path.join(outDir, 'bench/store-bench.js');
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const proc = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    proc.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${path.basename(args[0] ?? command)} exited with ${code}: ${out}`))));
  });
}

const ENTITY_BYTES_TARGET = 250;

function entityLine(i: number): string {
  const base = {
    id: id(),
    createdAt: 1_700_000_000 + i,
    updatedAt: 1_700_000_000 + i,
    name: `Product ${i}`,
    sku: `SKU-${(i * 7919) % 1_000_000}`,
    price: Math.round(Math.random() * 100_000) / 100,
    stock: i % 97,
    status: i % 3 === 0 ? 'paused' : 'active',
    tags: ['catalogue', i % 2 === 0 ? 'even' : 'odd'],
    description: '',
  };
  const json = JSON.stringify(base);
  base.description = 'd'.repeat(Math.max(0, ENTITY_BYTES_TARGET - json.length));
  return JSON.stringify(base);
}

async function writeLog(file: string, entities: number): Promise<number> {
  const handle = await fs.open(file, 'w');
  let bytes = 0;
  try {
    const batch: string[] = [];
    for (let i = 0; i < entities; i++) {
      batch.push(entityLine(i));
      if (batch.length === 10_000 || i === entities - 1) {
        const chunk = batch.join('\n') + '\n';
        bytes += Buffer.byteLength(chunk);
        await handle.write(chunk);
        batch.length = 0;
      }
    }
  } finally {
    await handle.close();
  }
  return bytes;
}

/** The figures the child reports. */
interface Figures {
  entities: number;
  fileBytes: number;
  startupMs: number;
  startupCpuMs: number;
  rssBytes: number;
  heapBytes: number;
  firstPageUs: number;
  lastPageUs: number;
  firstPageHolesUs: number;
  lastPageHolesUs: number;
  deleteMs: number;
  compactionMs: number;
  writesDuringCompaction: number;
  maxWriteMsDuringCompaction: number;
  writesPerSecond: number;
  writeConcurrency: number;
}

/** Median time of `fn` in microseconds over `runs` runs. */
function timeUs(fn: () => void, runs: number): number {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

/** What a collection response does with a page: the entities' stored JSON, joined. */
function render(page: readonly StoredEntity[]): number {
  let length = 0;
  const parts: string[] = [];
  for (const entity of page) {
    parts.push(entity.json);
    length += entity.version.length;
  }
  return parts.join(',').length + length;
}

/**
 * The measuring half, run compiled in its own process so that resident memory and timings are
 * those of the store as `node dist/cli.js` runs it (tsx alone adds ~36 MB of resident memory).
 */
async function child(file: string): Promise<void> {
  const cpuBefore = process.cpuUsage();
  const startedAt = performance.now();
  const store = await openJsonlStore({ file, compaction: { auto: false } });
  const startupMs = performance.now() - startedAt;
  const cpu = process.cpuUsage(cpuBefore);
  const memory = process.memoryUsage();
  const size = store.size;
  const limit = 200;
  const lastOffset = Math.max(0, size - limit);
  const page = (offset: number, count: number) => (store.query({ filters: [], sort: [], search: [], offset, limit: count }) as QueryResult).entities;
  const pageOf = (offset: number) => () => void render(page(offset, limit));
  timeUs(pageOf(0), 200); // warm-up
  timeUs(pageOf(lastOffset), 200);
  const firstPageUs = timeUs(pageOf(0), 500);
  const lastPageUs = timeUs(pageOf(lastOffset), 500);

  // Scattered deletes: every 10th entity (10% holes), then the same pages.
  const doomed: string[] = [];
  let i = 0;
  for (const entity of store.values()) if (i++ % 10 === 0) doomed.push(entity.id);
  const deletesStarted = performance.now();
  await Promise.all(doomed.map((doomedId) => store.delete(doomedId)));
  const deleteMs = performance.now() - deletesStarted;
  const lastOffsetHoles = Math.max(0, store.size - limit);
  timeUs(pageOf(lastOffsetHoles), 200);
  const firstPageHolesUs = timeUs(pageOf(0), 500);
  const lastPageHolesUs = timeUs(pageOf(lastOffsetHoles), 500);

  // One client keeps updating while the compaction runs: how long does a write wait at worst?
  let compacting = true;
  let writesDuringCompaction = 0;
  let maxWriteMsDuringCompaction = 0;
  const someId = page(0, 1)[0]!.id;
  const writer = (async () => {
    while (compacting) {
      const started = performance.now();
      await store.update(someId, (current) => ({ ...current.record, touched: started }));
      maxWriteMsDuringCompaction = Math.max(maxWriteMsDuringCompaction, performance.now() - started);
      writesDuringCompaction++;
    }
  })();
  const compactionStarted = performance.now();
  const compacted = await store.compact();
  const compactionMs = performance.now() - compactionStarted;
  compacting = false;
  await writer;
  if (!compacted) throw new Error('compaction failed');

  // Group commit: many concurrent creates, each acknowledged after fdatasync.
  const writeConcurrency = 64;
  const writes = 20_000;
  let next = 0;
  const writesStarted = performance.now();
  await Promise.all(
    Array.from({ length: writeConcurrency }, async () => {
      while (next < writes) {
        next++;
        await store.create({ id: id(), createdAt: 1, updatedAt: 1, name: 'bench', n: next });
      }
    }),
  );
  const writesPerSecond = writes / ((performance.now() - writesStarted) / 1000);
  await store.close();

  const figures: Figures = {
    entities: size,
    fileBytes: (await fs.stat(file)).size,
    startupMs,
    startupCpuMs: (cpu.user + cpu.system) / 1000,
    rssBytes: memory.rss,
    heapBytes: memory.heapUsed,
    firstPageUs,
    lastPageUs,
    firstPageHolesUs,
    lastPageHolesUs,
    deleteMs,
    compactionMs,
    writesDuringCompaction,
    maxWriteMsDuringCompaction,
    writesPerSecond,
    writeConcurrency,
  };
  process.stdout.write(JSON.stringify(figures));
}

async function main(): Promise<void> {
  const entities = Number(process.argv[2] ?? 1_000_000);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-store-bench-'));
  try {
    const file = path.join(dir, 'items.jsonl');
    const generated = performance.now();
    const fileBytes = await writeLog(file, entities);
    process.stderr.write(`wrote ${entities} entities, ${(fileBytes / 1e6).toFixed(1)} MB in ${((performance.now() - generated) / 1000).toFixed(1)} s\n`);
    const childScript = await compileChild(path.join(dir, 'build'));
    const loadBefore = os.loadavg()[0]!;
    const output = await run(process.execPath, [childScript, '--child', file]);
    const f = JSON.parse(output) as Figures;
    const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
    const rssLimit = 1.5 * fileBytes + 100 * 1024 * 1024;
    const rows = [
      ['entities / file', `${entities.toLocaleString('en')} entities, ${mb(fileBytes)} (${(fileBytes / entities).toFixed(0)} B each)`, '1,000,000 × ~250 B', ''],
      ['start-up (load + index)', `${(f.startupMs / 1000).toFixed(2)} s wall, ${(f.startupCpuMs / 1000).toFixed(2)} s CPU`, '≤ 2 s', f.startupMs <= 2000 ? 'yes' : 'no'],
      ['resident memory after start-up', `${mb(f.rssBytes)} (heap ${mb(f.heapBytes)})`, `≤ 1.5 × file + 100 MiB = ${mb(rssLimit)}`, f.rssBytes <= rssLimit ? 'yes' : 'no'],
      ['first page (limit 200)', `${f.firstPageUs.toFixed(0)} µs`, '', ''],
      ['last page (limit 200)', `${f.lastPageUs.toFixed(0)} µs (${(f.lastPageUs / f.firstPageUs).toFixed(2)}× first)`, '≤ 1.2× first', f.lastPageUs <= 1.2 * f.firstPageUs ? 'yes' : 'no'],
      ['after 10% scattered deletes: first / last page', `${f.firstPageHolesUs.toFixed(0)} µs / ${f.lastPageHolesUs.toFixed(0)} µs (${(f.lastPageHolesUs / f.firstPageHolesUs).toFixed(2)}×)`, '≤ 1.2× first', f.lastPageHolesUs <= 1.2 * f.firstPageHolesUs ? 'yes' : 'no'],
      [`${Math.round(entities / 10).toLocaleString('en')} concurrent deletes (durable)`, `${(f.deleteMs / 1000).toFixed(2)} s`, '', ''],
      ['compaction of the full file', `${(f.compactionMs / 1000).toFixed(2)} s`, '≤ 3 s', f.compactionMs <= 3000 ? 'yes' : 'no'],
      ['durable updates by one client during it', `${f.writesDuringCompaction.toLocaleString('en')}, slowest ${f.maxWriteMsDuringCompaction.toFixed(0)} ms`, 'not blocked for long', ''],
      [`durable creates, ${f.writeConcurrency} concurrent (group commit)`, `${Math.round(f.writesPerSecond).toLocaleString('en')} /s`, 'thousands /s', f.writesPerSecond >= 1000 ? 'yes' : 'no'],
    ];
    const table = [
      `Store benchmark — ${new Date().toISOString().slice(0, 16)}Z, Node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ` +
        `1-min load average ${loadBefore.toFixed(1)} before / ${os.loadavg()[0]!.toFixed(1)} after (the cores are shared)`,
      '',
      '| measure | measured | target | met |',
      '|---|---|---|---|',
      ...rows.map((row) => `| ${row.join(' | ')} |`),
    ].join('\n');
    console.log(table);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child') await child(process.argv[3]!);
else await main();
