import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord } from '../../src/store/store.js';
import { records, RFC2616, startItems, startServer, type TestResponse } from '../helpers/server.js';

/*
 * The query language of docs/queries.md through HTTP: every operator with the whole response, links
 * that keep the query in one canonical order, `next` reaching every match once, each 400, and
 * conditional GETs of filtered pages.
 */

const T = 1_700_000_000;
/** Nine items, fields chosen so every operator keeps a different, hand-checked set. */
const FIELDS: Record<string, unknown>[] = [
  { updatedAt: T + 50, status: 'active', price: 10, name: 'Desk lamp', tags: ['lighting', 'usb-c'], dimensions: { weight: 1.2, width: 15 }, description: 'A lamp.' },
  { updatedAt: T + 20, status: 'paused', price: 49.5, name: 'Straße sign', tags: ['outdoor'], dimensions: { weight: 2 }, description: null },
  { updatedAt: T + 90, status: 'archived', price: 5, name: 'USB-C cable', tags: ['usb-c', 'cable'], dimensions: { weight: 0.1 } },
  { updatedAt: T + 30, status: 'active', price: 120, name: 'Floor LAMP', tags: [], dimensions: { weight: 7.5 }, description: 'Tall.' },
  { updatedAt: T + 70, status: 'active', price: 0, name: 'Gift card', description: 'Free.' },
  { updatedAt: T + 10, status: 'paused', price: 'n/a', name: 'Mystery box', tags: ['misc', 3], dimensions: { weight: 'heavy' } },
  { updatedAt: T + 60, status: 'active', price: 75, name: 'Lamp shade', tags: ['lighting'], dimensions: { weight: 0.4, width: 30 }, description: 'Linen.' },
  { updatedAt: T + 40, status: 'archived', price: 10, name: 'desk organiser', tags: ['office'], dimensions: null },
  { updatedAt: T + 80, name: 'Cable ties', tags: ['cable'], dimensions: { weight: 0.05 } },
];
const ITEMS: EntityRecord[] = records(FIELDS.length, (i) => FIELDS[i] ?? {});
const byId = new Map(ITEMS.map((r) => [r.id, r]));

/** The HAL representation of fixture items. */
const hal = (ids: readonly string[]): Record<string, unknown>[] => ids.map((id) => ({ ...byId.get(id), _links: { self: { href: `/items/${id}` } } }));
const href = (page: number, limit: number, carried: string): { href: string } => ({ href: `/items?page=${page}&limit=${limit}${carried}` });

/** The whole collection document for one page of `ids` (the full ordered match list). */
function collection(all: readonly string[], carried: string, page = 1, limit = 20): Record<string, unknown> {
  const pages = Math.max(1, Math.ceil(all.length / limit));
  const slice = all.slice((page - 1) * limit, page * limit);
  return {
    total: all.length,
    count: slice.length,
    pages,
    page,
    limit,
    _links: {
      self: href(page, limit, carried),
      first: href(1, limit, carried),
      ...(page > 1 ? { prev: href(page - 1, limit, carried) } : {}),
      ...(page < pages ? { next: href(page + 1, limit, carried) } : {}),
      last: href(pages, limit, carried),
      // Whatever the query: the changes after the fixture's nine creates.
      changes: { href: `/changes?since=${ITEMS.length}&resource=items` },
    },
    _embedded: { items: hal(slice) },
  };
}

/** The page's links as a `Link` header has them: the same as the body's, `changes` included. */
const linkHeader = (body: { _links: Record<string, { href: string }> }): string =>
  Object.entries(body._links)
    .map(([rel, link]) => `<${link.href}>; rel="${rel}"`)
    .join(', ');

async function expectPage(res: TestResponse, expected: Record<string, unknown>): Promise<void> {
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/hal+json');
  const body = await res.json();
  const link = linkHeader(body);
  assert.deepEqual(body, expected);
  assert.equal(res.headers.get('link'), link);
}

async function expectProblem(res: TestResponse, status: number, detail: string): Promise<void> {
  assert.equal(res.status, status);
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  const title = status === 400 ? 'Bad Request' : String(status);
  assert.deepEqual(await res.json(), { type: RFC2616, title, detail, status });
}

const ids = (body: { _embedded: { items: { id: string }[] } }): string[] => body._embedded.items.map((e) => e.id);

