/**
 * What many resources cost a server's start and its first requests, on real CLI processes:
 *
 *   node --import tsx bench/startup-resources.ts <rounds> <counts, e.g. 1,20,80,200> [--big N] <server entry>...
 *
 * For each count, a temporary data directory of that many resources, each with the demo
 * catalogue's schema and three `x-link`s to others and 5 entities (with `--big N`, the first
 * resource holds N instead); stamped by one start before measuring. Entries are built `cli.js`
 * files (a copy of `dist/` made before a change), measured interleaved (each round starts one
 * later: A B, B A, …) so that every build sees the same background load. Per start:
 * - spawn to the first `/readyz` 200 (polled every 2 ms; refused until the port is open), and the
 *   server's CPU time by then (which the machine's load does not stretch);
 * - RSS once ready, and after the first requests;
 * - the first `GET /`, `/openapi.json` (identity and `br`; and the identity one's end since the
 *   spawn, with the CPU by then), a HAL-FORMS entity and collection, the browser's shell: time to the last byte and size;
 * - the longest answer of `/healthz`, polled every 3 ms from ready until the first requests are
 *   done (the loop's longest hold a client sees), and the server's own
 *   `halserve_event_loop_delay_seconds{stat="max"}` at the end (since its process began: the
 *   holds before it listened, which no client sees, included).
 * Prints each start's figures, then per count and entry the medians. Quote them with the load.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { cpuSeconds, memoryMiB } from './proc.js';

const args = process.argv.slice(2);
const bigAt = args.indexOf('--big');
const big = bigAt === -1 ? 0 : Number(args.splice(bigAt, 2)[1]);
const [roundsText = '3', countsText = '1,20,80,200', ...entries] = args;
if (entries.length === 0) {
  console.error('usage: node --import tsx bench/startup-resources.ts <rounds> <counts> [--big N] <cli.js>...');
  process.exit(1);
}
const rounds = Number(roundsText);
const counts = countsText.split(',').map(Number);
const root = path.resolve(import.meta.dirname, '..');
const base = JSON.parse(readFileSync(path.join(root, 'data', 'products.schema.json'), 'utf8')) as { properties: Record<string, Record<string, unknown>> };
const tmp = mkdtempSync(path.join(tmpdir(), 'halserve-startup-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const name = (i: number, n: number): string => `r${String(i % n).padStart(3, '0')}`;
const ENTITIES = 5;

/** A data directory of `n` resources, each linking to three others. */
function dataDir(n: number): string {
  const dir = path.join(tmp, `d${n}${big > 0 ? `-big${big}` : ''}`);
  mkdirSync(dir);
  for (let i = 0; i < n; i++) {
    const schema = structuredClone(base);
    schema.properties['category'] = { ...schema.properties['category'], 'x-link': name(i + 1, n) };
    schema.properties['owner'] = { type: 'string', description: 'Another resource this one links to.', 'x-link': name(i + 7, n) };
    schema.properties['parent'] = { type: 'string', 'x-link': name(i + 13, n) };
    writeFileSync(path.join(dir, `${name(i, n)}.schema.json`), JSON.stringify(schema));
    const entities = i === 0 && big > 0 ? big : ENTITIES;
    const lines: string[] = [];
    for (let e = 0; e < entities; e++) {
      const ref = `e${e % ENTITIES}`;
      lines.push(
        JSON.stringify({
          id: `e${e}`,
          createdAt: 1764000000,
          updatedAt: 1764000000 + e,
          sku: `ABC-${String(e % 100000).padStart(5, '0')}`,
          name: `Thing ${e}`,
          brand: 'Acme',
          category: ref,
          owner: ref,
          parent: ref,
          price: (e % 1000) + 0.5,
          currency: 'EUR',
          stock: e % 50,
          status: 'active',
        }),
      );
    }
    writeFileSync(path.join(dir, `${name(i, n)}.jsonl`), `${lines.join('\n')}\n`);
  }
  return dir;
}

interface Answer {
  status: number;
  bytes: number;
  ms: number;
}

function get(port: number, target: string, headers: Record<string, string> = {}, agent?: Agent): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: target, headers, ...(agent ? { agent } : {}) }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Start {
  ready: number;
  rssReady: number;
  rssAfter: number;
  index: Answer;
  openapi: Answer;
  /** From the spawn to the first `/openapi.json`'s last byte. */
  openapiAt: number;
  /** CPU the server used from its spawn to then (ms, 10 ms ticks): the load on the machine does not stretch it. */
  openapiCpu: number;
  /** CPU used from its spawn to ready (ms). */
  readyCpu: number;
  openapiBr: Answer;
  forms: Answer;
  formsPage: Answer;
  shell: Answer;
  healthzMax: number;
  healthzCount: number;
  loopMax: number;
}

