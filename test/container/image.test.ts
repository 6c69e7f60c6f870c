/**
 * The container test's behaviour checks, run by test/container/run.sh after it has built the image
 * with a private podman (it exports the podman configuration and HALSERVE_TEST_IMAGE). The tests run
 * in order and share one volume: the first server seeds it and takes a POST, a SIGTERM stops it with
 * a second POST in flight, and a new container on the same volume must find both.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, readFile, readdir } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKUP_HELP } from '../../src/backup-cli.js';
import { HELP } from '../../src/config.js';
import { LOCK_FILE } from '../../src/store/log/dir-lock.js';
import { EXPORT_HELP, IMPORT_HELP } from '../../src/transfer-cli.js';
import { isObject, podman, podmanOk, requiredEnv, type JsonObject } from './podman.js';

const image = requiredEnv('HALSERVE_TEST_IMAGE');
const repo = requiredEnv('HALSERVE_TEST_REPO');
const timingsFile = process.env['HALSERVE_TEST_TIMINGS'];

const suffix = `${process.pid}`;
const nameOpen = `halserve-open-${suffix}`;
const nameA = `halserve-a-${suffix}`;
const nameB = `halserve-b-${suffix}`;
const nameC = `halserve-c-${suffix}`;
const nameD = `halserve-d-${suffix}`;
const volume = `halserve-test-data-${suffix}`;
const token = `container-test-token-${suffix}`;
/** The one line the CLI prints on stdout when it is ready (CLI contract). */
const READY_LINE = 'halserve listening on http://0.0.0.0:8080';
/** What the entrypoint says on stderr when it seeds the data directory (docker/entrypoint.sh). */
const SEEDED_LINE = 'halserve: seeded /data with the demo data';
/** How long a stop may take: the issue asks for "within a second or two". */
const STOP_LIMIT_S = 3;
/** How long the in-flight POST holds the second half of its body after SIGTERM. */
const HOLD_MS = 500;
/** Fields the server manages (docs/conventions.md §2), and a log line's change stamp (docs/changes.md §5): not part of what a client sends or gets back as sent. */
const SERVER_FIELDS = new Set(['id', 'createdAt', 'updatedAt', '_links', '_embedded', '_change']);

async function recordTiming(line: string): Promise<void> {
  console.log(`timing: ${line}`);
  if (timingsFile !== undefined) await appendFile(timingsFile, `${line}\n`);
}

/** The live entities of a JSON-lines store file: the last line for an id wins (docs/storage.md §1). */
async function liveEntities(file: string): Promise<Map<string, JsonObject>> {
  const live = new Map<string, JsonObject>();
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    if (line.trim() === '') continue;
    const entity: unknown = JSON.parse(line);
    if (!isObject(entity) || typeof entity['id'] !== 'string') continue;
    if (entity['_deleted'] === true) live.delete(entity['id']);
    else live.set(entity['id'], entity);
  }
  return live;
}

function clientFields(entity: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(entity).filter(([key]) => !SERVER_FIELDS.has(key)));
}

/**
 * The demo resource the checks use: one that holds an entity, preferring one with a schema, so that
 * the POSTs also go through the validator the container loads from /data.
 */
async function findDemo(): Promise<{ name: string; files: string[]; live: Map<string, JsonObject> }> {
  const dataDir = path.join(repo, 'data');
  const files = (await readdir(dataDir)).sort();
  const names = files.filter((file) => file.endsWith('.jsonl')).map((file) => file.slice(0, -'.jsonl'.length));
  const hasSchema = (name: string): boolean => files.includes(`${name}.schema.json`);
  names.sort((a, b) => Number(hasSchema(b)) - Number(hasSchema(a)));
  for (const name of names) {
    const live = await liveEntities(path.join(dataDir, `${name}.jsonl`));
    if (live.size > 0) return { name, files, live };
  }
  throw new Error(`no demo resource with an entity in ${dataDir}`);
}

const demo = await findDemo();
const [firstDemo] = demo.live.values();
assert.ok(firstDemo !== undefined);
/** A body the demo schema (if any) accepts: the client fields of a demo entity. */
const newEntity = clientFields(firstDemo);

/** How the servers of the main story run: with the token, on the shared volume. */
const WITH_TOKEN_AND_VOLUME: readonly string[] = ['-e', `HALSERVE_TOKENS=${token}`, '-v', `${volume}:/data`];