// [query sent, ids expected in order, links' carried text]
const OPERATORS: readonly (readonly [string, readonly string[], string])[] = [
  // eq
  ['status=active', ['e000', 'e003', 'e004', 'e006'], '&status=active'],
  ['status[eq]=active', ['e000', 'e003', 'e004', 'e006'], '&status=active'],
  ['status=archived,paused', ['e001', 'e002', 'e005', 'e007'], '&status=archived,paused'],
  // links list the alternatives sorted and once, however they were sent
  ['status=paused&status[eq]=archived', ['e001', 'e002', 'e005', 'e007'], '&status=archived,paused'],
  ['status=paused,archived,paused', ['e001', 'e002', 'e005', 'e007'], '&status=archived,paused'],
  ['price=0', ['e004'], '&price=0'],
  ['price=10', ['e000', 'e007'], '&price=10'],
  ['price=10.0', [], '&price=10.0'],
  ['description=null', ['e001'], '&description=null'],
  ['name=Stra%C3%9Fe%20sign', ['e001'], '&name=Stra%C3%9Fe%20sign'],
  ['colour=red', [], '&colour=red'],
  // links keep what the client meant: &, =, + and % stay encoded
  ['name=a%26b%3Dc%2Bd%25', [], '&name=a%26b%3Dc%2Bd%25'],
  // ne
  ['status[ne]=active', ['e001', 'e002', 'e005', 'e007'], '&status[ne]=active'],
  ['status[ne]=active,paused', ['e002', 'e007'], '&status[ne]=active,paused'],
  ['status[ne]=active&status[ne]=paused', ['e002', 'e007'], '&status[ne]=active,paused'],
  // ranges: numbers numerically; a bound of the other kind matches nothing; both ends
  ['price[gt]=10', ['e001', 'e003', 'e006'], '&price[gt]=10'],
  ['price[gte]=10', ['e000', 'e001', 'e003', 'e006', 'e007'], '&price[gte]=10'],
  ['price[lt]=10', ['e002', 'e004'], '&price[lt]=10'],
  ['price[lte]=10', ['e000', 'e002', 'e004', 'e007'], '&price[lte]=10'],
  ['price[gte]=10&price[lt]=75', ['e000', 'e001', 'e007'], '&price[gte]=10&price[lt]=75'],
  ['price[lt]=1e%2B3', ['e000', 'e001', 'e002', 'e003', 'e004', 'e006', 'e007'], '&price[lt]=1e%2B3'],
  ['price[gte]=-1.5e1', ['e000', 'e001', 'e002', 'e003', 'e004', 'e006', 'e007'], '&price[gte]=-1.5e1'],
  ['price[lte]=%22z%22', ['e005'], '&price[lte]=%22z%22'],
  ['price[gt]=a', ['e005'], '&price[gt]=a'],
  // ranges: strings by UTF-16 code unit ("desk…" > "M" > "Lamp…")
  ['name[gt]=M', ['e001', 'e002', 'e005', 'e007'], '&name[gt]=M'],
  ['name[gte]=Lamp%20shade&name[lt]=Straße', ['e005', 'e006'], '&name[gte]=Lamp%20shade&name[lt]=Stra%C3%9Fe'],
  ['name[lt]=%2210%22', [], '&name[lt]=%2210%22'],
  // exists: null counts as present
  ['description[exists]=true', ['e000', 'e001', 'e003', 'e004', 'e006'], '&description[exists]=true'],
  ['description[exists]=false', ['e002', 'e005', 'e007', 'e008'], '&description[exists]=false'],
  ['dimensions.width[exists]=true', ['e000', 'e006'], '&dimensions.width[exists]=true'],
  // dotted paths (a null or missing object reaches nothing)
  ['dimensions.weight[lte]=1', ['e002', 'e006', 'e008'], '&dimensions.weight[lte]=1'],
  ['dimensions.weight=heavy', ['e005'], '&dimensions.weight=heavy'],
  ['dimensions.weight[exists]=false', ['e004', 'e007'], '&dimensions.weight[exists]=false'],
  // arrays: every operator per element
  ['tags=usb-c', ['e000', 'e002'], '&tags=usb-c'],
  ['tags=office,outdoor', ['e001', 'e007'], '&tags=office,outdoor'],
  ['tags[ne]=usb-c', ['e000', 'e001', 'e002', 'e005', 'e006', 'e007', 'e008'], '&tags[ne]=usb-c'],
  ['tags[gt]=2', ['e005'], '&tags[gt]=2'],
  ['tags=3', ['e005'], '&tags=3'],
  ['tags[gte]=m', ['e000', 'e001', 'e002', 'e005', 'e007'], '&tags[gte]=m'],
  // each bound is its own filter: some element >= m and some element < n, not one element between
  ['tags[gte]=m&tags[lt]=n', ['e000', 'e002', 'e005'], '&tags[gte]=m&tags[lt]=n'],
  ['tags[exists]=true&tags[ne]=lighting', ['e000', 'e001', 'e002', 'e005', 'e007', 'e008'], '&tags[exists]=true&tags[ne]=lighting'],
  // the server's createdAt and updatedAt
  ['createdAt[gte]=1700000006', ['e006', 'e007', 'e008'], '&createdAt[gte]=1700000006'],
  ['updatedAt[lt]=1700000030', ['e001', 'e005'], '&updatedAt[lt]=1700000030'],
  ['createdAt=1700000002', ['e002'], '&createdAt=1700000002'],
  // q: case-insensitive, Unicode case folding, every word somewhere, ids included
  ['q=lamp', ['e000', 'e003', 'e006'], '&q=lamp'],
  ['q=STRASSE', ['e001'], '&q=STRASSE'],
  ['q=usb%20CABLE', ['e002'], '&q=usb%20CABLE'],
  ['q=e007', ['e007'], '&q=e007'],
  ['q=linen', ['e006'], '&q=linen'],
  ['q=%20%20', ['e000', 'e001', 'e002', 'e003', 'e004', 'e005', 'e006', 'e007', 'e008'], ''],
  // AND of filters and search
  ['status=active&q=lamp&price[lt]=100', ['e000', 'e006'], '&q=lamp&price[lt]=100&status=active'],
];

