/**
 * This version on a data directory an earlier one wrote, as a user upgrades: the files of
 * test/fixtures/halserve-2026-11-28 were written by the halserve of that day (commit 3566845,
 * token `secret-token-1234567890`, `--resource items`): a POST, then a POST with
 * `Idempotency-Key: upgrade-key-1`. That server answered them with the tags and cursors below.
 * Those of test/fixtures/halserve-2026-12-02-base-path, by the halserve of commit bc34ac0 with
 * `--base-path /api` besides: a POST with `Idempotency-Key: base-key-1`, then a PATCH of its
 * entity with `base-key-2`; it named their answers by the paths under its base path.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startCli, tempDir } from '../helpers/process.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/halserve-2026-11-28/items.jsonl', import.meta.url));
const TOKEN = 'secret-token-1234567890';
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** What the earlier server answered. */
const PLAIN = { path: '/items/JBgtVozgO4e5aJ6B', etag: '"1.1iv6bi3ev8l"' };
const KEYED = { path: '/items/sE27qNG1i88C7buQ', etag: '"3.1axtyhiuobd"', key: 'upgrade-key-1', body: '{"name":"keyed"}' };
/** The fixture's answer was recorded at this millisecond; moved to now, so it is within its 24 hours. */
const RECORDED_MS = 1796215159340;

/** A data directory holding the fixture, its answers' times (`recorded`, ms) moved to now. */
async function upgradedDir(fixture = FIXTURE, recorded: readonly number[] = [RECORDED_MS]): Promise<string> {
  const dir = await tempDir();
  let text = await readFile(fixture, 'utf8');
  for (const ms of recorded) text = text.replaceAll(String(ms), String(Date.now()));
  await writeFile(join(dir, 'items.jsonl'), text);
  return dir;
}

/** The keyed POST `keyed` sent again to `url` (`<server>[<base path>]/items`): its first answer, replayed, as that server sent it. */
async function assertReplayed(url: string, keyed: { path: string; etag: string; key: string; body: string }): Promise<void> {
  const retry = await fetch(url, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', 'idempotency-key': keyed.key },
    body: keyed.body,
  });
  assert.equal(retry.status, 201);
  assert.equal(retry.headers.get('idempotency-replayed'), 'true');
  assert.equal(retry.headers.get('location'), keyed.path);
  assert.equal(retry.headers.get('etag'), keyed.etag);
}

const BASE_PATH_FIXTURE = fileURLToPath(new URL('../fixtures/halserve-2026-12-02-base-path/items.jsonl', import.meta.url));
/** What that server answered, and when it recorded its two answers. */
const BASE_PATH_KEYED = { path: '/api/items/5KRcesCLLUTaolx2', etag: '"1idy1vn2x5"', key: 'base-key-1', body: '{"name":"keyed"}' };
const BASE_PATH_PATCH = { etag: '"16xyb8vgsds"', key: 'base-key-2', body: '{"name":"patched"}' };
const BASE_PATH_RECORDED_MS = [1796221265167, 1796221265209];

