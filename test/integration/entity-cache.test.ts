import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { prng } from '../helpers/prng.js';
import { records, startItems } from '../helpers/server.js';

/** Entities of about 900 KB: the entity cache (16 MiB) holds about 18 of them, so 24 keep it evicting. */
const COUNT = 24;
const blob = (i: number): string => String.fromCharCode(97 + (i % 26)).repeat(900_000);

describe('the entity cache while it evicts', () => {
  test('160 GETs of 24 large entities in a seeded random order, a PATCH among them -> every answer the latest version, the same ETag for the same version', async () => {
    const s = await startItems(records(COUNT, (i) => ({ n: i, blob: blob(i) })));
    const random = prng(21);
    const expected = new Map<string, number>();
    const tags = new Map<string, string>();
    for (let step = 0; step < 160; step++) {
      const i = Math.floor(random() * COUNT);
      const id = `e${String(i).padStart(3, '0')}`;
      if (step === 80) {
        // A write in the middle: from here on, the new version only.
        const res = await s.request(`/items/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ n: 1000 + i }) });
        assert.equal(res.status, 200);
        await res.arrayBuffer();
        expected.set(id, 1000 + i);
        tags.delete(id);
        continue;
      }
      const res = await s.request(`/items/${id}`);
      assert.equal(res.status, 200);
      const body = (await res.json()) as { id: string; n: number; blob: string; _links: unknown };
      assert.deepEqual({ id: body.id, n: body.n, blobOk: body.blob === blob(i), links: body._links }, { id, n: expected.get(id) ?? i, blobOk: true, links: { self: { href: `/items/${id}` } } });
      const etag = res.headers.get('etag') ?? '';
      assert.equal(etag, tags.get(id) ?? etag, `${id}: a second answer of the same version with another ETag`);
      tags.set(id, etag);
    }
  });
});
