/**
 * How long request bodies of costly shapes hold halserve's event loop (issue 8 §4, docs/conventions.md §8):
 * `node --import tsx bench/body-shape.ts`.
 *
 * For each body it starts a server in a child process (a JSON-lines store in a temporary directory,
 * durable writes) and reports, per request, the longest stall of the child's event loop (from
 * `monitorEventLoopDelay`, 1 ms resolution; least, median and worst of the repeats) and the loop's total busy
 * time. Then it sends 8 such bodies at once and measures the worst latency of small unrelated GETs
 * sent one after another meanwhile. Bodies: the old pathological ones (121,838 members in 1 MiB;
 * 1,000,000 members under `--max-body 16MiB`) and the costliest the default limits admit.
 *
 * `HALSERVE_SRC=/path/to/src` measures another copy of the sources (e.g. `git archive main src`),
 * which is how the "before" figures were taken. `BODY_SHAPE_REPEATS` (default 5); `BODY_SHAPE_VALUES` and
 * `BODY_SHAPE_MEMBERS` try other limits; `BODY_SHAPE_ONLY_1MIB=1` or `BODY_SHAPE_ONLY_16MIB=1` runs one half.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULT_MAX_BODY_MEMBERS, DEFAULT_MAX_BODY_VALUES } from '../src/conventions/limits.js';

const HERE = fileURLToPath(import.meta.url);
const SRC = process.env['HALSERVE_SRC'] ?? path.resolve(path.dirname(HERE), '../src');
const REPEATS = Number(process.env['BODY_SHAPE_REPEATS'] ?? 5);
const MIB = 1024 * 1024;

// ---- the server side: one child per --max-body setting ----

type ServerMessage = { port: number } | { maxMs: number; activeMs: number } | 'ok';

async function serve(maxBodyBytes: number): Promise<void> {
  const { createHalServer } = (await import(pathToFileURL(path.join(SRC, 'http/server.ts')).href)) as typeof import('../src/http/server.js');
  const { openDataDir } = (await import(pathToFileURL(path.join(SRC, 'store/log/data-dir.ts')).href)) as typeof import('../src/store/log/data-dir.js');
  const dir = await mkdtemp(path.join(tmpdir(), 'halserve-body-shape-'));
  const dataDir = await openDataDir({ dir, resources: ['items'], durability: 'full', repair: false, warn: () => {} });
  const store = dataDir.stores.get('items');
  if (!store) throw new Error('no store');
  const server = createHalServer({ resources: [{ name: 'items', store }], maxBodyBytes, maxBodyValues: VALUES, maxBodyMembers: MEMBERS });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let since = performance.eventLoopUtilization();
  const send = (message: ServerMessage): boolean => process.send?.(message) ?? false;
  process.on('message', (message: string) => {
    if (message === 'reset') {
      delay.reset();
      since = performance.eventLoopUtilization();
      send('ok');
    } else if (message === 'read') {
      send({ maxMs: delay.max / 1e6, activeMs: performance.eventLoopUtilization(since).active });
    } else if (message === 'exit') {
      server.close();
      void dataDir.close().then(() => rm(dir, { recursive: true, force: true })).then(() => process.exit(0));
    }
  });
  server.listen(0, '127.0.0.1', () => send({ port: (server.address() as AddressInfo).port }));
}

// ---- the client side ----

interface Child {
  readonly port: number;
  ask(message: string): Promise<ServerMessage>;
  stop(): Promise<void>;
}

async function startChild(maxBodyBytes: number): Promise<Child> {
  const child: ChildProcess = fork(HERE, ['server', String(maxBodyBytes)], { execArgv: ['--import', 'tsx', '--max-old-space-size=4096'], stdio: 'inherit' });
  const next = (): Promise<ServerMessage> => new Promise((resolve) => child.once('message', (m) => resolve(m as ServerMessage)));
  const first = await next();
  if (typeof first !== 'object' || !('port' in first)) throw new Error('the server did not start');
  return {
    port: first.port,
    ask: (message) => {
      const answer = next();
      child.send(message);
      return answer;
    },
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.send('exit');
      }),
  };
}

interface Answer {
  readonly status: number | 'reset';
  readonly ms: number;
}

/** One request; an upload cut short by the server (a 413 closes the connection) still yields its status. */
function send(port: number, method: string, urlPath: string, body?: Buffer): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    let status: number | 'reset' = 'reset';
    const headers: Record<string, string | number> = body ? { 'content-type': 'application/json', 'content-length': body.length } : {};
    const req = request({ host: '127.0.0.1', port, method, path: urlPath, headers, agent: false }, (res: IncomingMessage) => {
      status = res.statusCode ?? 0;
      res.resume();
      res.on('end', () => resolve({ status, ms: performance.now() - started }));
    });
    req.on('error', () => resolve({ status, ms: performance.now() - started }));
    req.end(body);
  });
}

