import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import type { Principal } from '../../src/http/auth.js';
import { KeptReplies, requestShape, type Admission } from '../../src/http/kept-replies.js';
import { prepared, type Reply } from '../../src/http/reply.js';
import { scopeAllows, type ScopeRequest } from '../../src/http/route-scopes.js';

/** A static token's principal: it answers for its credential for the life of the process. */
const alice: Principal = { key: 'token:alice', access: 'read' };
/** The credentials the authenticators remember (`Authentication.known`), as the server's admission reads them. */
const remembered = new Map<string, Principal>([['Bearer a', alice]]);
/** app.ts's admission over `remembered`: a remembered principal the route's scope rule lets read. */
const admits: Admission = (authorization, scope) => {
  const principal = authorization === undefined ? undefined : remembered.get(authorization);
  return principal !== undefined && scopeAllows(principal, scope, () => undefined);
};
/** What the entity route asked of the first request's principal. */
const scope: ScopeRequest = { method: 'GET', pattern: '/:name/:id', params: { name: 'items', id: 'a' }, query: '' };
/** Counts nothing: the metrics are the boundary's (test/integration/kept-replies.test.ts). */
const record = (): void => {};
const metrics = { recorder: () => record };

/** A GET as Node's parser leaves it: `rawHeaders` in the client's case and order. */
function get(url: string, raw: readonly string[] = ['Host', 'h', 'Authorization', 'Bearer a', 'Accept', 'application/json'], method = 'GET', httpVersionMajor = 1): IncomingMessage {
  return {
    method,
    url,
    httpVersionMajor,
    rawHeaders: raw,
    get headers(): never {
      throw new Error('the lane read req.headers');
    },
  } as unknown as IncomingMessage;
}

/** An entity's 200 as `entityRead` makes it: prepared, and current while `state.current`. */
function entityReply(body: string, state = { current: true }): Reply {
  return { ...prepared({ status: 200, headers: { 'content-type': 'application/json', vary: 'Accept', etag: '"v1-json"' }, body: Buffer.from(body) }), current: () => state.current };
}

describe('requestShape', () => {
  test('Host, Authorization and Accept in any case -> ok, with the credential and the media range', () => {
    assert.deepEqual(requestShape(['HOST', 'h', 'authorization', 'Bearer x', 'ACCEPT', 'application/json', 'User-Agent', 'curl', 'Connection', 'keep-alive']), {
      ok: true,
      authorization: 'Bearer x',
      accept: 'application/json',
      acceptEncoding: false,
    });
  });

  test('a header outside the known few (a condition, an Origin, a body, anything else) -> not ok', () => {
    for (const name of ['If-None-Match', 'If-Match', 'Origin', 'Content-Length', 'Transfer-Encoding', 'Cookie', 'X-Anything', 'Last-Event-ID']) {
      assert.equal(requestShape(['Host', 'h', name, 'v']).ok, false, name);
    }
  });

  test('no Host, two Hosts, two Authorizations, two Accepts, two Accept-Encodings -> not ok', () => {
    assert.equal(requestShape([]).ok, false);
    assert.equal(requestShape(['Host', 'h', 'host', 'h']).ok, false);
    assert.equal(requestShape(['Host', 'h', 'Authorization', 'Bearer a', 'Authorization', 'Bearer b']).ok, false);
    assert.equal(requestShape(['Host', 'h', 'Accept', 'a/b', 'accept', 'c/d']).ok, false);
    assert.equal(requestShape(['Host', 'h', 'Accept-Encoding', 'gzip', 'Accept-Encoding', 'br']).ok, false);
  });
});

