import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { records, startItems } from '../helpers/server.js';

/** Follows `next` from `start` and returns every id seen, page by page (seed 2.2 rule 2). */
async function traverse(request: (path: string) => Promise<Response>, start: string): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let href: string | undefined = start;
  let pages = 0;
  while (href !== undefined) {
    const res = await request(href);
    assert.equal(res.status, 200, href);
    const body = (await res.json()) as { count: number; page: number; pages: number; _links: { next?: { href: string } }; _embedded: { items: { id: string }[] } };
    assert.equal(body._embedded.items.length, body.count);
    ids.push(...body._embedded.items.map((e) => e.id));
    pages++;
    assert.equal(body.page, pages);
    if (body.page === body.pages) assert.equal(body._links.next, undefined, 'no next on the last page');
    href = body._links.next?.href;
    assert.ok(pages <= 10_000, 'traversal must end');
  }
  return { ids, pages };
}

describe('following next reaches every entity exactly once (contract §3)', () => {
  for (const [total, limit] of [
    [0, 20],
    [1, 20],
    [20, 20],
    [21, 20],
    [45, 7],
    [200, 200],
    [201, 200],
    [401, 200],
    [250, 1],
  ] as const) {
    test(`${total} entities, limit ${limit} -> ${Math.max(1, Math.ceil(total / limit))} pages, each entity once`, async () => {
      const initial = records(total);
      const s = await startItems(initial);
      const { ids, pages } = await traverse((path) => s.request(path), `/items?limit=${limit}`);
      assert.equal(pages, Math.max(1, Math.ceil(total / limit)));
      assert.deepEqual(ids, initial.map((r) => r.id));
    });
  }

  test('after deletes -> the remaining entities, each once, in creation order', async () => {
    const initial = records(60);
    const s = await startItems(initial);
    for (const i of [0, 7, 19, 20, 21, 59]) assert.equal((await s.request(`/items/${initial[i]?.id}`, { method: 'DELETE' })).status, 204);
    const { ids } = await traverse((path) => s.request(path), '/items?limit=10');
    assert.deepEqual(ids, initial.filter((_, i) => ![0, 7, 19, 20, 21, 59].includes(i)).map((r) => r.id));
  });

  test('with a filter and a sort -> the filtered set, each once, sorted', async () => {
    const initial = records(95, (i) => ({ group: i % 3 === 0 ? 'a' : 'b', rank: (i * 37) % 11 }));
    const s = await startItems(initial);
    const { ids } = await traverse((path) => s.request(path), '/items?limit=6&group=b&sort=-rank');
    const expected = initial
      .filter((r) => r['group'] === 'b')
      .sort((x, y) => (y['rank'] as number) - (x['rank'] as number))
      .map((r) => r.id);
    assert.deepEqual(ids, expected);
  });
});
