/**
 * `halserve backup --from postgres://…` (docs/storage.md §4) against a real PostgreSQL with a server
 * on it and a writer that never stops while the copy is read: the copy is the state after exactly
 * the writes up to its cursor, in every resource at once, and the database's feed after that cursor
 * holds the rest. A server on the copy serves it and refuses the database's cursors with 410.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { eventually, spawnCli, startCli, tempDir } from '../helpers/process.js';
import { lastWriteIn, listAll, startWriter, stateAfter, stateOfFiles, touchedAfter } from '../helpers/writer.js';
import { freshDatabase, pgMissing } from './helpers.js';

async function halserve(args: readonly string[]): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const cli = spawnCli(args);
  const code = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

test('a writer running on PostgreSQL -> the copy is one cursor of the feed; halserve --data DEST serves it', { skip: pgMissing }, async () => {
  const url = await freshDatabase();
  const root = await tempDir();
  const seed = join(root, 'seed');
  await mkdir(seed);
  await writeFile(join(seed, 'orders.jsonl'), `${JSON.stringify({ id: 'counter', createdAt: 1, updatedAt: 1, n: 0 })}\n`);
  await writeFile(join(seed, 'items.schema.json'), JSON.stringify({ type: 'object', properties: { n: { type: 'integer' } } }));
  // A resource no write reaches: the database holds no row of it, its schema file names it.
  await writeFile(join(seed, 'notes.schema.json'), JSON.stringify({ type: 'object', properties: { text: { type: 'string' } } }));
  const imported = await halserve(['import', '--from', seed, '--to', url]);
  assert.equal(imported.code, 0, imported.stderr);
  const server = await startCli(['--port', '0', '--log', 'off', '--store', url, '--resource', 'items', '--data', seed]);
  const writer = startWriter(server.url);
  while (writer.acked() < 40) await new Promise((resolve) => setTimeout(resolve, 5));
  const ackedBefore = writer.acked();
  const dest = join(root, 'copy');
  const run = await halserve(['backup', '--from', url, '--to', dest, '--data', seed]);
  const sentAfter = writer.sent() + 1;
  while (writer.acked() < sentAfter + 20) await new Promise((resolve) => setTimeout(resolve, 5));
  await writer.stop();
  assert.equal(run.code, 0, run.stderr);
  const cursor = run.stdout.trimEnd().split('\n').at(-1)!;
  // Named as the server's cursors are: the database's data set, then (tx, pos).
  assert.match(cursor, /^p[0-9a-f]{16}-[0-9]+\.[0-9]+$/);
  assert.match(run.stdout, /no write waited/);

  assert.deepEqual((await readdir(dest)).sort(), ['_changes', 'items.jsonl', 'items.schema.json', 'notes.jsonl', 'notes.schema.json', 'orders.jsonl']);
  assert.equal(await readFile(join(dest, 'notes.jsonl'), 'utf8'), '');
  assert.match(run.stdout, /backed up 3 resources/);
  const copied = stateOfFiles(await readFile(join(dest, 'orders.jsonl'), 'utf8'), await readFile(join(dest, 'items.jsonl'), 'utf8'));
  const k = lastWriteIn(copied);
  assert.deepEqual(copied, stateAfter(k), `the state after write ${k}, no skew between resources`);
  assert.ok(k >= ackedBefore && k < sentAfter, `${ackedBefore} <= ${k} < ${sentAfter}`);

  // The database's feed after the cursor: exactly the entities the writes after k touched.
  const touched = touchedAfter(k, writer);
  const fed = new Set<string>();
  await eventually(async () => {
    fed.clear();
    for (let since = cursor; ; ) {
      const page = (await (await fetch(`${server.url}/changes?since=${since}&limit=200`)).json()) as { cursor: string; _embedded: { changes: { resource: string; id: string }[] } };
      if (page._embedded.changes.length === 0) break;
      for (const change of page._embedded.changes) fed.add(`${change.resource}/${change.id}`);
      since = page.cursor;
    }
    return fed.size >= touched.size;
  }, 'the feed to hold every write');
  assert.deepEqual([...fed].sort(), [...touched].sort());

  const copy = await startCli(['--port', '0', '--log', 'off', '--data', dest]);
  for (const resource of ['orders', 'items'] as const) {
    const listed = await listAll(`${copy.url}/${resource}`, resource);
    const expected = resource === 'orders' ? [...stateAfter(k).orders, stateAfter(k).counter] : stateAfter(k).items;
    assert.deepEqual(listed.map((e) => e.n).sort((a, b) => a - b), expected.sort((a, b) => a - b));
  }
  assert.equal((await fetch(`${copy.url}/changes?since=${cursor}`)).status, 410, "the database's cursor is another data set's");
  assert.equal(((await (await fetch(`${copy.url}/notes`)).json()) as { total: number }).total, 0, 'the empty resource is served by the copy');
  for (const proc of [server, copy]) {
    proc.child.kill('SIGTERM');
    assert.equal(await proc.exited, 0);
  }
});
