/**
 * What `/openapi.json` costs a server of many resources when JWTs limit tokens to some of them
 * (docs/auth.md §2): `node --import tsx bench/openapi-cost.ts [resources=80] [sets=24]`.
 *
 * A real CLI server (`src/cli.ts`, or `BENCH_HALSERVE=dist/cli.js`, or another tree's `src/cli.ts`) over a temporary directory of
 * `resources` resources, each with the demo catalogue's schema and two links to others; JWTs minted
 * with jose (as test/integration/jwt.test.ts does), each with the `<resource>:read` scopes of half
 * the resources, `sets` different sets. It reports:
 * - the document's size (identity, and as sent to `Accept-Encoding: br` / `gzip`);
 * - per request, the time to the last byte of the first request of a set (the document is built)
 *   and of a later one (kept), medians;
 * - during bursts (8 at once), the latency of `/healthz` polled every 2 ms, which waits while the
 *   event loop is held: a burst of first requests (every set new) and one of kept documents with
 *   `Accept-Encoding: br`, as a browser or an SDK generator sends.
 * Load on the machine shows in the figures: quote them with it.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir, loadavg } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

const RESOURCES = Number(process.argv[2] ?? 80);
const SETS = Number(process.argv[3] ?? 24);
const ISSUER = 'https://idp.bench.example/';
const AUDIENCE = 'halserve-bench';
const root = path.resolve(import.meta.dirname, '..');

const dir = mkdtempSync(path.join(tmpdir(), 'halserve-openapi-'));
const data = path.join(dir, 'data');
const base = JSON.parse(readFileSync(path.join(root, 'data', 'products.schema.json'), 'utf8')) as { properties: Record<string, Record<string, unknown>> };
const name = (i: number): string => `r${String(i % RESOURCES).padStart(3, '0')}`;
mkdirSync(data);
for (let i = 0; i < RESOURCES; i++) {
  const schema = structuredClone(base);
  schema.properties['category'] = { ...schema.properties['category'], 'x-link': name(i + 1) };
  schema.properties['owner'] = { type: 'string', description: 'Another resource this one links to.', 'x-link': name(i + 7) };
  writeFileSync(path.join(data, `${name(i)}.schema.json`), JSON.stringify(schema));
  writeFileSync(path.join(data, `${name(i)}.jsonl`), '');
}

const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
const jwks = path.join(dir, 'jwks.json');
writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] }));
const now = Math.floor(Date.now() / 1000);
const mint = (scope: string): Promise<string> =>
  new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'bench', exp: now + 3600, iat: now, scope }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(privateKey);

/** `count` tokens, each of a different set of half the resources (a deterministic shuffle per set). */
async function tokens(count: number, salt: number): Promise<string[]> {
  const out: string[] = [];
  for (let s = 0; s < count; s++) {
    const chosen: string[] = [];
    for (let i = 0; i < RESOURCES; i++) if (((i * 2654435761 + (s + salt) * 40503) >>> 7) % 2 === 0) chosen.push(`${name(i)}:read`);
    out.push(await mint(chosen.join(' ')));
  }
  return out;
}

const entry = process.env['BENCH_HALSERVE'];
const cli = path.resolve(root, entry ?? 'src/cli.ts');
const args = cli.endsWith('.ts') ? ['--import', 'tsx', cli] : [cli];
const child = spawn(process.execPath, [...args, '--port', '0', '--host', '127.0.0.1', '--data', data, '--log', 'off', '--jwks', jwks, '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const port = await new Promise<number>((resolve, reject) => {
  child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const match = /listening on http:\/\/[^\s:]+:(\d+)/.exec(line);
    if (match) resolve(Number(match[1]));
  });
});

interface Answer {
  status: number;
  bytes: number;
  ms: number;
  etag: string | undefined;
}