describe('every operator through HTTP (docs/queries.md)', () => {
  for (const [query, expected, carried] of OPERATORS) {
    test(`?${query} -> ${expected.length === 0 ? 'none' : expected.join(',')}, links carry ${carried || 'nothing'}`, async () => {
      const s = await startItems(ITEMS);
      await expectPage(await s.request(`/items?${query}`), collection(expected, carried));
    });
  }
});

// [sort, ids in order]
const SORTS: readonly (readonly [string, readonly string[]])[] = [
  // absent first, then numbers, then the one string; ties (10) in creation order
  ['price', ['e008', 'e004', 'e002', 'e000', 'e007', 'e001', 'e006', 'e003', 'e005']],
  // descending reverses the order of kinds too; ties still in creation order
  ['-price', ['e005', 'e003', 'e006', 'e001', 'e000', 'e007', 'e002', 'e004', 'e008']],
  ['price,-name', ['e008', 'e004', 'e002', 'e007', 'e000', 'e001', 'e006', 'e003', 'e005']],
  // an absent or null parent is absent; a string sorts after the numbers
  ['dimensions.weight', ['e004', 'e007', 'e008', 'e002', 'e006', 'e000', 'e001', 'e003', 'e005']],
  // strings by UTF-16 code unit: upper case before lower case
  ['name', ['e008', 'e000', 'e003', 'e004', 'e006', 'e005', 'e001', 'e002', 'e007']],
  ['-updatedAt', ['e002', 'e008', 'e004', 'e006', 'e000', 'e007', 'e003', 'e001', 'e005']],
  ['-createdAt', ['e008', 'e007', 'e006', 'e005', 'e004', 'e003', 'e002', 'e001', 'e000']],
  // null < string; absent first
  ['description,id', ['e002', 'e005', 'e007', 'e008', 'e001', 'e000', 'e004', 'e006', 'e003']],
];

describe('sort through HTTP (docs/queries.md)', () => {
  for (const [sort, expected] of SORTS) {
    test(`?sort=${sort} -> ${expected.join(',')}`, async () => {
      const s = await startItems(ITEMS);
      await expectPage(await s.request(`/items?sort=${sort}`), collection(expected, `&sort=${sort}`));
    });
  }

  test('?status=active&sort=-price&limit=2&page=2 -> the second page of the sorted matches', async () => {
    const s = await startItems(ITEMS);
    await expectPage(await s.request('/items?status=active&sort=-price&limit=2&page=2'), collection(['e003', 'e006', 'e000', 'e004'], '&sort=-price&status=active', 2, 2));
  });

  test('?sort=price&page=9&limit=1 -> the last page, no next', async () => {
    const s = await startItems(ITEMS);
    await expectPage(await s.request('/items?sort=price&page=9&limit=1'), collection(SORTS[0]?.[1] ?? [], '&sort=price', 9, 1));
  });

  test('?status=paused&page=2 -> 409 with the filtered set\'s pages', async () => {
    const s = await startItems(ITEMS);
    const res = await s.request('/items?status=paused&page=2');
    assert.equal(res.status, 409);
    assert.deepEqual(await res.json(), { type: RFC2616, title: 'Conflict', detail: 'requested page is out of range', status: 409, pages: 1, page: 2 });
  });
});