/** POSTs `body` and answers the new entity's path. */
function location(port: number, body: Buffer): Promise<string> {
  return new Promise<string>((resolve) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/items', headers: { 'content-type': 'application/json' } }, (res) => {
      resolve(String(res.headers.location));
      res.resume();
    });
    req.end(body);
  });
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const fixed = (n: number): string => (n >= 100 ? n.toFixed(0) : n.toFixed(1));

interface Body {
  readonly label: string;
  readonly make: () => string;
  /** Sent as a merge patch to an entity created from this body, instead of a POST. */
  readonly patchOnto?: () => string;
}

/** `{"<prefix>0":0,…}`: `n` members with distinct names. */
const members = (n: number, prefix = 'k', plus = 0): Record<string, number> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i + plus]));

/** `{"0":0,"1":0,…,"a":0,…}`: names in base 36: 121,838 members come to just under 1 MiB, the issue's body. */
const base36 = (count: number): string => JSON.stringify(Object.fromEntries(Array.from({ length: count }, (_, i) => [i.toString(36), 0])));
const OLD_1MIB: Body = { label: '121,838 members (the issue\'s body)', make: () => base36(121_838) };
const OLD_16MIB: Body = { label: '1,000,000 members (the issue\'s body)', make: () => base36(1_000_000) };

const VALUES = Number(process.env['BODY_SHAPE_VALUES'] ?? DEFAULT_MAX_BODY_VALUES);
const MEMBERS = Number(process.env['BODY_SHAPE_MEMBERS'] ?? DEFAULT_MAX_BODY_MEMBERS);
const n = (x: number): string => x.toLocaleString('en');

/** The costliest shapes within VALUES values, MEMBERS members per object and `bytes`: names all distinct, since each costs V8 a property. */
function admitted(bytes: number): Body[] {
  // The top object's members, each an object of `inner` members: 1 + top + top × inner values.
  const top = Math.min(MEMBERS, Math.floor((VALUES - 1) / 2));
  const inner = Math.min(MEMBERS, Math.floor((VALUES - 1 - top) / top));
  // Objects of MEMBERS members under the top object: 1 + groups × (1 + MEMBERS) values.
  const groups = Math.max(1, Math.min(MEMBERS, Math.floor((VALUES - 1) / (MEMBERS + 1))));
  const perGroup = Math.min(MEMBERS, VALUES - 1 - groups);
  const strings = VALUES - 2;
  const escaped = (length: number): string => '\\u00e9'.repeat(Math.floor(length / 6)).padEnd(length, 'x');
  return [
    {
      label: `${n(top)} top-level members, each an object of ${inner}`,
      make: () => JSON.stringify(Object.fromEntries(Array.from({ length: top }, (_, i) => [`member-${i}`, members(inner, `m${i}-`)]))),
    },
    {
      label: `${groups} objects of ${n(perGroup)} members`,
      make: () => JSON.stringify(Object.fromEntries(Array.from({ length: groups }, (_, i) => [`o${i}`, members(perGroup, `name-${i}-`)]))),
    },
    { label: `${n(strings)} numbers in one array`, make: () => `{"a":[${Array.from({ length: strings }, (_, i) => i * 1.5).join(',')}]}` },
    {
      label: `${n(strings)} strings of \\u escapes filling the limit`,
      make: () => `{"a":[${new Array(strings).fill(`"${escaped(Math.floor((bytes - 16) / strings) - 3)}"`).join(',')}]}`,
    },
    { label: 'one string filling the limit', make: () => `{"s":"${'x'.repeat(bytes - 8)}"}` },
    {
      label: `PATCH of ${groups} objects of ${n(perGroup)} members onto an entity of the same shape`,
      make: () => JSON.stringify(Object.fromEntries(Array.from({ length: groups }, (_, i) => [`o${i}`, members(perGroup, `name-${i}-`)]))),
      patchOnto: () => JSON.stringify(Object.fromEntries(Array.from({ length: groups }, (_, i) => [`o${i}`, members(perGroup, `name-${i}-`, 1)]))),
    },
  ];
}

