import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord } from '../../src/store/store.js';
import { records, startItems, startServer } from '../helpers/server.js';

/** Follows `next` from `start` and returns every id seen, page by page (docs/conventions.md §2 rule 2). */
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

describe('following next reaches every entity exactly once (docs/conventions.md §3)', () => {
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

describe('following links from / reaches every category and, through reverse links, every product exactly once (docs/relations.md)', () => {
  test('the demo catalogue -> 13 categories, 300 products, each once, every link resolving', async () => {
    const data = (name: string): EntityRecord[] =>
      readFileSync(new URL(`../../data/${name}`, import.meta.url), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as EntityRecord);
    const schema = JSON.parse(readFileSync(new URL('../../data/products.schema.json', import.meta.url), 'utf8')) as Record<string, unknown>;
    const s = await startServer({
      resources: [
        { name: 'categories', store: createMemoryStore(data('categories.jsonl')) },
        { name: 'products', store: createMemoryStore(data('products.jsonl')), schema },
      ],
    });
    const get = async (href: string): Promise<Record<string, any>> => {
      const res = await s.request(href);
      assert.equal(res.status, 200, href);
      return (await res.json()) as Record<string, any>;
    };
    /** Every entity of a collection, by following `next` from `href`. */
    const all = async (href: string, name: string): Promise<Record<string, any>[]> => {
      const out: Record<string, any>[] = [];
      for (let next: string | undefined = href; next !== undefined; ) {
        const page = await get(next);
        out.push(...(page['_embedded'][name] as Record<string, any>[]));
        next = page['_links'].next?.href;
      }
      return out;
    };
    const index = await get('/');
    const categories = await all(index['_links'].categories.href, 'categories');
    const productIds: string[] = [];
    for (const category of categories) {
      // From the category, the reverse link: every product of it, each linking back.
      for (const product of await all(category['_links'].products.href, 'products')) {
        assert.equal(product['_links'].category.href, category['_links'].self.href);
        assert.deepEqual(await get(product['_links'].category.href), category);
        productIds.push(product['id'] as string);
      }
    }
    assert.deepEqual(categories.map((c) => c['id']).sort(), data('categories.jsonl').map((c) => c.id).sort());
    assert.equal(new Set(productIds).size, productIds.length, 'no product twice');
    assert.deepEqual(productIds.sort(), data('products.jsonl').map((p) => p.id).sort());
  });
});