describe('links keep the query in one canonical order (docs/queries.md)', () => {
  const carried = '&sort=-price,name&q=desk%20lamp&dimensions.weight[lte]=5&price[gte]=1&status=active,archived&tags[ne]=x';
  const spellings = [
    'sort=-price,name&q=desk%20lamp&dimensions.weight[lte]=5&price[gte]=1&status=active,archived&tags[ne]=x',
    'tags[ne]=x&status=active&price[gte]=1&q=desk+lamp&status=archived&dimensions.weight%5Blte%5D=5&sort=-price,name',
    'status%5Beq%5D=active,archived&tags%5Bne%5D=x&dimensions.weight[lte]=5&sort=-price%2Cname&price[gte]=1&q=desk%20lamp',
  ];
  for (const spelling of spellings) {
    test(`?${spelling} -> links ?page=…&limit=…${carried}`, async () => {
      const s = await startItems(ITEMS);
      const res = await s.request(`/items?${spelling}&limit=1`);
      // "desk lamp": e000 (name) and e007 ("desk organiser" has no "lamp": not kept); e000 only.
      await expectPage(res, collection(['e000'], carried, 1, 1));
    });
  }

  test('the same query in two orders -> byte-identical bodies and Link headers', async () => {
    const s = await startItems(ITEMS);
    const a = await s.request('/items?q=a&price[lt]=100&sort=name&status=active,paused&limit=2&page=2');
    const b = await s.request('/items?page=2&status=active,paused&limit=2&sort=name&price[lt]=100&q=a');
    assert.equal(a.headers.get('link'), b.headers.get('link'));
    assert.equal(await a.text(), await b.text());
  });

  test('/v1/items?<filters> -> the same links, unprefixed', async () => {
    const s = await startItems(ITEMS);
    await expectPage(await s.request('/v1/items?tags=usb-c&sort=-name'), collection(['e002', 'e000'], '&sort=-name&tags=usb-c'));
  });
});

describe('random combinations of the operators above (docs/queries.md)', () => {
  // Every parameter of the operator and sort tables, to be combined at random (seeded).
  const fragments: [string, string][] = [];
  for (const [query] of [...OPERATORS, ...SORTS.map(([sort]) => [`sort=${sort}`] as const)]) {
    for (const [name, value] of new URLSearchParams(query)) if (value.trim() !== '') fragments.push([name, value]);
  }
  let seed = 20261122;
  const random = (n: number): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  const shuffled = <T>(items: readonly T[]): T[] => {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = random(i + 1);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  };
  const once = (name: string): boolean => name === 'sort' || name === 'q' || name.includes('[') && !/\[(eq|ne)\]$/.test(name);

  test('60 random combinations, each sent in two orders -> the same body; its self link -> the same body; next from page 1 -> every match once', async () => {
    const s = await startItems(ITEMS);
    for (let i = 0; i < 60; i++) {
      const picked: [string, string][] = [];
      for (let k = 1 + random(4); k > 0; k--) {
        const fragment = fragments[random(fragments.length)] as [string, string];
        if (once(fragment[0]) && picked.some(([name]) => name === fragment[0])) continue;
        picked.push(fragment);
      }
      const text = (params: [string, string][]): string => new URLSearchParams(params).toString();
      const a = text(shuffled(picked));
      const b = text(shuffled(picked));
      const first = await s.request(`/items?${a}`);
      assert.equal(first.status, 200, a);
      const bodyA = await first.text();
      assert.equal(await (await s.request(`/items?${b}`)).text(), bodyA, `?${a} and ?${b}`);
      const self = JSON.parse(bodyA)._links.self.href as string;
      assert.equal(await (await s.request(self)).text(), bodyA, `?${a} and its self link ${self}`);
      const all = ids(JSON.parse(bodyA));
      const seen: string[] = [];
      let next: string | undefined = `/items?${a}&limit=2`;
      while (next !== undefined) {
        const page = await (await s.request(next)).json();
        seen.push(...ids(page));
        next = page._links.next?.href;
      }
      assert.deepEqual(seen, all, `following next from ?${a}&limit=2`);
    }
  });
});

