// The load generator, run as its own process (pinned to its own core by the harness): autocannon
// against one server, a warm-up first and then the measured run.
//
// Usage: node bench/load.mjs <job.json>
// <job.json>: { url, connections, warmup, duration, rate?, order?, requests: [{ method, path, headers, body }] }
//   rate: requests per second for all connections together (a diagnostic: CPU per request at equal load)
//   fresh: the name of a header every request gets with a value of its own: `idempotency-key` (a
//     fresh key each time, as a client that retries only on failure sends), or one the server does
//     not read (`x-request-nonce`, as long), so that the unkeyed POSTs it is compared with are the
//     same bytes, built by the same code of the load generator, at the same cost to it
// Protocol on stdout, one JSON object per line:
//   {"event":"ready"}                 warm-up done; waits for a line "go" on stdin
//   {"event":"done","result":{...}}   measured run finished
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// autocannon lives in the ignored .bench folder, never in the project's dependencies.
const autocannon = createRequire(path.join(root, '.bench', 'package.json'))('autocannon');

const job = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8'));

// `order: "global"`: the connections share one walk through the requests (each request goes out once
// before any goes out again), instead of each connection walking the list from its start.
let next = 0;
const shared = [{ setupRequest: (request) => ({ ...request, ...job.requests[next++ % job.requests.length] }) }];
// `fresh: <header>`: that header with a value of its own on every request, unique across runs of this
// process. autocannon then builds each request afresh (setupRequest), which costs the load generator
// ~35 µs a request more than sending a request built once (bench/NOTES.md, 2026-11-28).
let keys = 0;
const prefix = `${process.pid.toString(36)}-${Date.now().toString(36)}`;
const fresh = job.fresh && job.requests.map((r) => ({ ...r, setupRequest: (request) => ({ ...request, headers: { ...request.headers, [job.fresh]: `${prefix}-${(keys++).toString(36)}` } }) }));

function run(seconds) {
  return autocannon({
    url: job.url,
    connections: job.connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
    requests: fresh ? fresh : job.order === 'global' ? shared : job.requests,
    ...(job.rate ? { overallRate: job.rate } : {}),
  });
}

if (job.warmup > 0) await run(job.warmup);
process.stdout.write(JSON.stringify({ event: 'ready' }) + '\n');
const lines = createInterface({ input: process.stdin });
const [line] = await once(lines, 'line');
if (line !== 'go') process.exit(2);

const cpuBefore = process.cpuUsage();
const r = await run(job.duration);
const cpu = process.cpuUsage(cpuBefore);
const result = {
  requests: r.requests.total,
  seconds: r.duration,
  rps: r.requests.total / r.duration,
  p50: r.latency.p50,
  p99: r.latency.p99,
  max: r.latency.max,
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
  bytesPerSecond: r.throughput.average,
  // Share of one core the load generator itself used: near 1 means it, not the server, set the pace.
  loadCpu: (cpu.user + cpu.system) / 1e6 / r.duration,
};
process.stdout.write(JSON.stringify({ event: 'done', result }) + '\n');
lines.close();
