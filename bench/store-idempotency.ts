/**
 * What `Idempotency-Key` costs a write (docs/conventions.md §5.1): `node --import tsx
 * bench/store-idempotency.ts` (run by `npm run bench` with the other `bench/store-*.ts`; the entity
 * count it is given is not used).
 *
 * One process: a server over a durable JSON-lines store (fdatasync) in a temporary directory, and
 * clients over HTTP on loopback sending POSTs for `ROUND_MS` each round, keyed (a fresh key per
 * request) and unkeyed (the same bytes: a fresh `X-Request-Nonce` in the key's place, `post`), each
 * round starting with the one the last did not, at 1 and at 16 requests in flight. Prints requests
 * per second (the median of the rounds) and keyed / unkeyed. A keyed batch appends a line of its
 * answers before its changes' lines, in one write and one sync (answer-lines.ts), as an unkeyed batch.
 *
 * Its clients share the server's process, so their CPU is in both sides of the ratio: it shows the
 * store's part, and PostgreSQL's. The ratio as deployed (load generator in its own process, on its
 * own core) is the POST workload's `halserve (token, Idempotency-Key)` row of `npm run bench`.
 *
 * The server is the compiled one in `dist/` (`npm run bench` builds it first; run `npm run build`
 * before running this file alone), as deployed: under tsx every function made at run time is
 * wrapped in esbuild's `__name`, which a CPU profile put at ~12 µs of a keyed POST against ~8 µs
 * of an unkeyed one — a cost of the bench's loader, not of the server.
 *
 * Then the same over the PostgreSQL store (a throwaway cluster, bench/pg.ts; skipped without root
 * or PostgreSQL 15, or with BENCH_IDEM_PG=0), where a keyed write's answer goes into
 * `halserve.answers` in the write's own statement (pg/write-statement.ts); a batch's first try
 * reads no answer (pg/writer.ts).
 */
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Store } from '../src/store/store.js';
import { findPostgres, startCluster } from './pg.js';

/** A module of the compiled server, typed by its source (which typechecks without a build). */
const built = <M>(file: string): Promise<M> =>
  (import(new URL(`../dist/${file}`, import.meta.url).href) as Promise<M>).catch((error: unknown) => {
    throw new Error(`bench/store-idempotency.ts measures the compiled server: run \`npm run build\` first (${(error as Error).message})`);
  });
const { createHalServer } = await built<typeof import('../src/http/server.js')>('http/server.js');
const { openJsonlStore } = await built<typeof import('../src/store/log/jsonl-store.js')>('store/log/jsonl-store.js');
const { openPostgres } = await built<typeof import('../src/store/pg/open.js')>('store/pg/open.js');

const ROUND_MS = Number(process.env['BENCH_IDEM_ROUND_MS'] ?? (process.env['BENCH_QUICK'] ? 1000 : 3000));
/** Rounds of each: a ratio of one round moved by ±10% on this VM (bench/NOTES.md); the median of 5 still moved 0.84–0.98 between runs of one build. */
const ROUNDS = Number(process.env['BENCH_IDEM_ROUNDS'] ?? 9);
/** `none` measures the CPU cost alone (no fdatasync): the difference to `full` is the second sync. */
const DURABILITY = process.env['BENCH_IDEM_DURABILITY'] === 'none' ? 'none' : 'full';
const BODY = JSON.stringify({ sku: 'LMP-1', name: 'Desk lamp', price: 39.9, tags: ['home'], stock: 4 });

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

/**
 * A POST with `fresh` as its `Idempotency-Key` (keyed) or as its `X-Request-Nonce` (unkeyed): a
 * header of the same length and a value of its own either way, which halserve does not read in
 * the second, so that both send the same bytes, built by the same code, as the POST workload of
 * `npm run bench` does (bench/workloads.ts): the ratio is what the key costs.
 */
function post(agent: http.Agent, port: number, keyed: boolean, fresh: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(BODY)) };
    headers[keyed ? 'idempotency-key' : 'x-request-nonce'] = fresh;
    const req = http.request({ host: '127.0.0.1', port, path: '/items', method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(BODY);
  });
}

/** Requests per second of `inFlight` clients posting for `ROUND_MS`. */
async function round(port: number, inFlight: number, keyed: boolean, tag: string): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: inFlight });
  const end = performance.now() + ROUND_MS;
  let done = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        const status = await post(agent, port, keyed, `${tag}-${next++}`);
        if (status !== 201) throw new Error(`POST answered ${status}`);
        done++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return done / seconds;
}

/** The table of one store: keyed and unkeyed POSTs in alternating rounds, at 1 and 16 in flight. */
async function compare(store: Store): Promise<string[]> {
  const server = createHalServer({ resources: [{ name: 'items', store }] });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const rows: string[] = ['| in flight | unkeyed POST/s | keyed POST/s | keyed / unkeyed (median of per-round ratios) |', '|---:|---:|---:|---:|'];
  try {
    for (const inFlight of [1, 16]) {
      const plain: number[] = [];
      const keyed: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        // Each round starts with the other (bench/NOTES.md, "a ring allocated once": the first of a pair measured apart from the second).
        const tag = (keyed: boolean): string => `${keyed ? 'k' : 'n'}${inFlight}r${r}-${Date.now()}`;
        const order = r % 2 === 0 ? [false, true] : [true, false];
        for (const isKeyed of order) (isKeyed ? keyed : plain).push(await round(port, inFlight, isKeyed, tag(isKeyed)));
      }
      const ratio = median(keyed.map((k, i) => k / plain[i]!));
      rows.push(`| ${inFlight} | ${median(plain).toFixed(0)} | ${median(keyed).toFixed(0)} | ${ratio.toFixed(2)}× |`);
    }
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return rows;
}

async function main(): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-bench-idem-'));
  const store = await openJsonlStore({ file: path.join(dir, 'items.jsonl'), compaction: { auto: false }, durability: DURABILITY });
  try {
    const rows = await compare(store);
    console.log(`Keyed vs unkeyed POST, JSON-lines store, ${DURABILITY === 'full' ? 'durable (an O_DSYNC write per batch)' : 'durability none (CPU cost alone)'}, one process, loopback HTTP; median of ${ROUNDS} rounds of ${ROUND_MS} ms each, alternating.\n`);
    console.log(rows.join('\n'));
  } finally {
    await store.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
  if (process.env['BENCH_IDEM_PG'] === '0') return;
  const found = findPostgres(() => {});
  if ('missing' in found || process.getuid?.() !== 0) {
    console.log(`\nPostgreSQL store: not measured (${'missing' in found ? found.missing : 'needs root'}).`);
    return;
  }
  const cluster = await startCluster(found.bin, false, true);
  try {
    const url = cluster.url(await cluster.createDatabase('idem'));
    const pg = await openPostgres({ url, resources: ['items'], warn: () => {} });
    try {
      const rows = await compare(pg.stores.get('items')!);
      console.log(`\nKeyed vs unkeyed POST, PostgreSQL ${cluster.version} store (a throwaway cluster on this machine over TCP on 127.0.0.1, synchronous_commit on), the same rounds; a keyed write's answer is written in the write's statement.\n`);
      console.log(rows.join('\n'));
    } finally {
      await pg.close();
    }
  } finally {
    await cluster.stop();
  }
}

await main();