describe('upgrade from the files of 2026-11-28', () => {
  test('tags, cursors and remembered answers the earlier server handed out go on working', async () => {
    const dir = await upgradedDir();
    const server = await startCli(['--data', dir, '--port', '0', '--token', TOKEN, '--resource', 'items', '--log', 'off']);
    const get = (path: string, headers: Record<string, string> = {}) => fetch(server.url + path, { headers: { ...AUTH, ...headers } });

    // The keyed POST retried: the first answer again, nothing created twice.
    await assertReplayed(`${server.url}/items`, KEYED);
    assert.equal(((await (await get('/items')).json()) as { count: number }).count, 2);

    // The earlier server's cursor after the first change resumes: the second one follows.
    const feed = (await (await get('/changes?since=1')).json()) as { _embedded: { changes: { id: string }[] } };
    assert.deepEqual(
      feed._embedded.changes.map((c) => c.id),
      ['sE27qNG1i88C7buQ'],
    );

    // Its tags still name the unchanged entities' data: a conditional write is made. They vouch for
    // no bytes now (they have no representation epoch, docs/conventions.md §5), so a revalidation
    // is a 200, once, with the tag of now, which is a 304 from then on.
    const cached = await get(PLAIN.path, { 'if-none-match': PLAIN.etag });
    assert.equal(cached.status, 200);
    const now = cached.headers.get('etag')!;
    assert.equal((await get(PLAIN.path, { 'if-none-match': now })).status, 304);
    const json = await get(PLAIN.path, { accept: 'application/json', 'if-none-match': PLAIN.etag.replace(/"$/, '-json-gzip"') });
    assert.equal(json.status, 200);
    const plain = await fetch(server.url + PLAIN.path, {
      method: 'PATCH',
      headers: { ...AUTH, 'content-type': 'application/merge-patch+json', 'if-match': PLAIN.etag.replace(/"$/, '-json"') },
      body: '{"name":"plain changed"}',
    });
    assert.equal(plain.status, 200);
    const patched = await fetch(server.url + KEYED.path, {
      method: 'PATCH',
      headers: { ...AUTH, 'content-type': 'application/merge-patch+json', 'if-match': KEYED.etag },
      body: '{"name":"changed"}',
    });
    assert.equal(patched.status, 200);
    // Once changed, the old tag names a state that is gone.
    const stale = await fetch(server.url + KEYED.path, {
      method: 'PATCH',
      headers: { ...AUTH, 'content-type': 'application/merge-patch+json', 'if-match': KEYED.etag },
      body: '{"name":"again"}',
    });
    assert.equal(stale.status, 412);
    assert.equal((await get(KEYED.path, { 'if-none-match': KEYED.etag })).status, 200);

    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
  });
});

describe('upgrade from the files of 2026-12-02, written under --base-path', () => {
  for (const basePath of ['/api', '', '/v2']) {
    test(`the keyed POST and PATCH retried after the upgrade, the base path now ${JSON.stringify(basePath)} -> their first answers again, nothing written twice`, async () => {
      const dir = await upgradedDir(BASE_PATH_FIXTURE, BASE_PATH_RECORDED_MS);
      const args = ['--data', dir, '--port', '0', '--token', TOKEN, '--resource', 'items', '--log', 'off', ...(basePath === '' ? [] : ['--base-path', basePath])];
      const server = await startCli(args);
      const id = BASE_PATH_KEYED.path.slice(BASE_PATH_KEYED.path.lastIndexOf('/') + 1);
      // As first sent: its links under the base path of then.
      await assertReplayed(`${server.url}${basePath}/items`, BASE_PATH_KEYED);
      const patch = await fetch(`${server.url}${basePath}/items/${id}`, {
        method: 'PATCH',
        headers: { ...AUTH, 'content-type': 'application/merge-patch+json', 'idempotency-key': BASE_PATH_PATCH.key },
        body: BASE_PATH_PATCH.body,
      });
      assert.equal(patch.status, 200);
      assert.equal(patch.headers.get('idempotency-replayed'), 'true');
      assert.equal(patch.headers.get('etag'), BASE_PATH_PATCH.etag);
      const page = (await (await fetch(`${server.url}/items`, { headers: { ...AUTH, accept: 'application/json' } })).json()) as { count: number };
      assert.equal(page.count, 1);
      // The entity is as the PATCH left it, not patched again: its tag of then still names the data
      // (If-Match ignores the representation epoch; If-None-Match would not, docs/conventions.md §5).
      assert.equal((await fetch(`${server.url}/items/${id}`, { headers: { ...AUTH, 'if-match': BASE_PATH_PATCH.etag } })).status, 200);
      server.child.kill('SIGTERM');
      assert.equal(await server.exited, 0);
    });
  }
});
