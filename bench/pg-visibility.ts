/**
 * How long a write on one process takes to be visible on another (docs/storage.md §2: p99 ≤ 100 ms on
 * one machine). Two stores on one throwaway cluster, each with its own connections, change feed
 * and index (two processes' worth, in one for the clock); A creates or patches, and the time until
 * B holds the new state is taken. Sequential writes, then 8 writers at once.
 *
 *   node --import tsx bench/pg-visibility.ts [writes]
 */
import { openPostgres } from '../src/store/pg/open.js';
import { findPostgres, startCluster } from '../test/helpers/pg-cluster.js';

const WRITES = Number(process.argv[2] ?? 1000);
const found = findPostgres();
if ('missing' in found) throw new Error(found.missing);
const cluster = await startCluster(found.bin);
const quantile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const report = (label: string, samples: number[]): void => {
  const sorted = [...samples].sort((a, b) => a - b);
  console.log(`| ${label} | ${samples.length} | ${quantile(sorted, 0.5).toFixed(2)} | ${quantile(sorted, 0.99).toFixed(2)} | ${sorted.at(-1)!.toFixed(2)} |`);
};
try {
  const url = cluster.url();
  const warn = (m: string): void => console.error(m);
  const a = await openPostgres({ url, resources: ['items'], warn });
  const b = await openPostgres({ url, resources: ['items'], warn });
  const sa = a.stores.get('items')!;
  const sb = b.stores.get('items')!;
  const seen = async (id: string, version: string): Promise<void> => {
    while (sb.get(id)?.version !== version) await new Promise((resolve) => setImmediate(resolve));
  };
  console.log('| writes | n | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|');
  const sequential: number[] = [];
  for (let i = 0; i < WRITES; i++) {
    const entity = await sa.create({ id: `s${i}`, createdAt: 1, updatedAt: 1, n: i });
    const started = performance.now();
    await seen(entity.id, entity.version);
    sequential.push(performance.now() - started);
  }
  report('create, one writer', sequential);
  const concurrent: number[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < WRITES / 8; i++) {
        const entity = await sa.update(`s${w * 100 + i}`, (current) => ({ ...current.record, n: -1 }));
        const started = performance.now();
        await seen(entity!.id, entity!.version);
        concurrent.push(performance.now() - started);
      }
    }),
  );
  report('update, 8 writers at once', concurrent);
  await a.close();
  await b.close();
} finally {
  await cluster.stop();
}