describe('the alternatives of a repeated filter in links (docs/queries.md)', () => {
  test('?status=paused&status[eq]=active and ?status[eq]=active&status=paused -> the same links', async () => {
    const s = await startItems(ITEMS);
    const a = await (await s.request('/items?status=paused&status[eq]=active')).json();
    const b = await (await s.request('/items?status[eq]=active&status=paused')).json();
    assert.deepEqual(ids(a), ids(b));
    assert.deepEqual(a._links, b._links);
  });
});

describe('following next (docs/conventions.md §3, §3a)', () => {
  test('filtered, sorted, searched query, limit 3, from page 1 -> every match exactly once, in order', async () => {
    const many = records(100, (i) => ({ status: ['active', 'paused', 'archived'][i % 3], price: (i * 37) % 23, name: i % 4 === 0 ? `Lamp ${i}` : `Box ${i}` }));
    const s = await startItems(many);
    const expected = many
      .filter((r) => r.status !== 'archived' && (r.price as number) >= 3 && (r.name as string).toLowerCase().includes('lamp'))
      .sort((a, b) => (b.price as number) - (a.price as number) || a.createdAt - b.createdAt)
      .map((r) => r.id);
    assert.ok(expected.length > 9, 'the query spans several pages');
    const seen: string[] = [];
    let next: string | undefined = '/items?limit=3&q=LAMP&status[ne]=archived&sort=-price&price[gte]=3';
    let pages = 0;
    while (next !== undefined) {
      const body = await (await s.request(next)).json();
      assert.equal(body.total, expected.length);
      assert.equal(body.page, ++pages);
      seen.push(...ids(body));
      next = body._links.next?.href;
      if (next !== undefined) assert.equal(next, `/items?page=${pages + 1}&limit=3&sort=-price&q=LAMP&price[gte]=3&status[ne]=archived`);
    }
    assert.equal(pages, Math.ceil(expected.length / 3));
    assert.deepEqual(seen, expected);
  });
});

describe('malformed queries -> 400 problem naming the parameter (docs/queries.md)', () => {
  const unknownOperator = (name: string): string =>
    `Query parameter ${name} has an unknown operator; use one of [eq], [ne], [gt], [gte], [lt], [lte], [exists]`;
  for (const [query, detail] of [
    ['price[between]=1', unknownOperator('price[between]')],
    ['price[GTE]=1', unknownOperator('price[GTE]')],
    ['price[gte=1', unknownOperator('price[gte')],
    ['price[]=1', unknownOperator('price[]')],
    ['description[exists]=yes', 'Query parameter description[exists] must be true or false'],
    ['description[exists]=', 'Query parameter description[exists] must be true or false'],
    ['description[exists]=TRUE', 'Query parameter description[exists] must be true or false'],
    ['dimensions..weight=1', 'Query parameter dimensions..weight needs a field name, with no empty segment in its dotted path'],
    ['.price=1', 'Query parameter .price needs a field name, with no empty segment in its dotted path'],
    ['price.[gt]=1', 'Query parameter price.[gt] needs a field name, with no empty segment in its dotted path'],
    ['[eq]=1', 'Query parameter [eq] needs a field name, with no empty segment in its dotted path'],
    ['price[gte]=', 'Query parameter price[gte] needs a number or a string as its bound'],
    ['price[lt]=%221', 'Query parameter price[lt] needs a number or a string as its bound'],
    ['price[lt]=%221%22x', 'Query parameter price[lt] needs a number or a string as its bound'],
    ['price[gt]=1e999', 'Query parameter price[gt] needs a number or a string as its bound'],
    ['sort=price&sort=name', 'Query parameter sort must be given once'],
    ['q=lamp&q=desk', 'Query parameter q must be given once'],
    ['price[gte]=1&price[gte]=2', 'Query parameter price[gte] must be given once'],
    ['price[lt]=1&price[lt]=1', 'Query parameter price[lt] must be given once'],
    ['tags[exists]=true&tags[exists]=true', 'Query parameter tags[exists] must be given once'],
    ['sort=price,', 'Query parameter sort must list field names, each optionally prefixed with -'],
    ['sort=-', 'Query parameter sort must list field names, each optionally prefixed with -'],
    ['sort=dimensions..weight', 'Query parameter sort needs a field name, with no empty segment in its dotted path'],
    ['embed=category', 'Query parameter embed names an unknown relation: category'],
    [`sort=${Array.from({ length: 33 }, (_, i) => `f${i}`).join(',')}`, 'Query parameter sort may list at most 32 fields'],
    [Array.from({ length: 65 }, (_, i) => `f${i}=1`).join('&'), 'A query may have at most 64 filters'],
    ['status=active&embed=x,y', 'Query parameter embed names an unknown relation: x'],
  ] as const) {
    test(`?${query.length > 60 ? `${query.slice(0, 57)}…` : query} -> 400 "${detail}"`, async () => {
      const s = await startItems(ITEMS);
      await expectProblem(await s.request(`/items?${query}`), 400, detail);
    });
  }
});

