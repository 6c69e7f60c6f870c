import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileSchema } from '../../src/conventions/schema.js';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { tempDir } from '../helpers/process.js';
import { records, RFC2616, startItems, startServer } from '../helpers/server.js';

const NOW = 1_800_000_000;
const JSON_HEADERS = { 'content-type': 'application/json' };
const fixed = { now: () => NOW, newId: () => 'new0000000000001' };
const problem = (status: number, title: string, detail: string, extras: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: RFC2616,
  title,
  detail,
  status,
  ...extras,
});

describe('POST /<name>', () => {
  test('JSON object -> 201 entity with Location, server fields set', async () => {
    const s = await startItems([], fixed);
    const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"name":"lamp","price":12.5}' });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('content-type'), 'application/hal+json');
    assert.equal(res.headers.get('location'), '/items/new0000000000001');
    const expected = { id: 'new0000000000001', createdAt: NOW, updatedAt: NOW, name: 'lamp', price: 12.5, _links: { self: { href: '/items/new0000000000001' } } };
    assert.deepEqual(await res.json(), expected);
    assert.deepEqual(await (await s.request('/items/new0000000000001')).json(), expected);
  });

  test('a new id that is taken -> drawn again, up to three times; a third taken id is a 500 and writes nothing', async () => {
    const taken = { id: 'taken00000000001', createdAt: 1, updatedAt: 1, name: 'old' };
    const drawn = ['taken00000000001', 'taken00000000001', 'fresh00000000001', 'taken00000000001', 'taken00000000001', 'taken00000000001'];
    const s = await startItems([taken], { now: () => NOW, newId: () => drawn.shift() ?? 'none' });
    const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"name":"new"}' });
    assert.equal(res.status, 201);
    assert.equal((await res.json()).id, 'fresh00000000001');
    const refused = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"name":"newer"}' });
    assert.equal(refused.status, 500);
    assert.equal(drawn.length, 0);
    const list = (await (await s.request('/items')).json()) as { _embedded: { items: { name: string }[] } };
    assert.deepEqual(list._embedded.items.map((e) => e.name).sort(), ['new', 'old']);
  });

  test('800 POSTs -> 800 distinct ids of 16 URL-safe characters', async () => {
    const s = await startItems();
    const ids = new Set<string>();
    for (let batch = 0; batch < 8; batch++) {
      const created = await Promise.all(
        Array.from({ length: 100 }, () => s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{}' }).then((r) => r.json())),
      );
      for (const entity of created) {
        assert.match(entity.id, /^[A-Za-z0-9_-]{16}$/);
        ids.add(entity.id);
      }
    }
    assert.equal(ids.size, 800);
  });

  test('/v1/<name> (docs/conventions.md §4) -> 201 as well', async () => {
    const s = await startItems([], fixed);
    const res = await s.request('/v1/items', { method: 'POST', headers: JSON_HEADERS, body: '{"a":1}' });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('location'), '/items/new0000000000001');
  });

  test('server-managed members in the body -> ignored', async () => {
    const s = await startItems([], fixed);
    const body = JSON.stringify({ id: 'mine', createdAt: 1, updatedAt: 2, _links: { self: { href: '/x' } }, _embedded: {}, _deleted: true, a: 1 });
    const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body });
    assert.deepEqual(await res.json(), { id: 'new0000000000001', createdAt: NOW, updatedAt: NOW, a: 1, _links: { self: { href: '/items/new0000000000001' } } });
  });

  test('"__proto__" member -> kept as plain data, no prototype change', async () => {
    const s = await startItems([], fixed);
    const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"__proto__":{"polluted":true}}' });
    assert.equal(res.status, 201);
    assert.equal(await res.text(), '{"id":"new0000000000001","createdAt":1800000000,"updatedAt":1800000000,"__proto__":{"polluted":true},"_links":{"self":{"href":"/items/new0000000000001"}}}');
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });

  test('charset parameter and upper case -> accepted', async () => {
    const s = await startItems([], fixed);
    const res = await s.request('/items', { method: 'POST', headers: { 'content-type': 'Application/JSON; charset=utf-8' }, body: '{}' });
    assert.equal(res.status, 201);
  });

  for (const [label, headers] of [
    ['no Content-Type', {}],
    ['Content-Type: text/plain', { 'content-type': 'text/plain' }],
    ['Content-Type: application/merge-patch+json', { 'content-type': 'application/merge-patch+json' }],
  ] as const) {
    test(`${label} -> 415 seed document`, async () => {
      const s = await startItems();
      // fetch sets text/plain for a string body; a Blob without a type sends no Content-Type at all.
      const body = 'content-type' in headers ? '{"a":1}' : new Blob(['{"a":1}']);
      const res = await s.request('/items', { method: 'POST', headers, body });
      assert.equal(res.status, 415);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(await res.json(), problem(415, 'Unsupported Media Type', 'Expecting one of the application/json'));
      assert.equal(s.store.size, 0);
    });
  }

  for (const [body, detail] of [
    ['{"a":', 'Request body is not valid JSON: '],
    ['', 'Request body is not valid JSON: '],
    ['[1,2]', 'Request body must be a JSON object'],
    ['null', 'Request body must be a JSON object'],
    ['"text"', 'Request body must be a JSON object'],
  ] as const) {
    test(`body ${JSON.stringify(body)} -> 400`, async () => {
      const s = await startItems();
      const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      const doc = await res.json();
      assert.ok(doc.detail.startsWith(detail), doc.detail);
      assert.deepEqual({ ...doc, detail: undefined }, { ...problem(400, 'Bad Request', ''), detail: undefined });
      assert.equal(s.store.size, 0);
    });
  }

  test('body that is not UTF-8 -> 400', async () => {
    const s = await startItems();
    const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: new Uint8Array([0x7b, 0xff, 0x7d]) });
    assert.equal(res.status, 400);
    assert.deepEqual(await res.json(), problem(400, 'Bad Request', 'Request body is not valid UTF-8'));
  });

  test('body over --max-body -> 413, nothing stored', async () => {
    const s = await startItems([], { maxBodyBytes: 64 });
    const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ text: 'x'.repeat(100) }) });
    assert.equal(res.status, 413);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(await res.json(), problem(413, 'Payload Too Large', 'Request body is larger than the limit of 64 bytes'));
    assert.equal(s.store.size, 0);
  });

  test('chunked body over the limit (no Content-Length) -> 413', async () => {
    const s = await startItems([], { maxBodyBytes: 64 });
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(new TextEncoder().encode('{"a":"0123456789"}'));
        controller.close();
      },
    });
    const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: stream, duplex: 'half' } as RequestInit);
    assert.equal(res.status, 413);
    assert.equal(s.store.size, 0);
  });

  test('body failing the schema -> 400 Validation failed with validationMessages', async () => {
    const validate = compileSchema(
      { type: 'object', required: ['name'], properties: { name: { type: 'string' }, price: { type: 'number', minimum: 0 } } },
      'items.schema.json',
    );
    const s = await startItems([], { ...fixed, validate });
    const res = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"price":-1}' });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    const doc = await res.json();
    assert.deepEqual(Object.keys(doc), ['type', 'title', 'detail', 'status', 'validationMessages']);
    assert.deepEqual({ ...doc, validationMessages: undefined }, { ...problem(400, 'Bad Request', 'Validation failed'), validationMessages: undefined });
    assert.deepEqual(Object.keys(doc.validationMessages).sort(), ['name', 'price']);
    assert.ok(doc.validationMessages.name.required);
    assert.ok(doc.validationMessages.price.minimum);
    assert.equal(s.store.size, 0);
  });
});

