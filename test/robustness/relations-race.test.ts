import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { everything } from '../helpers/collection.js';
import { startCli, tempDir, type CliProcess } from '../helpers/process.js';
import { prng } from '../helpers/prng.js';

/*
 * docs/relations.md under concurrency, in a real server (the CLI over JSON-lines files, each resource
 * with its own write order and group commit): many clients create products linking to categories,
 * move products between them, delete products and delete the categories, all at once. At the end
 * no product links to a missing category, every acknowledged create is there and every
 * acknowledged delete is gone — in the running server and after a restart from the files.
 */

const SCHEMA = { type: 'object', properties: { category: { type: 'string', 'x-link': 'categories' }, n: { type: 'integer' } } };
const TARGETS = 12;
const WAVES = 6;
const JSON_BODY = { 'content-type': 'application/json' };

describe('links never dangle under concurrent writes to two stores (docs/relations.md)', () => {
  test(`${WAVES} waves of creates, moves and deletes racing deletes of ${TARGETS} categories -> no dangling link, every 2xx held`, async () => {
    const dir = await tempDir();
    const categoryLines = Array.from({ length: TARGETS }, (_, i) => JSON.stringify({ id: `t${i}`, createdAt: 1, updatedAt: 1, name: `T${i}` })).join('\n');
    await writeFile(join(dir, 'categories.jsonl'), `${categoryLines}\n`);
    await writeFile(join(dir, 'products.jsonl'), '');
    await writeFile(join(dir, 'products.schema.json'), JSON.stringify(SCHEMA));
    let cli: CliProcess = await startCli(['--port', '0', '--data', dir, '--log', 'off']);
    const random = prng(7);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;

    /** What the server acknowledged, in the order the acknowledgements arrived. */
    const created = new Map<string, string>();
    const productsDeleted = new Set<string>();
    const categoriesDeleted = new Set<string>();
    const moved = new Map<string, string>();
    const statuses = new Map<string, number>();
    const count = (what: string, status: number): void => {
      const key = `${what} ${status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    };
    /** Categories not acknowledged deleted: each wave races on every one of them. */
    const ids = Array.from({ length: TARGETS }, (_, i) => `t${i}`);
    /** Requests go out at random moments within a few milliseconds, so that each kind sometimes comes first. */
    const later = (request: () => Promise<void>): (() => Promise<void>) => () => new Promise((resolve) => setTimeout(resolve, random() * 12)).then(request);

    for (let wave = 0; wave < WAVES; wave++) {
      // New categories for the wave (ids are the server's), so that deletes have targets to race on.
      for (let k = 0; k < 4; k++) {
        const res = await fetch(`${cli.url}/categories`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ name: `W${wave}` }) });
        assert.equal(res.status, 201);
        ids.push(((await res.json()) as { id: string }).id);
      }
      const alive = ids.filter((id) => !categoriesDeleted.has(id));
      const requests: (() => Promise<void>)[] = [];
      for (const target of alive) {
        for (let k = 0; k < 3; k++) {
          requests.push(later(async () => {
            const res = await fetch(`${cli.url}/products`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ category: target, n: wave }) });
            count('create', res.status);
            assert.ok(res.status === 201 || res.status === 400, `create -> ${res.status}`);
            if (res.status === 201) created.set(((await res.json()) as { id: string }).id, target);
            else assert.equal(((await res.json()) as { validationMessages: Record<string, unknown> }).validationMessages['category'] !== undefined, true);
          }));
        }
        requests.push(later(async () => {
          const res = await fetch(`${cli.url}/categories/${target}`, { method: 'DELETE' });
          count('delete category', res.status);
          assert.ok([204, 409].includes(res.status), `delete category -> ${res.status}`);
          if (res.status === 204) categoriesDeleted.add(target);
          await res.arrayBuffer();
        }));
      }
      // Products from earlier waves: some are deleted (freeing their category), some moved to another.
      const living = [...created.keys()].filter((id) => !productsDeleted.has(id));
      for (const id of living) {
        const roll = random();
        if (roll < 0.5) {
          requests.push(later(async () => {
            const res = await fetch(`${cli.url}/products/${id}`, { method: 'DELETE' });
            count('delete product', res.status);
            assert.equal(res.status, 204);
            productsDeleted.add(id);
          }));
        } else if (roll < 0.7) {
          const to = pick(alive);
          requests.push(later(async () => {
            const res = await fetch(`${cli.url}/products/${id}`, { method: 'PATCH', headers: JSON_BODY, body: JSON.stringify({ category: to }) });
            count('move product', res.status);
            assert.ok(res.status === 200 || res.status === 400, `move -> ${res.status}`);
            if (res.status === 200) moved.set(id, to);
            await res.arrayBuffer();
          }));
        }
      }
      await Promise.all(requests.map((r) => r()));
    }

    const check = async (when: string): Promise<void> => {
      const categories = new Set((await everything(cli.url, 'categories', 200)).map((c) => c.id));
      const products = await everything(cli.url, 'products', 200);
      const dangling = products.filter((p) => p.category === undefined || !categories.has(p.category));
      assert.deepEqual(dangling, [], `${when}: products linking to a missing category`);
      for (const id of categoriesDeleted) assert.ok(!categories.has(id), `${when}: acknowledged delete of category ${id} not held`);
      const present = new Set(products.map((p) => p.id));
      for (const id of created.keys()) assert.equal(present.has(id), !productsDeleted.has(id), `${when}: product ${id}`);
      for (const p of products) assert.equal(p.category, moved.get(p.id) ?? created.get(p.id), `${when}: product ${p.id}'s category`);
    };
    await check('running');
    // The schedule raced: both outcomes of each kind happened.
    for (const key of ['create 201', 'create 400', 'delete category 204', 'delete category 409']) assert.ok((statuses.get(key) ?? 0) > 0, `${key} never happened: ${JSON.stringify([...statuses])}`);

    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    cli = await startCli(['--port', '0', '--data', dir, '--log', 'off']);
    await check('after a restart');
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });
});