describe('the most sort keys and filters one query may have', () => {
  test('32 sort keys and 64 filters -> 200 (33 and 65 are 400s above)', async () => {
    const s = await startItems(ITEMS);
    const sort = ['price', ...Array.from({ length: 31 }, (_, i) => `f${i}`)].join(',');
    const filters = ['status[exists]=true', ...Array.from({ length: 63 }, (_, i) => `f${i}[exists]=false`)].join('&');
    const res = await s.request(`/items?sort=${sort}&${filters}&limit=3`);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.total, 8);
    assert.deepEqual(ids(body), ['e004', 'e002', 'e000']);
  });
});

describe('with a schema: undeclared fields -> 400 (docs/queries.md)', () => {
  /** What a products-like schema declares: top-level fields and dimensions.* (the lead wires schema files to this). */
  const DECLARED = new Set(['id', 'createdAt', 'updatedAt', 'status', 'price', 'name', 'tags', 'description', 'dimensions', 'dimensions.weight', 'dimensions.width']);
  const declared = (path: readonly string[]): boolean => DECLARED.has(path.join('.'));
  const start = () => startServer({ resources: [{ name: 'items', store: createMemoryStore(ITEMS), declared }] });

  for (const [query, detail] of [
    ['colour=red', 'Query parameter colour names a field the schema does not declare'],
    ['colour[exists]=false', 'Query parameter colour[exists] names a field the schema does not declare'],
    ['dimensions.depth[lt]=3', 'Query parameter dimensions.depth[lt] names a field the schema does not declare'],
    ['status=active&sort=colour', 'Query parameter sort names a field the schema does not declare'],
    ['sort=price,-dimensions.colour', 'Query parameter sort names a field the schema does not declare'],
  ] as const) {
    test(`declared fields only, ?${query} -> 400 "${detail}"`, async () => {
      const s = await start();
      await expectProblem(await s.request(`/items?${query}`), 400, detail);
    });
  }

  test('declared fields only, ?dimensions.weight[lte]=1&sort=-createdAt&status[exists]=false -> 200', async () => {
    const s = await start();
    await expectPage(
      await s.request('/items?dimensions.weight[lte]=1&sort=-createdAt&status[exists]=false'),
      collection(['e008'], '&sort=-createdAt&dimensions.weight[lte]=1&status[exists]=false'),
    );
  });

  test('no schema, ?colour=red&sort=colour -> 200, the filter matches nothing', async () => {
    const s = await startItems(ITEMS);
    await expectPage(await s.request('/items?colour=red&sort=colour'), collection([], '&sort=colour&colour=red'));
  });
});