describe('PUT /<name>/<id>', () => {
  test('existing id -> 200, client fields replaced, id and createdAt kept', async () => {
    const s = await startItems(records(2, (i) => ({ n: i, old: true })), fixed);
    const res = await s.request('/items/e001', { method: 'PUT', headers: JSON_HEADERS, body: '{"id":"other","createdAt":5,"fresh":1}' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/hal+json');
    const expected = { id: 'e001', createdAt: 1_700_000_001, updatedAt: NOW, fresh: 1, _links: { self: { href: '/items/e001' } } };
    assert.deepEqual(await res.json(), expected);
    assert.deepEqual(await (await s.request('/items/e001')).json(), expected);
  });

  test('PUT keeps the entity in its place in the creation order', async () => {
    const s = await startItems(records(3), fixed);
    await s.request('/items/e000', { method: 'PUT', headers: JSON_HEADERS, body: '{}' });
    const body = await (await s.request('/items')).json();
    assert.deepEqual(body._embedded.items.map((e: { id: string }) => e.id), ['e000', 'e001', 'e002']);
  });

  test('unknown id -> 404, nothing created', async () => {
    const s = await startItems([], fixed);
    const res = await s.request('/items/ghost', { method: 'PUT', headers: JSON_HEADERS, body: '{}' });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), problem(404, 'Not Found', 'There is no items entity with id "ghost"'));
    assert.equal(s.store.size, 0);
  });

  test('no Content-Type -> 415 seed document', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items/e000', { method: 'PUT', body: new Blob(['{}']) });
    assert.equal(res.status, 415);
    assert.deepEqual(await res.json(), problem(415, 'Unsupported Media Type', 'Expecting one of the application/json'));
  });
});

