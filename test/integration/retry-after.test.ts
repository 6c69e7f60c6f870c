import assert from 'node:assert/strict';
import { copyFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { nodeFs, type StoreFs } from '../../src/store/log/store-fs.js';
import { tempDir } from '../helpers/process.js';
import { RFC2616, startServer, type TestServer } from '../helpers/server.js';

/**
 * RFC 9110 §10.2.3: a 503 says when to try again (docs/conventions.md §7). Here the 503s of a
 * JSON-lines store that cannot write its log, through a real server: a full disk and an I/O error
 * put in by the store's `fs` seam, and a log replaced under the server for real. The other 503s
 * and the 429s are asserted where they are made: query-budget, streams, operation (--rate-limit),
 * pg/outage.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };
const SAVED = 'The change could not be saved; it was not applied. Try again later';

/** The real file system, with `write` replaced while `fault.write` is set. */
function faultyFs(): { fs: StoreFs; fault: { write?: () => Error } } {
  const fault: { write?: () => Error } = {};
  const fs: StoreFs = {
    ...nodeFs,
    write: (fd, buffer, offset, length, position) => (fault.write ? Promise.reject(fault.write()) : nodeFs.write(fd, buffer, offset, length, position)),
  };
  return { fs, fault };
}

const errno = (code: string, text: string): Error => Object.assign(new Error(`${code}: ${text}, write`), { code });

/** A server over `items`, a JSON-lines store in a fresh directory, one entity `a` in it. */
async function itemsOnFile(fs?: StoreFs): Promise<TestServer & { file: string; id: string }> {
  const file = join(await tempDir('halserve-retry-'), 'items.jsonl');
  const store = await openJsonlStore({ file, ...(fs === undefined ? {} : { fs }) });
  const server = await startServer({ resources: [{ name: 'items', store }], warn: () => {} });
  after(() => store.close());
  const created = await server.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"n":1}' });
  assert.equal(created.status, 201);
  const { id } = (await created.json()) as { id: string };
  return { ...server, file, id };
}

/** Asserts the write's 503 problem and its `Retry-After`. */
async function assertRefused(res: Response, retryAfter: string, what: string): Promise<void> {
  assert.equal(res.status, 503, what);
  assert.equal(res.headers.get('content-type'), 'application/problem+json', what);
  assert.equal(res.headers.get('retry-after'), retryAfter, what);
  assert.deepEqual(await res.json(), { type: RFC2616, title: 'Service Unavailable', detail: SAVED, status: 503 }, what);
}

describe('a write the log cannot take -> 503 with Retry-After (RFC 9110 §10.2.3)', () => {
  test('disk full (ENOSPC) -> POST, PATCH, PUT, DELETE each 503 with Retry-After: 30; room again -> the retry is 201', async () => {
    const { fs, fault } = faultyFs();
    const s = await itemsOnFile(fs);
    fault.write = () => errno('ENOSPC', 'no space left on device');
    await assertRefused(await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"n":2}' }), '30', 'POST');
    await assertRefused(await s.request(`/items/${s.id}`, { method: 'PATCH', headers: JSON_HEADERS, body: '{"n":3}' }), '30', 'PATCH');
    await assertRefused(await s.request(`/items/${s.id}`, { method: 'PUT', headers: JSON_HEADERS, body: '{"n":4}' }), '30', 'PUT');
    await assertRefused(await s.request(`/items/${s.id}`, { method: 'DELETE' }), '30', 'DELETE');
    delete fault.write;
    assert.equal((await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"n":2}' })).status, 201);
  });

  test('an I/O error (EIO) -> 503 with Retry-After: 5', async () => {
    const { fs, fault } = faultyFs();
    const s = await itemsOnFile(fs);
    fault.write = () => errno('EIO', 'i/o error');
    await assertRefused(await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{}' }), '5', 'POST');
  });

  test('the log replaced under the server (ESTALE) -> 503 with Retry-After: 30, /readyz 503 with Retry-After: 5', async () => {
    const s = await itemsOnFile();
    // A copy renamed over the log: the name now leads to another file, so writes stop until a restart.
    await copyFile(s.file, `${s.file}.copy`);
    await rename(`${s.file}.copy`, s.file);
    await assertRefused(await s.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{}' }), '30', 'POST');
    const ready = await s.request('/readyz');
    assert.equal(ready.status, 503);
    assert.equal(ready.headers.get('retry-after'), '5');
    assert.deepEqual(await ready.json(), { status: 'unavailable' });
  });
});