describe('KeptReplies', () => {
  test('a reply kept for a GET -> answered for the same target and Accept to a credential admitted, without reading req.headers', () => {
    const kept = new KeptReplies(admits, metrics);
    const reply = entityReply('{"id":"a"}');
    kept.keep(get('/items/a'), scope, '/items/{id}', reply);
    const again = kept.answer(get('/items/a'));
    assert.equal(again?.record, record);
    assert.deepEqual(again?.reply.head, reply.head);
    assert.equal(again?.reply.body, reply.body);
    // A request line of another major version is left to the full path (its 505).
    assert.equal(kept.answer(get('/items/a', undefined, 'GET', 2)), undefined);
  });

  test('another target or Accept, a credential not remembered, none, or a HEAD -> not answered', () => {
    const kept = new KeptReplies(admits, metrics);
    kept.keep(get('/items/a'), scope, '/items/{id}', entityReply('{"id":"a"}'));
    assert.equal(kept.answer(get('/items/b')), undefined);
    assert.equal(kept.answer(get('/items/a?embed=x')), undefined);
    assert.equal(kept.answer(get('/items/a', ['Host', 'h', 'Authorization', 'Bearer a', 'Accept', 'application/hal+json'])), undefined);
    assert.equal(kept.answer(get('/items/a', ['Host', 'h', 'Authorization', 'Bearer a'])), undefined);
    assert.equal(kept.answer(get('/items/a', ['Host', 'h', 'Authorization', 'Bearer b', 'Accept', 'application/json'])), undefined);
    assert.equal(kept.answer(get('/items/a', ['Host', 'h', 'Accept', 'application/json'])), undefined);
    assert.equal(kept.answer(get('/items/a', undefined, 'HEAD')), undefined);
  });

  test('a credential the authenticators no longer remember (a JWT past its exp) -> not answered from then on', () => {
    const known = new Map<string, Principal>([['Bearer j', { key: 'jwt:x', access: 'read', until: 1_800_000_060 }]]);
    const kept = new KeptReplies((authorization) => authorization !== undefined && known.has(authorization), metrics);
    const raw = ['Host', 'h', 'Authorization', 'Bearer j'];
    kept.keep(get('/items/a', raw), scope, '/items/{id}', entityReply('{"id":"a"}'));
    assert.notEqual(kept.answer(get('/items/a', raw)), undefined);
    known.clear();
    assert.equal(kept.answer(get('/items/a', raw)), undefined);
  });

  test('a reply no longer current (the entity changed) -> not answered; the next one kept replaces it', () => {
    const kept = new KeptReplies(admits, metrics);
    const state = { current: true };
    kept.keep(get('/items/a'), scope, '/items/{id}', entityReply('{"v":1}', state));
    state.current = false;
    assert.equal(kept.answer(get('/items/a')), undefined);
    state.current = true;
    assert.equal(kept.answer(get('/items/a')), undefined, 'the stale variant was let go, not kept for later');
    const newer = entityReply('{"v":2}');
    kept.keep(get('/items/a'), scope, '/items/{id}', newer);
    assert.equal(kept.answer(get('/items/a'))?.reply.body, newer.body);
  });

  test('a request with a header outside the known few -> not answered, and not kept', () => {
    const kept = new KeptReplies(admits, metrics);
    const conditional = ['Host', 'h', 'Authorization', 'Bearer a', 'Accept', 'application/json', 'If-None-Match', '"x"'];
    kept.keep(get('/items/a', conditional), scope, '/items/{id}', entityReply('{"id":"a"}'));
    assert.equal(kept.size, 0);
    kept.keep(get('/items/a'), scope, '/items/{id}', entityReply('{"id":"a"}'));
    assert.equal(kept.answer(get('/items/a', conditional)), undefined);
    assert.equal(kept.answer(get('/items/a', ['Host', 'h', 'Authorization', 'Bearer a', 'Accept', 'application/json', 'Origin', 'https://x.example'])), undefined);
  });

  test('Accept-Encoding with a body the full path would compress -> not kept, not answered; with a small body -> both', () => {
    const kept = new KeptReplies(admits, metrics);
    const gzip = ['Host', 'h', 'Authorization', 'Bearer a', 'Accept', 'application/json', 'Accept-Encoding', 'gzip'];
    kept.keep(get('/items/big', gzip), scope, '/items/{id}', entityReply(`{"x":"${'x'.repeat(2000)}"}`));
    assert.equal(kept.size, 0);
    kept.keep(get('/items/big'), scope, '/items/{id}', entityReply(`{"x":"${'x'.repeat(2000)}"}`));
    assert.notEqual(kept.answer(get('/items/big')), undefined);
    assert.equal(kept.answer(get('/items/big', gzip)), undefined);
    kept.keep(get('/items/small', gzip), scope, '/items/{id}', entityReply('{"id":"small"}'));
    assert.notEqual(kept.answer(get('/items/small', gzip)), undefined);
  });

  test('only replies that say when they are stale, of status 200, with a prepared head, are kept', () => {
    const kept = new KeptReplies(admits, metrics);
    const body = Buffer.from('{}');
    kept.keep(get('/items/a'), scope, '/items/{id}', prepared({ status: 200, headers: {}, body }));
    kept.keep(get('/items/b'), scope, '/items/{id}', { status: 200, headers: {}, body, current: () => true });
    kept.keep(get('/items/c'), scope, '/items/{id}', { ...prepared({ status: 201, headers: {}, body }), current: () => true });
    kept.keep(get('/items/d', undefined, 'HEAD'), scope, '/items/{id}', entityReply('{}'));
    assert.equal(kept.size, 0);
  });

  test('no principal asked (no authentication) -> answered whatever the Authorization, which the full path does not read', () => {
    const kept = new KeptReplies(() => false, metrics);
    kept.keep(get('/items/a', ['Host', 'h']), undefined, '/items/{id}', entityReply('{}'));
    assert.notEqual(kept.answer(get('/items/a', ['Host', 'h'])), undefined);
    assert.notEqual(kept.answer(get('/items/a', ['Host', 'h', 'Authorization', 'Bearer a'])), undefined);
  });

  test('100 credentials remembered, each with read -> every one answered from the one reply kept for the first', () => {
    const many = new Map<string, Principal>(Array.from({ length: 100 }, (_, i) => [`Bearer t${i}`, { key: `token:t${i}`, access: 'read' }] as const));
    const asked: string[] = [];
    const kept = new KeptReplies((authorization, judged) => {
      asked.push(authorization ?? '');
      const principal = authorization === undefined ? undefined : many.get(authorization);
      return principal !== undefined && scopeAllows(principal, judged, () => undefined);
    }, metrics);
    const raw = (i: number): string[] => ['Host', 'h', 'Authorization', `Bearer t${i}`, 'Accept', 'application/json'];
    const reply = entityReply('{}');
    kept.keep(get('/items/a', raw(0)), scope, '/items/{id}', reply);
    const answered = Array.from({ length: 100 }, (_, i) => kept.answer(get('/items/a', raw(i)))?.reply);
    assert.deepEqual(answered.filter((r) => r === reply).length, 100);
    assert.equal(asked.length, 100, 'each credential judged as it came');
    assert.equal(kept.size, 1);
  });

  test('a principal whose grants lack the resource -> not answered (the full path refuses it); one granted it -> answered', () => {
    const grants = (name: string): Principal => ({ key: `jwt:${name}`, access: undefined, grants: new Map([[name, 'read' as const]]) });
    const known = new Map<string, Principal>([['Bearer items', grants('items')], ['Bearer other', grants('other')], ['Bearer none', { key: 'jwt:none', access: undefined }]]);
    const kept = new KeptReplies((authorization, judged) => {
      const principal = authorization === undefined ? undefined : known.get(authorization);
      return principal !== undefined && scopeAllows(principal, judged, () => undefined);
    }, metrics);
    const raw = (who: string): string[] => ['Host', 'h', 'Authorization', `Bearer ${who}`];
    kept.keep(get('/items/a', raw('items')), scope, '/items/{id}', entityReply('{}'));
    assert.notEqual(kept.answer(get('/items/a', raw('items'))), undefined);
    assert.equal(kept.answer(get('/items/a', raw('other'))), undefined);
    assert.equal(kept.answer(get('/items/a', raw('none'))), undefined);
  });

  test('five Accept values on one target -> the four latest answered, the first replaced', () => {
    const kept = new KeptReplies(admits, metrics);
    const raw = (i: number): string[] => ['Host', 'h', 'Authorization', 'Bearer a', 'Accept', `application/json;v=${i}`];
    for (let i = 1; i <= 5; i++) kept.keep(get('/items/a', raw(i)), scope, '/items/{id}', entityReply('{}'));
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((i) => kept.answer(get('/items/a', raw(i))) !== undefined),
      [false, true, true, true, true],
    );
    assert.equal(kept.size, 1);
  });

  test('the bounds: 20,000 targets kept -> at most 16,384 held, the latest answered, the earliest gone', () => {
    const kept = new KeptReplies(admits, metrics);
    for (let i = 0; i < 20_000; i++) kept.keep(get(`/items/${i}`), scope, '/items/{id}', entityReply('{}'));
    assert.equal(kept.size, 16_384);
    assert.notEqual(kept.answer(get('/items/19999')), undefined);
    assert.equal(kept.answer(get('/items/0')), undefined);
  });

  test('the bound in bytes: 40 bodies of 1 MiB -> at most 16 MiB of them held', () => {
    const kept = new KeptReplies(admits, metrics);
    const big = (i: number): Reply => ({ ...prepared({ status: 200, headers: {}, body: Buffer.alloc(1024 * 1024, i) }), current: () => true });
    for (let i = 0; i < 40; i++) kept.keep(get(`/items/${i}`), scope, '/items/{id}', big(i));
    // Each weighs its body and its target (1 MiB + 9 bytes): 15 fit in 16 MiB, 16 do not.
    const held = Array.from({ length: 40 }, (_, i) => i).filter((i) => kept.answer(get(`/items/${i}`)) !== undefined);
    assert.deepEqual(held, Array.from({ length: 15 }, (_, i) => 25 + i));
  });

  test('the bound in bytes counts the Accept each reply is kept under: 4,000 replies of 2 bytes under 8 KiB Accepts -> at most 16 MiB of them held', () => {
    const kept = new KeptReplies(admits, metrics);
    const accept = (i: number): string => `application/json;x=${i};${'p'.repeat(8 * 1024)}`;
    for (let i = 0; i < 4000; i++) kept.keep(get(`/items/${i}`, ['Host', 'h', 'Authorization', 'Bearer a', 'Accept', accept(i)]), scope, '/items/{id}', entityReply('{}'));
    const held = Array.from({ length: 4000 }, (_, i) => i).filter((i) => kept.answer(get(`/items/${i}`, ['Host', 'h', 'Authorization', 'Bearer a', 'Accept', accept(i)])) !== undefined);
    // About 8 KiB each: some 2,000 fit in 16 MiB, the latest.
    assert.ok(held.length > 1500 && held.length < 2100, `${held.length} held`);
    assert.equal(held.at(-1), 3999);
    assert.ok(!held.includes(0));
  });
});
