import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileSchema } from '../../src/conventions/schema.js';
import { records, startItems, type TestResponse, type TestServer } from '../helpers/server.js';
import { assertFetchProblem } from './raw.js';

/**
 * Request bodies a sloppy or hostile client sends. Every one ends in a stored entity that reads back
 * as what was sent, or a 4xx problem document with nothing stored — never a 500, never a change to
 * a prototype, never a member the server manages.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };
const post = (s: TestServer, body: string | Uint8Array, headers: Record<string, string> = JSON_HEADERS): Promise<TestResponse> =>
  s.request('/items', { method: 'POST', headers, body });

/** `{"a":[[[…]]]}` nested `depth` arrays deep. */
const deepArrays = (depth: number): string => `{"a":${'['.repeat(depth)}${']'.repeat(depth)}}`;
/** `{"a":{"a":…1…}}` nested `depth` objects deep. */
const deepObjects = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('nesting', () => {
  test('1000 levels of nesting -> 201, reads back unchanged', async () => {
    const s = await startItems();
    const res = await post(s, deepArrays(1000));
    assert.equal(res.status, 201);
    const created = await res.json();
    const back = await (await s.request(`/items/${created.id}`)).json();
    assert.equal(JSON.stringify(back.a), JSON.stringify(JSON.parse(deepArrays(1000)).a));
  });

  test('1024 levels (the limit) -> 201; 1025 levels -> 400 problem', async () => {
    const s = await startItems();
    // The body object is level 1, so `a` holds 1023 arrays at the limit.
    assert.equal((await post(s, deepArrays(1023))).status, 201);
    await assertFetchProblem(await post(s, deepArrays(1024)), 400, 'Request body is nested deeper than 1024 levels');
    assert.equal(s.store.size, 1);
  });

  test('100 000 levels of nested arrays (under the size limit) -> 400 problem, nothing stored, nothing logged, server keeps serving', async () => {
    const logged: unknown[] = [];
    const s = await startItems([], { errorLog: (error) => logged.push(error) });
    await assertFetchProblem(await post(s, deepArrays(100_000)), 400, 'Request body is nested deeper than 1024 levels');
    assert.equal(s.store.size, 0);
    assert.deepEqual(logged, []);
    assert.equal((await s.request('/items')).status, 200);
  });

  test('PATCH nested 10 000 objects deep -> 400 problem, entity unchanged', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items/e000', { method: 'PATCH', headers: JSON_HEADERS, body: deepObjects(10_000) });
    await assertFetchProblem(res, 400, 'Request body is nested deeper than 1024 levels');
    assert.deepEqual(s.store.get('e000')?.record, records(1)[0]);
  });
});

