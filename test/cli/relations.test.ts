import assert from 'node:assert/strict';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { spawnCli, startCli, tempDir } from '../helpers/process.js';


describe('halserve CLI: relations (docs/relations.md)', () => {
  test('x-link to a resource that is not served -> exit 1, one line naming it and the schema file; nothing opened or locked', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'products.jsonl'), '');
    await writeFile(join(dir, 'products.schema.json'), JSON.stringify({ type: 'object', properties: { category: { type: 'string', 'x-link': 'categories' } } }));
    const proc = spawnCli(['--port', '0', '--data', dir]);
    assert.equal(await proc.exited, 1);
    assert.equal(proc.stderr(), `halserve: ${join(dir, 'products.schema.json')}: resource products: property category has "x-link": "categories", but no resource is named "categories" (served: products)\n`);
    assert.equal(proc.stdout(), '');
    assert.deepEqual((await readdir(dir)).sort(), ['products.jsonl', 'products.schema.json']);
  });

  test('x-link on a number -> exit 1, one line naming the file and the pointer', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'products.jsonl'), '');
    await writeFile(join(dir, 'products.schema.json'), JSON.stringify({ properties: { rank: { type: 'number', 'x-link': 'products' } } }));
    const proc = spawnCli(['--port', '0', '--data', dir]);
    assert.equal(await proc.exited, 1);
    assert.match(proc.stderr(), /^halserve: invalid schema \S*products\.schema\.json#\/properties\/rank\/x-link: x-link needs type "string", or type "array" with items of type "string"\n$/);
  });

  test('the target declared with --resource (no file yet) -> starts; a link to it is refused until the target exists', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'products.jsonl'), '');
    await writeFile(join(dir, 'products.schema.json'), JSON.stringify({ properties: { category: { type: 'string', 'x-link': 'categories' } } }));
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'categories', '--log', 'off']);
    const post = (path: string, body: unknown): Promise<Response> => fetch(`${cli.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal((await post('/products', { category: 'x' })).status, 400);
    const category = (await (await post('/categories', { name: 'X' })).json()) as { id: string };
    const product = (await (await post('/products', { category: category.id })).json()) as { _links: Record<string, { href: string }> };
    assert.equal(product._links['category']?.href, `/categories/${category.id}`);
    assert.equal((await fetch(`${cli.url}/categories/${category.id}`, { method: 'DELETE' })).status, 409);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });
});
