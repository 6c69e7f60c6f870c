/**
 * The measuring half of `store-bench.ts`, run compiled in its own process so that resident memory
 * and timings are those of the store as `node dist/cli.js` runs it (no TypeScript loader).
 * Usage: node <build>/bench/store-bench-child.js <file>; prints the figures as JSON.
 */
import fs from 'node:fs/promises';
import { openJsonlStore } from '../src/store/jsonl-store.js';
import type { StoredEntity } from '../src/store/store.js';

/** The figures the child reports. */
export interface Figures {
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
  writesPerSecond: number;
  writeConcurrency: number;
}

/** A random URL-safe id of 16 characters, like the HTTP layer's. */
export function id(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let out = '';
  for (let i = 0; i < 16; i++) out += alphabet[Math.floor(Math.random() * 64)];
  return out;
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

/** The measuring half, in its own process. */
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
  const pageOf = (offset: number) => () => void render(store.page(offset, limit));
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

  const compactionStarted = performance.now();
  const compacted = await store.compact();
  const compactionMs = performance.now() - compactionStarted;
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
    writesPerSecond,
    writeConcurrency,
  };
  process.stdout.write(JSON.stringify(figures));
}

if (process.argv[2]) await child(process.argv[2]);