describe('numbers and strings', () => {
  test('{"a":1e400}, {"a":-1e400}, {"a":[1e309]} (overflow to ±Infinity) -> 400 problem, not silently stored as null', async () => {
    const s = await startItems();
    for (const n of ['1e400', '-1e400', '[1e309]']) {
      await assertFetchProblem(await post(s, `{"a":${n}}`), 400, 'Request body holds a number too large to represent');
    }
    assert.equal(s.store.size, 0);
  });

  test('{"a":1e-400} (underflow to 0) -> 201 with 0: a rounding JSON allows, not an error', async () => {
    const s = await startItems();
    const res = await post(s, '{"a":1e-400}');
    assert.equal(res.status, 201);
    assert.equal((await res.json()).a, 0);
  });

  test('lone surrogate "\\ud800" -> 201, stored and sent back as the escape \\ud800', async () => {
    const s = await startItems();
    const res = await post(s, '{"a":"\\ud800","b":"\\udfff\\ud83d"}');
    assert.equal(res.status, 201);
    const text = await res.text();
    assert.match(text, /"a":"\\ud800","b":"\\udfff\\ud83d"/);
    const id = JSON.parse(text).id as string;
    assert.equal(s.store.get(id)?.record['a'], '\ud800');
  });

  test('raw newline, U+2028 and NUL escapes in strings -> 201, read back identical', async () => {
    const s = await startItems();
    const value = 'line1\nline2\u2028\u2029\u0000\r\t"\\';
    const res = await post(s, JSON.stringify({ value, [value]: 1 }));
    assert.equal(res.status, 201);
    const { id } = await res.json();
    const back = await (await s.request(`/items/${id}`)).json();
    assert.equal(back.value, value);
    assert.equal(back[value], 1);
  });

  test('integer beyond 2^53 -> stored as the nearest double (JSON in JavaScript), never an error', async () => {
    const s = await startItems();
    const res = await post(s, '{"big":12345678901234567890123}');
    assert.equal(res.status, 201);
    assert.equal((await res.json()).big, 12345678901234567890123);
  });

  test('BOM before the JSON -> 201 (the BOM is ignored, RFC 8259 §8.1)', async () => {
    const s = await startItems();
    const res = await post(s, new Uint8Array([0xef, 0xbb, 0xbf, ...Buffer.from('{"bom":1}')]));
    assert.equal(res.status, 201);
    assert.equal((await res.json()).bom, 1);
  });

  for (const [label, bytes] of [
    ['lone continuation byte 0x80', [0x7b, 0x22, 0x80, 0x22, 0x3a, 0x31, 0x7d]],
    ['overlong encoding of "/" (C0 AF)', [0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d]],
    ['encoded surrogate (ED A0 80)', [0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d]],
    ['truncated 4-byte sequence', [0x7b, 0x22, 0xf0, 0x9f, 0x98, 0x22, 0x3a, 0x31, 0x7d]],
    ['UTF-16LE body', [...Buffer.from('{"a":1}', 'utf16le')]],
  ] as const) {
    test(`${label} -> 400 problem, nothing stored`, async () => {
      const s = await startItems();
      await assertFetchProblem(await post(s, new Uint8Array(bytes)), 400);
      assert.equal(s.store.size, 0);
    });
  }
});

describe('shapes that are not one JSON object', () => {
  for (const [label, body, detail] of [
    ['0-byte body', '', 'Request body is not valid JSON: Unexpected end of JSON input'],
    ['whitespace only', ' \n\t ', 'Request body is not valid JSON: Unexpected end of JSON input'],
    ['two objects back to back', '{"a":1}{"b":2}', undefined],
    ['array', '[{"a":1}]', 'Request body must be a JSON object'],
    ['null', 'null', 'Request body must be a JSON object'],
    ['string', '"{}"', 'Request body must be a JSON object'],
    ['number', '42', 'Request body must be a JSON object'],
    ['single-quoted keys', "{'a':1}", undefined],
    ['trailing comma', '{"a":1,}', undefined],
    ['comment', '{"a":1 /* hi */}', undefined],
    ['NaN literal', '{"a":NaN}', undefined],
  ] as const) {
    test(`${label} -> 400 problem, nothing stored`, async () => {
      const s = await startItems();
      await assertFetchProblem(await post(s, body), 400, detail);
      assert.equal(s.store.size, 0);
    });
  }

  test('array of 200 000 numbers (under the byte limit) -> 413 problem: over the 2 500 values a body may hold', async () => {
    const s = await startItems();
    await assertFetchProblem(await post(s, `{"a":[${new Array(200_000).fill('7').join(',')}]}`), 413, 'Request body is larger than the limit of 2500 values');
    assert.equal(s.store.size, 0);
  });

  test('array of 200 000 numbers with maxBodyValues 200 002 -> 201 with every element', async () => {
    const s = await startItems([], { maxBodyValues: 200_002 });
    const res = await post(s, `{"a":[${new Array(200_000).fill('7').join(',')}]}`);
    assert.equal(res.status, 201);
    const { id } = await res.json();
    const stored = s.store.get(id)?.record['a'] as number[];
    assert.equal(stored.length, 200_000);
    assert.ok(stored.every((n) => n === 7));
  });

  test('object with 50 000 keys -> 413 problem: over the 1 000 members an object may have', async () => {
    const s = await startItems();
    const body = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i]));
    await assertFetchProblem(await post(s, JSON.stringify(body)), 413, 'Request body is larger than the limit of 1000 members in one object');
    assert.equal(s.store.size, 0);
  });

  test('object with 50 000 keys with maxBodyMembers 50 000 and maxBodyValues 50 001 -> 201 with every key', async () => {
    const s = await startItems([], { maxBodyMembers: 50_000, maxBodyValues: 50_001 });
    const body = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i]));
    const res = await post(s, JSON.stringify(body));
    assert.equal(res.status, 201);
    const { id } = await res.json();
    assert.equal(Object.keys(s.store.get(id)?.record ?? {}).length, 50_000 + 3);
  });

  test('body of exactly --max-body bytes -> accepted; one byte more -> 413', async () => {
    const limit = 64;
    const s = await startItems([], { maxBodyBytes: limit });
    const exact = `{"p":"${'x'.repeat(limit - 8)}"}`;
    assert.equal(Buffer.byteLength(exact), limit);
    assert.equal((await post(s, exact)).status, 201);
    const over = `{"p":"${'x'.repeat(limit - 7)}"}`;
    await assertFetchProblem(await post(s, over), 413, `Request body is larger than the limit of ${limit} bytes`);
    assert.equal(s.store.size, 1);
  });
});

