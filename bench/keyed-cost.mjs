/**
 * What an `Idempotency-Key` costs a POST in halserve's own work, without node:http's path or a load
 * generator sharing the machine: `node bench/keyed-cost.mjs` after `npm run build` (`SRC=<dir>` times another
 * build's `dist/`; `ROUNDS`, `N`, `CONCURRENCY`, `PRELOAD`; `ONLY=plain|keyed` runs one contender alone, for
 * a profiler).
 *
 * One process: a JSON-lines store per contender (durability full, as deployed), `createHandler`
 * with a static token, and stand-ins for node:http's request (fresh header strings each time, the
 * body as one chunk) and response. `CONCURRENCY` requests are in flight at once, so the store's
 * group commit batches them as it does under load. Two contenders, in rounds that alternate which
 * goes first: POSTs with `X-Request-Nonce` (the same bytes, no key) and POSTs with a fresh
 * `Idempotency-Key`. Prints the median CPU µs per request of each, and the median of the rounds'
 * ratios (nonce ÷ keyed: 1.00 is a key that costs nothing).
 *
 * Plain JavaScript, run without tsx: tsx's loader compiles every module it loads, `dist/` too, and
 * its output names each function it makes (esbuild's `keepNames`), which cost the keyed path ~2 µs a
 * request that the deployed server does not pay.
 *
 * A diagnostic, not the target's measurement: issue 17's row is `npm run bench`'s, as deployed.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { postBodyBytes } from './post-body.mjs';

const src = process.env['SRC'] ?? new URL('../dist', import.meta.url).pathname;
const { createHandler } = (await import(`${src}/http/app.js`));
const { openJsonlStore } = (await import(`${src}/store/log/jsonl-store.js`));
const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-keyed-cost-'));
const nonceStore = await openJsonlStore({ file: path.join(dir, 'plain.jsonl'), durability: 'full' });
const keyedStore = await openJsonlStore({ file: path.join(dir, 'keyed.jsonl'), durability: 'full' });
const token = 'bench-3f9c2a7d41e85b06c1d9e4f2a8b7c530';
const handler = createHandler({ resources: [{ name: 'plain', store: nonceStore }, { name: 'keyed', store: keyedStore }], tokens: [token] });
// The body every POST workload of `npm run bench` sends (bench/dataset.ts).
const body = postBodyBytes();
const N = Number(process.env['N'] ?? 20_000);
const ROUNDS = Number(process.env['ROUNDS'] ?? 9);
const CONCURRENCY = Number(process.env['CONCURRENCY'] ?? 50);
const prefix = `${process.pid.toString(36)}-${Date.now().toString(36)}`;
let serial = 0;
const statuses = new Map();

/** One POST through the handler; resolves when its response has ended. */
function post(resource) {
  return new Promise((resolve) => {
    const listeners = new Map();
    const emit = (event, ...args) => {
      for (const listener of listeners.get(event) ?? []) listener(...args);
    };
    const authorization = `Bearer ${token}`;
    const fresh = `${prefix}-${(serial++).toString(36)}`;
    const header = resource === 'keyed' ? 'idempotency-key' : 'x-request-nonce';
    const headers = { host: '127.0.0.1:3000', accept: 'application/json', 'content-type': 'application/json', 'content-length': String(body.length), authorization, [header]: fresh };
    const rawHeaders = ['Host', headers.host, 'Accept', headers.accept, 'Content-Type', headers['content-type'], 'Content-Length', headers['content-length'], 'Authorization', authorization, header, fresh];
    let flowing = false;
    const req = {
      method: 'POST',
      url: `/${resource}`,
      httpVersionMajor: 1,
      httpVersionMinor: 1,
      httpVersion: '1.1',
      complete: false,
      headers,
      rawHeaders,
      socket: { remoteAddress: '127.0.0.1' },
      on(event, listener) {
        listeners.set(event, [...(listeners.get(event) ?? []), listener]);
        if (event === 'data' && !flowing) {
          flowing = true;
          setImmediate(() => {
            emit('data', body);
            req.complete = true;
            emit('end');
          });
        }
        return req;
      },
      once(event, listener) {
        return req.on(event, listener);
      },
      removeListener() {
        return req;
      },
      off() {
        return req;
      },
      resume() {
        return req;
      },
    };
    const res = {
      headersSent: false,
      statusCode: 200,
      writeHead(code) {
        statuses.set(code, (statuses.get(code) ?? 0) + 1);
        res.headersSent = true;
        return res;
      },
      setHeader() {},
      getHeader() {
        return undefined;
      },
      end() {
        resolve();
      },
      once() {},
      on() {},
      destroy() {},
    };
    handler(req, res);
  });
}

/** Whether every request was answered 201: a figure of requests refused measures the refusal, not the key. */
function allCreated() {
  return [...statuses.keys()].every((status) => status === 201);
}

async function run(resource, n) {
  let started = 0;
  const lane = async () => {
    while (started < n) {
      started++;
      await post(resource);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
}

async function cpu(resource) {
  const before = process.cpuUsage();
  await run(resource, N);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / N;
}

const only = process.env['ONLY'];
if (only === 'plain' || only === 'keyed') {
  // For a profiler: one contender alone, warmed and then timed.
  await run(only, Number(process.env['PRELOAD'] ?? N));
  const used = await cpu(only);
  console.log(`${only}: ${used.toFixed(1)} µs/req; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  process.exit(allCreated() ? 0 : 1);
}
// Warm-up, and the state a server reaches that has taken keyed writes for a while: `PRELOAD`
// requests of each contender first (default 150,000: past the 100,000 answers a store keeps, so
// the table of answers is full and lets go of its oldest as each new one comes).
const PRELOAD = Number(process.env['PRELOAD'] ?? 150_000);
await run('plain', Math.max(N, PRELOAD));
await run('keyed', Math.max(N, PRELOAD));
const plain = [];
const keyed = [];
const ratios = [];
for (let round = 0; round < ROUNDS; round++) {
  const first = round % 2 === 0 ? 'plain' : 'keyed';
  const a = await cpu(first);
  const b = await cpu(first === 'plain' ? 'keyed' : 'plain');
  const [p, k] = first === 'plain' ? [a, b] : [b, a];
  plain.push(p);
  keyed.push(k);
  ratios.push(p / k);
  console.log(`round ${round + 1}: nonce ${p.toFixed(1)} µs, keyed ${k.toFixed(1)} µs, ${(p / k).toFixed(3)}×`);
}
const median = (xs) => {
  const sorted = [...xs].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)];
};
console.log(`median: nonce ${median(plain).toFixed(1)} µs/req, keyed ${median(keyed).toFixed(1)} µs/req, keyed costs ${(median(keyed) - median(plain)).toFixed(1)} µs more; ratio ${median(ratios).toFixed(3)}×; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
await nonceStore.close();
await keyedStore.close();
if (!allCreated()) {
  console.error(`keyed-cost: not every request was answered 201: ${JSON.stringify(Object.fromEntries(statuses))}`);
  process.exitCode = 1;
}
await fs.rm(dir, { recursive: true, force: true });
