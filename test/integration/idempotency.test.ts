import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KeyedWrite } from '../../src/store/idempotency.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { Change, EntityRecord, LocalStore, StoredEntity } from '../../src/store/store.js';
import { eventually } from '../helpers/process.js';
import { RFC2616, startItems, startServer, type TestResponse } from '../helpers/server.js';

const JSON_BODY = { 'content-type': 'application/json' };
const keyed = (key: string, extra: Record<string, string> = {}): Record<string, string> => ({ ...JSON_BODY, 'idempotency-key': key, ...extra });

async function answer(res: TestResponse): Promise<{ status: number; location: string | null; etag: string | null; replayed: string | null; body: string }> {
  return { status: res.status, location: res.headers.get('location'), etag: res.headers.get('etag'), replayed: res.headers.get('idempotency-replayed'), body: await res.text() };
}

/** A memory store whose writes wait until `open()` is called: a request held in flight. */
function gatedStore(): { store: LocalStore; entered: () => number; open: () => void } {
  const inner = createMemoryStore();
  let entered = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const store: LocalStore = {
    get size() {
      return inner.size;
    },
    get revision() {
      return inner.revision;
    },
    get ready() {
      return inner.ready;
    },
    get: (id) => inner.get(id),
    query: (q) => inner.query(q),
    values: () => inner.values(),
    idempotency: inner.idempotency,
    async create(record: EntityRecord, key?: KeyedWrite): Promise<StoredEntity> {
      entered++;
      await gate;
      return inner.create(record, key);
    },
    update: (id: string, change: Change, key?: KeyedWrite) => inner.update(id, change, key),
    delete: (id, check) => inner.delete(id, check),
    follow: (listener) => inner.follow(listener),
    close: () => inner.close(),
  };
  return { store, entered: () => entered, open: () => release() };
}

