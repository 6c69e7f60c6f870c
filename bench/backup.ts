/**
 * `halserve backup` under load (docs/storage.md §4): a server over N entities (default 200,000, ~60
 * MiB), 8 clients writing as fast as they are answered, and one backup. Reports what the command
 * prints (how long the server's writes waited for the snapshot), how long the copy took, and the
 * write latencies while it ran beside those before it — a figure to read, not a test.
 *
 *   node --import tsx bench/backup.ts [entities]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const entities = Number(process.argv[2] ?? 200_000);
const CLIENTS = 8;

function run(args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', cli, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
const describe = (ms: number[]): string => {
  const sorted = [...ms].sort((a, b) => a - b);
  return `${sorted.length} writes, p50 ${percentile(sorted, 0.5).toFixed(2)} ms, p99 ${percentile(sorted, 0.99).toFixed(2)} ms, max ${sorted.at(-1)?.toFixed(2)} ms`;
};

const root = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-bench-backup-'));
try {
  const data = path.join(root, 'data');
  await fs.mkdir(data);
  const out = createWriteStream(path.join(data, 'products.jsonl'));
  for (let i = 0; i < entities; i++) {
    const line = `${JSON.stringify({ id: `p${i}`, createdAt: 1_700_000_000, updatedAt: 1_700_000_000, name: `product ${i}`, price: i % 1000, text: 'x'.repeat(200) })}\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  await fs.writeFile(path.join(data, 'orders.jsonl'), '');
  const server = run(['--port', '0', '--data', data, '--log', 'off']);
  let url = '';
  for await (const chunk of server.stdout!) {
    const m = /listening on (\S+)/.exec(String(chunk));
    if (m) {
      url = m[1]!;
      break;
    }
  }
  const latencies: { start: number; ms: number }[] = [];
  let stopping = false;
  const clients = Array.from({ length: CLIENTS }, async (_, c) => {
    for (let n = 0; !stopping; n++) {
      const start = performance.now();
      const resource = n % 2 === 0 ? 'orders' : 'products';
      const response = await fetch(`${url}/${resource}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client: c, n }) });
      await response.arrayBuffer();
      latencies.push({ start, ms: performance.now() - start });
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const began = performance.now();
  const backup = run(['backup', '--data', data, '--to', path.join(root, 'copy')]);
  let printed = '';
  backup.stdout!.on('data', (chunk) => (printed += String(chunk)));
  const [code] = (await once(backup, 'exit')) as [number];
  const ended = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 500));
  stopping = true;
  await Promise.all(clients);
  server.kill('SIGTERM');
  await once(server, 'exit');
  const during = latencies.filter((l) => l.start + l.ms >= began && l.start <= ended).map((l) => l.ms);
  const before = latencies.filter((l) => l.start + l.ms < began).map((l) => l.ms);
  const size = (await fs.stat(path.join(data, 'products.jsonl'))).size;
  console.log(`entities: ${entities} (${(size / 1048576).toFixed(1)} MiB), ${CLIENTS} writers; backup exit ${code}`);
  console.log(printed.trim());
  console.log(`the command took ${(ended - began).toFixed(0)} ms (start-up of node and tsx included)`);
  console.log(`writes before the backup: ${describe(before)}`);
  console.log(`writes while it ran:      ${describe(during)}`);
} finally {
  await fs.rm(root, { recursive: true, force: true });
}
