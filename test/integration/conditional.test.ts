import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { request as httpRequest } from 'node:http';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { tempDir } from '../helpers/process.js';
import { records, RFC2616, startItems, startServer } from '../helpers/server.js';

const JSON_HEADERS = { 'content-type': 'application/json' };
const preconditionFailed = { type: RFC2616, title: 'Precondition Failed', detail: 'If-Match does not match the current ETag', status: 412 };

describe('ETag and If-None-Match (docs/conventions.md §5)', () => {
  test('GET entity -> strong ETag; If-None-Match with it -> 304, no body', async () => {
    const s = await startItems(records(1));
    const first = await s.request('/items/e000');
    const etag = first.headers.get('etag');
    assert.match(etag ?? '', /^"[^"]+"$/);
    const again = await s.request('/items/e000', { headers: { 'if-none-match': etag ?? '' } });
    assert.equal(again.status, 304);
    assert.equal(again.headers.get('etag'), etag);
    assert.equal(await again.text(), '');
  });

  test('HAL and plain JSON representations -> different tags', async () => {
    const s = await startItems(records(1));
    const hal = (await s.request('/items/e000')).headers.get('etag');
    const json = (await s.request('/items/e000', { headers: { accept: 'application/json' } })).headers.get('etag');
    assert.notEqual(hal, json);
  });

  test('entity changed -> new ETag, old one no longer 304', async () => {
    const s = await startItems(records(1));
    const etag = (await s.request('/items/e000')).headers.get('etag') ?? '';
    const patched = await s.request('/items/e000', { method: 'PATCH', headers: JSON_HEADERS, body: '{"n":5}' });
    const newTag = patched.headers.get('etag');
    assert.ok(newTag && newTag !== etag);
    const res = await s.request('/items/e000', { headers: { 'if-none-match': etag } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('etag'), newTag);
  });

  test('collection page -> ETag; 304 until the collection changes', async () => {
    const s = await startItems(records(3));
    const etag = (await s.request('/items?limit=2')).headers.get('etag') ?? '';
    assert.match(etag, /^"[^"]+"$/);
    assert.equal((await s.request('/items?limit=2', { headers: { 'if-none-match': `"other", ${etag}` } })).status, 304);
    await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{}' });
    const res = await s.request('/items?limit=2', { headers: { 'if-none-match': etag } });
    assert.equal(res.status, 200);
    assert.notEqual(res.headers.get('etag'), etag);
    assert.equal((await res.json()).total, 4);
  });

  test('store written directly, not through HTTP -> the next page shows it under a new ETag', async () => {
    const s = await startItems(records(2));
    const first = await s.request('/items');
    const etag = first.headers.get('etag');
    assert.equal((await first.json()).total, 2);
    await s.store.create({ id: 'direct', createdAt: 1, updatedAt: 1 });
    const second = await s.request('/items', { headers: { 'if-none-match': etag ?? '' } });
    assert.equal(second.status, 200);
    assert.notEqual(second.headers.get('etag'), etag);
    assert.equal((await second.json()).total, 3);
    await s.store.update('direct', (current) => ({ ...current.record, touched: true }));
    const third = await (await s.request('/items')).json();
    assert.equal(third._embedded.items[2].touched, true);
  });

  test('POST -> 201 carries the new entity ETag, same as a GET of it', async () => {
    const s = await startItems();
    const created = await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"a":1}' });
    const etag = created.headers.get('etag');
    const location = created.headers.get('location') ?? '';
    assert.equal((await s.request(location)).headers.get('etag'), etag);
  });
});

