import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { records, startItems } from '../helpers/server.js';
import { assertFetchProblem, assertRawProblem, rawExchange } from './raw.js';

/**
 * Odd paths and query strings. `fetch` normalises `..` and friends before sending, so those go over
 * a raw socket (see raw-http.test.ts); everything here is sent as written.
 */

describe('paths', () => {
  for (const [path, status, detail] of [
    ['/items/%00', 404, 'There is no items entity with id "\\u0000"'],
    ['//items', 404, 'There is no resource named ""'],
    ['/items//', 404, 'There is nothing at "/items//"'],
    ['/items/e000/', 404, 'There is nothing at "/items/e000/"'],
    ['/items/e000/extra', 404, 'There is nothing at "/items/e000/extra"'],
    ['/ITEMS', 404, 'There is no resource named "ITEMS"'],
    ['/v1/v1/items', 404, 'There is no resource named "v1"'],
    ['/items/%2F', 404, 'There is no items entity with id "/"'],
    ['/items/%F0%9F%98%80', 404, 'There is no items entity with id "😀"'],
    ['/items/%ED%A0%80', 400, 'The request path has malformed percent-encoding'],
    ['/items/%zz', 400, 'The request path has malformed percent-encoding'],
    ['/items/%', 400, 'The request path has malformed percent-encoding'],
    ['/%E0%A4%A', 400, 'The request path has malformed percent-encoding'],
    ['/__proto__', 404, 'There is no resource named "__proto__"'],
    ['/constructor', 404, 'There is no resource named "constructor"'],
    ['/items/__proto__', 404, 'There is no items entity with id "__proto__"'],
    ['/items/constructor', 404, 'There is no items entity with id "constructor"'],
    ['/healthz/x', 404, undefined],
  ] as const) {
    test(`GET ${path} -> ${status} problem`, async () => {
      const s = await startItems(records(1));
      await assertFetchProblem(await s.request(path), status, detail);
    });
  }

  test('id of 8000 characters -> 404 problem naming it', async () => {
    const s = await startItems(records(1));
    const id = 'x'.repeat(8000);
    await assertFetchProblem(await s.request(`/items/${id}`), 404, `There is no items entity with id "${id}"`);
  });

  test('unicode id of an existing entity -> 200, self href percent-encoded', async () => {
    const id = 'ünï/cødé 😀';
    const s = await startItems([{ id, createdAt: 1, updatedAt: 1 }]);
    const res = await s.request(`/items/${encodeURIComponent(id)}`);
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json())._links, { self: { href: `/items/${encodeURIComponent(id)}` } });
  });

  test('PUT, PATCH, DELETE on /items/%2e%2e sent raw -> 404, nothing changed', async () => {
    const s = await startItems(records(2));
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      const body = method === 'DELETE' ? '' : '{"x":1}';
      const { responses } = await rawExchange(
        s.url,
        `${method} /items/%2e%2e HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        { responses: 1 },
      );
      assert.equal(responses[0]?.status, 404);
    }
    assert.equal(s.store.size, 2);
    assert.deepEqual([...s.store.values()].map((e) => e.record), records(2));
  });

  test('DELETE /items (the collection) -> 405 with Allow, nothing deleted', async () => {
    const s = await startItems(records(3));
    const res = await s.request('/items', { method: 'DELETE' });
    assert.equal(res.headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
    await assertFetchProblem(res, 405);
    assert.equal(s.store.size, 3);
  });

  test('PROPFIND and TRACE -> 405 with Allow', async () => {
    const s = await startItems(records(1));
    for (const method of ['PROPFIND', 'TRACE']) {
      const { responses } = await rawExchange(s.url, `${method} /items/e000 HTTP/1.1\r\nHost: x\r\n\r\n`, { responses: 1 });
      assert.equal(responses[0]?.status, 405);
      assert.equal(responses[0]?.headers['allow'], 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS');
    }
  });
});

describe('query strings', () => {
  for (const [query, detail] of [
    ['page=1e3', 'Query parameter page must be a base-10 integer'],
    ['page=1.0', 'Query parameter page must be a base-10 integer'],
    ['page=%2B1', 'Query parameter page must be a base-10 integer'],
    ['page=', 'Query parameter page must be a base-10 integer'],
    ['page', 'Query parameter page must be a base-10 integer'],
    ['page=%201', 'Query parameter page must be a base-10 integer'],
    ['page=１', 'Query parameter page must be a base-10 integer'],
    ['limit=%20', 'Query parameter limit must be a base-10 integer'],
    ['limit=0x10', 'Query parameter limit must be a base-10 integer'],
    ['limit=Infinity', 'Query parameter limit must be a base-10 integer'],
    ['limit=0', 'Query parameter limit must be at least 1'],
    ['limit=-5', 'Query parameter limit must be at least 1'],
    ['page=1&page=1', 'Query parameter page must be given once'],
    ['limit=5&limit=5', 'Query parameter limit must be given once'],
    ['sort=a&sort=b', 'Query parameter sort must be given once'],
    ['sort=', 'Query parameter sort must list field names, each optionally prefixed with -'],
    ['sort=,', 'Query parameter sort must list field names, each optionally prefixed with -'],
    ['sort=-', 'Query parameter sort must list field names, each optionally prefixed with -'],
  ] as const) {
    test(`?${query} -> 400 problem`, async () => {
      const s = await startItems(records(3));
      await assertFetchProblem(await s.request(`/items?${query}`), 400, detail);
    });
  }

  test('?limit= with 400 digits -> clamped to 200', async () => {
    const s = await startItems(records(3));
    const res = await s.request(`/items?limit=${'9'.repeat(400)}`);
    assert.equal(res.status, 200);
    assert.equal((await res.json()).limit, 200);
  });

  test('?page=-0 -> 409 seed document with page 0', async () => {
    const s = await startItems(records(3));
    const doc = await assertFetchProblem(await s.request('/items?page=-0'), 409, 'requested page is out of range');
    assert.equal(doc['pages'], 1);
    assert.equal(doc['page'], 0);
  });

  test(
    '?page beyond 2^53 (9007199254740993, 10^23, 400 digits) -> 400 naming page, never a 409 echoing another number or null',
    async () => {
      const s = await startItems(records(3));
      for (const page of ['9007199254740993', '1' + '0'.repeat(23), '9'.repeat(400)]) {
        const doc = await assertFetchProblem(await s.request(`/items?page=${page}`), 400);
        assert.match(String(doc['detail']), /page/);
      }
    },
  );

  for (const [name, detail] of [
    ['page[]', /page\[\] has an unknown operator/],
    ['', /needs a field name/],
  ] as const) {
    test(`?${name}=x (no operator, or no field name: docs/queries.md) -> 400 naming the parameter`, async () => {
      const s = await startItems(records(3));
      const doc = await assertFetchProblem(await s.request(`/items?${encodeURIComponent(name)}=x`), 400);
      assert.match(String(doc['detail']), detail);
    });
  }

  for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
    test(`?${name}=x (a filter on a field no entity has) -> empty page 1, link keeps it`, async () => {
      const s = await startItems(records(3));
      const res = await s.request(`/items?${encodeURIComponent(name)}=x`);
      assert.equal(res.status, 200);
      const body = await res.json();
      assert.equal(body.total, 0);
      assert.deepEqual(body._embedded, { items: [] });
      assert.equal(body._links.self.href, `/items?page=1&limit=20&${encodeURIComponent(name)}=x`);
      assert.equal(({} as Record<string, unknown>)['x'], undefined);
    });
  }

  test('?constructor=x on an entity whose own field constructor is "x" -> matched', async () => {
    const s = await startItems([{ id: 'c1', createdAt: 1, updatedAt: 1, constructor: 'x' }, ...records(2)]);
    const body = await (await s.request('/items?constructor=x')).json();
    assert.equal(body.total, 1);
    assert.equal(body._embedded.items[0].id, 'c1');
  });

  test('?sort=__proto__,constructor,toString -> 200, every entity once, creation order', async () => {
    const s = await startItems(records(5));
    const body = await (await s.request('/items?sort=__proto__,constructor,toString')).json();
    assert.deepEqual(
      body._embedded.items.map((e: { id: string }) => e.id),
      ['e000', 'e001', 'e002', 'e003', 'e004'],
    );
  });

  test('CR LF percent-encoded in a filter name and a sort value -> stays encoded in the Link header', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items?a%0d%0aSet-Cookie:x=1&sort=b%0d%0aX-Evil:1');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('set-cookie'), null);
    assert.equal(res.headers.get('x-evil'), null);
    assert.match(res.headers.get('link') ?? '', /sort=b%0D%0AX-Evil%3A1&a%0D%0ASet-Cookie%3Ax=1>; rel="self"/);
  });

  test('the same filter 2000 times -> 200, one alternative repeated', async () => {
    const s = await startItems(records(3, (i) => ({ n: i })));
    const body = await (await s.request(`/items?${'n=1&'.repeat(2000)}`)).json();
    assert.equal(body.total, 1);
    assert.equal(body._embedded.items[0].n, 1);
  });

  test('query string of 20 KB -> 414 problem (RFC 9112 §3: the target, not the headers, is too long), server keeps serving', async () => {
    const s = await startItems(records(1));
    const { responses, closedByServer } = await rawExchange(s.url, `GET /items?${'a=1&'.repeat(5000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    assertRawProblem(responses[0], 414, 'The request target is too long');
    assert.equal(closedByServer, true);
    assert.equal((await s.request('/healthz')).status, 200);
  });

  test('path of 100 KB, over several packets -> 414 problem', async () => {
    const s = await startItems(records(1));
    const { responses } = await rawExchange(s.url, [`GET /items/${'a'.repeat(50_000)}`, `${'a'.repeat(50_000)} HTTP/1.1\r\nHost: x\r\n\r\n`]);
    assertRawProblem(responses[0], 414, 'The request target is too long');
  });

  test('query string of 20 KB pipelined behind a request in the same packet -> 414 problem, after the first answer', async () => {
    const s = await startItems(records(1));
    const { responses } = await rawExchange(s.url, `GET /items/e000 HTTP/1.1\r\nHost: x\r\n\r\nGET /items?${'a=1&'.repeat(5000)} HTTP/1.1\r\nHost: x\r\n\r\n`, { responses: 2 });
    assert.equal(responses[0]?.status, 200);
    assertRawProblem(responses[1], 414, 'The request target is too long');
  });

  test('short target, then a header of 20 KB -> still 431', async () => {
    const s = await startItems(records(1));
    const { responses } = await rawExchange(s.url, `GET /items?${'a=1&'.repeat(100)} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assertRawProblem(responses[0], 431, 'The request headers are too large');
  });

  test('malformed percent-encoding in the query (%, %E0%A4%A) -> taken literally as a filter, 200', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items?%=1&a=%E0%A4%A');
    assert.equal(res.status, 200);
    assert.equal((await res.json()).total, 0);
  });
});
