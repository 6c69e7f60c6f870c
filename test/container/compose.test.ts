/**
 * compose.yaml brought up as README says, with podman-compose (Debian's package), run by
 * test/container/run.sh with image.test.ts and postgres.test.ts. run.sh has made local stand-ins
 * for the two images compose.yaml starts from (`node:22-slim` under the halserve image, which it
 * tagged `localhost/halserve:latest`, and `postgres:15`), so nothing is pulled or built here.
 *
 * In order: `up -d`; every service healthy (`db` by pg_isready, the replicas by the image's
 * HEALTHCHECK) and `seed` exited 0; the demo data served by all three replicas; a POST through
 * halserve-1 read back from halserve-2 and halserve-3; `down -v`, and nothing of the project left.
 *
 * podman runs health checks from systemd timers, and these machines have no systemd: the test runs
 * each service's check itself (`podman healthcheck run`), as the timer would, until it passes.
 * Every wait is bounded only for liveness (a loaded machine is slow); no duration is asserted.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isObject, podman, podmanOk, requiredEnv, run, type Result } from './podman.js';

const repo = requiredEnv('HALSERVE_TEST_REPO');
const timingsFile = process.env['HALSERVE_TEST_TIMINGS'];

/** compose.yaml's `name:`; podman-compose 1.0.3 ignores it (it takes the directory's name), so it is given with -p. */
const project = 'halserve';
const token = `compose-token-${process.pid}`;
const replicas = [
  { service: 'halserve-1', address: 'http://127.0.0.1:8081' },
  { service: 'halserve-2', address: 'http://127.0.0.1:8082' },
  { service: 'halserve-3', address: 'http://127.0.0.1:8083' },
];
const healthChecked = ['db', ...replicas.map((r) => r.service)];
const services = ['db', 'seed', ...replicas.map((r) => r.service)];
const auth = { authorization: `Bearer ${token}` };
/** A bound for liveness only: on a loaded machine a step may take minutes; the test is that it happens. */
const LIVENESS_MS = 600_000;

const container = (service: string): string => `${project}_${service}_1`;

async function timing(line: string): Promise<void> {
  if (timingsFile !== undefined) await appendFile(timingsFile, `${line}\n`);
}

function seconds(since: number): string {
  return ((performance.now() - since) / 1000).toFixed(2);
}

/** Runs podman-compose on the repository's compose.yaml with the token set; never rejects on a non-zero exit. */
function compose(args: readonly string[], timeoutMs = LIVENESS_MS): Promise<Result> {
  return run('podman-compose', ['-p', project, '-f', path.join(repo, 'compose.yaml'), ...args], {
    cwd: repo,
    env: { ...process.env, HALSERVE_TOKENS: token },
    timeout: timeoutMs,
  });
}

/** The project's containers, as `name status exit-code` lines. */
async function projectContainers(): Promise<string[]> {
  const out = await podmanOk(['ps', '-a', '--filter', `label=io.podman.compose.project=${project}`, '--format', '{{.Names}} {{.State}} {{.ExitCode}}']);
  return out.split('\n').filter(Boolean).sort();
}

/** What each service said last, for a failure's message. */
async function logs(): Promise<string> {
  const parts: string[] = [];
  for (const service of services) {
    const result = await podman(['logs', '--tail', '15', container(service)]);
    parts.push(`--- ${service} (exit ${result.code}):\n${result.stdout}${result.stderr}`);
  }
  parts.push(`--- containers:\n${(await projectContainers()).join('\n')}`);
  return parts.join('\n');
}