describe('PATCH /<name>/<id>', () => {
  test('a stored entity with values JavaScript cannot hold, escapes and integer-like keys -> what the patch leaves alone keeps its bytes, served and in the file', async () => {
    const dir = await tempDir();
    const file = join(dir, 'hard.jsonl');
    const untouched = '"big":12345678901234567890,"e":9007199254740993,"z":-0,"pi":3.14159265358979323846264338327950288,"k":1E+2,"s":"\\u00e9\\/\\u2028","10":"ten","2":"two","dup":1,"dup":2,"nested":{"keep":1.0,"change":1}';
    await writeFile(file, `{"id":"h1","createdAt":1,"updatedAt":1,${untouched}}\n`);
    const store = await openJsonlStore({ file });
    const s = await startServer({ resources: [{ name: 'hard', store }], now: () => 50 });
    const res = await s.request('/hard/h1', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: '{"nested":{"change":2,"added":[1]},"dup":3,"new":true,"z":null}' });
    assert.equal(res.status, 200);
    const expected = '{"id":"h1","createdAt":1,"updatedAt":50,"big":12345678901234567890,"e":9007199254740993,"pi":3.14159265358979323846264338327950288,"k":1E+2,"s":"\\u00e9\\/\\u2028","10":"ten","2":"two","dup":3,"nested":{"keep":1.0,"change":2,"added":[1]},"new":true';
    assert.ok((await res.text()).startsWith(`${expected},"_links":`));
    assert.ok((await (await s.request('/hard/h1')).text()).startsWith(`${expected},"_links":`));
    await store.close();
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    assert.ok(lines.at(-1)!.startsWith(`${expected},"_change":`), lines.at(-1));
  });

  test('another Content-Type -> 415 with Accept-Patch (RFC 5789 §2.2); OPTIONS says it too (§3.1); a PUT\'s 415 does not', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items/e000', { method: 'PATCH', headers: { 'content-type': 'text/plain' }, body: '{}' });
    assert.equal(res.status, 415);
    assert.equal(res.headers.get('accept-patch'), 'application/json, application/merge-patch+json');
    assert.deepEqual(await res.json(), problem(415, 'Unsupported Media Type', 'Expecting one of the application/json, application/merge-patch+json'));
    const options = await s.request('/items/e000', { method: 'OPTIONS' });
    assert.equal(options.headers.get('accept-patch'), 'application/merge-patch+json, application/json');
    assert.equal((await s.request('/items', { method: 'OPTIONS' })).headers.get('accept-patch'), null);
    const put = await s.request('/items/e000', { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: '{}' });
    assert.equal(put.status, 415);
    assert.equal(put.headers.get('accept-patch'), null);
  });

  test('merge patch -> members set, nested merged, null removes', async () => {
    const s = await startItems([{ id: 'a', createdAt: 1, updatedAt: 1, keep: 1, drop: 2, dims: { w: 1, h: 2 }, tags: ['x'] }], fixed);
    const res = await s.request('/items/a', {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: '{"drop":null,"dims":{"h":null,"d":3},"tags":["y"],"id":"evil","updatedAt":0}',
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { id: 'a', createdAt: 1, updatedAt: NOW, keep: 1, dims: { w: 1, d: 3 }, tags: ['y'], _links: { self: { href: '/items/a' } } });
  });

  test('Content-Type: application/json -> accepted too', async () => {
    const s = await startItems(records(1), fixed);
    const res = await s.request('/items/e000', { method: 'PATCH', headers: JSON_HEADERS, body: '{"n":9}' });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).n, 9);
  });

  test('text/plain -> 415 listing both types', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items/e000', { method: 'PATCH', headers: { 'content-type': 'text/plain' }, body: '{}' });
    assert.equal(res.status, 415);
    assert.deepEqual(await res.json(), problem(415, 'Unsupported Media Type', 'Expecting one of the application/json, application/merge-patch+json'));
  });

  test('patch that breaks the schema -> 400, entity unchanged', async () => {
    const validate = compileSchema({ type: 'object', properties: { n: { type: 'integer' } } }, 'items.schema.json');
    const s = await startItems(records(1), { ...fixed, validate });
    const res = await s.request('/items/e000', { method: 'PATCH', headers: JSON_HEADERS, body: '{"n":"x"}' });
    assert.equal(res.status, 400);
    const doc = await res.json();
    assert.equal(doc.detail, 'Validation failed');
    assert.ok(doc.validationMessages.n.type);
    assert.equal(s.store.get('e000')?.record['n'], 0);
  });

  test('concurrent patches -> none lost', async () => {
    const s = await startItems([{ id: 'c', createdAt: 1, updatedAt: 1 }], fixed);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => s.request('/items/c', { method: 'PATCH', headers: JSON_HEADERS, body: JSON.stringify({ [`k${i}`]: i }) })),
    );
    const body = await (await s.request('/items/c')).json();
    for (let i = 0; i < 20; i++) assert.equal(body[`k${i}`], i);
  });

  test('unknown id -> 404', async () => {
    const s = await startItems();
    const res = await s.request('/items/ghost', { method: 'PATCH', headers: JSON_HEADERS, body: '{}' });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), problem(404, 'Not Found', 'There is no items entity with id "ghost"'));
  });
});

describe('DELETE /<name>/<id>', () => {
  test('existing id -> 204, then 404, gone from the collection', async () => {
    const s = await startItems(records(3));
    const res = await s.request('/items/e001', { method: 'DELETE' });
    assert.equal(res.status, 204);
    assert.equal(await res.text(), '');
    assert.equal((await s.request('/items/e001')).status, 404);
    const body = await (await s.request('/items')).json();
    assert.equal(body.total, 2);
    assert.deepEqual(body._embedded.items.map((e: { id: string }) => e.id), ['e000', 'e002']);
  });

  test('unknown id -> 404', async () => {
    const s = await startItems();
    const res = await s.request('/items/ghost', { method: 'DELETE' });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), problem(404, 'Not Found', 'There is no items entity with id "ghost"'));
  });
});
