import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { startCli } from '../helpers/process.js';
import { assertFetchProblem } from './raw.js';
import { smallDisk } from '../helpers/small-disk.js';

/**
 * A full disk under the real CLI and JSON-lines store: writes fail with a 503 problem and leave
 * nothing half-written, reads go on, writes work again once there is room, and a restart shows
 * exactly the acknowledged writes. Needs a small tmpfs, so it runs only as root where `mount` works.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };

describe('disk full (1 MiB tmpfs)', () => {
  test('POSTs until the disk is full -> 503 problem, nothing partial; room again -> 201; restart -> exactly the acknowledged entities', async (t) => {
    const dir = await smallDisk('halserve-qa-full-');
    if (dir === undefined) {
      t.skip('needs root and mount(8) for a tmpfs');
      return;
    }
    const args = ['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off'];
    const first = await startCli(args);
    const ballast = join(dir, 'ballast');
    await writeFile(ballast, Buffer.alloc(700 * 1024));

    const acknowledged: string[] = [];
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${first.url}/items`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ i, pad: 'x'.repeat(60_000) }) });
      statuses.push(res.status);
      if (res.status === 201) acknowledged.push(((await res.json()) as { id: string }).id);
      else {
        // RFC 9110 §10.2.3: a full disk lasts until someone makes room (docs/conventions.md §7).
        assert.equal(res.headers.get('retry-after'), '30');
        await assertFetchProblem(res, 503, 'The change could not be saved; it was not applied. Try again later');
      }
    }
    assert.ok(statuses.includes(503), `the disk never filled: ${statuses.join(' ')}`);
    assert.ok(acknowledged.length > 0);

    // A change that cannot be saved is not applied, and reads go on.
    const target = acknowledged[0] ?? '';
    const patched = await fetch(`${first.url}/items/${target}`, { method: 'PATCH', headers: JSON_HEADERS, body: JSON.stringify({ more: 'y'.repeat(100_000) }) });
    await assertFetchProblem(patched, 503);
    const entity = (await (await fetch(`${first.url}/items/${target}`)).json()) as Record<string, unknown>;
    assert.equal(Object.hasOwn(entity, 'more'), false);
    assert.equal(((await (await fetch(`${first.url}/items?limit=200`)).json()) as { total: number }).total, acknowledged.length);

    await rm(ballast);
    const again = await fetch(`${first.url}/items`, { method: 'POST', headers: JSON_HEADERS, body: '{"after":"room"}' });
    assert.equal(again.status, 201);
    acknowledged.push(((await again.json()) as { id: string }).id);
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);

    const second = await startCli(args);
    const page = (await (await fetch(`${second.url}/items?limit=200`)).json()) as { _embedded: { items: { id: string }[] } };
    assert.deepEqual(
      page._embedded.items.map((e) => e.id),
      acknowledged,
    );
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 0);
  });
});
