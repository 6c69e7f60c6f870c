import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import type { ChangeFeed } from '../../src/store/changes/change-feed.js';
import type { Store } from '../../src/store/store.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { tempDir } from '../store/helpers.js';
import { freshDatabase, openStores, pgMissing } from './helpers.js';

/*
 * The same HTTP conversation with a server over the JSON-lines store and one over the PostgreSQL
 * store: every answer must be the same (status, type, Location, body byte for byte); only the
 * entity tags differ, each server's own being used for its conditional requests.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };

/** A server whose clock and ids are the same sequence on every run. */
async function serve(store: Store, changes?: ChangeFeed): Promise<TestServer> {
  let ids = 0;
  let clock = 1_800_000_000;
  return startServer({ resources: [{ name: 'items', store }], now: () => clock++, newId: () => `id${String(++ids).padStart(14, '0')}`, ...(changes ? { changes } : {}) });
}

/** Cursors are each store's own: a page's `changes` link is compared without its cursor. */
const withoutCursor = (body: string): string => body.replace(/"\/changes\?since=[^&"]*/g, '"/changes?since=C');

interface Exchange {
  readonly status: number;
  readonly type: string | null;
  readonly location: string | null;
  readonly body: string;
  readonly tagged: boolean;
}

/** Runs the conversation; `etag` of an earlier answer is used for `If-Match`. */
async function converse(s: TestServer): Promise<Exchange[]> {
  const out: Exchange[] = [];
  let lastTag = '';
  const send = async (url: string, init: RequestInit = {}): Promise<void> => {
    const res = await s.request(url, init);
    const tag = res.headers.get('etag');
    if (tag) lastTag = tag;
    out.push({ status: res.status, type: res.headers.get('content-type'), location: res.headers.get('location'), body: withoutCursor(await res.text()), tagged: tag !== null });
  };
  for (let i = 0; i < 5; i++) await send('/items', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ name: `n${i}`, text: 'tab\there "quoted" \\ back\nline é 😀', i }) });
  await send('/items');
  await send('/items?limit=2&page=2');
  await send('/items?sort=-i&i[gte]=1');
  await send('/items/id00000000000002');
  await send('/items/id00000000000002', { method: 'PATCH', headers: { ...JSON_HEADERS, 'if-match': lastTag }, body: '{"name":"patched","extra":{"a":[1,2]}}' });
  await send('/items/id00000000000002', { method: 'PATCH', headers: { ...JSON_HEADERS, 'if-match': '"stale"' }, body: '{"name":"refused"}' });
  await send('/items/id00000000000003', { method: 'PUT', headers: JSON_HEADERS, body: '{"replaced":true}' });
  await send('/items/id00000000000001', { method: 'DELETE' });
  await send('/items/id00000000000001');
  await send('/items/id00000000000001', { method: 'DELETE' });
  await send('/items/nope', { method: 'PATCH', headers: JSON_HEADERS, body: '{}' });
  await send('/items');
  await send('/items?q=patched');
  return out;
}

describe('HTTP over the PostgreSQL store', { skip: pgMissing }, () => {
  test('one conversation (POST, GET pages and queries, PATCH with If-Match, PUT, DELETE, 404, 412) -> the same answers as over the JSON-lines store', async () => {
    const dir = await tempDir();
    const file = await openJsonlStore({ file: path.join(dir, 'items.jsonl'), durability: 'none' });
    const opened = await openStores(await freshDatabase());
    const expected = await converse(await serve(file));
    const actual = await converse(await serve(opened.stores.get('items')!, opened.changes));
    await file.close();
    assert.equal(actual.length, expected.length);
    actual.forEach((exchange, i) => assert.deepEqual(exchange, expected[i], `exchange ${i}`));
    // The conversation did what it says: a 412 for the stale tag, a 404 after the delete.
    assert.deepEqual(
      actual.map((e) => e.status),
      [201, 201, 201, 201, 201, 200, 200, 200, 200, 200, 412, 200, 204, 404, 404, 404, 200, 200],
    );
  });

  test('a second server on the same database -> serves the first one\'s writes with the same bodies and entity tags', async () => {
    const url = await freshDatabase();
    const a = await openStores(url);
    const b = await openStores(url);
    const sa = await serve(a.stores.get('items')!);
    const sb = await serve(b.stores.get('items')!);
    const created = await sa.request('/items', { method: 'POST', headers: JSON_HEADERS, body: '{"name":"lamp"}' });
    assert.equal(created.status, 201);
    await b.sync();
    const [fromA, fromB] = await Promise.all([sa.request('/items/id00000000000001'), sb.request('/items/id00000000000001')]);
    assert.equal(fromB.status, 200);
    assert.equal(await fromB.text(), await fromA.text());
    assert.equal(fromB.headers.get('etag'), fromA.headers.get('etag'));
    // A PATCH on B with the tag A served: B decides it against the database, where it is current.
    const patched = await sb.request('/items/id00000000000001', { method: 'PATCH', headers: { ...JSON_HEADERS, 'if-match': fromA.headers.get('etag')! }, body: '{"name":"desk lamp"}' });
    assert.equal(patched.status, 200);
    // A has not seen it yet, or has: either way its tag is now stale for a write on A.
    const refused = await sa.request('/items/id00000000000001', { method: 'PATCH', headers: { ...JSON_HEADERS, 'if-match': fromA.headers.get('etag')! }, body: '{"name":"lost update"}' });
    assert.equal(refused.status, 412);
    await a.sync();
    assert.equal(JSON.parse(await (await sa.request('/items/id00000000000001')).text()).name, 'desk lamp');
  });
});