/** Per-request stalls of one body, sent `REPEATS` times one at a time. */
async function measureOne(child: Child, method: string, target: string, body: Buffer): Promise<{ status: Answer['status']; stall: number[]; busy: number[] }> {
  const stall: number[] = [];
  const busy: number[] = [];
  let status: Answer['status'] = 'reset';
  for (let i = 0; i < REPEATS; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    await child.ask('reset');
    status = (await send(child.port, method, target, body)).status;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const read = (await child.ask('read')) as { maxMs: number; activeMs: number };
    stall.push(read.maxMs);
    busy.push(read.activeMs);
  }
  return { status, stall, busy };
}

/** 8 POSTs of `body` at once; meanwhile small GETs one after another: the worst GET latency. */
async function measureConcurrent(child: Child, method: string, target: string, body: Buffer, getPath: string): Promise<{ worstGetMs: number; gets: number }> {
  let done = false;
  const posts = Promise.all(Array.from({ length: 8 }, () => send(child.port, method, target, body))).then(() => (done = true));
  let worst = 0;
  let gets = 0;
  while (!done) {
    const { ms } = await send(child.port, 'GET', getPath);
    worst = Math.max(worst, ms);
    gets++;
  }
  await posts;
  return { worstGetMs: worst, gets };
}

async function run(maxBodyBytes: number, bodies: readonly Body[]): Promise<void> {
  const child = await startChild(maxBodyBytes);
  try {
    // An unrelated entity to GET, and a warm-up of every path.
    const created = await location(child.port, Buffer.from('{"name":"unrelated"}'));
    for (let i = 0; i < 50; i++) await send(child.port, 'GET', created);
    await child.ask('reset');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const idle = (await child.ask('read')) as { maxMs: number };
    console.log(`\n--max-body ${maxBodyBytes} (${(maxBodyBytes / MIB).toFixed(0)} MiB), server ${SRC}; idle loop's longest stall over 0.5 s: ${fixed(idle.maxMs)} ms`);
    console.log('| body | status | longest stall, min / median / worst ms | loop busy per request, median ms | worst GET during 8 at once, ms |');
    console.log('|---|---:|---:|---:|---:|');
    for (const { label, make, patchOnto } of bodies) {
      let body = Buffer.from(make());
      let [method, target] = ['POST', '/items'];
      if (patchOnto) {
        const { status } = await send(child.port, 'POST', '/items', body);
        if (status !== 201) throw new Error(`the entity to patch was refused: ${status}`);
        target = await location(child.port, body);
        [method, body] = ['PATCH', Buffer.from(patchOnto())];
      }
      const one = await measureOne(child, method, target, body);
      const many = await measureConcurrent(child, method, target, body, created);
      console.log(
        `| ${label} (${(body.length / MIB).toFixed(2)} MiB) | ${one.status} | ${fixed(Math.min(...one.stall))} / ${fixed(median(one.stall))} / ${fixed(Math.max(...one.stall))} | ${fixed(median(one.busy))} | ${fixed(many.worstGetMs)} (${many.gets} GETs) |`,
      );
    }
  } finally {
    await child.stop();
  }
}

if (process.argv[2] === 'server') {
  await serve(Number(process.argv[3]));
} else {
  console.log(`Admitted bodies within ${n(VALUES)} values and ${n(MEMBERS)} members per object.`);
  if (!process.env['BODY_SHAPE_ONLY_16MIB']) await run(MIB, [OLD_1MIB, ...admitted(MIB)]);
  if (!process.env['BODY_SHAPE_ONLY_1MIB']) await run(16 * MIB, [OLD_16MIB, ...admitted(16 * MIB)]);
}