describe('prototype and server-managed keys', () => {
  test('{"__proto__":{"polluted":1}} then PATCH it -> plain data both times, no prototype polluted', async () => {
    const s = await startItems();
    const res = await post(s, '{"__proto__":{"polluted":1},"x":1}');
    assert.equal(res.status, 201);
    const { id } = await res.json();
    const patched = await s.request(`/items/${id}`, { method: 'PATCH', headers: JSON_HEADERS, body: '{"__proto__":{"more":2}}' });
    assert.equal(patched.status, 200);
    const text = await patched.text();
    assert.match(text, /"__proto__":\{"polluted":1,"more":2\}/);
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
    assert.equal(({} as Record<string, unknown>)['more'], undefined);
    const record = s.store.get(id)?.record;
    assert.equal(Object.getPrototypeOf(record), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(record, '__proto__')?.value, { polluted: 1, more: 2 });
  });

  test('{"constructor":{"prototype":{"polluted":1}}} -> stored as data, Object.prototype untouched', async () => {
    const s = await startItems();
    const res = await post(s, '{"constructor":{"prototype":{"polluted":1}}}');
    assert.equal(res.status, 201);
    assert.deepEqual((await res.json()).constructor, { prototype: { polluted: 1 } });
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });

  test('PATCH {"__proto__":null} -> removes only the member named __proto__', async () => {
    const s = await startItems([{ id: 'p1', createdAt: 1, updatedAt: 1, keep: true }]);
    await s.request('/items/p1', { method: 'PATCH', headers: JSON_HEADERS, body: '{"__proto__":{"a":1}}' });
    const res = await s.request('/items/p1', { method: 'PATCH', headers: JSON_HEADERS, body: '{"__proto__":null}' });
    assert.equal(res.status, 200);
    const record: Record<string, unknown> = s.store.get('p1')?.record ?? {};
    assert.equal(Object.hasOwn(record, '__proto__'), false);
    assert.equal(record['keep'], true);
  });

  test('schema with additionalProperties:false -> constructor, toString, __proto__ refused like any other unknown field', async () => {
    const validate = compileSchema({ type: 'object', properties: { name: { type: 'string' } }, additionalProperties: false }, 'strict');
    const s = await startItems([], { validate });
    for (const key of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const doc = await assertFetchProblem(await post(s, `{"${key}":1}`), 400, 'Validation failed');
      assert.deepEqual(Object.keys(doc['validationMessages'] as object), [key]);
    }
    assert.equal(s.store.size, 0);
  });

  test('schema requiring "constructor" -> a body without it is refused (Object.prototype does not count)', async () => {
    const validate = compileSchema({ type: 'object', required: ['constructor', 'toString'] }, 'required');
    const s = await startItems([], { validate });
    const doc = await assertFetchProblem(await post(s, '{}'), 400, 'Validation failed');
    assert.deepEqual(doc['validationMessages'], { constructor: { required: 'is required' }, toString: { required: 'is required' } });
  });

  test('POST and PATCH with id, createdAt, updatedAt, _links, _embedded, _deleted -> all ignored', async () => {
    const s = await startItems([{ id: 'm1', createdAt: 5, updatedAt: 5, v: 1 }], { now: () => 9 });
    const managed = '{"id":"evil","createdAt":1,"updatedAt":2,"_links":{"self":{"href":"/x"}},"_embedded":{},"_deleted":true,"v":2}';
    const created = await (await post(s, managed)).json();
    assert.notEqual(created.id, 'evil');
    assert.deepEqual(created, { id: created.id, createdAt: 9, updatedAt: 9, v: 2, _links: { self: { href: `/items/${created.id}` } } });
    const patched = await (await s.request('/items/m1', { method: 'PATCH', headers: JSON_HEADERS, body: managed })).json();
    assert.deepEqual(patched, { id: 'm1', createdAt: 5, updatedAt: 9, v: 2, _links: { self: { href: '/items/m1' } } });
    assert.equal(s.store.size, 2);
    assert.equal(s.store.get('evil'), undefined);
  });

  test('"\\u005fdeleted" and "\\u0069d" (escaped keys) -> decoded, then ignored like _deleted and id', async () => {
    const s = await startItems();
    const res = await post(s, '{"\\u0069d":"evil","\\u005fdeleted":true,"v":1}');
    assert.equal(res.status, 201);
    const body = await res.json();
    assert.notEqual(body.id, 'evil');
    assert.equal(Object.hasOwn(body, '_deleted'), false);
  });
});

