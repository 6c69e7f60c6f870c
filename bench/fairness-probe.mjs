/**
 * The independent probe of `bench/fairness.ts`, a process of its own: `GET /products/<id>` of
 * random sampled ids, one at a time on one kept-alive connection, for a given time; prints the
 * latencies (ms, from sending to the whole answer read) as one JSON line.
 *
 *   node bench/fairness-probe.mjs <port> <seconds> <id>,<id>,…
 */
import { Agent, request } from 'node:http';

const [port, seconds, idList] = process.argv.slice(2);
const ids = idList.split(',');
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const end = performance.now() + Number(seconds) * 1000;
const latencies = [];
let failures = 0;
let seed = 12345;
const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000);

function get(path) {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = request({ host: '127.0.0.1', port: Number(port), path, agent, headers: { accept: 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }));
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    req.end();
  });
}

while (performance.now() < end) {
  const r = await get(`/products/${ids[Math.floor(random() * ids.length)]}`);
  if (r.status === 200) latencies.push(r.ms);
  else failures++;
}
agent.destroy();
process.stdout.write(`${JSON.stringify({ latencies, failures })}\n`);
