import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { compileSchema, declaredPaths } from '../../src/conventions/schema.js';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord } from '../../src/store/store.js';
import { prng } from '../helpers/prng.js';
import { tempDir } from '../helpers/process.js';
import { RFC2616, startServer, type TestResponse } from '../helpers/server.js';

/*
 * Facets through HTTP: the `facets` member of a page, links that narrow the query to
 * one value and give a page whose `total` is that value's count, and each bad request's problem.
 */

const T = 1_700_000_000;
const CATEGORIES = ['audio', 'lighting', 'office', 'cables,adapters'];
const BRANDS = ['Lumo', 'Maison Claire', 'Volt', 'Nord'];

function products(count: number, seed: number): EntityRecord[] {
  const r = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(r() * items.length)] as T;
  return Array.from({ length: count }, (_, i) => {
    const fields: Record<string, unknown> = { name: `Product ${i}`, status: pick(['active', 'paused', 'archived']), price: Math.floor(r() * 100) };
    if (r() < 0.9) fields.category = pick(CATEGORIES);
    if (r() < 0.9) fields.brand = r() < 0.1 ? null : pick(BRANDS);
    if (r() < 0.8) fields.tags = Array.from({ length: Math.floor(r() * 3) }, () => pick(['usb-c', 'lamp', 'desk', 'a,b']));
    if (r() < 0.8) fields.dims = { w: Math.floor(r() * 4) };
    return { id: `p${String(i).padStart(3, '0')}`, createdAt: T + i, updatedAt: T + i, ...fields };
  });
}

const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    status: { type: 'string', enum: ['active', 'paused', 'archived'] },
    price: { type: 'number' },
    category: { type: 'string' },
    brand: { type: ['string', 'null'] },
    tags: { type: 'array', items: { type: 'string' } },
    dims: { type: 'object', properties: { w: { type: 'number' } } },
  },
};

async function start(withSchema = false) {
  const store = createMemoryStore(products(240, 19));
  return startServer({
    resources: [withSchema ? { name: 'products', store, schema: SCHEMA, validate: compileSchema(SCHEMA, 'products.schema.json'), declared: declaredPaths(SCHEMA) } : { name: 'products', store }],
  });
}

interface FacetValue {
  value: unknown;
  count: number;
  _links: { self: { href: string } };
}

