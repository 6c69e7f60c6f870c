/**
 * The image against PostgreSQL (docs/storage.md §2), run by test/container/run.sh after image.test.ts.
 * No PostgreSQL image can be pulled here (no registry), so the database is a throwaway cluster on
 * the host (test/helpers/pg-cluster.ts) listening on 127.0.0.1, and the containers share the host's
 * network (`--network host`) to reach it. In order: `halserve import` of the image's demo data,
 * `halserve export` of it back into a volume (byte-identical to data/), then a server with
 * `--store postgres://…` on that database.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { findPostgres, freePort, startCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { isObject, podman, podmanOk, requiredEnv } from './podman.js';
import { withoutStamps } from '../store/stamps.js';

const image = requiredEnv('HALSERVE_TEST_IMAGE');
const repo = requiredEnv('HALSERVE_TEST_REPO');
const found = findPostgres();
if ('missing' in found) throw new Error(`the container test needs PostgreSQL on the host: ${found.missing}`);

const suffix = `${process.pid}`;
const volume = `halserve-pg-export-${suffix}`;
const serverName = `halserve-pg-server-${suffix}`;
const token = `container-pg-token-${suffix}`;
const HOST_NETWORK: readonly string[] = ['--rm', '--no-healthcheck', '--network', 'host'];

let cluster: PgCluster;
let url = '';
let sql: postgres.Sql;

/**
 * The demo resources (data/*.jsonl) and their lines: the demo files are compacted, one line per
 * entity. Without the lines' change stamps, which belong to a data directory's feed: a database
 * numbers its own changes, so an import leaves them behind and an export writes none.
 */
const demoDir = path.join(repo, 'data');
const demo = new Map<string, string[]>();
for (const file of (await readdir(demoDir)).filter((f) => f.endsWith('.jsonl')).sort()) {
  demo.set(file.slice(0, -'.jsonl'.length), withoutStamps(await readFile(path.join(demoDir, file), 'utf8')).split('\n').filter(Boolean));
}

before(async () => {
  // run.sh points TMPDIR into its private podman directory (mode 0700), where the postgres user
  // cannot go: the cluster's directory is made under the system's temporary directory instead.
  const tmpdir = process.env['TMPDIR'];
  process.env['TMPDIR'] = '/tmp';
  try {
    cluster = await startCluster(found.bin);
  } finally {
    if (tmpdir === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = tmpdir;
  }
  url = cluster.url(await cluster.createDatabase('halserve'));
  sql = postgres(url, { max: 1, onnotice: () => {} });
});

after(async () => {
  await podman(['rm', '-f', '-v', '-t', '0', serverName]);
  await podman(['volume', 'rm', '-f', volume]);
  await sql?.end({ timeout: 1 });
  await cluster?.stop();
});

test('halserve import in the container -> the image\'s demo data in PostgreSQL, line for line; one summary line', async () => {
  const result = await podman(['run', ...HOST_NETWORK, image, 'import', '--from', '/app/demo', '--to', url], 60_000);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, '', 'no progress line off a terminal, no seeding');
  const total = [...demo.values()].reduce((sum, lines) => sum + lines.length, 0);
  assert.match(result.stdout, new RegExp(`^halserve: imported ${total} entities from /app/demo into postgres://\\S+ \\(.*\\) in \\d+\\.\\d s\\n$`));
  for (const [name, lines] of demo) {
    const rows = await sql<{ body: string }[]>`SELECT body FROM halserve.entities WHERE resource = ${name} ORDER BY pos`;
    assert.deepEqual(rows.map((r) => r.body), lines, name);
  }
});

test('halserve export in the container into a volume -> files byte-identical to data/ (but for its change stamps)', async () => {
  await podmanOk(['volume', 'create', volume]);
  const result = await podman(['run', ...HOST_NETWORK, '-v', `${volume}:/data`, image, 'export', '--from', url, '--to', '/data/exported'], 60_000);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^halserve: exported \d+ entities from postgres:\/\/\S+ into \/data\/exported /);
  for (const [name, lines] of demo) {
    const exported = await podmanOk(['run', '--rm', '--no-healthcheck', '-v', `${volume}:/data`, '--entrypoint', 'cat', image, `/data/exported/${name}.jsonl`]);
    assert.equal(exported, lines.join('\n') + '\n', name);
  }
});

test('halserve import in the container, database unreachable -> one line, exit 1', async () => {
  const result = await podman(['run', ...HOST_NETWORK, image, 'import', '--from', '/app/demo', '--to', `postgres://postgres@127.0.0.1:${await freePort()}/x`], 60_000);
  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.match(result.stderr, /^halserve: cannot reach the database postgres:\/\/postgres@127\.0\.0\.1:\d+\/x: .+\n$/);
});

/** The server's `--store` flag comes with the PostgreSQL store: until the image has it, the test says so and skips. */
const help = await podman(['run', '--rm', '--no-healthcheck', image, '--help'], 60_000);
const hasStore = /--store\b/.test(help.stdout);

test('--store postgres://… -> ready, /readyz 200, serves the imported entities, a POST is served back', { skip: hasStore ? false : 'the image has no --store flag yet (the PostgreSQL store)' }, async () => {
  const port = await freePort();
  await podmanOk([
    'run', '-d', '--name', serverName, '--network', 'host', '--health-interval', 'disable',
    '-e', `HALSERVE_TOKENS=${token}`, '-e', 'HALSERVE_HOST=127.0.0.1', '-e', `HALSERVE_PORT=${port}`,
    image, '--store', url,
  ]);
  const ready = `halserve listening on http://127.0.0.1:${port}`;
  const started = performance.now();
  for (;;) {
    const logs = await podman(['logs', serverName]);
    if (logs.stdout.split('\n').includes(ready)) break;
    const state = (await podmanOk(['inspect', '--format', '{{.State.Status}}', serverName])).trim();
    if (state !== 'running' && state !== 'created') throw new Error(`the server is ${state} before it was ready:\n${logs.stdout}${logs.stderr}`);
    if (performance.now() - started > 30_000) throw new Error(`not ready in 30 s:\n${logs.stdout}${logs.stderr}`);
    await sleep(100);
  }
  const address = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${token}` };
  const readyz = await fetch(`${address}/readyz`);
  assert.equal(readyz.status, 200);
  await readyz.arrayBuffer();
  const [name, lines] = [...demo].find(([, l]) => l.length > 0) ?? assert.fail('a demo resource with entities');
  const first = JSON.parse(lines[0]!) as { id: string };
  const got = await fetch(`${address}/${name}/${first.id}`, { headers: auth });
  assert.equal(got.status, 200);
  const served: unknown = await got.json();
  assert.ok(isObject(served));
  const { _links: _ignored, ...fields } = served;
  assert.deepEqual(fields, first);
  const { id: _id, createdAt: _c, updatedAt: _u, ...body } = first as Record<string, unknown>;
  const posted = await fetch(`${address}/${name}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(posted.status, 201, await posted.clone().text());
  const location = posted.headers.get('location') ?? '';
  await posted.arrayBuffer();
  const back = await fetch(`${address}${location}`, { headers: auth });
  assert.equal(back.status, 200);
  const again = (await back.json()) as Record<string, unknown>;
  for (const [key, value] of Object.entries(body)) assert.deepEqual(again[key], value, key);
  const stop = await podman(['stop', '-t', '10', serverName]);
  assert.equal(stop.code, 0);
  assert.equal((await podmanOk(['inspect', '--format', '{{.State.ExitCode}}', serverName])).trim(), '0');
});