describe('Idempotency-Key on POST and PATCH (memory store)', () => {
  test('a body outside ASCII (accents, an emoji, an escaped lone surrogate) -> the replay is the first answer byte for byte, Content-Length included', async () => {
    const s = await startItems();
    const body = JSON.stringify({ name: 'Lampe à poser', icon: '💡', odd: '\ud800' });
    const first = await s.request('/items', { method: 'POST', headers: keyed('k-utf8'), body });
    const again = await s.request('/items', { method: 'POST', headers: keyed('k-utf8'), body });
    assert.equal(first.status, 201);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.equal(again.headers.get('content-length'), first.headers.get('content-length'));
    assert.deepEqual(Buffer.from(await again.arrayBuffer()), Buffer.from(await first.arrayBuffer()));
    assert.equal(s.store.size, 1);
  });

  test('POST with a key, then the same POST -> the first answer again (status, Location, ETag, body), Idempotency-Replayed: true, one entity', async () => {
    const s = await startItems();
    const first = await answer(await s.request('/items', { method: 'POST', headers: keyed('k-1'), body: '{"name":"a"}' }));
    assert.equal(first.status, 201);
    assert.equal(first.replayed, null);
    const again = await answer(await s.request('/items', { method: 'POST', headers: keyed('"k-1"'), body: '{"name":"a"}' }));
    assert.deepEqual({ ...again, replayed: null }, first);
    assert.equal(again.replayed, 'true');
    assert.equal(s.store.size, 1);
  });

  test('the same key to /v1/items after /items, and to an id spelled with escapes -> replayed: one target, one write', async () => {
    const s = await startItems([], { basePath: '/api' });
    const first = await answer(await s.request('/api/items', { method: 'POST', headers: keyed('alias'), body: '{"name":"a"}' }));
    assert.equal(first.status, 201);
    const again = await answer(await s.request('/api/v1/items', { method: 'POST', headers: keyed('alias'), body: '{"name":"a"}' }));
    assert.deepEqual({ ...again, replayed: null }, first);
    assert.equal(again.replayed, 'true');
    assert.equal(s.store.size, 1);
    const path = first.location!;
    const id = path.slice(path.lastIndexOf('/') + 1);
    const escaped = `/api/v1/items/${[...id].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join('')}`;
    const patch = { method: 'PATCH', headers: { ...keyed('edit'), 'content-type': 'application/merge-patch+json' }, body: '{"n":1}' };
    const patched = await answer(await s.request(path, patch));
    assert.equal(patched.status, 200);
    const retried = await answer(await s.request(escaped, patch));
    assert.deepEqual({ ...retried, replayed: null }, patched);
    assert.equal(retried.replayed, 'true');
  });

  test('the same key with and without the base path, and after a restart with another base path or none -> replayed: one resource, one write', async () => {
    const store = createMemoryStore();
    const serve = (basePath: string) => startServer({ resources: [{ name: 'items', store }], basePath });
    const post = { method: 'POST', headers: keyed('moved'), body: '{"name":"a"}' };
    const api = await serve('/api');
    const first = await answer(await api.request('/api/items', post));
    assert.equal(first.status, 201);
    // Routed to the same collection without the prefix (a proxy that strips it).
    const stripped = await answer(await api.request('/items', post));
    assert.deepEqual({ ...stripped, replayed: null }, first);
    assert.equal(stripped.replayed, 'true');
    const path = first.location!;
    const id = path.slice(path.lastIndexOf('/') + 1);
    const patch = { method: 'PATCH', headers: { ...keyed('moved-edit'), 'content-type': 'application/merge-patch+json' }, body: '{"n":1}' };
    const patched = await answer(await api.request(path, patch));
    assert.equal(patched.status, 200);
    await api.close();
    // The first answers again, as they were sent (their links under the base path of then).
    for (const [basePath, prefix] of [['', ''], ['/v2', '/v2'], ['/v2', '']]) {
      const s = await serve(basePath!);
      const again = await answer(await s.request(`${prefix}/items`, post));
      assert.deepEqual({ ...again, replayed: null }, first, `POST, base path ${JSON.stringify(basePath)}, ${prefix || 'no prefix'}`);
      assert.equal(again.replayed, 'true');
      const repatched = await answer(await s.request(`${prefix}/items/${id}`, patch));
      assert.deepEqual({ ...repatched, replayed: null }, patched, `PATCH, base path ${JSON.stringify(basePath)}`);
      assert.equal(repatched.replayed, 'true');
      await s.close();
    }
    assert.equal(store.size, 1);
  });

  test('the same key with another body -> 422 problem, nothing written', async () => {
    const s = await startItems();
    assert.equal((await s.request('/items', { method: 'POST', headers: keyed('k'), body: '{"name":"a"}' })).status, 201);
    const res = await s.request('/items', { method: 'POST', headers: keyed('k'), body: '{"name":"b"}' });
    assert.equal(res.status, 422);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    const problem = await res.json();
    assert.equal(problem.type, RFC2616);
    assert.match(problem.detail, /another body/);
    assert.equal(s.store.size, 1);
  });

  test('a compact body, then the same JSON re-spaced under the same key -> 422 (other bytes are another body), nothing written', async () => {
    const s = await startItems();
    assert.equal((await s.request('/items', { method: 'POST', headers: keyed('sp'), body: '{"name":"a"}' })).status, 201);
    for (const body of ['{ "name":"a" }', '{"name":"a"}\n']) {
      assert.equal((await s.request('/items', { method: 'POST', headers: keyed('sp'), body })).status, 422, JSON.stringify(body));
    }
    assert.equal(s.store.size, 1);
  });

  test('the key from another principal -> a request of its own', async () => {
    const s = await startItems([], { tokens: ['alice', 'bob'] });
    const post = (token: string): Promise<TestResponse> => s.request('/items', { method: 'POST', headers: keyed('same', { authorization: `Bearer ${token}` }), body: '{"name":"a"}' });
    const a = await answer(await post('alice'));
    const b = await answer(await post('bob'));
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.notEqual(a.location, b.location);
    assert.equal(b.replayed, null);
    assert.equal(s.store.size, 2);
  });

  test('the same key while the first is still processed -> 409 problem; once answered -> replayed', async () => {
    const { store, entered, open } = gatedStore();
    const s = await startServer({ resources: [{ name: 'items', store }] });
    const first = s.request('/items', { method: 'POST', headers: keyed('slow'), body: '{"n":1}' });
    await eventually(() => entered() === 1, 'the first request reached the store');
    const second = await s.request('/items', { method: 'POST', headers: keyed('slow'), body: '{"n":1}' });
    assert.equal(second.status, 409);
    assert.match((await second.json()).detail, /still being processed/);
    open();
    const done = await answer(await first);
    assert.equal(done.status, 201);
    const third = await answer(await s.request('/items', { method: 'POST', headers: keyed('slow'), body: '{"n":1}' }));
    assert.equal(third.replayed, 'true');
    assert.equal(third.location, done.location);
    assert.equal(store.size, 1);
  });

  test('16 concurrent identical keyed POSTs -> exactly one entity; every answer is it (201) or 409', async () => {
    const s = await startItems();
    const answers = await Promise.all(Array.from({ length: 16 }, async () => answer(await s.request('/items', { method: 'POST', headers: keyed('burst'), body: '{"n":16}' }))));
    assert.equal(s.store.size, 1);
    const [only] = [...s.store.values()];
    for (const a of answers) {
      if (a.status === 409) continue;
      assert.equal(a.status, 201);
      assert.equal(a.location, `/items/${only!.id}`);
    }
    assert.equal(answers.filter((a) => a.status === 201 && a.replayed === null).length, 1);
  });

  test('PATCH with a key, the entity changed since, the same PATCH -> the first answer, not applied again', async () => {
    const s = await startItems([{ id: 'a', createdAt: 1, updatedAt: 1, n: 0 }]);
    const first = await answer(await s.request('/items/a', { method: 'PATCH', headers: keyed('p'), body: '{"n":1}' }));
    assert.equal(first.status, 200);
    assert.equal((await s.request('/items/a', { method: 'PATCH', headers: JSON_BODY, body: '{"n":2}' })).status, 200);
    const again = await answer(await s.request('/items/a', { method: 'PATCH', headers: keyed('p'), body: '{"n":1}' }));
    assert.deepEqual({ ...again, replayed: null }, first);
    assert.equal(again.replayed, 'true');
    assert.equal(s.store.get('a')!.record['n'], 2);
  });

  test('keyed PATCH of a missing id -> 404, remembered: the entity created since does not change the replay', async () => {
    const s = await startItems();
    const first = await answer(await s.request('/items/x', { method: 'PATCH', headers: keyed('m'), body: '{"n":1}' }));
    assert.equal(first.status, 404);
    await s.store.create({ id: 'x', createdAt: 1, updatedAt: 1 });
    const again = await answer(await s.request('/items/x', { method: 'PATCH', headers: keyed('m'), body: '{"n":1}' }));
    assert.equal(again.status, 404);
    assert.equal(again.replayed, 'true');
    assert.equal(again.body, first.body);
  });

  test('keyed PATCH with a failing If-Match -> 412, remembered', async () => {
    const s = await startItems([{ id: 'a', createdAt: 1, updatedAt: 1 }]);
    const first = await s.request('/items/a', { method: 'PATCH', headers: keyed('c', { 'if-match': '"nope"' }), body: '{"n":1}' });
    assert.equal(first.status, 412);
    const again = await s.request('/items/a', { method: 'PATCH', headers: keyed('c', { 'if-match': '"nope"' }), body: '{"n":1}' });
    assert.equal(again.status, 412);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
  });

  test('keyed POST failing validation -> 400 remembered: the key with a valid body is then a 422', async () => {
    const validate = (fields: Record<string, unknown>): Record<string, Record<string, string>> | undefined =>
      typeof fields['name'] === 'string' ? undefined : { name: { type: 'must be a string' } };
    const s = await startItems([], { validate });
    const first = await s.request('/items', { method: 'POST', headers: keyed('v'), body: '{"name":1}' });
    assert.equal(first.status, 400);
    assert.equal((await first.json()).detail, 'Validation failed');
    const again = await s.request('/items', { method: 'POST', headers: keyed('v'), body: '{"name":1}' });
    assert.equal(again.status, 400);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.equal((await s.request('/items', { method: 'POST', headers: keyed('v'), body: '{"name":"ok"}' })).status, 422);
    assert.equal(s.store.size, 0);
  });

  test('an answer older than its time to live (injected clock) -> the key is processed afresh', async () => {
    let now = 1_000_000;
    const store = createMemoryStore([], { idempotency: { now: () => now, ttlMs: 24 * 3600_000 } });
    const s = await startServer({ resources: [{ name: 'items', store }] });
    const post = (): Promise<TestResponse> => s.request('/items', { method: 'POST', headers: keyed('old'), body: '{}' });
    assert.equal((await post()).status, 201);
    now += 24 * 3600_000 - 1;
    assert.equal((await post()).headers.get('idempotency-replayed'), 'true');
    now += 1;
    const late = await post();
    assert.equal(late.status, 201);
    assert.equal(late.headers.get('idempotency-replayed'), null);
    assert.equal(store.size, 2);
  });

  test('a key on PUT or DELETE -> ignored', async () => {
    const s = await startItems([{ id: 'a', createdAt: 1, updatedAt: 1 }]);
    assert.equal((await s.request('/items/a', { method: 'PUT', headers: keyed('i'), body: '{"n":1}' })).status, 200);
    assert.equal((await s.request('/items/a', { method: 'PUT', headers: keyed('i'), body: '{"n":2}' })).status, 200);
    assert.equal(s.store.get('a')!.record['n'], 2);
    assert.equal((await s.request('/items/a', { method: 'DELETE', headers: { 'idempotency-key': 'i' } })).status, 204);
  });

  for (const [header, detail] of [
    ['', /must not be empty/],
    ['""', /must not be empty/],
    ['"unterminated', /Structured Field string/],
    ['"a"b', /Structured Field string/],
    ['"a\\nb"', /Structured Field string/],
    ['"has space"', /visible ASCII/],
    ['a, b', /visible ASCII/],
    ['x'.repeat(256), /at most 255/],
    ['"' + 'x'.repeat(256) + '"', /at most 255/],
  ] as const) {
    test(`Idempotency-Key: ${JSON.stringify(header.length > 40 ? header.slice(0, 20) + '…' : header)} -> 400 problem saying why, nothing written`, async () => {
      const s = await startItems();
      for (const [method, path] of [['POST', '/items'], ['PATCH', '/items/a']] as const) {
        const res = await s.request(path, { method, headers: keyed(header), body: '{"n":1}' });
        assert.equal(res.status, 400);
        assert.equal(res.headers.get('content-type'), 'application/problem+json');
        const problem = await res.json();
        assert.equal(problem.title, 'Bad Request');
        assert.match(problem.detail, detail);
      }
      assert.equal(s.store.size, 0);
    });
  }

  test('non-ASCII Idempotency-Key (raw bytes) -> 400 problem, nothing written', async () => {
    const s = await startItems();
    const { request } = await import('node:http');
    const url = new URL(s.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path: '/items', method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': Buffer.from('clé', 'utf8').toString('latin1') } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('{}');
    });
    assert.equal(status, 400);
    assert.equal(s.store.size, 0);
  });

  test('Idempotency-Key sent twice, one line of it empty -> 400 problem (the header sent twice), not the key "k,", nothing written', async () => {
    const s = await startItems();
    const { connect } = await import('node:net');
    const url = new URL(s.url);
    for (const lines of [['k', ''], ['"k"', ''], ['', 'k'], ['k', 'k']]) {
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname, () => {
          const keys = lines.map((line) => `Idempotency-Key: ${line}\r\n`).join('');
          socket.end(`POST /items HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n${keys}Content-Length: 7\r\n\r\n{"n":1}`);
        });
        let text = '';
        socket.setEncoding('latin1');
        socket.on('data', (chunk: string) => (text += chunk));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      assert.match(raw, /^HTTP\/1\.1 400 /, JSON.stringify(lines));
      assert.match(raw, /Idempotency-Key/, JSON.stringify(lines));
    }
    assert.equal(s.store.size, 0);
  });

  test('a store that keeps no answers -> 501 problem for a keyed POST, nothing written; unkeyed POST still 201', async () => {
    const inner = createMemoryStore();
    const store: LocalStore = Object.assign(Object.create(inner) as LocalStore, { idempotency: undefined });
    Object.defineProperty(store, 'size', { get: () => inner.size });
    const s = await startServer({ resources: [{ name: 'items', store }] });
    const res = await s.request('/items', { method: 'POST', headers: keyed('k'), body: '{}' });
    assert.equal(res.status, 501);
    assert.match((await res.json()).detail, /does not keep Idempotency-Key answers/);
    assert.equal(inner.size, 0);
  });

  test('GET /openapi.json -> POST and PATCH take Idempotency-Key and may answer Idempotency-Replayed, 409, 422', async () => {
    const s = await startItems();
    const spec = await (await s.request('/openapi.json')).json();
    assert.equal(spec.components.parameters.IdempotencyKey.name, 'Idempotency-Key');
    for (const [op, status] of [[spec.paths['/items'].post, '201'], [spec.paths['/items/{id}'].patch, '200']]) {
      assert.ok(op.parameters.some((p: { $ref?: string }) => p.$ref === '#/components/parameters/IdempotencyKey'));
      assert.ok(op.responses[status].headers['Idempotency-Replayed']);
      for (const problem of ['409', '422']) assert.ok(op.responses[problem], problem);
    }
  });
});
