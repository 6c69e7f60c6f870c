/**
 * Issue 16's stream targets (section `streams` of `npm run bench`), with every server a real halserve
 * process and its clients in other processes (this one, and `stream-clients.ts` for the many):
 *
 * 1. A write visible on an open stream of its process: sequential POSTs, the time from each POST's
 *    answer to its event on a stream of `/changes` of the same server (file store, durable; and
 *    PostgreSQL). p99 ≤ 10 ms.
 * 2. On another process of one PostgreSQL: POSTs to A, the event read from a stream of B. p99 ≤ 100 ms.
 * 3. `IDLE` open idle streams (10,000): the server's RSS growth per stream (≤ 30 KiB), and for
 *    each of 20 sequential writes, the time from the POST's answer until the event has reached every
 *    stream (≤ 200 ms p99); the clients tell this process over IPC, which the time includes.
 * 4. The durable POST rate with `WITH_STREAMS` (1,000) open streams against none: `CONNECTIONS`
 *    concurrent POST loops for `SECONDS` each round, rounds interleaved (none, streams, none, …);
 *    the ratio is the median of per-round ratios (≥ 0.9).
 *
 * Each server gets `ulimit -n 65536` (10,000 sockets need more than the usual 1,024 descriptors).
 *
 *   node --import tsx bench/streams.ts [quick]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { findPostgres, startCluster } from '../test/helpers/pg-cluster.js';
import { cpuSeconds } from './proc.js';
import { nodeFlagsOf } from './servers.js';

const quick = process.argv[2] === 'quick';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const WRITES = quick ? 100 : 500;
const IDLE = quick ? 2000 : 10_000;
const FAN_OUT_WRITES = 20;
const WITH_STREAMS = 1000;
const CONNECTIONS = 16;
const SECONDS = quick ? 2 : 4;
const ROUNDS = quick ? 2 : 3;
const NOFILE = 65536;

/** A halserve process: its URL, pid, and how to stop it. */
interface Server {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** Starts the CLI (the build in dist/, else the source through tsx) with a raised descriptor limit. */
async function startServer(args: readonly string[]): Promise<Server> {
  const built = path.join(ROOT, 'dist', 'cli.js');
  const node = existsSync(built) ? [process.execPath, ...nodeFlagsOf(built), built] : [process.execPath, '--import', 'tsx', path.join(ROOT, 'src', 'cli.ts')];
  const quoted = [...node, '--port', '0', '--host', '127.0.0.1', '--log', 'off', '--max-streams', String(IDLE + 100), ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  // `exec`: the pid is the server's own, for its RSS.
  const child = spawn('bash', ['-c', `ulimit -n ${NOFILE} 2>/dev/null || ulimit -n hard; exec ${quoted}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err = (err + c).slice(-4000)));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`halserve exited ${code}: ${err}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function post(server: Server, body = '{"n":1}'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, path: '/items', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 201 ? resolve(performance.now()) : reject(new Error(`POST answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** One stream of `/changes` in this process; `onEvent` gets each id with its arrival time. */
function openStream(server: Server, onEvent: (id: string, at: number) => void): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: server.port, path: '/changes', headers: { accept: 'text/event-stream' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const at = performance.now();
        text += chunk;
        for (let end; (end = text.indexOf('\n\n')) >= 0; text = text.slice(end + 2)) {
          if (text.startsWith('id: ')) onEvent(text.slice(4, text.indexOf('\n')), at);
        }
      });
      res.on('error', () => {});
      resolve(req);
    });
    req.on('error', reject);
  });
}

/**
 * Sequential POSTs to `writeTo`, each followed by its event on a stream of `readFrom` (the next
 * event: one writer); the time from the POST's answer to the event's arrival, 0 when the event came
 * first (on a stream of the writing process it may).
 */
async function visibility(writeTo: Server, readFrom: Server, writes: number): Promise<number[]> {
  let next: ((at: number) => void) | undefined;
  const stream = await openStream(readFrom, (_id, at) => next?.(at));
  const delays: number[] = [];
  for (let i = 0; i < writes; i++) {
    const seen = new Promise<number>((resolve) => (next = resolve));
    const acked = await post(writeTo);
    delays.push(Math.max(0, (await seen) - acked));
  }
  stream.destroy();
  return delays;
}

const rssKiB = (pid: number): number => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
const sorted = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b);
const quantile = (xs: readonly number[], q: number): number => sorted(xs)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const median = (xs: readonly number[]): number => quantile(xs, 0.5);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The clients process: open, close, and "event id reached every stream" notices. */
class Clients {
  readonly #child: ChildProcess;
  readonly #waiting: ((message: { type: string; id?: string; count?: number }) => void)[] = [];
  onAll: ((id: string) => void) | undefined;

  constructor() {
    // Through bash for `ulimit -n` (10,000 sockets); `exec` keeps the IPC channel and the pid.
    const script = path.join(ROOT, 'bench', 'stream-clients.ts');
    this.#child = spawn('bash', ['-c', `ulimit -n ${NOFILE} 2>/dev/null || ulimit -n hard; exec '${process.execPath}' --import tsx '${script}'`], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#child.on('message', (message: { type: string; id?: string; count?: number }) => {
      if (message.type === 'all') this.onAll?.(message.id!);
      else this.#waiting.shift()?.(message);
    });
  }

  #ask(message: unknown): Promise<{ type: string; count?: number }> {
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      this.#child.send(message as never);
    });
  }

  async open(server: Server, count: number): Promise<void> {
    const answer = await this.#ask({ type: 'open', url: server.url, count });
    if (answer.count !== count) throw new Error(`${answer.count} streams open, not ${count}`);
  }

  async close(): Promise<void> {
    await this.#ask({ type: 'close' });
  }

  end(): void {
    this.#child.kill();
  }

  get pid(): number {
    return this.#child.pid!;
  }
}

/** POSTs from `CONNECTIONS` loops for `SECONDS`: answers per second, and the server's CPU milliseconds per answer. */
async function postRate(server: Server): Promise<{ rate: number; cpuMs: number }> {
  const end = performance.now() + SECONDS * 1000;
  const cpu = cpuSeconds(server.pid);
  let done = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < end) {
        await post(server);
        done++;
      }
    }),
  );
  return { rate: done / SECONDS, cpuMs: ((cpuSeconds(server.pid) - cpu) * 1000) / done };
}

const rows: string[] = [];
const row = (figure: string, value: string, target: string): void => void rows.push(`| ${figure} | ${value} | ${target} |`);
const ms = (x: number): string => `${x.toFixed(2)} ms`;
const dirs: string[] = [];
const dataDir = async (): Promise<string> => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'halserve-bench-streams-'));
  dirs.push(dir);
  return dir;
};
const load = (): string => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const loadBefore = load();

try {
  // 1. Same process, file store (durable).
  {
    const server = await startServer(['--data', await dataDir(), '--resource', 'items']);
    await post(server);
    const delays = await visibility(server, server, WRITES);
    row(`write → event on a stream of its process, files (${WRITES} sequential durable POSTs), p50`, ms(median(delays)), '');
    row('the same, p99', ms(quantile(delays, 0.99)), '≤ 10 ms');
    await server.stop();
  }

  // 2. PostgreSQL: the same process, and another process of one database.
  const found = findPostgres();
  if ('missing' in found) row('PostgreSQL', `not measured: ${found.missing}`, '');
  else {
    const cluster = await startCluster(found.bin);
    try {
      const url = cluster.url(await cluster.createDatabase('streams'));
      const a = await startServer(['--store', url, '--data', await dataDir(), '--resource', 'items']);
      const b = await startServer(['--store', url, '--data', await dataDir(), '--resource', 'items']);
      await post(a);
      const own = await visibility(a, a, WRITES);
      const other = await visibility(a, b, WRITES);
      row(`write → event on a stream of its process, PostgreSQL (${WRITES} sequential POSTs), p50`, ms(median(own)), '');
      row('the same, p99', ms(quantile(own, 0.99)), '≤ 10 ms');
      row(`write on process A → event on a stream of process B, one PostgreSQL, p50`, ms(median(other)), '');
      row('the same, p99', ms(quantile(other, 0.99)), '≤ 100 ms');
      await a.stop();
      await b.stop();
    } finally {
      await cluster.stop();
    }
  }

  // 3. Idle streams: RSS per stream, one write reaching all.
  const clients = new Clients();
  try {
    const server = await startServer(['--data', await dataDir(), '--resource', 'items']);
    for (let i = 0; i < 50; i++) await post(server);
    await sleep(500);
    const before = rssKiB(server.pid);
    await clients.open(server, IDLE);
    await sleep(1000);
    const after = rssKiB(server.pid);
    row(`server RSS per idle stream (${IDLE.toLocaleString('en')} open, clients in another process)`, `${((after - before) / IDLE).toFixed(1)} KiB`, '≤ 30 KiB');
    const reach: number[] = [];
    const serverCpu = cpuSeconds(server.pid);
    const clientsCpu = cpuSeconds(clients.pid);
    for (let i = 0; i < FAN_OUT_WRITES; i++) {
      let reached: number | undefined;
      let ids = 0;
      const all = new Promise<void>((resolve) => {
        clients.onAll = () => {
          ids++;
          reached = performance.now();
          resolve();
        };
      });
      const acked = await post(server);
      await all;
      if (ids !== 1) throw new Error('one write, one event');
      reach.push(reached! - acked);
    }
    clients.onAll = undefined;
    row(`one write reaching all ${IDLE.toLocaleString('en')} streams, from its answer (${FAN_OUT_WRITES} writes), p50`, ms(median(reach)), '');
    row('the same, p99 (the worst)', ms(quantile(reach, 0.99)), '≤ 200 ms');
    row(
      'CPU per write reaching them all: the server (POST and sending) / the clients\' process (reading)',
      `${(((cpuSeconds(server.pid) - serverCpu) * 1000) / FAN_OUT_WRITES).toFixed(0)} ms / ${(((cpuSeconds(clients.pid) - clientsCpu) * 1000) / FAN_OUT_WRITES).toFixed(0)} ms`,
      '',
    );
    await clients.close();
    await server.stop();

    // 4. The durable POST rate with streams open against none.
    const rated = await startServer(['--data', await dataDir(), '--resource', 'items']);
    for (let i = 0; i < 50; i++) await post(rated);
    const none: { rate: number; cpuMs: number }[] = [];
    const withStreams: { rate: number; cpuMs: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      none.push(await postRate(rated));
      await clients.open(rated, WITH_STREAMS);
      withStreams.push(await postRate(rated));
      await clients.close();
    }
    const rates = none.map((n, i) => withStreams[i]!.rate / n.rate);
    const capacity = none.map((n, i) => n.cpuMs / withStreams[i]!.cpuMs);
    row(`durable POSTs/s, ${CONNECTIONS} connections, no stream (median of ${ROUNDS} rounds of ${SECONDS} s)`, median(none.map((r) => r.rate)).toFixed(0), '');
    row(`the same with ${WITH_STREAMS.toLocaleString('en')} streams open (every POST an event to each)`, median(withStreams.map((r) => r.rate)).toFixed(0), '');
    row('ratio of the rates (median of per-round ratios)', `${median(rates).toFixed(2)}×`, '≥ 0.9×');
    row('server CPU per POST, no stream → with the streams (median)', `${median(none.map((r) => r.cpuMs)).toFixed(3)} → ${median(withStreams.map((r) => r.cpuMs)).toFixed(3)} ms`, '');
    row('the server\'s capacity ratio (CPU per POST without / with, median of per-round ratios)', `${median(capacity).toFixed(2)}×`, '');
    await rated.stop();
  } finally {
    clients.end();
  }
} finally {
  agent.destroy();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
}

process.stdout.write(
  [
    `Load average (1, 5, 15 min) before: ${loadBefore}; after: ${load()}; ${os.availableParallelism()} cores, Node ${process.version}.`,
    '',
    '| figure | value | target |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n'),
);
