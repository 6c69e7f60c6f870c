/**
 * The recency structure alone (issue 21): hits per second with one hot key and with uniform keys,
 * and inserts per second into a full map (each evicting the least recently used), at 1,000 to
 * 1,000,000 entries. The goal is a flat line. Beside it, the same operations on a `Map` kept in
 * order of use the way the caches and the rate limiter did before `LruMap` (a hit deletes and
 * re-adds its key; eviction takes `keys().next()`), for reference. Rates are per CPU second of this
 * process, so that other work on a busy machine does not count against them.
 *
 * Usage: node --import tsx bench/lru-bench.ts [quick]   (prints a Markdown table)
 */
import { LruMap } from '../src/structures/lru-map.js';
import { prng } from '../test/helpers/prng.js';

/** What each implementation must offer the bench. */
interface Recency {
  get(key: string): unknown;
  set(key: string, value: number): void;
}

/** The pattern `LruMap` replaced: order of use kept by deleting and re-adding a `Map`'s key. */
class MapReorder implements Recency {
  readonly #map = new Map<string, number>();
  readonly #max: number;
  constructor(max: number) {
    this.#max = max;
  }
  get(key: string): number | undefined {
    const value = this.#map.get(key);
    if (value !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, value);
    }
    return value;
  }
  set(key: string, value: number): void {
    if (!this.#map.has(key) && this.#map.size >= this.#max) {
      const oldest = this.#map.keys().next().value;
      if (oldest !== undefined) this.#map.delete(oldest);
    }
    this.#map.delete(key);
    this.#map.set(key, value);
  }
}

const quick = process.argv.includes('quick');
const SIZES = [1_000, 10_000, 100_000, 1_000_000];
/** Seconds each measurement runs for (at least one batch). */
const SECONDS = quick ? 0.05 : 0.3;
const BATCH = 1024;

/** CPU seconds this process has used (user + system): unlike wall time, it does not count the time other work on a busy machine took the core. */
function cpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/** Runs `op(i)` in batches until `SECONDS` of CPU time have passed; operations per CPU second. */
function rate(op: (i: number) => void): number {
  let done = 0;
  const start = cpuSeconds();
  let now = start;
  while (now - start < SECONDS) {
    for (let i = 0; i < BATCH; i++) op(done + i);
    done += BATCH;
    now = cpuSeconds();
  }
  return done / (now - start);
}

function measure(make: (size: number) => Recency, size: number): { hot: number; uniform: number; insert: number } {
  const keys = Array.from({ length: size }, (_, i) => `entity-${i.toString(36).padStart(8, '0')}`);
  const fresh = Array.from({ length: 1 << 20 }, (_, i) => `new-${i.toString(36).padStart(8, '0')}`);
  const random = prng(size);
  const picks = Int32Array.from({ length: 1 << 16 }, () => Math.floor(random() * size));
  const map = make(size);
  for (const [i, key] of keys.entries()) map.set(key, i);
  const hotKey = keys[size >> 1]!;
  const hot = rate(() => map.get(hotKey));
  const uniform = rate((i) => map.get(keys[picks[i & 0xffff]!]!));
  // Full: every insert of a new key evicts the least recently used one.
  const insert = rate((i) => map.set(fresh[i & 0xfffff]!, i));
  return { hot, uniform, insert };
}

const mops = (perSecond: number): string => (perSecond / 1e6).toFixed(2);
const lines = [
  `Millions of operations per CPU second, ${SECONDS} s of CPU each (one hot key read over and over; uniformly random keys; new keys into a full map, each evicting one).`,
  '',
  '| Entries | LruMap hot hit | LruMap uniform hit | LruMap insert, full | Map reorder hot hit | Map reorder uniform hit | Map reorder insert, full |',
  '|---:|---:|---:|---:|---:|---:|---:|',
];
for (const size of SIZES) {
  const lru = measure((n) => new LruMap<number>({ maxEntries: n }), size);
  const old = measure((n) => new MapReorder(n), size);
  lines.push(`| ${size.toLocaleString('en-US')} | ${mops(lru.hot)} | ${mops(lru.uniform)} | ${mops(lru.insert)} | ${mops(old.hot)} | ${mops(old.uniform)} | ${mops(old.insert)} |`);
  process.stderr.write(`[lru] ${size}: done\n`);
}
process.stdout.write(`${lines.join('\n')}\n`);
