/**
 * Processes serving one database (docs/conventions.md §5): configured alike (the same schema files,
 * the same base path) they hand out the same tags, so a conditional GET sent to another one gets
 * its 304; one with another base path serves other bytes under other tags, and takes the others'
 * tags for writes, which name the data.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startCli, tempDir, type CliProcess } from '../helpers/process.js';
import { freshDatabase, pgMissing, until } from './helpers.js';

async function stop(cli: CliProcess): Promise<void> {
  cli.child.kill('SIGTERM');
  assert.equal(await cli.exited, 0);
}

describe('representation epoch on PostgreSQL', () => {
  test('two processes configured alike -> the same entity and page tags (304 across); one with another --base-path -> 200 with its links, and If-Match of the others still writes', { skip: pgMissing }, async () => {
    const url = await freshDatabase();
    const schemas = await tempDir();
    await writeFile(join(schemas, 'items.schema.json'), JSON.stringify({ type: 'object', properties: { name: { type: 'string' } } }));
    const start = (extra: readonly string[] = []): Promise<CliProcess> => startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--data', schemas, ...extra]);
    const a = await start();
    const b = await start();
    const c = await start(['--base-path', '/v2']);
    const get = (cli: CliProcess, path: string, headers: Record<string, string> = {}): Promise<Response> => fetch(cli.url + path, { headers });

    const created = await fetch(`${a.url}/items`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"one"}' });
    assert.equal(created.status, 201);
    const path = created.headers.get('location')!;
    const tag = created.headers.get('etag')!;

    // b has it under the same tag: a's tag is a 304 there.
    await until(async () => (await get(b, path)).status === 200, 'the entity on b');
    assert.equal((await get(b, path)).headers.get('etag'), tag);
    assert.equal((await get(b, path, { 'if-none-match': tag })).status, 304);
    // At rest, their pages too.
    let pageTag = '';
    await until(async () => {
      const [fromA, fromB] = await Promise.all([get(a, '/items'), get(b, '/items')]);
      pageTag = fromA.headers.get('etag') ?? '';
      return pageTag !== '' && fromB.headers.get('etag') === pageTag;
    }, 'the same page tag on a and b');
    assert.equal((await get(b, '/items', { 'if-none-match': pageTag })).status, 304);

    // c links under /v2: other bytes, other tags.
    await until(async () => (await get(c, `/v2${path}`)).status === 200, 'the entity on c');
    const there = await get(c, `/v2${path}`, { 'if-none-match': tag });
    assert.equal(there.status, 200);
    assert.match(await there.text(), new RegExp(`"self":\\{"href":"/v2${path}"\\}`));
    assert.notEqual(there.headers.get('etag'), tag);
    const page = await get(c, '/v2/items', { 'if-none-match': pageTag });
    assert.equal(page.status, 200);
    assert.notEqual(page.headers.get('etag'), pageTag);

    // a's tag names the data: c takes it for a write, and then it names a version that is gone.
    const patch = (cli: CliProcess, target: string): Promise<Response> =>
      fetch(cli.url + target, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json', 'if-match': tag }, body: '{"name":"two"}' });
    assert.equal((await patch(c, `/v2${path}`)).status, 200);
    assert.equal((await patch(a, path)).status, 412);

    await Promise.all([stop(a), stop(b), stop(c)]);
  });
});
