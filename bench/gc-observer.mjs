/**
 * Preloaded into a server under test (`node --import ./bench/gc-observer.mjs dist/cli.js …`, by
 * `bench/fairness.ts`): records every garbage collection the process makes (`perf_hooks`, entry
 * type 'gc') as `[wall-clock start ms, pause ms, kind]` and writes them as JSON to the file named
 * by `BENCH_GC_LOG` when the process exits. Kinds are Node's `perf_hooks.constants.NODE_PERFORMANCE_GC_*`:
 * 1 minor (scavenge), 4 major (mark-compact), 8 incremental (a marking step), 16 weak callbacks.
 * Also the event loop's delay (`monitorEventLoopDelay`, 1 ms resolution: how late its timer
 * fired, so how long the loop was held), from the last SIGUSR2 to the exit, as `{ gc, delay }`.
 */
import { monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks';
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_GC_LOG;
if (file) {
  const entries = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) entries.push([performance.timeOrigin + entry.startTime, entry.duration, entry.detail?.kind ?? 0]);
  }).observe({ entryTypes: ['gc'] });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  process.on('SIGUSR2', () => delay.reset());
  process.on('exit', () => {
    const ms = (ns) => ns / 1e6;
    const loop = { count: delay.count, p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), p999: ms(delay.percentile(99.9)), max: ms(delay.max) };
    writeFileSync(file, JSON.stringify({ gc: entries, delay: loop }));
  });
}