describe('Content-Type variants (docs/conventions.md §5, docs/conventions.md §7)', () => {
  for (const [contentType, status] of [
    ['APPLICATION/JSON', 201],
    ['application/json ; charset="UTF-8"', 201],
    ['application/json;charset=utf-8;foo=bar', 201],
    ['application/jsonx', 415],
    ['application/json-patch+json', 415],
    ['application/hal+json', 415],
    ['application/merge-patch+json', 415],
    ['text/json', 415],
    ['application/x-www-form-urlencoded', 415],
    ['multipart/form-data; boundary=x', 415],
    [';application/json', 415],
    ['application/json, text/plain', 415],
  ] as const) {
    test(`POST Content-Type: ${contentType} -> ${status}`, async () => {
      const s = await startItems();
      const res = await post(s, '{"a":1}', { 'content-type': contentType });
      if (status === 415) {
        await assertFetchProblem(res, 415, 'Expecting one of the application/json');
        assert.equal(s.store.size, 0);
      } else {
        assert.equal(res.status, status);
      }
    });
  }

  test(
    'Content-Type: application/json;charset=latin1 -> 415 (JSON is UTF-8, RFC 8259 §8.1)',
    async () => {
      const s = await startItems();
      const res = await post(s, Buffer.from('{"name":"café"}', 'latin1'), { 'content-type': 'application/json;charset=latin1' });
      await assertFetchProblem(res, 415);
    },
  );
});

describe('validation against the demo schema (data/products.schema.json)', () => {
  const demoSchema = async (): Promise<ReturnType<typeof compileSchema>> => {
    const { readFile } = await import('node:fs/promises');
    const path = new URL('../../data/products.schema.json', import.meta.url);
    return compileSchema(JSON.parse(await readFile(path, 'utf8')), path.pathname);
  };

  test('20 000 tags of "A" (maxItems 10, pattern ^[a-z0-9-]+$) -> 400 Validation failed, nothing stored', async () => {
    const s = await startItems([], { validate: await demoSchema(), maxBodyValues: 20_002 });
    const doc = await assertFetchProblem(await post(s, JSON.stringify({ tags: new Array(20_000).fill('A') })), 400, 'Validation failed');
    assert.deepEqual((doc['validationMessages'] as Record<string, unknown>)['tags'], { maxItems: 'must have at most 10 items' });
    assert.equal(s.store.size, 0);
  });

  test(
    '20 000 invalid tags -> a validation problem of at most 64 KB, not one message per item',
    async () => {
      const s = await startItems([], { validate: await demoSchema(), maxBodyValues: 20_002 });
      const res = await post(s, JSON.stringify({ tags: new Array(20_000).fill('A') }));
      assert.equal(res.status, 400);
      const bytes = (await res.arrayBuffer()).byteLength;
      assert.ok(bytes <= 64 * 1024, `${bytes} bytes`);
    },
  );
});
