import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DriverMissingError, loadDriver } from '../../src/store/pg/driver.js';
import { connect } from '../../src/store/pg/connection.js';
import { freePort } from '../helpers/pg-cluster.js';
import { promtoolAccepts, sample } from '../helpers/metrics.js';
import { spawnCli, startCli, tempDir } from '../helpers/process.js';
import { freshDatabase, pgMissing } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MISSING_DRIVER = 'a postgres:// store needs the PostgreSQL driver: npm install postgres (it is an optional peer dependency of halserve)';

describe('start-up with --store postgres://', () => {
  test('nothing listening at the URL -> one line naming the database (no password) and why, exit 1', async () => {
    const port = await freePort();
    const proc = spawnCli(['--port', '0', '--store', `postgres://app:secret@127.0.0.1:${port}/shop`]);
    assert.equal(await proc.exited, 1);
    assert.equal(proc.stderr(), `halserve: cannot use PostgreSQL at postgres://app@127.0.0.1:${port}/shop: connection refused\n`);
    assert.equal(proc.stdout(), '');
  });

  test('a malformed postgres:// URL -> one line, as import says it, no stack trace, exit 1', async () => {
    const proc = spawnCli(['--port', '0', '--store', 'postgres://[bad']);
    assert.equal(await proc.exited, 1);
    assert.equal(proc.stderr(), 'halserve: bad database URL postgres://[bad: Invalid URL\n');
    assert.equal(proc.stdout(), '');
  });

  test('HALSERVE_STORE that is not a postgres:// URL -> one line, exit 1', async () => {
    const proc = spawnCli(['--port', '0'], { HALSERVE_STORE: 'mysql://db/shop' });
    assert.equal(await proc.exited, 1);
    assert.equal(proc.stderr(), 'halserve: HALSERVE_STORE must be a postgres:// (or postgresql://) URL; without it resources are kept in files under --data\n');
  });

  test('the driver not installed (an import that fails) -> DriverMissingError saying what to install', async () => {
    const missing = Object.assign(new Error("Cannot find package 'postgres'"), { code: 'ERR_MODULE_NOT_FOUND' });
    await assert.rejects(loadDriver(() => Promise.reject(missing)), (error) => error instanceof DriverMissingError && error.message === MISSING_DRIVER);
    await assert.rejects(connect({ url: 'postgres://127.0.0.1:1/x', driver: () => loadDriver(() => Promise.reject(missing)) }), { name: 'StoreOpenError', message: MISSING_DRIVER });
    const broken = new Error('a syntax error inside the package');
    await assert.rejects(loadDriver(() => Promise.reject(broken)), (error) => error === broken);
  });

  test('the CLI where no node_modules holds the driver -> that one line, exit 1', async () => {
    // A copy of the sources outside this checkout: `import('postgres')` finds nothing from there.
    const dir = await tempDir();
    await fs.cp(path.join(ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
    await fs.writeFile(path.join(dir, 'package.json'), '{"type":"module"}');
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(dir, 'src', 'cli.ts'), '--port', '0', '--store', 'postgres://127.0.0.1:1/x'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(err, `halserve: ${MISSING_DRIVER}\n`);
    assert.equal(code, 1);
  });

  test('a resource on PostgreSQL, before any write -> its writes and page-cache counters at 0, and no compaction or answer-eviction series (it has neither); promtool check metrics passes', { skip: pgMissing }, async (t) => {
    const url = await freshDatabase();
    const cli = await startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'orders']);
    const text = await (await fetch(`${cli.url}/metrics`)).text();
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    for (const series of [
      'halserve_store_writes_total{resource="orders"}',
      'halserve_page_cache_requests_total{resource="orders",result="hit"}',
      'halserve_page_cache_requests_total{resource="orders",result="miss"}',
    ]) {
      assert.equal(sample(text, series), 0, series);
    }
    assert.doesNotMatch(text, /^halserve_(store_compactions|idempotency_answers_evicted|store_write_failures)_total\{/m);
    promtoolAccepts(t, text);
  });

  test('a database holding rows of resources -> served with those declared; schema files read from --data', { skip: pgMissing }, async () => {
    const url = await freshDatabase();
    const data = await tempDir();
    await fs.writeFile(path.join(data, 'orders.schema.json'), JSON.stringify({ type: 'object', properties: { total: { type: 'number' } }, required: ['total'] }));
    const first = await startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'orders', '--data', data]);
    const refused = await fetch(`${first.url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"total":"ten"}' });
    assert.equal(refused.status, 400);
    const created = await fetch(`${first.url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"total":10}' });
    assert.equal(created.status, 201);
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);
    // Started again without --resource: the table's resources are served.
    const second = await startCli(['--port', '0', '--log', 'off'], { DATABASE_URL: url });
    const page = (await (await fetch(`${second.url}/orders`)).json()) as { total: number };
    assert.equal(page.total, 1);
    assert.equal((await fetch(`${second.url}/readyz`)).status, 200);
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });
});
