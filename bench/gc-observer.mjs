/**
 * Preloaded into a server under test (`node --import ./bench/gc-observer.mjs dist/cli.js …`, by
 * `bench/fairness.ts`): records every garbage collection the process makes (`perf_hooks`, entry
 * type 'gc') as `[wall-clock start ms, pause ms, kind]` and writes them as JSON to the file named
 * by `BENCH_GC_LOG` when the process exits. Kinds are Node's `perf_hooks.constants.NODE_PERFORMANCE_GC_*`:
 * 1 minor (scavenge), 4 major (mark-compact), 8 incremental (a marking step), 16 weak callbacks.
 */
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_GC_LOG;
if (file) {
  const entries = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) entries.push([performance.timeOrigin + entry.startTime, entry.duration, entry.detail?.kind ?? 0]);
  }).observe({ entryTypes: ['gc'] });
  process.on('exit', () => writeFileSync(file, JSON.stringify(entries)));
}
