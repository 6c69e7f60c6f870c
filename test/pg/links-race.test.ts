import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import postgres from 'postgres';
import { SCHEMA as TABLES } from '../../src/store/pg/layout.js';
import { everything } from '../helpers/collection.js';
import { LIVENESS_MS, startCli, tempDir, type CliProcess } from '../helpers/process.js';
import { prng } from '../helpers/prng.js';
import { freshDatabase, pgMissing } from './helpers.js';

/*
 * docs/relations.md across processes (issue 11): three halserve processes on one PostgreSQL database,
 * products.category linking to categories. Clients create products linking to a few categories
 * through process A, delete those categories through process B, and move products between them
 * through process C, all at once. Each process checks its own writes in the database; no process
 * sees the others' writes in time to guard against them in memory. At the end, in the database
 * and on every process: no live product links to a missing category, every acknowledged create
 * is there and every acknowledged delete is gone.
 */

const PRODUCT_SCHEMA = { type: 'object', properties: { category: { type: 'string', 'x-link': 'categories' }, n: { type: 'integer' } } };
const WAVES = 8;
const CATEGORIES_PER_WAVE = 6;
const CREATES_PER_CATEGORY = 4;
const JSON_BODY = { 'content-type': 'application/json' };

describe('links never dangle across processes on one PostgreSQL database (docs/relations.md, §8a)', { skip: pgMissing }, () => {
  test(`${WAVES} waves: creates through A, category deletes through B, moves through C -> no dangling link, every 2xx held`, async () => {
    const url = await freshDatabase();
    const start = async (): Promise<CliProcess> => {
      const data = await tempDir('halserve-links-race-');
      await writeFile(join(data, 'products.schema.json'), JSON.stringify(PRODUCT_SCHEMA));
      return startCli(['--store', url, '--data', data, '--resource', 'products', '--resource', 'categories', '--port', '0', '--log', 'off']);
    };
    const [a, b, c] = [await start(), await start(), await start()];
    const random = prng(11);
    const created = new Map<string, string>();
    const moved = new Map<string, string>();
    const deleted = new Set<string>();
    const statuses = new Map<string, number>();
    const count = (what: string, status: number): void => void statuses.set(`${what} ${status}`, (statuses.get(`${what} ${status}`) ?? 0) + 1);
    const later = (request: () => Promise<void>): Promise<void> => new Promise((resolve) => setTimeout(resolve, random() * 15)).then(request);
    const categories: string[] = [];

    for (let wave = 0; wave < WAVES; wave++) {
      for (let k = 0; k < CATEGORIES_PER_WAVE; k++) {
        const res = await fetch(`${c.url}/categories`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ name: `W${wave}` }) });
        assert.equal(res.status, 201);
        categories.push(((await res.json()) as { id: string }).id);
      }
      const alive = categories.filter((id) => !deleted.has(id));
      const requests: Promise<void>[] = [];
      for (const target of alive) {
        for (let k = 0; k < CREATES_PER_CATEGORY; k++) {
          requests.push(later(async () => {
            const res = await fetch(`${a.url}/products`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ category: target, n: wave }) });
            count('create', res.status);
            const body = (await res.json()) as { id: string; validationMessages?: Record<string, unknown> };
            assert.ok(res.status === 201 || res.status === 400, `create -> ${res.status}: ${JSON.stringify(body)}`);
            if (res.status === 201) created.set(body.id, target);
            else assert.ok(body.validationMessages?.['category'] !== undefined, JSON.stringify(body));
          }));
        }
        requests.push(later(async () => {
          const res = await fetch(`${b.url}/categories/${target}`, { method: 'DELETE' });
          count('delete', res.status);
          assert.ok(res.status === 204 || res.status === 409, `delete -> ${res.status}: ${await res.text()}`);
          if (res.status === 204) deleted.add(target);
        }));
      }
      for (const [id] of created) {
        if (random() > 0.15) continue;
        const to = alive[Math.floor(random() * alive.length)]!;
        requests.push(later(async () => {
          const res = await fetch(`${c.url}/products/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ category: to }) });
          count('move', res.status);
          assert.ok(res.status === 200 || res.status === 400, `move -> ${res.status}: ${await res.text()}`);
          if (res.status === 200) moved.set(id, to);
        }));
      }
      await Promise.all(requests);
    }

    // The database: the truth every process converges to.
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    let live: { categories: Set<string>; products: Map<string, string | undefined> };
    try {
      const rows = await sql<{ resource: string; id: string; category: string | null }[]>`
        SELECT resource, id, body::json ->> 'category' AS category FROM ${sql(TABLES)}.entities WHERE body IS NOT NULL`;
      live = {
        categories: new Set(rows.filter((r) => r.resource === 'categories').map((r) => r.id)),
        products: new Map(rows.filter((r) => r.resource === 'products').map((r) => [r.id, r.category ?? undefined])),
      };
    } finally {
      await sql.end();
    }
    const dangling = [...live.products].filter(([, category]) => category === undefined || !live.categories.has(category));
    assert.deepEqual(dangling, [], `products linking to a missing category (${JSON.stringify([...statuses])})`);
    for (const id of deleted) assert.ok(!live.categories.has(id), `acknowledged delete of category ${id} not held`);
    for (const [id, category] of created) assert.equal(live.products.get(id), moved.get(id) ?? category, `product ${id}`);
    assert.equal(live.products.size, created.size);
    // The schedule raced: both outcomes of each kind happened.
    for (const key of ['create 201', 'create 400', 'delete 204', 'delete 409']) assert.ok((statuses.get(key) ?? 0) > 0, `${key} never happened: ${JSON.stringify([...statuses])}`);

    // Every process serves that state once its change feed has caught up.
    for (const p of [a, b, c]) {
      let products: { id: string; category?: string }[] = [];
      let served: Set<string> = new Set();
      const deadline = Date.now() + LIVENESS_MS;
      while (Date.now() < deadline) {
        products = await everything(p.url, 'products', 500);
        served = new Set((await everything(p.url, 'categories', 500)).map((x) => x.id));
        if (products.length === live.products.size && served.size === live.categories.size) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.deepEqual(new Set(products.map((x) => x.id)), new Set(live.products.keys()), `${p.url}: products`);
      assert.deepEqual(served, live.categories, `${p.url}: categories`);
    }
    for (const p of [a, b, c]) p.child.kill('SIGTERM');
    assert.deepEqual(await Promise.all([a.exited, b.exited, c.exited]), [0, 0, 0]);
  });
});
