/**
 * Issue 18's webhook targets, against the CLI in a process of its own (the load generator and the
 * receiver share this one):
 * 1. a healthy receiver: time from a POST's answer to its event's arrival at the receiver, over
 *    sequential durable writes (p50, p99); then the delivery rate of a backlog to one URL (events/s);
 * 2. a receiver that hangs every request: the API's POST latency (p50, p99) with it configured and
 *    with no webhook, in interleaved rounds of fresh servers (median of the rounds, and the ratio);
 * 3. 100,000 events pending for a dead endpoint: the server's RSS with them against the same
 *    server with no webhook (after the same writes).
 *
 *   node --import tsx bench/webhooks.ts [latency writes] [rounds] [pending events]
 *   node bench/run.mjs webhooks                     (the same, with the defaults)
 *   BENCH_WEBHOOKS=hang node bench/run.mjs webhooks 500 9   (one section: latency, hang or pending)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const WRITES = Number(process.argv[2] ?? 500);
const ROUNDS = Number(process.argv[3] ?? 3);
const PENDING = Number(process.argv[4] ?? 100_000);
const CLI = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const SECRET = `whsec_${Buffer.from('halserve-webhook-bench-key-32-byte').toString('base64')}`;

const pct = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const median = (xs: readonly number[]): number => pct(xs, 50);
const log = (line: string): void => void process.stderr.write(`${line}\n`);

/** A receiver: `hang` never answers; otherwise 204 and `onEvent(entity id)`. */
async function receiver(mode: 'ok' | 'hang', onEvent: (id: string) => void = () => {}): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (mode === 'hang') return;
      onEvent((JSON.parse(body) as { id: string }).id);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

interface Server {
  readonly child: ChildProcess;
  readonly port: number;
  readonly dir: string;
  stop(): Promise<void>;
}