async function start(entry: string, dir: string, n: number): Promise<Start> {
  const spawned = performance.now();
  const child = spawn(process.execPath, [entry, '--port', '0', '--host', '127.0.0.1', '--data', dir, '--log', 'off'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  // The port is known from the line only: read it, then poll /readyz (timed from the spawn either way).
  let port = 0;
  for (;;) {
    const match = /listening on http:\/\/[^\s:]+:(\d+)/.exec(out);
    if (match) {
      port = Number(match[1]);
      break;
    }
    if (child.exitCode !== null) throw new Error(`exited: ${err}`);
    await sleep(1);
  }
  for (;;) {
    const answer = await get(port, '/readyz').catch(() => undefined);
    if (answer?.status === 200) break;
    await sleep(2);
  }
  const ready = performance.now() - spawned;
  const readyCpu = cpuSeconds(child.pid!) * 1000;
  const rssReady = memoryMiB(child.pid!).rss;
  // /healthz every 3 ms on its own connection, while the first requests go.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let polling = true;
  let healthzMax = 0;
  let healthzCount = 0;
  const poller = (async () => {
    while (polling) {
      const answer = await get(port, '/healthz', {}, agent);
      healthzMax = Math.max(healthzMax, answer.ms);
      healthzCount++;
      await sleep(3);
    }
  })();
  const index = await get(port, '/', { accept: 'application/hal+json' });
  const openapi = await get(port, '/openapi.json');
  const openapiAt = performance.now() - spawned;
  const openapiCpu = cpuSeconds(child.pid!) * 1000;
  const openapiBr = await get(port, '/openapi.json', { 'accept-encoding': 'br' });
  const forms = await get(port, `/${name(0, n)}/e1`, { accept: 'application/prs.hal-forms+json' });
  const formsPage = await get(port, `/${name(1 % n, n)}`, { accept: 'application/prs.hal-forms+json' });
  const shell = await get(port, '/', { accept: 'text/html' });
  await sleep(30);
  polling = false;
  await poller;
  agent.destroy();
  const rssAfter = memoryMiB(child.pid!).rss;
  const metrics = await new Promise<string>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(text));
    })
      .on('error', reject)
      .end();
  });
  const loopMax = 1000 * Number(/halserve_event_loop_delay_seconds\{stat="max"\} (\S+)/.exec(metrics)?.[1] ?? NaN);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  for (const a of [index, openapi, forms, formsPage, shell]) if (a.status !== 200) throw new Error(`status ${a.status}`);
  return { ready, readyCpu, rssReady, rssAfter, index, openapi, openapiAt, openapiCpu, openapiBr, forms, formsPage, shell, healthzMax, healthzCount, loopMax };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const f0 = (v: number): string => v.toFixed(0);
const f1 = (v: number): string => v.toFixed(1);
const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' ');

console.log(`rounds ${rounds}, counts ${counts.join(',')}${big > 0 ? `, ${big} entities in the first` : ''}; load ${load()}`);
const all = new Map<string, Start[]>();
for (const n of counts) {
  const dir = dataDir(n);
  // One start to stamp the lines (a first start on unstamped lines writes them again).
  await start(entries[0]!, dir, n);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < entries.length; k++) {
      const entry = entries[(k + round) % entries.length]!;
      const s = await start(entry, dir, n);
      const key = `${n}\t${entry}`;
      (all.get(key) ?? all.set(key, []).get(key)!).push(s);
      console.log(
        `n=${n} ${entry}: ready ${f0(s.ready)} ms (cpu ${f0(s.readyCpu)}), rss ${f0(s.rssReady)}→${f0(s.rssAfter)} MiB; / ${f1(s.index.ms)} ms ${s.index.bytes} B; openapi ${f1(s.openapi.ms)} ms (at ${f0(s.openapiAt)}, cpu ${f0(s.openapiCpu)}) ${s.openapi.bytes} B, br ${f1(s.openapiBr.ms)} ms ${s.openapiBr.bytes} B; forms entity ${f1(s.forms.ms)} ms ${s.forms.bytes} B, page ${f1(s.formsPage.ms)} ms; shell ${f1(s.shell.ms)} ms; healthz max ${f1(s.healthzMax)} ms (${s.healthzCount}); loop max ${f0(s.loopMax)} ms; load ${load()}`,
      );
    }
  }
}
console.log('\nmedians: count, entry, ready ms, ready cpu ms, rss ready/after MiB, / ms, openapi ms, openapi done since spawn ms, cpu by then ms, openapi br ms, forms entity ms, forms page ms, shell ms, healthz max ms, loop max ms');
for (const [key, starts] of all) {
  const m = (pick: (s: Start) => number): string => f1(median(starts.map(pick)));
  console.log(`${key}\t${m((s) => s.ready)}\t${m((s) => s.readyCpu)}\t${m((s) => s.rssReady)}/${m((s) => s.rssAfter)}\t${m((s) => s.index.ms)}\t${m((s) => s.openapi.ms)}\t${m((s) => s.openapiAt)}\t${m((s) => s.openapiCpu)}\t${m((s) => s.openapiBr.ms)}\t${m((s) => s.forms.ms)}\t${m((s) => s.formsPage.ms)}\t${m((s) => s.shell.ms)}\t${m((s) => s.healthzMax)}\t${m((s) => s.loopMax)}`);
}
console.log(`load ${load()}`);
