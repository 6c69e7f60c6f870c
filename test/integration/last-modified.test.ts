import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { httpDate, parseHttpDate } from '../../src/conventions/last-modified.js';
import { tempDir } from '../helpers/process.js';
import { records, RFC2616, startItems, startServer } from '../helpers/server.js';

/**
 * `Last-Modified` of an entity (its `updatedAt`), `If-Modified-Since` on reads and
 * `If-Unmodified-Since` on writes (docs/conventions.md §5, RFC 9110 §8.8.2, §13.1.3, §13.1.4).
 */

const JSON_HEADERS = { 'content-type': 'application/json' };
/** `records(…)`'s first entity's `updatedAt` (1 700 000 000) as an IMF-fixdate, and the seconds around it. */
const AT = 'Tue, 14 Nov 2023 22:13:20 GMT';
const SECOND_BEFORE = 'Tue, 14 Nov 2023 22:13:19 GMT';
const SECOND_AFTER = 'Tue, 14 Nov 2023 22:13:21 GMT';

/**
 * A GET (or `method`) with only `headers` (and Host): `fetch` adds headers of its own, which keep
 * a request out of the kept-reply lane (src/http/kept-replies.ts); this one may take it.
 */
function raw(url: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest(`${url}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    })
      .on('error', reject)
      .end();
  });
}

describe('Last-Modified (docs/conventions.md §5)', () => {
  test('GET and HEAD of an entity, in HAL and in JSON -> Last-Modified is its updatedAt as an IMF-fixdate', async () => {
    const s = await startItems(records(2));
    for (const [path, date] of [['/items/e000', AT], ['/items/e001', SECOND_AFTER]] as const) {
      for (const method of ['GET', 'HEAD']) {
        for (const accept of ['application/hal+json', 'application/json']) {
          const res = await s.request(path, { method, headers: { accept } });
          assert.equal(res.status, 200);
          assert.equal(res.headers.get('last-modified'), date, `${method} ${path} ${accept}`);
        }
      }
    }
  });

  test('an entity asked again (its answer kept) -> the same Last-Modified, and the same head as the first answer', async () => {
    const s = await startItems(records(1));
    const first = await raw(s.url, '/items/e000');
    const second = await raw(s.url, '/items/e000');
    assert.equal(first.headers['last-modified'], AT);
    assert.equal(second.headers['last-modified'], AT);
    assert.equal(second.headers.etag, first.headers.etag);
  });

  test('updatedAt in the future of the server clock -> Last-Modified is not later than the Date', async () => {
    const s = await startItems([{ id: 'f', createdAt: 1, updatedAt: 4_000_000_000 }]);
    for (let i = 0; i < 2; i++) {
      const res = await raw(s.url, '/items/f');
      const modified = Date.parse(String(res.headers['last-modified']));
      assert.ok(Number.isFinite(modified));
      assert.ok(modified <= Date.parse(String(res.headers.date)), `${String(res.headers['last-modified'])} after ${String(res.headers.date)}`);
    }
  });

  test('updatedAt that is no date (a line written by hand) -> no Last-Modified, and If-Modified-Since is a 200', async () => {
    const s = await startItems([{ id: 'x', createdAt: 1, updatedAt: 'yesterday' as unknown as number }, ...records(1)]);
    const res = await s.request('/items/x', { headers: { 'if-modified-since': SECOND_AFTER } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('last-modified'), null);
    // Beside it, an entity with a date has one, and the same condition is a 304.
    assert.equal((await s.request('/items/e000', { headers: { 'if-modified-since': SECOND_AFTER } })).status, 304);
  });

  test('an entity of a JSON-lines file -> Last-Modified of the updatedAt on its line', async () => {
    const dir = await tempDir();
    const file = join(dir, 'items.jsonl');
    await writeFile(file, '{"id":"a","createdAt":1600000000,"updatedAt":1700000000,"n":1}\n');
    const store = await openJsonlStore({ file, resource: 'items' });
    after(() => store.close());
    const s = await startServer({ resources: [{ name: 'items', store }] });
    assert.equal((await s.request('/items/a')).headers.get('last-modified'), AT);
    assert.equal((await s.request('/items/a', { headers: { 'if-modified-since': AT } })).status, 304);
  });

  test('POST 201, PUT and PATCH -> Last-Modified of the written updatedAt, the one a GET then gives', async () => {
    const s = await startItems(records(1));
    const created = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"a":1}' });
    const put = await s.request('/items/e000', { method: 'PUT', headers: JSON_HEADERS, body: '{"a":2}' });
    const patched = await s.request('/items/e000', { method: 'PATCH', headers: JSON_HEADERS, body: '{"a":3}' });
    for (const [res, status] of [[created, 201], [put, 200], [patched, 200]] as const) {
      assert.equal(res.status, status);
      const body = await res.json();
      const modified = res.headers.get('last-modified');
      assert.equal(modified, new Date(body.updatedAt * 1000).toUTCString());
      const read = await s.request(res.headers.get('location') ?? '/items/e000');
      assert.equal(read.headers.get('last-modified'), modified);
    }
  });

  test('HAL-FORMS, an entity with embeds, a collection page -> no Last-Modified; If-Modified-Since is a 200', async () => {
    const people = createMemoryStore(records(1));
    const orders = createMemoryStore([{ id: 'o1', createdAt: 1_700_000_000, updatedAt: 1_700_000_000, buyer: 'e000' }]);
    const schema = { type: 'object', properties: { buyer: { type: 'string', 'x-link': 'people' } } } as const;
    const s = await startServer({ resources: [{ name: 'people', store: people }, { name: 'orders', store: orders, schema }] });
    const asks: [string, Record<string, string>][] = [
      ['/people/e000', { accept: 'application/prs.hal-forms+json' }],
      ['/orders/o1?embed=buyer', {}],
      ['/people', {}],
    ];
    for (const [path, headers] of asks) {
      const plain = await s.request(path, { headers });
      assert.equal(plain.status, 200, path);
      assert.equal(plain.headers.get('last-modified'), null, path);
      assert.equal((await s.request(path, { headers: { ...headers, 'if-modified-since': SECOND_AFTER } })).status, 200, path);
    }
    // The entity alone has one.
    assert.equal((await s.request('/orders/o1')).headers.get('last-modified'), AT);
  });
});

describe('If-Modified-Since (RFC 9110 §13.1.3)', () => {
  test('at or after Last-Modified -> 304 with ETag and Last-Modified, no body; before -> 200', async () => {
    const s = await startItems(records(1));
    const etag = (await s.request('/items/e000')).headers.get('etag');
    for (const since of [AT, SECOND_AFTER]) {
      for (const method of ['GET', 'HEAD']) {
        const res = await s.request('/items/e000', { method, headers: { 'if-modified-since': since } });
        assert.equal(res.status, 304, `${method} ${since}`);
        assert.equal(res.headers.get('etag'), etag);
        assert.equal(res.headers.get('last-modified'), AT);
        assert.equal(await res.text(), '');
      }
    }
    const before = await s.request('/items/e000', { headers: { 'if-modified-since': SECOND_BEFORE } });
    assert.equal(before.status, 200);
    assert.equal((await before.json()).id, 'e000');
  });

  test('asked after the answer is kept (the fast lane) -> still a 304', async () => {
    const s = await startItems(records(1));
    await raw(s.url, '/items/e000');
    await raw(s.url, '/items/e000');
    const res = await raw(s.url, '/items/e000', { 'if-modified-since': AT });
    assert.equal(res.status, 304);
    assert.equal(res.body, '');
  });

  test('the entity written since -> 200 with the new Last-Modified', async () => {
    const s = await startItems(records(1));
    await s.request('/items/e000', { method: 'PATCH', headers: JSON_HEADERS, body: '{"n":9}' });
    const res = await s.request('/items/e000', { headers: { 'if-modified-since': AT } });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).n, 9);
    const modified = res.headers.get('last-modified') ?? '';
    assert.notEqual(modified, AT);
    assert.equal((await s.request('/items/e000', { headers: { 'if-modified-since': modified } })).status, 304);
  });

  test('If-None-Match decides, whatever If-Modified-Since says (RFC 9110 §13.2.2)', async () => {
    const s = await startItems(records(1));
    const etag = (await s.request('/items/e000')).headers.get('etag') ?? '';
    assert.equal((await s.request('/items/e000', { headers: { 'if-modified-since': SECOND_AFTER } })).status, 304);
    assert.equal((await s.request('/items/e000', { headers: { 'if-none-match': '"other"' } })).status, 200);
    // Another tag: a 200, although the date alone would be a 304.
    assert.equal((await s.request('/items/e000', { headers: { 'if-none-match': '"other"', 'if-modified-since': SECOND_AFTER } })).status, 200);
    // The current tag: a 304, although the date alone would be a 200.
    assert.equal((await s.request('/items/e000', { headers: { 'if-none-match': etag, 'if-modified-since': SECOND_BEFORE } })).status, 304);
  });

  test('the obsolete RFC 850 and asctime formats -> understood', async () => {
    const s = await startItems(records(1));
    for (const since of ['Tuesday, 14-Nov-23 22:13:20 GMT', 'Tue Nov 14 22:13:20 2023']) {
      assert.equal((await s.request('/items/e000', { headers: { 'if-modified-since': since } })).status, 304, since);
    }
    assert.equal((await s.request('/items/e000', { headers: { 'if-modified-since': 'Tue Nov 14 22:13:19 2023' } })).status, 200);
  });

  test('not an HTTP-date, a list of dates, a date later than the server clock -> ignored: 200', async () => {
    const s = await startItems(records(1));
    const ignored = ['yesterday', '1700000001', '2023-11-14T22:13:21Z', 'Tue, 14 Nov 2023 22:13:21 UTC', 'Tue, 31 Feb 2023 22:13:21 GMT', `${SECOND_AFTER}, ${SECOND_AFTER}`, 'Fri, 01 Jan 2100 00:00:00 GMT'];
    for (const since of ignored) {
      const res = await s.request('/items/e000', { headers: { 'if-modified-since': since } });
      assert.equal(res.status, 200, since);
      assert.equal(res.headers.get('last-modified'), AT);
    }
  });
});

describe('If-Unmodified-Since (RFC 9110 §13.1.4)', () => {
  const writes = [
    ['PUT', '{"n":5}'],
    ['PATCH', '{"n":5}'],
    ['DELETE', undefined],
  ] as const;

  for (const [method, body] of writes) {
    test(`${method} with a date before Last-Modified -> 412, nothing written; at it -> done`, async () => {
      const s = await startItems(records(1));
      const init = (since: string): RequestInit => ({ method, headers: { ...JSON_HEADERS, 'if-unmodified-since': since }, ...(body === undefined ? {} : { body }) });
      const refused = await s.request('/items/e000', init(SECOND_BEFORE));
      assert.equal(refused.status, 412);
      assert.deepEqual(await refused.json(), { type: RFC2616, title: 'Precondition Failed', status: 412, detail: "If-Unmodified-Since is earlier than the entity's Last-Modified" });
      assert.equal((await (await s.request('/items/e000')).json()).n, 0);
      const done = await s.request('/items/e000', init(AT));
      assert.equal(done.status, method === 'DELETE' ? 204 : 200);
    });
  }

  test('a date that is no HTTP-date -> ignored: the write is done', async () => {
    const s = await startItems(records(1));
    const patch = (since: string): Promise<Response> => s.request('/items/e000', { method: 'PATCH', headers: { ...JSON_HEADERS, 'if-unmodified-since': since }, body: '{"n":5}' });
    assert.equal((await patch(SECOND_BEFORE)).status, 412);
    for (const since of ['not a date', `${SECOND_BEFORE}, ${SECOND_BEFORE}`]) assert.equal((await patch(since)).status, 200, since);
  });

  test('with If-Match -> If-Match decides, the date is ignored (RFC 9110 §13.2.2)', async () => {
    const s = await startItems(records(1));
    const etag = (await s.request('/items/e000')).headers.get('etag') ?? '';
    const patch = (headers: Record<string, string>): Promise<Response> => s.request('/items/e000', { method: 'PATCH', headers: { ...JSON_HEADERS, ...headers }, body: '{"n":5}' });
    assert.equal((await patch({ 'if-unmodified-since': SECOND_BEFORE })).status, 412);
    assert.equal((await patch({ 'if-match': etag, 'if-unmodified-since': SECOND_BEFORE })).status, 200);
  });

  test('the entity written by another client in between -> the second writer gets 412', async () => {
    const s = await startItems(records(1));
    const modified = (await s.request('/items/e000')).headers.get('last-modified') ?? '';
    assert.equal((await s.request('/items/e000', { method: 'PATCH', headers: JSON_HEADERS, body: '{"n":1}' })).status, 200);
    const late = await s.request('/items/e000', { method: 'PATCH', headers: { ...JSON_HEADERS, 'if-unmodified-since': modified }, body: '{"n":2}' });
    assert.equal(late.status, 412);
  });

  test('GET with a date before Last-Modified -> 412; at it -> 200', async () => {
    const s = await startItems(records(1));
    assert.equal((await s.request('/items/e000', { headers: { 'if-unmodified-since': SECOND_BEFORE } })).status, 412);
    assert.equal((await s.request('/items/e000', { headers: { 'if-unmodified-since': AT } })).status, 200);
  });
});

describe('Last-Modified never after Date (RFC 9110 §8.8.2.1)', () => {
  test('the event loop stalls across a second between two pipelined writes -> each write\'s Last-Modified is no later than its Date', async () => {
    // The stall: the first write's id is made while the clock crosses into the next second, on the
    // event loop (as a long synchronous task would hold it); the answers are read, not timed.
    let stalled = false;
    let n = 0;
    const newId = (): string => {
      if (!stalled) {
        stalled = true;
        const second = Math.floor(Date.now() / 1000);
        while (Math.floor(Date.now() / 1000) === second) {
          // Held until the second changes.
        }
      }
      return `w${n++}`;
    };
    const s = await startServer({ resources: [{ name: 'items', store: createMemoryStore([], { resource: 'items' }) }], newId });
    const { port } = s.server.address() as AddressInfo;
    const body = '{"n":1}';
    const post = `POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    // A GET first, whose answer makes Node's Date of this second; then two writes, in one packet,
    // so that all three are handled in one turn of the loop.
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(`GET /items HTTP/1.1\r\nHost: x\r\n\r\n${post}${post}`));
      let all = '';
      socket.setEncoding('latin1');
      socket.on('data', (c: string) => (all += c));
      socket.on('end', () => resolve(all));
      socket.on('error', reject);
    });
    const answers = text.split(/(?=HTTP\/1\.1 )/);
    assert.equal(answers.length, 3, text);
    for (const answer of answers.slice(1)) {
      assert.match(answer, /^HTTP\/1\.1 201 /);
      const date = parseHttpDate(/\r\ndate: ([^\r]*)/i.exec(answer)![1]!)!;
      const modified = parseHttpDate(/\r\nlast-modified: ([^\r]*)/i.exec(answer)![1]!)!;
      assert.ok(modified <= date, `Last-Modified ${httpDate(modified)} later than Date ${httpDate(date)}`);
    }
  });
});
