/**
 * What halserve's own request listener costs, without node:http's path around it:
 * `node --import tsx bench/handler-cost.ts hot|uniform|page-20|page-200` (`SRC=<dir>` times another
 * build's `dist/`, e.g. a copy made before a change; `RL=1` turns the rate limiter on; `LOADED=1` serves
 * entities loaded from the file, as a restarted server does, instead of written by the process).
 *
 * One process: a JSON-lines store of 10,000 entities (durability none), `createHandler` with a
 * static token, and stand-ins for node:http's request (fresh header strings each time, as the
 * parser makes them) and response (its `writeHead` joins the header list as Node does, its `end`
 * takes the body). Prints CPU ns per request, the median of 7 runs of 300,000 requests, beside a
 * null listener that writes the same head and body through the same stand-ins (runs interleaved):
 * the difference is halserve's own work per request.
 */
import fs from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import os from 'node:os';
import path from 'node:path';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
const src = process.env['SRC'] ?? new URL('../dist', import.meta.url).pathname;
const { createHandler } = (await import(`${src}/http/app.js`)) as { createHandler: (options: unknown) => Handler };
const { openJsonlStore } = (await import(`${src}/store/log/jsonl-store.js`)) as typeof import('../src/store/log/jsonl-store.js');
const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-handler-cost-'));
const file = path.join(dir, 'items.jsonl');
let store = await openJsonlStore({ file, durability: 'none', compaction: { auto: false } });
const ids: string[] = [];
for (let i = 0; i < 10_000; i++) {
  const entity = await store.create({ id: `id${i}x${(i * 7919).toString(36)}abcdefgh`, createdAt: 1, updatedAt: 1, name: `item ${i}`, price: i, tags: ['a', 'b'], description: 'x'.repeat(150) });
  ids.push(entity.id);
}
if (process.env['LOADED']) {
  // As a restarted server holds them: entities read from the file, not written by this process.
  await store.close();
  store = await openJsonlStore({ file, durability: 'none', compaction: { auto: false } });
}
const token = 'bench-3f9c2a7d41e85b06c1d9e4f2a8b7c530';
const handler = createHandler({ resources: [{ name: 'items', store }], tokens: [token], ...(process.env['RL'] ? { rateLimit: 1e6 } : {}) });
const kind = process.argv[2] ?? 'hot';
const urls =
  kind === 'hot' ? [`/items/${ids[5000]}`]
  : kind === 'uniform' ? ids.map((id) => `/items/${id}`)
  : Array.from({ length: 20 }, (_, i) => `/items?page=${1 + i * 10}&limit=${kind === 'page-200' ? 200 : 20}`);
let written = 0;
let status = 0;
let lastHead: readonly string[] = [];
let lastBody: Buffer | undefined;
const res = {
  headersSent: false,
  statusCode: 200,
  writeHead(code: number, headers: readonly string[]) {
    status = code;
    lastHead = headers;
    let text = '';
    for (let i = 0; i < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
    written += Buffer.byteLength(text);
    return this;
  },
  end(body?: Buffer) {
    lastBody = body;
    written += body ? body.length : 0;
  },
  once() {},
  on() {},
  destroy() {},
} as unknown as ServerResponse;
const requests = urls.map((url) => ({ method: 'GET', url, httpVersionMinor: 1, complete: true, socket: { remoteAddress: '127.0.0.1' } }));
const N = 300_000;
const run = async (handler: Handler): Promise<void> => {
  for (let i = 0; i < N; i++) {
    const r = requests[i % requests.length]!;
    const authorization = `Bearer ${token}`;
    const headers = { host: '127.0.0.1:3000', accept: 'application/json', authorization };
    handler({ ...r, headers, rawHeaders: ['Host', headers.host, 'Accept', headers.accept, 'Authorization', authorization] } as unknown as IncomingMessage, res);
    if ((i & 1023) === 0) await null;
  }
};
await run(handler);
// The null listener: the last response's head and body, written again for every request.
const nullHead = [...lastHead];
const nullBody = lastBody;
const nullListener: Handler = (_req, out) => {
  out.writeHead(200, nullHead as string[]);
  out.end(nullBody);
};
await run(nullListener);
const cpu = async (listener: Handler): Promise<number> => {
  const before = process.cpuUsage();
  await run(listener);
  await new Promise((resolve) => setImmediate(resolve));
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / N;
};
const times: number[] = [];
const nulls: number[] = [];
const own: number[] = [];
for (let k = 0; k < 7; k++) {
  const t = await cpu(handler);
  const z = await cpu(nullListener);
  times.push(t);
  nulls.push(z);
  own.push(t - z);
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[3]!;
console.log(
  `${kind}: ${median(times).toFixed(0)} ns/req (min ${Math.min(...times).toFixed(0)}), null listener ${median(nulls).toFixed(0)}, halserve's own ${median(own).toFixed(0)} ns/req; status ${status}, ${written > 0 ? 'written' : 'nothing written'}`,
);
await store.close();
await fs.rm(dir, { recursive: true, force: true });