/** Starts a server container; resolves with its published address once it printed its ready line. */
async function startServer(name: string, options: readonly string[]): Promise<string> {
  await podmanOk([
    'run', '-d', '--name', name, ...options,
    '-p', '127.0.0.1::8080',
    // The image's HEALTHCHECK stays; only podman's systemd timer for it, absent here, is left out.
    '--health-interval', 'disable',
    image,
  ]);
  const started = performance.now();
  for (;;) {
    const logs = await podman(['logs', name]);
    if (logs.stdout.split('\n').includes(READY_LINE)) break;
    const state = (await podmanOk(['inspect', '--format', '{{.State.Status}}', name])).trim();
    if (state !== 'running' && state !== 'created') {
      throw new Error(`container ${name} is ${state} before it was ready:\n${logs.stdout}${logs.stderr}`);
    }
    if (performance.now() - started > 30_000) {
      throw new Error(`container ${name} not ready in 30 s:\n${logs.stdout}${logs.stderr}`);
    }
    await sleep(100);
  }
  await recordTiming(`${name} ready after ${((performance.now() - started) / 1000).toFixed(2)} s`);
  return `http://${(await podmanOk(['port', name, '8080/tcp'])).trim().split('\n')[0]}`;
}

/** Stops a container (SIGTERM, the image's STOPSIGNAL); resolves with seconds taken and exit code. */
async function stopServer(name: string): Promise<{ seconds: number; exitCode: number }> {
  const started = performance.now();
  await podmanOk(['stop', '-t', '10', name]);
  const seconds = (performance.now() - started) / 1000;
  const exitCode = Number((await podmanOk(['inspect', '--format', '{{.State.ExitCode}}', name])).trim());
  return { seconds, exitCode };
}

async function getJson(url: string, headers: Record<string, string> = {}): Promise<{ response: Response; body: JsonObject }> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}`, ...headers } });
  const body: unknown = await response.json();
  assert.ok(isObject(body), `${url} -> a JSON object`);
  return { response, body };
}

/** POSTs the new entity to the demo collection; resolves with its Location once 201 is asserted. */
async function postEntity(address: string): Promise<string> {
  const response = await fetch(`${address}/${demo.name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(newEntity),
  });
  assert.equal(response.status, 201, await response.text());
  const location = response.headers.get('location') ?? '';
  assert.match(location, new RegExp(`^/${demo.name}/[^/]+$`));
  return location;
}

after(async () => {
  // run.sh removes everything too; this keeps a direct `node --test` run tidy as well.
  await podman(['rm', '-f', '-v', '-t', '0', nameA, nameB, nameC, nameD, nameOpen, `halserve-refuse-${suffix}`]);
  await podman(['volume', 'rm', '-f', volume]);
});

test('image config -> user node, SIGTERM stop signal, node HEALTHCHECK, /data volume, 0.0.0.0:8080', async () => {
  const [inspected]: unknown[] = JSON.parse(await podmanOk(['image', 'inspect', image])) as unknown[];
  assert.ok(isObject(inspected) && isObject(inspected['Config']));
  const config = inspected['Config'];
  assert.equal(config['User'], 'node');
  assert.equal(config['StopSignal'], 'SIGTERM');
  assert.deepEqual(config['Volumes'], { '/data': {} });
  assert.deepEqual(config['ExposedPorts'], { '8080/tcp': {} });
  const env = config['Env'];
  assert.ok(Array.isArray(env));
  for (const expected of ['HALSERVE_HOST=0.0.0.0', 'HALSERVE_PORT=8080', 'HALSERVE_DATA=/data']) {
    assert.ok(env.includes(expected), `Env has ${expected}`);
  }
  const healthcheck = JSON.parse(await podmanOk(['image', 'inspect', '--format', '{{json .Config.Healthcheck}}', image])) as unknown;
  assert.ok(isObject(healthcheck));
  assert.deepEqual(healthcheck['Test'], ['CMD', 'node', '/app/docker/healthcheck.js']);
});

