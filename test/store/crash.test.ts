import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { crashRun, removeDir, startServer } from './crash-harness.js';

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await removeDir(dir);
});
const tempDir = async (): Promise<string> => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-crash-'));
  dirs.push(dir);
  return dir;
};

test('20 SIGKILL/restart cycles under concurrent POST/PUT/PATCH/DELETE -> no acknowledged write lost', async () => {
  const dir = await tempDir();
  const result = await crashRun(dir, { cycles: 20, clients: 4 });
  assert.equal(result.cycles, 20);
  assert.ok(result.acknowledged > 100, `only ${result.acknowledged} writes were acknowledged`);
  // The log is well-formed: every line parses and the file ends with a newline.
  const text = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
  assert.ok(text.endsWith('\n'));
  for (const line of text.trimEnd().split('\n')) JSON.parse(line);
});

test('second server on a directory in use -> exit 1 with the holder named; first one unaffected', async () => {
  const dir = await tempDir();
  const first = await startServer(dir);
  await assert.rejects(startServer(dir), (error: unknown) => {
    assert.match(
      (error as Error).message,
      new RegExp(`exited with 1 .*halserve: data directory ${dir} is in use by process ${first.child.pid} \\(lock file ${dir}/.halserve.lock\\)`, 's'),
    );
    return true;
  });
  const response = await fetch(`${first.url}/items`);
  assert.equal(response.status, 200);
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);
});

test('corrupt line in the middle -> exit 1 with file:line; --repair -> starts, line moved aside', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'items.jsonl');
  await fs.writeFile(file, '{"id":"a","createdAt":1,"updatedAt":1}\n{"id":"b",,}\n{"id":"c","createdAt":1,"updatedAt":1}\n');
  await assert.rejects(startServer(dir), (error: unknown) => {
    assert.match((error as Error).message, new RegExp(`exited with 1 .*halserve: ${file}:2: `, 's'));
    return true;
  });
  const server = await startServer(dir, ['--repair']);
  const body = (await (await fetch(`${server.url}/items`)).json()) as { total: number };
  assert.equal(body.total, 2);
  assert.equal(await fs.readFile(`${file}.rejected`, 'utf8'), '{"id":"b",,}\n');
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});