describe('If-Match (docs/conventions.md §5)', () => {
  for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
    test(`${method} with a stale If-Match -> 412, entity unchanged`, async () => {
      const s = await startItems(records(1));
      const res = await s.request('/items/e000', { method, headers: { ...JSON_HEADERS, 'if-match': '"stale"' }, body: method === 'DELETE' ? null : '{"n":9}' });
      assert.equal(res.status, 412);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(await res.json(), preconditionFailed);
      assert.deepEqual(s.store.get('e000')?.record, records(1)[0]);
    });

    test(`${method} with the current ETag (either representation) -> applied`, async () => {
      const s = await startItems(records(1));
      const etag = (await s.request('/items/e000', { headers: { accept: 'application/json' } })).headers.get('etag') ?? '';
      const res = await s.request('/items/e000', { method, headers: { ...JSON_HEADERS, 'if-match': etag }, body: method === 'DELETE' ? null : '{"n":9}' });
      assert.equal(res.status, method === 'DELETE' ? 204 : 200);
    });
  }

  test('If-Match: * on an existing entity -> applied', async () => {
    const s = await startItems(records(1));
    assert.equal((await s.request('/items/e000', { method: 'PATCH', headers: { ...JSON_HEADERS, 'if-match': '*' }, body: '{}' })).status, 200);
  });

  test('POST with If-None-Match: * -> 412 (the collection always exists, RFC 9110 §13.1.2), nothing created', async () => {
    const s = await startItems(records(1));
    const res = await s.request('/items', { method: 'POST', headers: { ...JSON_HEADERS, 'if-none-match': '*' }, body: '{"n":9}' });
    assert.equal(res.status, 412);
    assert.deepEqual(await res.json(), { ...preconditionFailed, detail: 'If-None-Match matches the current ETag' });
    assert.equal(s.store.size, 1);
  });

  test('POST with If-Match: the collection\'s tag -> 201; once the collection has changed -> 412, nothing created', async () => {
    const s = await startItems(records(1));
    const etag = (await s.request('/items', { headers: { accept: 'application/json' } })).headers.get('etag') ?? '';
    const first = await s.request('/items', { method: 'POST', headers: { ...JSON_HEADERS, 'if-match': `"other", ${etag}` }, body: '{"n":1}' });
    assert.equal(first.status, 201);
    const second = await s.request('/items', { method: 'POST', headers: { ...JSON_HEADERS, 'if-match': etag }, body: '{"n":2}' });
    assert.equal(second.status, 412);
    assert.deepEqual(await second.json(), preconditionFailed);
    assert.equal(s.store.size, 2);
    assert.equal((await s.request('/items', { method: 'POST', headers: { ...JSON_HEADERS, 'if-match': '*' }, body: '{"n":3}' })).status, 201);
    // The page's tag now is the collection's: the next POST may go.
    const current = (await s.request('/items?limit=1')).headers.get('etag') ?? '';
    assert.equal((await s.request('/items', { method: 'POST', headers: { ...JSON_HEADERS, 'if-match': current }, body: '{"n":4}' })).status, 201);
    assert.equal(s.store.size, 4);
  });

  test('keyed POST with If-Match, retried once its own write has moved the tag -> the first 201 replayed, not a 412', async () => {
    const s = await startItems(records(1));
    const etag = (await s.request('/items')).headers.get('etag') ?? '';
    const send = (): Promise<Response> => s.request('/items', { method: 'POST', headers: { ...JSON_HEADERS, 'if-match': etag, 'idempotency-key': '"k1"' }, body: '{"n":1}' });
    const first = await send();
    assert.equal(first.status, 201);
    const retry = await send();
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotency-replayed'), 'true');
    assert.equal(retry.headers.get('location'), first.headers.get('location'));
    assert.equal(s.store.size, 2);
  });

  test('two writers with the same If-Match -> one wins, the other gets 412', async () => {
    const s = await startItems(records(1));
    const etag = (await s.request('/items/e000')).headers.get('etag') ?? '';
    const results = await Promise.all(
      [1, 2].map((n) => s.request('/items/e000', { method: 'PATCH', headers: { ...JSON_HEADERS, 'if-match': etag }, body: JSON.stringify({ n }) })),
    );
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 412]);
  });

  test('POSTs sent at once with the same If-Match to a JSON-lines store -> one 201, the others 412 (the first moved the tag)', async () => {
    const store = await openJsonlStore({ file: join(await tempDir(), 'items.jsonl'), resource: 'items' });
    const s = { ...(await startServer({ resources: [{ name: 'items', store }] })), store };
    after(() => store.close());
    assert.equal((await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"n":0}' })).status, 201);
    const etag = (await s.request('/items')).headers.get('etag') ?? '';
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) => s.request('/items', { method: 'POST', headers: { ...JSON_HEADERS, 'if-match': etag }, body: JSON.stringify({ n }) })),
    );
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 412, 412, 412]);
    assert.equal(s.store.size, 2);
  });
});