test('image filesystem -> compiled server, package.json, the demo data and the PostgreSQL driver (the lock file\'s version) under /app, no other package', async () => {
  const listing = await podmanOk([
    'run', '--rm', '--no-healthcheck', '--entrypoint', '/bin/sh', image, '-c',
    'cd /app; find /app -name node_modules; echo ---; ls /app; echo ---; ls /app/node_modules; echo ---; ls /app/demo; echo ---; test -f /app/dist/cli.js && echo cli; echo ---; ' +
      'node --input-type=module -e "import postgres from \'postgres\'; import { readFileSync } from \'node:fs\'; console.log(typeof postgres, JSON.parse(readFileSync(\'node_modules/postgres/package.json\', \'utf8\')).version)"',
  ]);
  const [modules, app, packages, demoFiles, cli, driver] = listing.split('---\n').map((part) => part.trim().split('\n').filter(Boolean));
  assert.deepEqual(modules, ['/app/node_modules']);
  assert.deepEqual(app, ['demo', 'dist', 'docker', 'node_modules', 'package.json']);
  assert.deepEqual(packages, ['postgres']);
  assert.deepEqual(demoFiles, demo.files.filter((file) => !file.startsWith('.') && !/\.(lock|tmp|rejected)$/.test(file)));
  assert.deepEqual(cli, ['cli']);
  const lock = JSON.parse(await readFile(path.join(repo, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
  assert.deepEqual(driver, [`function ${lock.packages['node_modules/postgres']?.version}`]);
});

test('no token -> exit 1 with a message naming HALSERVE_TOKENS and HALSERVE_NO_AUTH=1', async () => {
  const result = await podman(['run', '--rm', '--no-healthcheck', '--name', `halserve-refuse-${suffix}`, image], 30_000);
  assert.equal(result.code, 1, `exit code; output:\n${result.stdout}${result.stderr}`);
  assert.doesNotMatch(result.stdout, /listening/);
  const message = result.stderr.split('\n').find((line) => line.includes('refusing'));
  assert.ok(message !== undefined, `a refusal on stderr:\n${result.stderr}`);
  assert.match(message, /HALSERVE_TOKENS/);
  assert.match(message, /HALSERVE_NO_AUTH=1/);
  console.log(`refusal: ${message}`);
});

test('a user who cannot write /data -> exit 1 with a message saying how to mount or chown it', async () => {
  // An arbitrary uid (as some platforms run images) on a volume that belongs to uid 1000.
  const result = await podman(
    ['run', '--rm', '--no-healthcheck', '--name', `halserve-refuse-${suffix}`, '--user', '4321', '-e', `HALSERVE_TOKENS=${token}`, image],
    30_000,
  );
  assert.equal(result.code, 1, `exit code; output:\n${result.stdout}${result.stderr}`);
  assert.doesNotMatch(result.stdout, /listening/);
  assert.match(result.stderr, /^halserve: data directory \/data is not writable by uid 4321; .*chown/m);
});

test('HALSERVE_SEED takes the server\'s switch words: false/no/off -> not seeded, true/yes/on -> seeded; another word -> exit 1, one line', async () => {
  // `--help`: the entrypoint decides on seeding, then the server prints its usage and exits 0.
  const seeds = async (value: string): Promise<boolean> => {
    const result = await podman(['run', '--rm', '--no-healthcheck', '-e', `HALSERVE_SEED=${value}`, image, '--help'], 30_000);
    assert.equal(result.code, 0, `HALSERVE_SEED=${value}: exit code; output:\n${result.stdout}${result.stderr}`);
    return result.stderr.includes(SEEDED_LINE);
  };
  for (const value of ['false', 'no', 'OFF']) assert.equal(await seeds(value), false, `HALSERVE_SEED=${value} seeds nothing`);
  for (const value of ['true', 'yes', 'on']) assert.equal(await seeds(value), true, `HALSERVE_SEED=${value} seeds`);
  const result = await podman(['run', '--rm', '--no-healthcheck', '-e', 'HALSERVE_SEED=maybe', '-e', `HALSERVE_TOKENS=${token}`, image], 30_000);
  assert.equal(result.code, 1, `exit code; output:\n${result.stdout}${result.stderr}`);
  assert.equal(result.stdout, '');
  assert.equal(result.stderr.split('\n').filter((line) => line.startsWith('halserve')).join('\n'), 'halserve: HALSERVE_SEED must be 1 or 0 (true or false), not "maybe"');
});

test('HALSERVE_NO_AUTH=1, HALSERVE_SEED=0 -> serves without a token, with an empty data directory', async () => {
  const address = await startServer(nameOpen, ['-e', 'HALSERVE_NO_AUTH=1', '-e', 'HALSERVE_SEED=0']);
  const logs = await podman(['logs', nameOpen]);
  assert.doesNotMatch(logs.stderr, /seeded/);
  const stored = (await podmanOk(['exec', nameOpen, 'ls', '-A', '/data'])).trim().split('\n');
  assert.deepEqual(stored.filter((file) => file.endsWith('.jsonl')), []);
  const response = await fetch(`${address}/`);
  assert.equal(response.status, 200);
  const body: unknown = await response.json();
  assert.ok(isObject(body) && isObject(body['_links']));
  const hrefs = Object.values(body['_links']).map((link) => (isObject(link) ? link['href'] : undefined));
  assert.ok(!hrefs.includes(`/${demo.name}`), `no demo collection: ${JSON.stringify(body['_links'])}`);
  assert.equal((await stopServer(nameOpen)).exitCode, 0);
});

let addressA = '';

test('token and a new named volume -> seeds the demo data, listens on 0.0.0.0:8080 as uid 1000', async () => {
  await podmanOk(['volume', 'create', volume]);
  addressA = await startServer(nameA, WITH_TOKEN_AND_VOLUME);
  const logs = await podman(['logs', nameA]);
  assert.match(logs.stderr, new RegExp(`^${SEEDED_LINE}$`, 'm'));
  assert.equal((await podmanOk(['exec', nameA, 'id', '-u'])).trim(), '1000');
  const seeded = (await podmanOk(['exec', nameA, 'ls', '/data'])).trim().split('\n');
  assert.ok(seeded.includes(`${demo.name}.jsonl`), `/data holds ${demo.name}.jsonl: ${seeded.join(' ')}`);
});

test('GET /healthz without a token -> 200; the image HEALTHCHECK -> healthy', async () => {
  const response = await fetch(`${addressA}/healthz`);
  assert.equal(response.status, 200);
  await response.arrayBuffer();
  const check = await podman(['healthcheck', 'run', nameA]);
  assert.equal(check.code, 0, `healthcheck exit code:\n${check.stdout}${check.stderr}`);
  assert.equal((await podmanOk(['inspect', '--format', '{{.State.Health.Status}}', nameA])).trim(), 'healthy');
});

test(`GET / with the token -> 200 index linking the demo collection`, async () => {
  const { response, body } = await getJson(`${addressA}/`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/hal\+json/);
  assert.ok(isObject(body['_links']));
  const hrefs = Object.values(body['_links']).map((link) => (isObject(link) ? link['href'] : undefined));
  assert.ok(hrefs.includes(`/${demo.name}`), `index links /${demo.name}: ${JSON.stringify(body['_links'])}`);
});

test('GET /<demo> with the token -> 200 HAL collection of every demo entity', async () => {
  const { response, body } = await getJson(`${addressA}/${demo.name}?limit=200`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/hal\+json/);
  assert.equal(body['total'], demo.live.size);
  assert.ok(isObject(body['_embedded']));
  const embedded = body['_embedded'][demo.name];
  assert.ok(Array.isArray(embedded));
  assert.equal(embedded.length, Math.min(demo.live.size, 200));
  for (const entity of embedded) {
    assert.ok(isObject(entity) && typeof entity['id'] === 'string');
    assert.deepEqual(clientFields(entity), clientFields(demo.live.get(entity['id']) ?? {}));
  }
});

test('GET /<demo> without a token -> 401 with a Bearer challenge', async () => {
  const response = await fetch(`${addressA}/${demo.name}`);
  assert.equal(response.status, 401);
  assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer /);
  await response.arrayBuffer();
});

let postedLocation = '';

test('POST /<demo> -> 201 with Location; GET Location -> the fields sent', async () => {
  const response = await fetch(`${addressA}/${demo.name}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(newEntity),
  });
  const text = await response.text();
  assert.equal(response.status, 201, text);
  postedLocation = response.headers.get('location') ?? '';
  assert.match(postedLocation, new RegExp(`^/${demo.name}/[^/]+$`));
  const { response: got, body } = await getJson(`${addressA}${postedLocation}`);
  assert.equal(got.status, 200);
  assert.deepEqual(clientFields(body), newEntity);
});

let inFlightLocation = '';

test(`SIGTERM with a POST in flight -> the POST completes 201, exit 0 within ${STOP_LIMIT_S} s`, async () => {
  const body = Buffer.from(JSON.stringify(newEntity));
  const url = new URL(`${addressA}/${demo.name}`);
  let sentHalf: () => void = () => {};
  const halfSent = new Promise<void>((resolve) => (sentHalf = resolve));
  const responded = new Promise<{ status: number | undefined; location: string | undefined }>((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'content-length': body.length,
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, location: res.headers.location }));
    });
    req.on('error', reject);
    req.write(body.subarray(0, body.length >> 1), () => sentHalf());
    // The rest of the body comes only after the server has been told to stop.
    halfSent
      .then(() => sleep(200 + HOLD_MS))
      .then(() => req.end(body.subarray(body.length >> 1)), reject);
  });
  await halfSent;
  // Let the request reach the server through the port forwarder before the signal.
  await sleep(200);
  const stopped = stopServer(nameA);
  const [answer, stop] = await Promise.all([responded, stopped]);
  assert.equal(answer.status, 201);
  assert.match(answer.location ?? '', new RegExp(`^/${demo.name}/[^/]+$`));
  inFlightLocation = answer.location ?? '';
  assert.equal(stop.exitCode, 0);
  await recordTiming(`stop with a POST in flight (body held ${HOLD_MS} ms after SIGTERM): ${stop.seconds.toFixed(2)} s`);
  assert.ok(stop.seconds < STOP_LIMIT_S, `stop took ${stop.seconds.toFixed(2)} s`);
});

test('access log -> every stdout line after the ready line is JSON, the token is never logged', async () => {
  const logs = await podman(['logs', nameA]);
  const lines = logs.stdout.split('\n').filter(Boolean);
  assert.equal(lines[0], READY_LINE);
  const entries = lines.slice(1).map((line) => JSON.parse(line) as unknown);
  assert.ok(entries.length >= 5, `${entries.length} access log lines`);
  assert.ok(entries.every(isObject));
  assert.ok(
    entries.some((entry) => isObject(entry) && entry['method'] === 'POST' && entry['path'] === `/${demo.name}` && entry['status'] === 201),
    `a POST /${demo.name} 201 line in:\n${logs.stdout}`,
  );
  assert.ok(!`${logs.stdout}${logs.stderr}`.includes(token));
});

let addressB = '';
/** Every entity POSTed so far, by Location: each must outlive every container. */
const locations: string[] = [];

test('new container on the same volume, read-only root, no capabilities -> not reseeded, both POSTed entities kept, a POST still 201', async () => {
  // The server needs nothing but its volume: no writable root file system, no capability.
  // As Docker's --read-only does, no tmpfs of podman's own: only the one README names, for backups.
  addressB = await startServer(nameB, [
    ...WITH_TOKEN_AND_VOLUME, '--read-only', '--read-only-tmpfs=false', '--tmpfs', '/tmp', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges',
  ]);
  const logs = await podman(['logs', nameB]);
  assert.doesNotMatch(logs.stderr, /seeded/);
  locations.push(postedLocation, inFlightLocation);
  for (const location of locations) {
    const { response, body } = await getJson(`${addressB}${location}`);
    assert.equal(response.status, 200, location);
    assert.deepEqual(clientFields(body), newEntity);
  }
  const { body } = await getJson(`${addressB}/${demo.name}?limit=1`);
  assert.equal(body['total'], demo.live.size + 2);
  // A write through the read-only container lands on the volume.
  locations.push(await postEntity(addressB));
});

test('`halserve` on the image\'s PATH -> the compiled CLI with the flags of its first line; each sub-command\'s usage through exec', async () => {
  // What an operator runs in a running container (README, "Upgrade without losing data"): the bin
  // entry of package.json, linked as npm links it, so the shebang of src/cli.ts gives node its flags.
  const [shebang] = (await readFile(path.join(repo, 'src', 'cli.ts'), 'utf8')).split('\n', 1);
  const resolved = await podmanOk(['exec', nameB, 'sh', '-c', 'command -v halserve; readlink -f "$(command -v halserve)"; head -n 1 /app/dist/cli.js']);
  assert.deepEqual(resolved.trim().split('\n'), ['/usr/local/bin/halserve', '/app/dist/cli.js', shebang]);
  const usages: [readonly string[], string][] = [[['--help'], HELP], [['backup', '--help'], BACKUP_HELP], [['import', '--help'], IMPORT_HELP], [['export', '--help'], EXPORT_HELP]];
  for (const [args, usage] of usages) {
    const result = await podman(['exec', nameB, 'halserve', ...args]);
    assert.equal(result.code, 0, `halserve ${args.join(' ')}: ${result.stdout}${result.stderr}`);
    assert.equal(result.stdout, usage, `halserve ${args.join(' ')}`);
  }
});

test('halserve backup in the read-only container, as README says -> a copy in /tmp holding every entity', async () => {
  // A destination with a space: the arguments reach the CLI as given, with no shell in between.
  const dest = '/tmp/halserve backup';
  const backup = await podman(['exec', nameB, 'halserve', 'backup', '--data', '/data', '--to', dest]);
  assert.equal(backup.code, 0, `${backup.stdout}${backup.stderr}`);
  assert.match(backup.stdout, /^halserve: backed up \d+ resources? from .* to \/tmp\/halserve backup in /m);
  const copied = await podmanOk(['exec', nameB, 'cat', `${dest}/${demo.name}.jsonl`]);
  const live = new Set(copied.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { id: string }).id));
  for (const location of locations) assert.ok(live.has(location.split('/').pop() ?? ''), `${location} in the backup`);
  await podmanOk(['exec', nameB, 'rm', '-r', dest]);
});

test('a second container on the volume while one runs -> exit 1 with a line naming the lock and what to do; the first keeps its lock and serves on', async () => {
  // Both servers are pid 1, each in its own container: the lock's pid alone cannot tell them apart.
  const lockBefore = await podmanOk(['exec', nameB, 'cat', `/data/${LOCK_FILE}`]);
  const result = await podman(
    ['run', '--rm', '--no-healthcheck', '--name', `halserve-refuse-${suffix}`, ...WITH_TOKEN_AND_VOLUME, image],
    60_000,
  );
  assert.equal(result.code, 1, `exit code; output:\n${result.stdout}${result.stderr}`);
  assert.doesNotMatch(result.stdout, /listening/);
  const refusal = result.stderr.split('\n').filter((line) => line.startsWith('halserve: ')).pop() ?? '';
  assert.match(refusal, new RegExp(`^halserve: data directory /data is in use by process 1 of another container .*/data/\\${LOCK_FILE}.*stop that server first`));
  console.log(`refusal: ${refusal}`);
  assert.equal(await podmanOk(['exec', nameB, 'cat', `/data/${LOCK_FILE}`]), lockBefore, 'the running server\'s lock is untouched');
  const { response } = await getJson(`${addressB}${locations[0]}`);
  assert.equal(response.status, 200);
});

test(`SIGTERM on an idle server -> exit 0 within ${STOP_LIMIT_S} s`, async () => {
  const stop = await stopServer(nameB);
  assert.equal(stop.exitCode, 0);
  await recordTiming(`stop (idle, SIGTERM to exit): ${stop.seconds.toFixed(2)} s`);
  assert.ok(stop.seconds < STOP_LIMIT_S, `stop took ${stop.seconds.toFixed(2)} s`);
});

test('SIGKILL, then a new container on the same volume -> starts despite the stale lock, every acknowledged write kept', async () => {
  const addressC = await startServer(nameC, WITH_TOKEN_AND_VOLUME);
  locations.push(await postEntity(addressC));
  await podmanOk(['kill', '--signal', 'KILL', nameC]);
  assert.equal((await podmanOk(['wait', nameC])).trim(), '137');
  // The killed server could not remove its lock: the next one must see it is stale.
  const left = await podmanOk(['run', '--rm', '--no-healthcheck', '-v', `${volume}:/data`, '--entrypoint', 'ls', image, '-A', '/data']);
  assert.ok(left.split('\n').includes(LOCK_FILE), `${LOCK_FILE} left behind: ${left}`);
  const addressD = await startServer(nameD, WITH_TOKEN_AND_VOLUME);
  for (const location of locations) {
    const { response, body } = await getJson(`${addressD}${location}`);
    assert.equal(response.status, 200, location);
    assert.deepEqual(clientFields(body), newEntity);
  }
  const { body } = await getJson(`${addressD}/${demo.name}?limit=1`);
  assert.equal(body['total'], demo.live.size + locations.length);
  assert.equal((await stopServer(nameD)).exitCode, 0);
});