describe('conditional GET of filtered pages (docs/conventions.md §5)', () => {
  // Uncompressed, so that the 200's tag is the one a 304 repeats (a 304 carries the uncoded tag).
  const identity = { 'accept-encoding': 'identity' };
  test('filtered page -> ETag; If-None-Match with it, parameters in another order -> 304, no body', async () => {
    const s = await startItems(ITEMS);
    const first = await s.request('/items?status=active&sort=-price', { headers: identity });
    const etag = first.headers.get('etag') ?? '';
    assert.match(etag, /^"[^"]+"$/);
    const again = await s.request('/items?sort=-price&status=active', { headers: { ...identity, 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.headers.get('etag'), etag);
    assert.equal(await again.text(), '');
  });

  test('a write that changes the filtered set -> the old ETag gets 200 with the new set and a new ETag', async () => {
    const s = await startItems(ITEMS);
    const first = await s.request('/items?status=active');
    const etag = first.headers.get('etag') ?? '';
    assert.deepEqual(ids(await first.json()), ['e000', 'e003', 'e004', 'e006']);
    const patch = await s.request('/items/e001', {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ status: 'active' }),
    });
    assert.equal(patch.status, 200);
    const res = await s.request('/items?status=active', { headers: { 'if-none-match': etag } });
    assert.equal(res.status, 200);
    const etag2 = res.headers.get('etag');
    assert.ok(etag2 !== null && etag2 !== etag, `new ETag ${etag2} after ${etag}`);
    assert.deepEqual(ids(await res.json()), ['e000', 'e001', 'e003', 'e004', 'e006']);
    assert.equal((await s.request('/items?status=active', { headers: { 'if-none-match': etag2 } })).status, 304);
  });

  test('filtered page as application/json -> its own ETag, 304 with it', async () => {
    const s = await startItems(ITEMS);
    const hal = (await s.request('/items?tags=usb-c')).headers.get('etag');
    const json = await s.request('/items?tags=usb-c', { headers: { accept: 'application/json' } });
    assert.equal(json.headers.get('content-type'), 'application/json');
    const etag = json.headers.get('etag') ?? '';
    assert.notEqual(etag, hal);
    assert.equal((await s.request('/items?tags=usb-c', { headers: { accept: 'application/json', 'if-none-match': etag } })).status, 304);
  });
});

describe('writes are seen by the next query (docs/queries.md)', () => {
  test('POST, PATCH, DELETE -> ?tags=usb-c&sort=-price follows each', async () => {
    const s = await startItems(ITEMS);
    const query = async (): Promise<string[]> => ids(await (await s.request('/items?tags=usb-c&sort=-price')).json());
    assert.deepEqual(await query(), ['e000', 'e002']);
    const created = await s.request('/items', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tags: ['usb-c'], price: 7 }) });
    assert.equal(created.status, 201);
    const newId = (await created.json()).id as string;
    assert.deepEqual(await query(), ['e000', newId, 'e002']);
    await s.request('/items/e002', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ price: 99 }) });
    assert.deepEqual(await query(), ['e002', 'e000', newId]);
    await s.request('/items/e000', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ tags: null }) });
    assert.deepEqual(await query(), ['e002', newId]);
    assert.equal((await s.request(`/items/${newId}`, { method: 'DELETE' })).status, 204);
    assert.deepEqual(await query(), ['e002']);
  });
});

describe('a comma inside a value (literal commas separate, %2C is part of the value)', () => {
  const NAMES = [rec('c0', { name: 'a,b' }), rec('c1', { name: 'a' }), rec('c2', { name: 'b' }), rec('c3', { name: 'a,b,c' })];
  function rec(id: string, fields: Record<string, unknown>): EntityRecord {
    return { id, createdAt: T, updatedAt: T, ...fields };
  }
  const ids = (body: { _embedded: { items: { id: string }[] } }): string[] => body._embedded.items.map((e) => e.id);

  test('?name=a%2Cb -> the entity named "a,b", and its self link says name=a%2Cb', async () => {
    const s = await startItems(NAMES);
    const body = await (await s.request('/items?name=a%2Cb')).json();
    assert.deepEqual(ids(body), ['c0']);
    assert.equal(body.total, 1);
    assert.equal(body._links.self.href, '/items?page=1&limit=20&name=a%2Cb');
  });
  test('?name=a,b -> two alternatives: the entities named "a" and "b"', async () => {
    const s = await startItems(NAMES);
    const body = await (await s.request('/items?name=a,b')).json();
    assert.deepEqual(ids(body), ['c1', 'c2']);
    assert.equal(body._links.self.href, '/items?page=1&limit=20&name=a,b');
  });
  test('?name=a%2Cb,a%2Cb%2Cc&name[ne]=x%2Cy -> both comma values; every link gives the same page again', async () => {
    const s = await startItems(NAMES);
    const body = await (await s.request('/items?name=a%2Cb,a%2Cb%2Cc&name[ne]=x%2Cy&limit=1')).json();
    assert.equal(body.total, 2);
    assert.equal(body._links.next.href, '/items?page=2&limit=1&name=a%2Cb,a%2Cb%2Cc&name[ne]=x%2Cy');
    const next = await (await s.request(body._links.next.href)).json();
    assert.deepEqual(ids(next), ['c3']);
    assert.equal(next._links.self.href, body._links.next.href);
  });
});