describe('facets', () => {
  test('?status=paused&facets=category,brand,tags,dims.w -> every value\'s link gives a page whose total is its count', async () => {
    const s = await start();
    const body = await (await s.request('/products?status=paused&facets=category,brand,tags,dims.w&limit=3&sort=-price')).json();
    assert.deepEqual(Object.keys(body.facets), ['brand', 'category', 'dims.w', 'tags']);
    let links = 0;
    for (const [field, values] of Object.entries(body.facets as Record<string, FacetValue[]>)) {
      assert.ok(values.length > 0, field);
      for (const { value, count, _links } of values) {
        const page = await (await s.request(_links.self.href)).json();
        assert.equal(page.total, count, `${field}=${JSON.stringify(value)}: ${_links.self.href}`);
        assert.equal(page.page, 1);
        assert.equal(page.limit, 3);
        links++;
      }
    }
    assert.ok(links >= 12);
  });

  test('?status=paused&facets=category -> the links keep the query (sort, limit, facets) and add the value, a comma as %2C', async () => {
    const s = await start();
    const res = await s.request('/products?facets=category&sort=-price&status=paused&limit=5');
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body._links.self.href, '/products?page=1&limit=5&sort=-price&facets=category&status=paused');
    assert.match(res.headers.get('link') ?? '', /facets=category/);
    const hrefs = (body.facets.category as FacetValue[]).map((v) => [v.value, v._links.self.href]);
    assert.deepEqual(
      hrefs.find(([value]) => value === 'cables,adapters'),
      ['cables,adapters', '/products?page=1&limit=5&sort=-price&facets=category&category=cables%2Cadapters&status=paused'],
    );
    // Counts descending, ties by value.
    const counts = (body.facets.category as FacetValue[]).map((v) => v.count);
    assert.deepEqual(counts, [...counts].sort((a, b) => b - a));
  });

  test('?status=paused&price[gte]=10&facets=status,price -> a value\'s link replaces every filter on its field', async () => {
    const s = await start();
    const body = await (await s.request('/products?status=paused&price[gte]=10&price[lt]=20&facets=status,price')).json();
    const status = body.facets.status as FacetValue[];
    assert.deepEqual(status.map((v) => v.value), ['paused']);
    assert.equal(status[0]!._links.self.href, '/products?page=1&limit=20&facets=price,status&price[gte]=10&price[lt]=20&status=paused');
    for (const v of body.facets.price as FacetValue[]) {
      assert.equal(v._links.self.href, `/products?page=1&limit=20&facets=price,status&price=${v.value}&status=paused`);
      assert.ok((v.value as number) >= 10 && (v.value as number) < 20);
    }
  });

  test('brand null -> counted, its link filters brand=null; a field no entity has -> []', async () => {
    const s = await start();
    const body = await (await s.request('/products?facets=brand,colour')).json();
    const nul = (body.facets.brand as FacetValue[]).find((v) => v.value === null);
    assert.ok(nul);
    assert.equal(nul._links.self.href, '/products?page=1&limit=20&facets=brand,colour&brand=null');
    assert.deepEqual(body.facets.colour, []);
    assert.equal((await (await s.request(nul._links.self.href)).json()).total, nul.count);
  });

  test('a value holding a lone surrogate (a body may store "\\ud800") -> 200, its link carries U+FFFD in its place', async () => {
    const s = await startServer({ resources: [{ name: 'products', store: createMemoryStore([]) }] });
    for (const body of ['{"name":"\\ud800","tags":["a\\udc00"]}', '{"name":"ok"}']) {
      assert.equal((await s.request('/products', { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status, 201);
    }
    const res = await s.request('/products?facets=name,tags');
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.deepEqual(
      (body.facets.name as FacetValue[]).map((v) => [v.value, v._links.self.href]),
      [['ok', '/products?page=1&limit=20&facets=name,tags&name=ok'], ['\ud800', '/products?page=1&limit=20&facets=name,tags&name=%EF%BF%BD']],
    );
    assert.equal((body.facets.tags as FacetValue[])[0]?._links.self.href, '/products?page=1&limit=20&facets=name,tags&tags=a%EF%BF%BD');
  });

  test('the two exceptions docs/queries.md names: 0 and "0" in one array; an array field the request filters', async () => {
    const items = [
      { id: 'e1', tags: ['lamp', 'desk'] },
      { id: 'e2', tags: ['desk'] },
      { id: 'e3', tags: [0, '0'] },
    ].map((fields, i) => ({ createdAt: T + i, updatedAt: T + i, ...fields }));
    const s = await startServer({ resources: [{ name: 'products', store: createMemoryStore(items) }] });
    const total = async (href: string): Promise<number> => (await (await s.request(href)).json()).total;
    // e3 is counted once under 0 and once under "0"; the link tags=0 finds it once: not the sum.
    const whole = (await (await s.request('/products?facets=tags')).json()).facets.tags as FacetValue[];
    const zeros = whole.filter((v) => v.value === 0 || v.value === '0');
    assert.deepEqual(zeros.map((v) => [v.value, v.count]), [[0, 1], ['0', 1]]);
    assert.equal(await total(zeros[0]!._links.self.href), 1);
    // Under tags=lamp (e1 alone) desk counts 1, and its link, tags=desk, finds e1 and e2.
    const narrowed = (await (await s.request('/products?tags=lamp&facets=tags')).json()).facets.tags as FacetValue[];
    const desk = narrowed.find((v) => v.value === 'desk')!;
    assert.equal(desk.count, 1);
    assert.equal(desk._links.self.href, '/products?page=1&limit=20&facets=tags&tags=desk');
    assert.equal(await total(desk._links.self.href), 2);
  });

  test('facets=b,a and facets=a&facets=b -> the same body (a set, sorted)', async () => {
    const s = await start();
    const a = await (await s.request('/products?facets=status,category')).text();
    const b = await (await s.request('/products?facets=category&facets=status')).text();
    assert.equal(a, b);
  });

  test('no facets -> no facets member (as before)', async () => {
    const s = await start();
    assert.equal('facets' in (await (await s.request('/products?status=paused')).json()), false);
  });

  test('tags arrays read from a JSON-lines file (spaces, escapes, non-ASCII, strings beside them) -> ?facets=tags gives each value\'s count in the file; after a PATCH that puts a number in one, and one that takes it out, the counts of the data then', async () => {
    const r = prng(23);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(r() * items.length)] as T;
    const words = ['red', 'blue', 'ünï', 'a,b', 'q"uote', '3', ...Array.from({ length: 60 }, (_, i) => `w${i}`)];
    const records: Record<string, unknown>[] = [];
    const lines: string[] = [];
    for (let i = 0; i < 400; i++) {
      const record: Record<string, unknown> = { id: `i${String(i).padStart(3, '0')}`, createdAt: T + i, updatedAt: T + i };
      const roll = r();
      if (roll < 0.1) record.tags = pick(['red', 'alone', null]);
      else if (roll < 0.9) record.tags = Array.from({ length: Math.floor(r() * 5) }, () => (r() < 0.5 ? pick(words.slice(0, 6)) : pick(words)));
      records.push(record);
      // Some lines written by hand: spaces inside the array.
      lines.push(i % 7 === 0 ? JSON.stringify(record, null, 1).replace(/\n/g, '') : JSON.stringify(record));
    }
    const dir = await tempDir();
    const file = join(dir, 'items.jsonl');
    await writeFile(file, `${lines.join('\n')}\n`);
    const store = await openJsonlStore({ file, resource: 'items' });
    after(() => store.close());
    const s = await startServer({ resources: [{ name: 'items', store }] });
    // Each value's entities (an array's distinct elements once), by count descending, then null, numbers, strings.
    const expected = (): { value: unknown; count: number }[] => {
      const counts = new Map<string, { value: unknown; count: number }>();
      for (const record of records) {
        if (!('tags' in record)) continue;
        const values = Array.isArray(record.tags) ? record.tags : [record.tags];
        for (const value of new Set(values.map((v) => JSON.stringify(v)))) {
          const known = counts.get(value);
          if (known) known.count++;
          else counts.set(value, { value: JSON.parse(value) as unknown, count: 1 });
        }
      }
      const rank = (v: unknown): string => (v === null ? '0' : typeof v === 'number' ? `1${v}` : `2${String(v)}`);
      return [...counts.values()].sort((a, b) => b.count - a.count || (rank(a.value) < rank(b.value) ? -1 : 1)).slice(0, 50);
    };
    const facet = async (): Promise<unknown> => ((await (await s.request('/items?facets=tags&limit=1')).json()) as { facets: { tags: FacetValue[] } }).facets.tags.map(({ value, count }) => ({ value, count }));
    assert.deepEqual(await facet(), expected());
    for (const tags of [['3', 3, 'red'], ['3', 'red']]) {
      const res = await s.request('/items/i001', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ tags }) });
      assert.equal(res.status, 200);
      records[1] = { ...records[1], tags };
      assert.deepEqual(await facet(), expected(), JSON.stringify(tags));
    }
  });

  const BAD: [string, string, boolean][] = [
    ['facets=a,b,c,d,e,f,g,h,i', 'Query parameter facets may list at most 8 fields', false],
    ['facets=', 'Query parameter facets needs a field name, with no empty segment in its dotted path', false],
    ['facets=dims..w', 'Query parameter facets needs a field name, with no empty segment in its dotted path', false],
    ['facets=status[eq]', 'Query parameter facets must list field names (or dotted paths), with no operator', false],
    ['facets=colour', 'Query parameter facets names a field the schema does not declare', true],
    ['facets=dims.depth', 'Query parameter facets names a field the schema does not declare', true],
  ];
  for (const [query, detail, withSchema] of BAD) {
    test(`?${query}${withSchema ? ' (with a schema)' : ''} -> 400 problem naming facets`, async () => {
      const s = await start(withSchema);
      const res: TestResponse = await s.request(`/products?${query}`);
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(await res.json(), { type: RFC2616, title: 'Bad Request', status: 400, detail });
    });
  }
});