/** The CLI on a fresh data directory, with `args`. */
async function startServer(args: readonly string[]): Promise<Server> {
  const dir = await mkdtemp(join(tmpdir(), 'halserve-bench-webhooks-'));
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, '--data', dir, '--port', '0', '--log', 'off', '--resource', 'items', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr!.resume();
  for (;;) {
    const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
    if (match) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      return {
        child,
        port: Number(match[1]),
        dir,
        stop: async () => {
          child.kill('SIGKILL');
          await exited;
          await rm(dir, { recursive: true, force: true });
        },
      };
    }
    if (child.exitCode !== null) throw new Error(`the server exited ${child.exitCode}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

/** POSTs one item; resolves with its id once answered. */
const post = (port: number): Promise<string> =>
  new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/items', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(String(res.headers.location).split('/').pop()!));
    });
    req.on('error', reject);
    req.end('{"n":1,"name":"a webhook bench item"}');
  });

/** `n` POSTs over `clients` concurrent connections. */
async function load(port: number, n: number, clients: number): Promise<void> {
  let left = n;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (left-- > 0) await post(port);
  }));
}

const metric = async (port: number, series: string): Promise<number | undefined> => {
  const text = await new Promise<string>((resolve, reject) =>
    http.get({ host: '127.0.0.1', port, path: '/metrics', agent }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve(body));
    }).on('error', reject),
  );
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

const rssOf = async (pid: number): Promise<number> => {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
};

const rows: string[] = ['| figure | value |', '|---|---|'];
/** `BENCH_WEBHOOKS=hang,pending` runs only those sections (latency, hang, pending); default all. */
const only = (process.env['BENCH_WEBHOOKS'] ?? 'latency,hang,pending').split(',');
const want = (section: string): boolean => only.includes(section);

// 1. A healthy receiver: latency, then the rate of a backlog.
if (want('latency')) {
  const arrivals = new Map<string, number>();
  const waiting = new Map<string, (t: number) => void>();
  const sink = await receiver('ok', (id) => {
    const t = performance.now();
    const resolve = waiting.get(id);
    if (resolve) resolve(t);
    else arrivals.set(id, t);
  });
  const server = await startServer(['--webhook', sink.url, '--webhook-secret', SECRET]);
  for (let i = 0; i < 50; i++) await post(server.port); // warm-up
  const delays: number[] = [];
  for (let i = 0; i < WRITES; i++) {
    const id = await post(server.port);
    const acked = performance.now();
    const arrived = arrivals.get(id) ?? (await new Promise<number>((resolve) => waiting.set(id, resolve)));
    delays.push(arrived - acked);
  }
  rows.push(`| POST answered -> event at a healthy receiver, p50 (${WRITES} sequential durable writes) | ${pct(delays, 50).toFixed(2)} ms |`);
  rows.push(`| the same, p99 | ${pct(delays, 99).toFixed(2)} ms |`);
  log(`latency: p50 ${pct(delays, 50).toFixed(2)} ms, p99 ${pct(delays, 99).toFixed(2)} ms, max ${Math.max(...delays).toFixed(2)} ms`);
  await server.stop();
  sink.close();
}
if (want('latency')) {
  // A backlog written while the receiver is away (a closed port), then delivered once it listens.
  const BACKLOG = Number(process.env['BENCH_BACKLOG'] ?? 20_000);
  let got = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  const sink = await receiver('ok', () => {
    if (++got === BACKLOG) done();
  });
  const port = Number(new URL(sink.url).port);
  sink.close();
  const server = await startServer(['--webhook', sink.url, '--webhook-secret', SECRET, '--durability', 'none']);
  await load(server.port, BACKLOG, 8);
  let t0 = 0;
  const again = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (got === 0) t0 = performance.now();
      if (++got === BACKLOG) done();
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => again.listen(port, '127.0.0.1', resolve));
  await finished;
  const rate = (BACKLOG - 1) / ((performance.now() - t0) / 1000);
  rows.push(`| a backlog of ${BACKLOG} events delivered to one URL | ${rate.toFixed(0)} events/s |`);
  log(`backlog: ${rate.toFixed(0)} events/s`);
  // Sustained: writes and deliveries at once, 8 clients for the same number of writes.
  got = 0;
  const finishedLive = new Promise<void>((resolve) => (done = resolve));
  const t1 = performance.now();
  await load(server.port, BACKLOG, 8);
  const written = performance.now();
  await finishedLive;
  const live = BACKLOG / ((performance.now() - t1) / 1000);
  rows.push(`| ${BACKLOG} writes (8 clients) delivered as they happen | ${live.toFixed(0)} events/s (writes took ${((written - t1) / 1000).toFixed(1)} s, last delivery ${((performance.now() - written) / 1000).toFixed(2)} s after) |`);
  log(`sustained: ${live.toFixed(0)} events/s`);
  await server.stop();
  again.closeAllConnections();
  again.close();
}

// 2. A receiver that hangs every request: the API's POST latency, with and without it, interleaved.
if (want('hang')) {
  const hung = await receiver('hang');
  const N = 2_000;
  const byMode: Record<'none' | 'hang', { p50: number[]; p99: number[] }> = { none: { p50: [], p99: [] }, hang: { p50: [], p99: [] } };
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? (['none', 'hang'] as const) : (['hang', 'none'] as const)) {
      const server = await startServer(mode === 'hang' ? ['--webhook', hung.url, '--webhook-secret', SECRET] : []);
      for (let i = 0; i < 200; i++) await post(server.port);
      const times: number[] = [];
      for (let i = 0; i < N; i++) {
        const t = performance.now();
        await post(server.port);
        times.push(performance.now() - t);
      }
      byMode[mode].p50.push(pct(times, 50));
      byMode[mode].p99.push(pct(times, 99));
      log(`round ${round + 1} ${mode}: p50 ${pct(times, 50).toFixed(2)} ms, p99 ${pct(times, 99).toFixed(2)} ms`);
      await server.stop();
    }
  }
  const [none, hang] = [byMode.none, byMode.hang];
  rows.push(`| durable POST p50, no webhook / a hung receiver (median of ${ROUNDS} interleaved rounds of ${N}) | ${median(none.p50).toFixed(2)} / ${median(hang.p50).toFixed(2)} ms |`);
  rows.push(`| durable POST p99, no webhook / a hung receiver | ${median(none.p99).toFixed(2)} / ${median(hang.p99).toFixed(2)} ms (difference ${(median(hang.p99) - median(none.p99)).toFixed(2)} ms) |`);
  hung.close();
}

// 3. Events pending for a dead endpoint: RSS against the same server with no webhook.
if (want('pending')) {
  const dead = await receiver('ok');
  dead.close();
  const rss: Record<'none' | 'dead', number> = { none: 0, dead: 0 };
  let pending: number | undefined;
  for (const mode of ['none', 'dead'] as const) {
    const server = await startServer([...(mode === 'dead' ? ['--webhook', dead.url, '--webhook-secret', SECRET] : []), '--durability', 'none']);
    await load(server.port, PENDING, 8);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    rss[mode] = await rssOf(server.child.pid!);
    if (mode === 'dead') pending = await metric(server.port, `halserve_webhook_pending_events{url="${dead.url}"}`);
    log(`${mode}: RSS ${(rss[mode] / 2 ** 20).toFixed(1)} MiB${pending === undefined ? '' : `, pending ${pending}`}`);
    await server.stop();
  }
  rows.push(`| RSS after ${PENDING} writes, no webhook / all pending for a dead endpoint | ${(rss.none / 2 ** 20).toFixed(1)} / ${(rss.dead / 2 ** 20).toFixed(1)} MiB (difference ${((rss.dead - rss.none) / 2 ** 20).toFixed(1)} MiB; pending gauge ${pending ?? '?'}) |`);
}

agent.destroy();
process.stdout.write(`${rows.join('\n')}\n`);