/** Calls `check` until it returns a value, or fails with what the services logged once the bound is past. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = performance.now() + LIVENESS_MS;
  let last = '';
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = (error as Error).message;
    }
    if (performance.now() > deadline) {
      assert.fail(`${what}: not within ${LIVENESS_MS / 1000} s (a liveness bound)${last ? `; last: ${last}` : ''}\n${await logs()}`);
    }
    await sleep(500);
  }
}

let up = false;

after(async () => {
  // After a failure: down, so that run.sh's clean-up finds nothing running.
  if (up) await compose(['down', '-v']);
});

test('podman-compose up -d -> every service of compose.yaml started, nothing built', async () => {
  const started = performance.now();
  const result = await compose(['up', '-d']);
  up = true;
  assert.equal(result.code, 0, `podman-compose up -d -> exit ${result.code}\n${result.stdout}\n${result.stderr}`);
  assert.doesNotMatch(result.stdout, /podman build/, 'the image run.sh built is the one compose.yaml names: nothing to build');
  const names = (await projectContainers()).map((line) => line.split(' ')[0]);
  assert.deepEqual(names, services.map(container).sort());
  await timing(`compose up -d: ${seconds(started)} s`);
});

test('db healthy (pg_isready), seed exited 0, the three replicas healthy (the image HEALTHCHECK)', async () => {
  const started = performance.now();
  for (const service of healthChecked) {
    await waitFor(`${service} healthy`, async () => {
      const state = (await podmanOk(['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', container(service)])).trim();
      const policy = (await podmanOk(['inspect', '--format', '{{.HostConfig.RestartPolicy.Name}}', container(service)])).trim();
      if (state.startsWith('exited') && (policy === '' || policy === 'no')) {
        assert.fail(`${service} exited and will not be restarted: ${state}`);
      }
      const check = await podman(['healthcheck', 'run', container(service)]);
      return check.code === 0 ? true : undefined;
    });
    assert.equal((await podmanOk(['inspect', '--format', '{{.State.Health.Status}}', container(service)])).trim(), 'healthy');
  }
  await waitFor('seed exited 0', async () => {
    const state = (await podmanOk(['inspect', '--format', '{{.State.Status}} {{.State.ExitCode}}', container('seed')])).trim();
    return state === 'exited 0' ? true : undefined;
  });
  await timing(`compose: every service healthy and seed done: ${seconds(started)} s after up`);
});

test('each replica serves the seeded demo data; a request without the token -> 401', async () => {
  for (const { service, address } of replicas) {
    const unauthorized = await fetch(`${address}/products?limit=1`);
    assert.equal(unauthorized.status, 401, `${service} without a token`);
    await unauthorized.arrayBuffer();
    for (const [resource, total] of [['products', 300], ['categories', 13]] as const) {
      await waitFor(`${service} serving ${total} ${resource}`, async () => {
        const response = await fetch(`${address}/${resource}?limit=1`, { headers: auth });
        const body = (await response.json()) as unknown;
        if (response.status !== 200) throw new Error(`${service} /${resource} -> ${response.status} ${JSON.stringify(body)}`);
        assert.ok(isObject(body));
        if (body['total'] !== total) throw new Error(`${service} /${resource} total ${JSON.stringify(body['total'])}`);
        return true;
      });
    }
  }
});

test('POST through halserve-1 -> the entity read back from halserve-2 and halserve-3, same ETag', async () => {
  const product = { sku: `CMP-${String(process.pid % 100_000).padStart(5, '0')}`, name: 'Compose knife', brand: 'Acme', category: 'kitchen', price: 39.5, currency: 'EUR', stock: 12, status: 'active' };
  const posted = await fetch(`${replicas[0]!.address}/products`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(product),
  });
  const created = (await posted.json()) as unknown;
  assert.equal(posted.status, 201, JSON.stringify(created));
  const location = posted.headers.get('location');
  const etag = posted.headers.get('etag');
  assert.ok(location?.startsWith('/products/'), `Location: ${location}`);
  assert.ok(etag, 'ETag on the 201');
  const started = performance.now();
  for (const { service, address } of replicas.slice(1)) {
    const body = await waitFor(`${service} serving ${location}`, async (): Promise<unknown> => {
      const response = await fetch(`${address}${location}`, { headers: auth });
      const json: unknown = await response.json();
      if (response.status === 404) return undefined;
      assert.equal(response.status, 200, JSON.stringify(json));
      assert.equal(response.headers.get('etag'), etag, `${service}: the ETag halserve-1 gave`);
      return json;
    });
    assert.ok(isObject(body));
    for (const [key, value] of Object.entries(product)) assert.deepEqual(body[key], value, `${service}: ${key}`);
  }
  await timing(`compose: a write through halserve-1 seen by halserve-2 and -3 within ${seconds(started)} s`);
});

test('podman-compose down -v -> no container, volume or network of the project left', async () => {
  // The volumes the project's containers have, named (pgdata) or anonymous (the image's /data).
  const volumes = new Set<string>();
  for (const service of services) {
    const names = await podmanOk(['inspect', '--format', '{{range .Mounts}}{{.Name}} {{end}}', container(service)]);
    for (const name of names.split(' ').filter(Boolean)) volumes.add(name);
  }
  const started = performance.now();
  const result = await compose(['down', '-v']);
  assert.equal(result.code, 0, `podman-compose down -v -> exit ${result.code}\n${result.stdout}\n${result.stderr}`);
  up = false;
  assert.deepEqual(await projectContainers(), []);
  // podman-compose 1.0.3's `down -v` removes the named volumes, but leaves the network it made and
  // the containers' anonymous volumes (README says so): removed here, by name.
  await podmanOk(['network', 'rm', `${project}_default`]);
  const left = (await podmanOk(['volume', 'ls', '--format', '{{.Name}}'])).split('\n').filter(Boolean);
  assert.ok(!left.includes(`${project}_pgdata`), 'down -v removes the named volume pgdata');
  for (const name of left.filter((name) => volumes.has(name))) await podmanOk(['volume', 'rm', name]);
  assert.deepEqual((await podmanOk(['volume', 'ls', '--format', '{{.Name}}'])).split('\n').filter(Boolean), []);
  assert.deepEqual((await podmanOk(['network', 'ls', '--format', '{{.Name}}'])).split('\n').filter(Boolean), ['podman']);
  await timing(`compose down -v: ${seconds(started)} s`);
});
