// ns per request inside halserve's request listener (fake req/res): node:http's own work excluded.
import os from 'node:os';
import fs from 'node:fs/promises';
import path from 'node:path';
const src = process.env['SRC'] ?? new URL('../dist', import.meta.url).pathname;
const { createHandler } = await import(`${src}/http/app.js`);
const { openJsonlStore } = await import(`${src}/store/log/jsonl-store.js`);
const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'hp-hc-'));
const store = await openJsonlStore({ file: path.join(dir, 'items.jsonl'), durability: 'none', compaction: { auto: false } });
const ids: string[] = [];
for (let i = 0; i < 10000; i++) { const e = await store.create({ id: `id${i}x${(i * 7919).toString(36)}abcdefgh`, createdAt: 1, updatedAt: 1, name: `item ${i}`, price: i, tags: ['a', 'b'], description: 'x'.repeat(150) }); ids.push(e.id); }
const token = 'bench-3f9c2a7d41e85b06c1d9e4f2a8b7c530';
const handler = createHandler({ resources: [{ name: 'items', store }], tokens: [token], ...(process.env['RL'] ? { rateLimit: 1e6 } : {}) });
const kind = process.argv[2] ?? 'hot';
const urls = kind === 'hot' ? [`/items/${ids[5000]}`] : kind === 'uniform' ? ids.map((id) => `/items/${id}`) : Array.from({ length: 20 }, (_, i) => `/items?page=${1 + i * 10}&limit=${kind === 'page-200' ? 200 : 20}`);
let sink = 0;
const res: any = { headersSent: false, statusCode: 200, writeHead(s: number, h: any) { this.statusCode = s; let t = ''; if (Array.isArray(h)) for (let i = 0; i < h.length; i += 2) t += `${h[i]}: ${h[i + 1]}\r\n`; else for (const k in h) t += `${k}: ${h[k]}\r\n`; sink += Buffer.byteLength(t); return this; }, end(b?: Buffer) { sink += b ? b.length : 0; }, once() {}, on() {}, destroy() {} };
const reqs = urls.map((url) => ({ method: 'GET', url, headers: { host: '127.0.0.1:3000', accept: 'application/json', authorization: `Bearer ${token}` }, rawHeaders: ['Host', '127.0.0.1:3000', 'Accept', 'application/json', 'Authorization', `Bearer ${token}`], httpVersionMinor: 1, complete: true, socket: { remoteAddress: '127.0.0.1' } }));
const N = 300_000;
const run = async () => { for (let i = 0; i < N; i++) { const r = reqs[i % reqs.length]!; handler({ ...r, headers: { ...r.headers, authorization: `Bearer ${token}`.slice(0) } } as any, res); if ((i & 1023) === 0) await null; } };
await run(); await new Promise((r) => setTimeout(r, 50));
const times: number[] = [];
for (let k = 0; k < 7; k++) { const t = process.cpuUsage(); await run(); await new Promise((r) => setImmediate(r)); const u = process.cpuUsage(t); times.push(((u.user + u.system) * 1000) / N); }
times.sort((a, b) => a - b);
console.log(`${kind}: ${times[3]!.toFixed(0)} ns/req (min ${times[0]!.toFixed(0)}), status ${res.statusCode}, sink ${sink > 0}`);
await store.close(); await fs.rm(dir, { recursive: true, force: true });
process.exit(0);
