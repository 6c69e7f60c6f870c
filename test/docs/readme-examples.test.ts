import assert from 'node:assert/strict';
import { cp, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startCli, tempDir } from '../helpers/process.js';

/**
 * README's "The conventions, with curl" against the demo data it describes (a copy of `data/`):
 * the examples a new user tries first must answer as README shows. Each example is read from
 * README itself: the request after `curl`, the answer from the `# ` lines under it.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The `# ` lines under the line of README that holds `request`, joined: the answer README shows. */
function shownAnswer(readme: string, request: string): string {
  const lines = readme.split('\n');
  const at = lines.findIndex((line) => line.startsWith('curl') && line.includes(request));
  assert.ok(at !== -1, `README has no curl example of ${request}`);
  const shown: string[] = [];
  for (let i = at + 1; i < lines.length && lines[i]!.startsWith('# '); i++) shown.push(lines[i]!.slice(2).trim());
  return shown.join('');
}

test("README's curl examples, on a server over a copy of data/", async (t) => {
  const dir = await tempDir();
  await cp(path.join(ROOT, 'data'), dir, { recursive: true });
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const server = await startCli(['--data', dir, '--port', '0']);

  await t.test("a collection page -> the _links README shows, every one of them", async () => {
    const shown = shownAnswer(readme, "'localhost:8080/products?page=2&limit=3'");
    const links = /"_links":(\{.*?\}\}),/.exec(shown)?.[1];
    assert.ok(links !== undefined, shown);
    const body = (await (await fetch(`${server.url}/products?page=2&limit=3`)).json()) as { _links: unknown };
    assert.deepEqual(body._links, JSON.parse(links));
  });

  await t.test('a page out of range -> the document README shows', async () => {
    const res = await fetch(`${server.url}/products?page=999`);
    assert.deepEqual(await res.json(), JSON.parse(shownAnswer(readme, "'localhost:8080/products?page=999'")));
  });

  await t.test('a POST without Content-Type -> the 415 document README shows', async () => {
    const res = await fetch(`${server.url}/products`, { method: 'POST', body: '{}', headers: { 'content-type': '' } });
    assert.equal(res.status, 415);
    assert.deepEqual(await res.json(), JSON.parse(shownAnswer(readme, "--data-binary '{}' -H 'Content-Type:'")));
  });

  await t.test("the create example's body -> 201 Created with a Location, as README shows (the demo schema takes it)", async () => {
    const body = /curl -si -X POST localhost:8080\/products -H 'Content-Type: application\/json' \\\n\s+-d '(\{"sku".*\})'\n# HTTP\/1\.1 201 Created/.exec(readme)?.[1];
    assert.ok(body !== undefined, 'README has the create example');
    const res = await fetch(`${server.url}/products`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 201, await res.text());
    assert.match(res.headers.get('location') ?? '', /^\/products\/[^/]+$/);
  });

  await t.test('the Idempotency-Key example\'s sku -> one the demo schema takes', async () => {
    const sku = /-H 'Idempotency-Key: [^']*' -d '\{"sku":"([^"]*)"/.exec(readme)?.[1];
    assert.ok(sku !== undefined, 'README has the Idempotency-Key example');
    const schema = JSON.parse(await readFile(path.join(ROOT, 'data', 'products.schema.json'), 'utf8')) as { properties: { sku: { pattern: string } } };
    assert.match(sku, new RegExp(schema.properties.sku.pattern));
  });

  await t.test("the PostgreSQL replicas' example: its POST -> 201 under the demo schema and data it says the replicas serve", async () => {
    // The schema and the links are decided alike on both stores (docs/relations.md §4), so a body
    // the file store refuses here the database refuses too.
    const section = readme.slice(readme.indexOf('## PostgreSQL: several processes, one database'));
    const example = /curl -si -X POST localhost:8081\/products -H 'content-type: application\/json' \\?\n?\s*-d '(\{.*\})'\n# (.*)/.exec(section);
    assert.ok(example !== null, 'README has the replicas example');
    assert.match(example[2]!, /201 Created/);
    const res = await fetch(`${server.url}/products`, { method: 'POST', body: example[1]!, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 201, await res.text());
  });

  await t.test('the server stops on SIGTERM with exit code 0', async () => {
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  });
});