/** A raw request, so that the compressed bytes are seen as sent. */
function raw(url: string, headers: Record<string, string>): Promise<{ statusCode: number | undefined; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ statusCode: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    })
      .on('error', reject)
      .end();
  });
}

describe('compression (docs/conventions.md §5)', () => {
  for (const [coding, decode] of [
    ['gzip', gunzipSync],
    ['br', brotliDecompressSync],
  ] as const) {
    test(`Accept-Encoding: ${coding} on a large page -> ${coding} body, its own ETag, Vary`, async () => {
      const s = await startItems(records(50));
      const plain = await raw(`${s.url}/items`, {});
      const packed = await raw(`${s.url}/items`, { 'accept-encoding': coding });
      assert.equal(packed.headers['content-encoding'], coding);
      assert.equal(packed.headers['vary'], 'Accept, Accept-Encoding');
      assert.equal(Number(packed.headers['content-length']), packed.body.length);
      assert.ok(packed.body.length < plain.body.length / 2);
      assert.deepEqual(decode(packed.body), plain.body);
      assert.equal(packed.headers['etag'], `${String(plain.headers['etag']).slice(0, -1)}-${coding}"`);
      const revalidate = await s.request('/items', { headers: { 'if-none-match': String(packed.headers['etag']) } });
      assert.equal(revalidate.status, 304);
    });
  }

  test('HEAD with Accept-Encoding: gzip on a large page -> GET\'s coding and tag, no body, nothing compressed', async () => {
    const s = await startItems(records(50));
    const get = await raw(`${s.url}/items`, { 'accept-encoding': 'gzip' });
    const head = await new Promise<{ headers: Record<string, string | string[] | undefined> }>((resolve, reject) => {
      httpRequest(`${s.url}/items`, { method: 'HEAD', headers: { 'accept-encoding': 'gzip' } }, (res) => {
        res.resume();
        res.on('end', () => resolve({ headers: res.headers }));
      })
        .on('error', reject)
        .end();
    });
    assert.equal(head.headers['content-encoding'], 'gzip');
    assert.equal(head.headers['etag'], get.headers['etag']);
    assert.equal(head.headers['vary'], get.headers['vary']);
    assert.equal(head.headers['content-length'], undefined);
  });

  for (const [what, path, accept] of [
    ['a large page', '/items', 'application/hal+json'],
    ['a large entity', '/items/big', 'application/hal+json'],
    ['a large entity as HAL-FORMS', '/items/big', 'application/prs.hal-forms+json'],
    ['the OpenAPI document', '/openapi.json', 'application/json'],
  ] as const) {
    for (const coding of ['gzip', 'identity'] as const) {
      test(`If-None-Match on ${what}, Accept-Encoding: ${coding} -> 304 with the ETag and Vary its 200 carries (RFC 9110 §15.4.5)`, async () => {
        const s = await startItems([...records(50), { id: 'big', createdAt: 1, updatedAt: 1, text: 'x'.repeat(2000) }]);
        const headers = { accept, 'accept-encoding': coding };
        const ok = await raw(`${s.url}${path}`, headers);
        assert.equal(ok.headers['content-encoding'], coding === 'gzip' ? 'gzip' : undefined);
        const revalidated = await raw(`${s.url}${path}`, { ...headers, 'if-none-match': String(ok.headers['etag']) });
        assert.equal(revalidated.statusCode, 304);
        assert.equal(revalidated.headers['etag'], ok.headers['etag']);
        assert.equal(revalidated.headers['vary'], ok.headers['vary']);
        assert.equal(revalidated.body.length, 0);
      });
    }
  }

  test('Accept-Encoding: gzip on a small entity -> sent as it is', async () => {
    const s = await startItems(records(1));
    const res = await raw(`${s.url}/items/e000`, { 'accept-encoding': 'gzip' });
    assert.equal(res.headers['content-encoding'], undefined);
  });

  test('Accept-Encoding: identity -> no compression', async () => {
    const s = await startItems(records(50));
    const res = await raw(`${s.url}/items`, { 'accept-encoding': 'identity' });
    assert.equal(res.headers['content-encoding'], undefined);
  });
});
