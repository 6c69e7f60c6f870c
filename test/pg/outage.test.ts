import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import postgres from 'postgres';
import { SCHEMA } from '../../src/store/pg/layout.js';
import { record } from '../store/store-suite.js';
import { startCli, tempDir } from '../helpers/process.js';
import { freshDatabase, openStores, pgCluster, pgMissing, until } from './helpers.js';

/*
 * The database goes away under a running server (docs/storage.md §2): PostgreSQL stopped (fast shutdown)
 * while clients write, then started again. This file has its cluster to itself.
 */

interface Answer {
  readonly status: number;
  readonly id: string | undefined;
  readonly retryAfter: string | null;
  readonly type: string | null;
}

describe('PostgreSQL stopped and started under a running server', { skip: pgMissing }, () => {
  test('writes during the outage -> 201 or 503 with Retry-After; reads and pages go on; /readyz 503 then 200; every 201 kept; changes made elsewhere meanwhile arrive', async (t) => {
    const cluster = await pgCluster();
    const url = await freshDatabase();
    const data = await tempDir();
    const server = await startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--data', data]);
    const post = async (): Promise<Answer> => {
      try {
        const res = await fetch(`${server.url}/items`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
        const body = (await res.json()) as { id?: string };
        return { status: res.status, id: body.id, retryAfter: res.headers.get('retry-after'), type: res.headers.get('content-type') };
      } catch (error) {
        return { status: 0, id: String(error), retryAfter: null, type: null };
      }
    };
    const first = await post();
    assert.equal(first.status, 201);
    const answers: Answer[] = [];
    let writing = true;
    const clients = Array.from({ length: 4 }, async () => {
      while (writing) {
        answers.push(await post());
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    });
    await until(() => answers.filter((a) => a.status === 201).length >= 20, 'writes before the outage');
    await cluster.pause('fast');
    const stoppedAt = answers.length;
    await until(() => answers.slice(stoppedAt).filter((a) => a.status === 503).length >= 10, 'writes refused during the outage');
    // Readiness follows the database; reads are answered from memory meanwhile.
    const readiness = async (): Promise<number> => (await fetch(`${server.url}/readyz`)).status;
    await until(async () => (await readiness()) === 503, '/readyz 503 during the outage');
    assert.equal((await fetch(`${server.url}/items/${first.id}`)).status, 200);
    const page = (await (await fetch(`${server.url}/items?limit=1`)).json()) as { total: number };
    assert.ok(page.total >= 21);
    // The change feed's pages are read from the database: a 503 to retry, not a 500.
    const feed = await fetch(`${server.url}/changes?limit=5`);
    assert.equal(feed.status, 503);
    assert.ok(Number(feed.headers.get('retry-after')) > 0);
    assert.equal(feed.headers.get('content-type'), 'application/problem+json');
    // A read: no write to speak of in its detail.
    assert.equal(((await feed.json()) as { detail: string }).detail, 'The database is unreachable. Try again shortly');

    await cluster.resume();
    // Another process writes as soon as the database is back.
    const other = await openStores(url);
    await other.stores.get('items')!.create(record('from-elsewhere', { n: 2 }));
    await until(async () => (await readiness()) === 200, '/readyz 200 once the database is back');
    const resumedAt = answers.length;
    await until(() => answers.slice(resumedAt).filter((a) => a.status === 201).length >= 10, 'writes accepted again');
    writing = false;
    await Promise.all(clients);

    const statuses = new Set(answers.map((a) => a.status));
    assert.deepEqual([...statuses].sort(), [201, 503], `only 201 and 503: ${JSON.stringify(answers.filter((a) => a.status !== 201 && a.status !== 503).slice(0, 3))}`);
    for (const refused of answers.filter((a) => a.status === 503)) {
      assert.equal(refused.retryAfter, '2');
      assert.equal(refused.type, 'application/problem+json');
    }
    // Every acknowledged create is in the database and served; the server converges on the table
    // (a 503 whose commit had gone through shows up too, through the change feed).
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    t.after(() => sql.end({ timeout: 1 }));
    const stored = new Set((await sql.unsafe(`SELECT id FROM ${SCHEMA}.entities WHERE body IS NOT NULL`)).map((r) => r.id as string));
    const acknowledged = answers.filter((a) => a.status === 201).map((a) => a.id!);
    for (const id of acknowledged) assert.ok(stored.has(id), `acknowledged ${id} is in the table`);
    assert.ok(stored.has('from-elsewhere'));
    const served = async (): Promise<number> => ((await (await fetch(`${server.url}/items?limit=1`)).json()) as { total: number }).total;
    await until(async () => (await served()) === stored.size, 'the server to serve what the table holds');
    assert.equal((await fetch(`${server.url}/items/from-elsewhere`)).status, 200);
    t.diagnostic(`${answers.length} writes: ${acknowledged.length} acknowledged, ${answers.length - acknowledged.length} refused with 503; table ${stored.size}`);
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  });
});
