/**
 * A restart that changes the representations but not the data (docs/conventions.md §5): another
 * `--base-path`, or a schema that adds a link. The bytes served change, so their tags must: a
 * client revalidating with `If-None-Match` gets a 200 with the new links and forms, not a 304 that
 * keeps the old ones. Its writes, about the data, go on: `If-Match` with a tag of before names the
 * same version, and one of an older version is a 412 as ever.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startCli, tempDir, type CliProcess } from '../helpers/process.js';

const FORMS = 'application/prs.hal-forms+json';
const PATCH = 'application/merge-patch+json';

/** products (p1, p2) linking categories (c1) through `category` when `linked`; the schema as a file. */
async function dataDir(): Promise<string> {
  const dir = await tempDir();
  await writeFile(join(dir, 'categories.jsonl'), '{"id":"c1","createdAt":1800000000,"updatedAt":1800000000,"title":"Lamps"}\n');
  await writeFile(
    join(dir, 'products.jsonl'),
    ['p1', 'p2'].map((id) => `{"id":"${id}","createdAt":1800000000,"updatedAt":1800000000,"name":"${id}","category":"c1"}\n`).join(''),
  );
  await writeSchema(dir, false);
  return dir;
}

async function writeSchema(dir: string, linked: boolean): Promise<void> {
  const category = linked ? { type: 'string', 'x-link': 'categories' } : { type: 'string' };
  await writeFile(join(dir, 'products.schema.json'), JSON.stringify({ type: 'object', properties: { name: { type: 'string' }, category } }));
}

async function serve(dir: string, extra: readonly string[] = []): Promise<CliProcess> {
  return startCli(['--port', '0', '--data', dir, '--log', 'off', ...extra]);
}

async function stop(cli: CliProcess): Promise<void> {
  cli.child.kill('SIGTERM');
  assert.equal(await cli.exited, 0);
}

/** A GET's status, tag and body. */
async function get(cli: CliProcess, path: string, headers: Record<string, string> = {}): Promise<{ status: number; etag: string | null; body: string }> {
  const res = await fetch(cli.url + path, { headers });
  return { status: res.status, etag: res.headers.get('etag'), body: await res.text() };
}

function write(cli: CliProcess, method: 'PUT' | 'PATCH', path: string, ifMatch: string, body: unknown): Promise<Response> {
  return fetch(cli.url + path, { method, headers: { 'content-type': method === 'PATCH' ? PATCH : 'application/json', 'if-match': ifMatch }, body: JSON.stringify(body) });
}

describe('representation epoch across restarts (CLI, file store)', () => {
  test('the same configuration again -> the same tags: a 304', async () => {
    const dir = await dataDir();
    let cli = await serve(dir, ['--base-path', '/v1']);
    const first = await get(cli, '/v1/products/p1');
    const forms = await get(cli, '/v1/products/p1', { accept: FORMS });
    await stop(cli);
    cli = await serve(dir, ['--base-path', '/v1']);
    assert.equal((await get(cli, '/v1/products/p1', { 'if-none-match': first.etag! })).status, 304);
    assert.equal((await get(cli, '/v1/products/p1', { accept: FORMS, 'if-none-match': forms.etag! })).status, 304);
    await stop(cli);
  });

  test('another --base-path -> If-None-Match of before is a 200 with the new links and forms; If-Match of before still writes the same data; an older version is a 412', async () => {
    const dir = await dataDir();
    let cli = await serve(dir);
    const hal = await get(cli, '/products/p1');
    const json = await get(cli, '/products/p1', { accept: 'application/json', 'accept-encoding': 'gzip' });
    const forms = await get(cli, '/products/p1', { accept: FORMS });
    const other = await get(cli, '/products/p2');
    assert.match(hal.body, /"self":\{"href":"\/products\/p1"\}/);
    await stop(cli);

    cli = await serve(dir, ['--base-path', '/v2']);
    const again = await get(cli, '/v2/products/p1', { 'if-none-match': hal.etag! });
    assert.equal(again.status, 200);
    assert.match(again.body, /"self":\{"href":"\/v2\/products\/p1"\}/);
    assert.notEqual(again.etag, hal.etag);
    const head = await fetch(`${cli.url}/v2/products/p1`, { method: 'HEAD', headers: { 'if-none-match': hal.etag! } });
    assert.equal(head.status, 200);
    assert.equal((await get(cli, '/v2/products/p1', { accept: 'application/json', 'if-none-match': json.etag! })).status, 200);
    const newForms = await get(cli, '/v2/products/p1', { accept: FORMS, 'if-none-match': forms.etag! });
    assert.equal(newForms.status, 200);
    assert.match(newForms.body, /"target":"\/v2\/products\/p1"/);
    // The tag of now, as a cache would hold it next: a 304.
    assert.equal((await get(cli, '/v2/products/p1', { 'if-none-match': again.etag! })).status, 304);

    // Writes name the data: the tags of before name the versions still stored.
    const put = await write(cli, 'PUT', '/v2/products/p1', hal.etag!, { name: 'p1 again', category: 'c1' });
    assert.equal(put.status, 200);
    const patch = await write(cli, 'PATCH', '/v2/products/p2', other.etag!.replace(/"$/, '-json-gzip"'), { name: 'p2 again' });
    assert.equal(patch.status, 200);
    // Those versions are gone now: the same tags are a 412.
    assert.equal((await write(cli, 'PATCH', '/v2/products/p1', hal.etag!, { name: 'lost' })).status, 412);
    assert.equal((await write(cli, 'PUT', '/v2/products/p2', other.etag!, { name: 'lost' })).status, 412);
    assert.equal((await get(cli, '/v2/products/p1')).body.includes('"p1 again"'), true);
    await stop(cli);
  });

  test('a schema that adds a link -> If-None-Match of before is a 200 with the link; If-Match of before still writes; an older version is a 412', async () => {
    const dir = await dataDir();
    let cli = await serve(dir);
    const hal = await get(cli, '/products/p1');
    const forms = await get(cli, '/products/p1', { accept: FORMS });
    const other = await get(cli, '/products/p2');
    assert.doesNotMatch(hal.body, /"category":\{"href"/);
    await stop(cli);

    await writeSchema(dir, true);
    cli = await serve(dir);
    const again = await get(cli, '/products/p1', { 'if-none-match': hal.etag! });
    assert.equal(again.status, 200);
    assert.match(again.body, /"category":\{"href":"\/categories\/c1"\}/);
    assert.equal((await get(cli, '/products/p1', { accept: FORMS, 'if-none-match': forms.etag! })).status, 200);

    assert.equal((await write(cli, 'PATCH', '/products/p1', hal.etag!, { name: 'p1 again' })).status, 200);
    assert.equal((await write(cli, 'PUT', '/products/p2', other.etag!, { name: 'p2 again', category: 'c1' })).status, 200);
    assert.equal((await write(cli, 'PUT', '/products/p1', hal.etag!, { name: 'lost' })).status, 412);
    assert.equal((await write(cli, 'PATCH', '/products/p2', other.etag!, { name: 'lost' })).status, 412);
    await stop(cli);
  });
});