function get(pathname: string, headers: Record<string, string>): Promise<Answer> {
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: pathname, headers, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, ms: Number(process.hrtime.bigint() - started) / 1e6, etag: res.headers.etag }));
    });
    req.on('error', reject);
    req.end();
  });
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const quantile = (values: number[], q: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))] ?? NaN;
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** `/healthz` every 2 ms (one at a time) while `work` runs: its latencies. */
async function polled(work: () => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  let done = false;
  const poller = (async () => {
    while (!done) {
      latencies.push((await get('/healthz', {})).ms);
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  await work();
  done = true;
  await poller;
  return latencies;
}

/** `tokens` requested 8 at a time, each `rounds` times. */
async function burst(list: readonly string[], rounds: number, headers: Record<string, string>): Promise<Answer[]> {
  const queue = Array.from({ length: rounds }, () => list).flat();
  const answers: Answer[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let t = queue.shift(); t !== undefined; t = queue.shift()) answers.push(await get('/openapi.json', { ...bearer(t), ...headers }));
    }),
  );
  return answers;
}

const fmt = (ms: number): string => ms.toFixed(1);
const report = (label: string, latencies: number[], ms?: number): void =>
  console.log(`${label}${ms === undefined ? '' : ` (${fmt(ms)} ms in all)`}: /healthz n=${latencies.length} p50 ${fmt(median(latencies))} ms, p99 ${fmt(quantile(latencies, 0.99))} ms, max ${fmt(Math.max(...latencies))} ms`);

/** `work` with `/healthz` polled meanwhile, reported with how long the work took. */
async function timed(label: string, work: () => Promise<unknown>): Promise<void> {
  let ms = 0;
  const latencies = await polled(async () => {
    const started = performance.now();
    await work();
    ms = performance.now() - started;
  });
  report(label, latencies, ms);
}

try {
  console.log(`${RESOURCES} resources, ${SETS} scope sets of about half of them; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const whole = await mint('read');
  const sets = await tokens(SETS, 1);
  const first = await get('/openapi.json', bearer(whole));
  const br = await get('/openapi.json', { ...bearer(whole), 'accept-encoding': 'br' });
  const gz = await get('/openapi.json', { ...bearer(whole), 'accept-encoding': 'gzip' });
  console.log(`whole document: ${first.bytes} B identity, ${br.bytes} B br, ${gz.bytes} B gzip`);

  // One at a time: the first request of each set (built) against its second (kept).
  const builds: number[] = [];
  const kept: number[] = [];
  const keptBr: number[] = [];
  let limitedBytes = 0;
  for (const token of sets.slice(0, SETS / 2)) {
    const a = await get('/openapi.json', bearer(token));
    builds.push(a.ms);
    limitedBytes = a.bytes;
    kept.push((await get('/openapi.json', bearer(token))).ms);
    keptBr.push((await get('/openapi.json', { ...bearer(token), 'accept-encoding': 'br' })).ms);
  }
  console.log(`limited document (half the resources): ${limitedBytes} B identity`);
  console.log(`one at a time, identity: first of a set ${fmt(median(builds))} ms (max ${fmt(Math.max(...builds))}), again ${fmt(median(kept))} ms; again with br ${fmt(median(keptBr))} ms`);

  const idle = await polled(() => new Promise((r) => setTimeout(r, 500)));
  report('idle', idle);
  const fresh = sets.slice(SETS / 2);
  await timed(`burst of ${fresh.length} first requests (new sets), br`, () => burst(fresh, 1, { 'accept-encoding': 'br' }));
  await timed(`burst of ${fresh.length * 10} requests of kept sets, br`, () => burst(fresh, 10, { 'accept-encoding': 'br' }));
  await timed(`burst of ${fresh.length * 10} requests of kept sets, identity`, () => burst(fresh, 10, {}));
  const metrics = await new Promise<string>((resolve) =>
    request({ host: '127.0.0.1', port, path: '/metrics', headers: bearer(whole) }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve(text));
    }).end(),
  );
  console.log(metrics.split('\n').filter((l) => l.startsWith('halserve_event_loop_delay_seconds')).join('\n'));
} finally {
  child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
