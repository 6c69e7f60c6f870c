import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { Validator } from '@seriousme/openapi-schema-validator';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { HttpProblem } from '../../src/conventions/problem.js';
import type { HandlerOptions } from '../../src/http/app.js';
import type { Authenticator } from '../../src/http/auth.js';
import { remoteKeySet, staticKeySet } from '../../src/http/jwks.js';
import { LocalChangeLog } from '../../src/store/changes/local-feed.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord, LocalStore } from '../../src/store/store.js';
import { RFC2616, startServer, type TestResponse, type TestServer } from '../helpers/server.js';

/*
 * Bearer JWTs through HTTP (README, "Tokens from an identity provider"): tokens minted with jose,
 * the reference JOSE implementation; every attack of RFC 8725 is a 401 problem that writes nothing.
 */

const NOW = 1_800_000_000;
const ISSUER = 'https://idp.example/realms/shop';
const AUDIENCE = 'halserve';
const INVALID = 'Bearer realm="halserve", error="invalid_token"';
const INSUFFICIENT = 'Bearer realm="halserve", error="insufficient_scope"';

interface Pair {
  readonly privateKey: CryptoKey | KeyObject;
  readonly publicKey: CryptoKey | KeyObject;
  readonly jwk: JWK;
}

async function pair(alg: string, kid: string, options: { crv?: string } = {}): Promise<Pair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...options });
  return { privateKey, publicKey, jwk: { ...(await exportJWK(publicKey)), kid } };
}

/** Node's KeyObjects: one RSA key signs RS256, PS256 and RS384 (a WebCrypto key is bound to one algorithm). */
function rsaPair(kid: string): Pair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey, publicKey, jwk: { ...(publicKey.export({ format: 'jwk' }) as JWK), kid } };
}

const rsa = rsaPair('rsa1');
const foreign = rsaPair('rsa1');
const [ec, ed] = await Promise.all([pair('ES256', 'ec1'), pair('EdDSA', 'ed1', { crv: 'Ed25519' })]);

/** The claims of a good token, `extra` over them; a member set to undefined is left out. */
const claims = (extra: Record<string, unknown> = {}): JWTPayload =>
  Object.fromEntries(Object.entries({ iss: ISSUER, aud: AUDIENCE, sub: 'alice', exp: NOW + 3600, iat: NOW - 10, scope: 'write', ...extra }).filter(([, v]) => v !== undefined));

/** A token signed by `key` with header `alg` and the key's `kid`. */
async function mint(key: Pair, alg: string, payload: JWTPayload = claims()): Promise<string> {
  return new SignJWT(payload).setProtectedHeader({ alg, kid: key.jwk.kid ?? '' }).sign(key.privateKey);
}

const T = 1_700_000_000;
const rec = (id: string, fields: Record<string, unknown>): EntityRecord => ({ id, createdAt: T, updatedAt: T, ...fields });

interface Served extends TestServer {
  readonly orders: LocalStore;
  readonly products: LocalStore;
  as(token: string | undefined, path: string, init?: RequestInit): Promise<TestResponse>;
}

/** Orders link to products (`product`), so a product embeds its orders and an order its product. */
async function serve(options: Partial<HandlerOptions>): Promise<Served> {
  const orders = createMemoryStore([rec('o1', { product: 'p1' })]);
  const products = createMemoryStore([rec('p1', { name: 'Lamp' })]);
  const server = await startServer({
    resources: [
      { name: 'orders', store: orders, schema: { type: 'object', properties: { product: { type: 'string', 'x-link': 'products' } } } },
      { name: 'products', store: products },
    ],
    now: () => NOW,
    ...options,
  });
  const as = (token: string | undefined, path: string, init: RequestInit = {}): Promise<TestResponse> =>
    server.request(path, { ...init, headers: { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...(init.headers as Record<string, string> | undefined) } });
  return { ...server, orders, products, as };
}

const post = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

// Started once for the file: `after` (in startServer) then closes them when every test is done.
const main = await serve({ jwt: { keys: staticKeySet({ keys: [rsa.jwk, ec.jwk, ed.jwk] }), issuer: ISSUER, audience: AUDIENCE }, tokens: ['static-w', 'read:static-r'] });
const scopedServer = await serve({ jwt: { keys: staticKeySet({ keys: [rsa.jwk] }), issuer: ISSUER, audience: AUDIENCE } });

describe('JWTs from a key set', () => {
  const s = main;

  for (const [alg, key] of [['RS256', () => rsa], ['PS256', () => rsa], ['ES256', () => ec], ['EdDSA', () => ed]] as const) {
    test(`${alg} token with scope write -> GET 200 and POST 201`, async () => {
      const token = await mint(key(), alg);
      assert.equal((await s.as(token, '/orders/o1')).status, 200);
      const created = await s.as(token, '/orders', post({ product: 'p1' }));
      assert.equal(created.status, 201);
      assert.equal((await s.as(token, (await created.json())._links.self.href, { method: 'DELETE' })).status, 204);
    });
  }

  test('expired 30 s ago (inside the 60 s leeway) -> 200', async () => {
    assert.equal((await s.as(await mint(rsa, 'RS256', claims({ exp: NOW - 30 })), '/orders/o1')).status, 200);
  });

  test('no kid and exactly one key fits the algorithm -> 200', async () => {
    const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'ES256' }).sign(ec.privateKey);
    assert.equal((await s.as(token, '/orders/o1')).status, 200);
  });

  const attacks: readonly [string, () => Promise<string>, RegExp][] = [
    ['unsigned (alg none)', async () => new UnsecuredJWT(claims()).encode(), /unsigned \(alg "none"\)$/],
    ['HMAC keyed with the public key as PEM', async () => new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', kid: 'rsa1' }).sign(new TextEncoder().encode(await exportSPKI(rsa.publicKey))), /HS256 is a shared-secret HMAC, which is never accepted$/],
    ['HMAC keyed with the public key as a JWK', async () => new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', kid: 'rsa1' }).sign(new TextEncoder().encode(JSON.stringify(rsa.jwk))), /HS256 is a shared-secret HMAC/],
    ['HS512', async () => new SignJWT(claims()).setProtectedHeader({ alg: 'HS512' }).sign(new Uint8Array(64)), /HS512 is a shared-secret HMAC/],
    ['RS384, an algorithm not accepted', async () => new SignJWT(claims()).setProtectedHeader({ alg: 'RS384', kid: 'rsa1' }).sign(rsa.privateKey), /its algorithm "RS384" is not one of RS256, PS256, ES256, EdDSA$/],
    ['ES256 naming the RSA key', async () => new SignJWT(claims()).setProtectedHeader({ alg: 'ES256', kid: 'rsa1' }).sign(ec.privateKey), /its algorithm ES256 does not fit the key "rsa1" \(RS256, PS256\)$/],
    ['a tampered payload', async () => {
      const [h, , sig] = (await mint(rsa, 'RS256', claims({ scope: 'read' }))).split('.');
      return `${h}.${Buffer.from(JSON.stringify(claims({ scope: 'write' }))).toString('base64url')}.${sig}`;
    }, /its signature does not verify/],
    ['a foreign key under a known kid', () => mint(foreign, 'RS256'), /its signature does not verify/],
    ['an unknown kid', () => mint({ ...rsa, jwk: { ...rsa.jwk, kid: 'nope' } }, 'RS256'), /no key of the key set has its kid "nope"$/],
    ['a crit header', () => new SignJWT(claims()).setProtectedHeader({ alg: 'RS256', kid: 'rsa1', crit: ['x-ext'], 'x-ext': 1 }).sign(rsa.privateKey, { crit: { 'x-ext': true } }), /crit parameter; no extension is understood$/],
    ['expired 61 s ago', () => mint(rsa, 'RS256', claims({ exp: NOW - 61 })), /it expired at 2027-01-15T07:58:59.000Z$/],
    ['no exp', () => mint(rsa, 'RS256', claims({ exp: undefined })), /it has no exp claim$/],
    ['exp a string', () => mint(rsa, 'RS256', claims({ exp: '2099' })), /its exp claim is not a number$/],
    ['nbf 61 s ahead', () => mint(rsa, 'RS256', claims({ nbf: NOW + 61 })), /it is not valid before /],
    ['iat 61 s ahead', () => mint(rsa, 'RS256', claims({ iat: NOW + 61 })), /it was issued in the future/],
    ['another issuer', () => mint(rsa, 'RS256', claims({ iss: 'https://evil.example/' })), /its iss claim is not "https:\/\/idp.example\/realms\/shop"$/],
    ['another audience', () => mint(rsa, 'RS256', claims({ aud: ['account', 'other'] })), /its aud claim does not name "halserve"$/],
    ['a sub that is a number', () => mint(rsa, 'RS256', claims({ sub: 7 })), /its sub claim is not a string$/],
    ['a scope that is an array', () => mint(rsa, 'RS256', claims({ scope: ['write'] })), /its scope claim is not a string$/],
    ['over 8 KiB', () => mint(rsa, 'RS256', claims({ pad: 'x'.repeat(8 * 1024) })), /it is longer than 8192 bytes$/],
    ['two parts', async () => 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0', /not three base64url parts separated by dots$/],
    ['five parts (JWE)', async () => 'a.b.c.d.e', /it is encrypted \(JWE\)/],
    ['a header that is not JSON', async () => 'bm90IGpzb24.eyJzdWIiOiJhIn0.c2ln', /its header is not a base64url-encoded JSON object$/],
    ['a payload that is not JSON', async () => `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.bm90.c2ln`, /its payload is not a base64url-encoded JSON object$/],
    ['characters outside base64url', async () => 'a+b.c/d.e=', /characters outside base64url$/],
    ['no signature', async () => `${(await mint(rsa, 'RS256')).split('.').slice(0, 2).join('.')}.`, /it has no signature$/],
  ];
  for (const [name, token, detail] of attacks) {
    test(`${name} -> 401 invalid_token problem, nothing written`, async () => {
      const before = s.orders.size;
      const res = await s.as(await token(), '/orders', post({ product: 'p1' }));
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), INVALID);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      const body = await res.json();
      assert.deepEqual(Object.keys(body), ['type', 'title', 'detail', 'status']);
      assert.equal(body.type, RFC2616);
      assert.equal(body.status, 401);
      assert.match(body.detail, /^The bearer token is not a valid JWT: /);
      assert.match(body.detail, detail);
      assert.equal(s.orders.size, before);
    });
  }

  test('no Authorization -> 401 with Bearer realm="halserve" and no error code (RFC 6750 §3.1)', async () => {
    const res = await s.as(undefined, '/orders');
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="halserve"');
    assert.deepEqual(await res.json(), { type: RFC2616, title: 'Unauthorized', detail: 'A bearer token is required: Authorization: Bearer <token>', status: 401 });
  });

  test('Authorization of another scheme -> counts as missing', async () => {
    const res = await s.request('/orders', { headers: { authorization: 'Basic YTpi' } });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="halserve"');
  });

  for (const [name, authorization] of [
    ['Bearer and two words', 'Bearer abc def'],
    ['Bearer alone', 'Bearer'],
    ['Bearer and a tab', 'Bearer\teyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln'],
  ] as const) {
    test(`${name} -> 401 invalid_token (a bearer credential refused, RFC 6750 §3.1), nothing written`, async () => {
      const before = s.orders.size;
      const res = await s.request('/orders', { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ product: 'p1' }) });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), INVALID);
      assert.deepEqual(await res.json(), { type: RFC2616, title: 'Unauthorized', detail: 'The Authorization header is not "Bearer <token>" (one token, no spaces in it)', status: 401 });
      assert.equal(s.orders.size, before);
    });
  }

  test('an Authorization of only spaces -> 401 with no error code (no credential at all)', async () => {
    const res = await s.request('/orders', { headers: { authorization: '   ' } });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="halserve"');
  });

  test('a string that is neither a JWT nor a static token -> 401 invalid_token', async () => {
    const res = await s.as('just-a-guess', '/orders');
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), INVALID);
    assert.deepEqual(await res.json(), { type: RFC2616, title: 'Unauthorized', detail: 'The bearer token is not valid', status: 401 });
  });

  test('static tokens beside JWTs -> still accepted; a read: one on a write -> 403 insufficient_scope', async () => {
    assert.equal((await s.as('static-w', '/orders/o1')).status, 200);
    const res = await s.as('static-r', '/orders', post({ product: 'p1' }));
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('www-authenticate'), INSUFFICIENT);
    assert.deepEqual(await res.json(), { type: RFC2616, title: 'Forbidden', detail: 'This token may only read', status: 403 });
  });
});

describe('scopes per resource', () => {
  const s = scopedServer;
  const scoped = (scope: Record<string, unknown>): Promise<string> => mint(rsa, 'RS256', claims({ scope: undefined, ...scope }));

  test('orders:write products:read -> writes orders, reads products, may not write products', async () => {
    const token = await scoped({ scope: 'openid orders:write products:read profile' });
    const created = await s.as(token, '/orders', post({ product: 'p1' }));
    assert.equal(created.status, 201);
    assert.equal((await s.as(token, (await created.json())._links.self.href, { method: 'DELETE' })).status, 204);
    assert.equal((await s.as(token, '/products/p1')).status, 200);
    const before = s.products.size;
    const refused = await s.as(token, '/products', post({ name: 'Desk' }));
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get('www-authenticate'), INSUFFICIENT);
    assert.deepEqual(await refused.json(), { type: RFC2616, title: 'Forbidden', detail: 'This token may not write "products": it needs the write or products:write scope', status: 403 });
    assert.equal(s.products.size, before);
  });

  test('scp as an array (Entra ID, Okta) -> applied like scope', async () => {
    const token = await scoped({ scp: ['orders:read'] });
    assert.equal((await s.as(token, '/orders')).status, 200);
    assert.equal((await s.as(token, '/products')).status, 403);
  });

  test('orders:read -> PATCH, PUT and DELETE of an order are 403; nothing changes', async () => {
    const token = await scoped({ scope: 'orders:read' });
    for (const init of [{ method: 'DELETE' }, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' }, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{}' }]) {
      const res = await s.as(token, '/orders/o1', init);
      assert.equal(res.status, 403, init.method);
      assert.equal(res.headers.get('www-authenticate'), INSUFFICIENT);
    }
    assert.equal((await s.as(token, '/orders/o1')).status, 200);
  });

  test('embed reaching a resource it may not read -> 403; embedding one it may -> 200', async () => {
    const ordersOnly = await scoped({ scope: 'orders:read' });
    const refused = await s.as(ordersOnly, '/orders/o1?embed=product');
    assert.equal(refused.status, 403);
    assert.equal((await refused.json()).detail, 'This token may not read "products": it needs the read or products:read scope');
    assert.equal((await s.as(ordersOnly, '/orders?embed=product')).status, 403);
    const both = await scoped({ scope: 'orders:read products:read' });
    assert.equal((await s.as(both, '/orders/o1?embed=product')).status, 200);
    assert.equal((await s.as(both, '/products/p1?embed=orders')).status, 200);
  });

  test('embed with its name percent-encoded (emb%65d, as every route decodes it) -> 403 like embed', async () => {
    const ordersOnly = await scoped({ scope: 'orders:read' });
    for (const path of ['/orders?emb%65d=product', '/orders/o1?emb%65d=product', '/orders?%65mbed=product&limit=1']) {
      const refused = await s.as(ordersOnly, path);
      assert.equal(refused.status, 403, path);
      assert.equal((await refused.json()).detail, 'This token may not read "products": it needs the read or products:read scope');
    }
  });

  test('/ and /me -> list only what the token may read; /me shows sub, scopes and roles', async () => {
    const token = await scoped({ scope: 'orders:read email' });
    const index = await (await s.as(token, '/')).json();
    assert.deepEqual(Object.keys(index._links).filter((rel) => rel !== 'self'), ['orders']);
    const me = await (await s.as(token, '/me')).json();
    assert.deepEqual(me, { sub: 'alice', scopes: ['orders:read'], roles: [], _links: { index: { href: '/' }, orders: { href: '/orders' } } });
    const writer = await (await s.as(await scoped({ scope: 'write' }), '/v1/me')).json();
    assert.deepEqual(writer, { sub: 'alice', scopes: ['write'], roles: ['read', 'write'], _links: { index: { href: '/' }, orders: { href: '/orders' }, products: { href: '/products' } } });
    const reader = await (await s.as(await scoped({ scp: 'read' }), '/me')).json();
    assert.deepEqual(reader.roles, ['read']);
  });

  test('/openapi.json -> describes only what the token may read, as / lists it: no path, schema or relation of another resource, and a valid document', async () => {
    const ordersOnly = await (await s.as(await scoped({ scope: 'orders:read' }), '/openapi.json')).json();
    const paths = Object.keys(ordersOnly.paths as Record<string, unknown>);
    assert.ok(paths.includes('/orders') && paths.includes('/orders/{id}'));
    assert.deepEqual(paths.filter((path) => path.includes('products')), []);
    assert.ok(!JSON.stringify(ordersOnly).includes('Product'), 'no schema or $ref of products');
    const result = await new Validator().validate(structuredClone(ordersOnly));
    assert.deepEqual(result.errors, undefined);
    const again = await s.as(await scoped({ scope: 'orders:write' }), '/openapi.json');
    assert.equal(again.headers.get('etag'), (await s.as(await scoped({ scope: 'orders:read' }), '/openapi.json')).headers.get('etag'), 'one document per set of resources read');
    const whole = await (await s.as(await scoped({ scope: 'read' }), '/openapi.json')).json();
    assert.ok(Object.keys(whole.paths as Record<string, unknown>).includes('/products'));
  });

  test('/openapi.json of a limited token -> the same bytes each time, compressed as asked with the coded tag, 304 on If-None-Match', async () => {
    const token = await scoped({ scope: 'orders:read' });
    const get = (headers: Record<string, string>, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> =>
      new Promise((resolve, reject) => {
        httpRequest(`${s.url}/openapi.json`, { method, headers: { authorization: `Bearer ${token}`, ...headers } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        })
          .on('error', reject)
          .end();
      });
    const plain = await get({});
    assert.equal(plain.status, 200);
    assert.deepEqual((await get({})).body, plain.body);
    const tag = String(plain.headers['etag']);
    for (const [coding, decode] of [
      ['br', brotliDecompressSync],
      ['gzip', gunzipSync],
    ] as const) {
      for (let i = 0; i < 2; i++) {
        const packed = await get({ 'accept-encoding': coding });
        assert.equal(packed.headers['content-encoding'], coding);
        assert.equal(packed.headers['etag'], `${tag.slice(0, -1)}-${coding}"`);
        assert.equal(packed.headers['vary'], 'Accept-Encoding');
        assert.equal(Number(packed.headers['content-length']), packed.body.length);
        assert.deepEqual(decode(packed.body), plain.body);
      }
      const head = await get({ 'accept-encoding': coding }, 'HEAD');
      assert.equal(head.headers['etag'], `${tag.slice(0, -1)}-${coding}"`);
      const revalidated = await get({ 'accept-encoding': coding, 'if-none-match': `${tag.slice(0, -1)}-${coding}"` });
      assert.equal(revalidated.status, 304);
      assert.equal(revalidated.headers['etag'], `${tag.slice(0, -1)}-${coding}"`);
    }
    assert.equal((await get({ 'if-none-match': tag })).status, 304);
    const other = await s.as(await scoped({ scope: 'products:read' }), '/openapi.json');
    assert.notEqual(other.headers.get('etag'), tag);
  });

  test('/metrics -> 403 without read or write over every resource; 200 with read', async () => {
    const res = await s.as(await scoped({ scope: 'orders:write products:write' }), '/metrics');
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('www-authenticate'), INSUFFICIENT);
    assert.equal((await res.json()).detail, 'This token may not read every resource: it needs the read scope');
    assert.equal((await s.as(await scoped({ scope: 'read' }), '/metrics')).status, 200);
  });

  test('a change-feed style resource= parameter naming an unreadable resource -> 403', async () => {
    // `/` is a listing route like a change feed: its rule checks `resource=`.
    assert.equal((await s.as(await scoped({ scope: 'orders:read' }), '/?resource=products')).status, 403);
    assert.equal((await s.as(await scoped({ scope: 'orders:read' }), '/?resource=orders')).status, 200);
  });

  test('a token with no scope halserve knows -> valid but reads nothing: /me 200, /orders 403', async () => {
    const token = await scoped({ scope: 'openid' });
    assert.equal((await s.as(token, '/me')).status, 200);
    assert.equal((await s.as(token, '/orders')).status, 403);
  });
});

describe('principals of JWTs', () => {
  test('two tokens of one subject -> one rate-limit bucket; another subject -> its own', async () => {
    const s = await serve({ jwt: { keys: staticKeySet({ keys: [rsa.jwk] }), issuer: ISSUER, audience: AUDIENCE }, rateLimit: 1, rateLimitBurst: 1 });
    const first = await mint(rsa, 'RS256', claims({ exp: NOW + 100 }));
    const refreshed = await mint(rsa, 'RS256', claims({ exp: NOW + 200 }));
    assert.equal((await s.as(first, '/orders/o1')).status, 200);
    assert.equal((await s.as(refreshed, '/orders/o1')).status, 429);
    assert.equal((await s.as(await mint(rsa, 'RS256', claims({ sub: 'bob' })), '/orders/o1')).status, 200);
  });

  test('a verified token, then the clock past its exp and leeway -> 401 (the cache holds it only until exp)', async () => {
    let now = NOW;
    const s = await serve({ jwt: { keys: staticKeySet({ keys: [rsa.jwk] }), issuer: ISSUER, audience: AUDIENCE }, now: () => now });
    const token = await mint(rsa, 'RS256', claims({ exp: NOW + 10 }));
    assert.equal((await s.as(token, '/orders/o1')).status, 200);
    now = NOW + 70;
    assert.equal((await s.as(token, '/orders/o1')).status, 200);
    now = NOW + 71;
    const res = await s.as(token, '/orders/o1');
    assert.equal(res.status, 401);
    assert.match((await res.json()).detail, /it expired at/);
  });
});

describe('streams opened with a JWT', () => {
  test('a stream of /changes and one of a collection, then the clock past the token\'s exp and leeway -> each ends at its next heartbeat; a static token\'s stream goes on', async () => {
    let now = NOW;
    const ticks: (() => void)[] = [];
    const changes = new LocalChangeLog();
    const s = await startServer({
      resources: [{ name: 'orders', store: createMemoryStore([], { changes, resource: 'orders' }) }],
      jwt: { keys: staticKeySet({ keys: [rsa.jwk] }), issuer: ISSUER, audience: AUDIENCE },
      tokens: ['static-r'],
      now: () => now,
      streams: { every: (_ms, run) => (ticks.push(run), () => {}) },
    });
    const token = await mint(rsa, 'RS256', claims({ exp: NOW + 10, scope: 'read' }));
    const open = async (path: string, credential: string) => {
      const res = await s.request(path, { headers: { authorization: `Bearer ${credential}`, accept: 'text/event-stream' } });
      assert.equal(res.status, 200, path);
      const reader = res.body!.getReader();
      const state = { heartbeats: 0, ended: false };
      const drained = (async () => {
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) state.heartbeats += (new TextDecoder().decode(chunk.value).match(/^:/gm) ?? []).length;
        state.ended = true;
      })();
      return { state, drained, cancel: () => reader.cancel().catch(() => {}) };
    };
    const feed = await open('/changes', token);
    const collection = await open('/orders', token);
    const lasting = await open('/changes', 'static-r');
    const streams = [feed, collection, lasting];
    /** A heartbeat due: each stream takes it (its comment arrives), or ends. */
    const tick = async (): Promise<void> => {
      const before = streams.map((stream) => stream.state.heartbeats);
      for (const run of ticks) run();
      while (streams.some((stream, i) => !stream.state.ended && stream.state.heartbeats === before[i])) await new Promise((resolve) => setTimeout(resolve, 1));
    };
    now = NOW + 70; // exp + 60 s: still answered for
    await tick();
    assert.deepEqual(streams.map((stream) => stream.state.ended), [false, false, false]);
    now = NOW + 71;
    await tick();
    assert.deepEqual(streams.map((stream) => stream.state.ended), [true, true, false]);
    await tick();
    assert.equal(lasting.state.ended, false, 'a static token does not expire');
    await lasting.cancel();
    await lasting.drained.catch(() => {});
    const again = await s.request('/changes', { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
    assert.equal(again.status, 401);
    await again.body?.cancel();
  });
});

// The identity provider's key set, as a test serves it.
let keys: { keys: JWK[] } = { keys: [] };
let status = 200;
let served = 0;
const jwks: Server = createServer((_req, res) => {
  served++;
  res.writeHead(status, { 'content-type': 'application/jwk-set+json' }).end(JSON.stringify(keys));
});
await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
after(() => new Promise<void>((resolve) => jwks.close(() => resolve())));

describe('a key set from a URL', () => {
  const url = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`;

  test('rotation -> a new kid is fetched at most every 30 s; a removed key is refused; a failing URL keeps the last good set', async () => {
    let now = NOW;
    const clock = (): number => now;
    const set = remoteKeySet(url, { now: clock });
    const s = await serve({ jwt: { keys: set, issuer: ISSUER, audience: AUDIENCE }, now: clock });
    const second = rsaPair('rsa2');
    const old = await mint(rsa, 'RS256');
    const fresh = await mint(second, 'RS256');
    keys = { keys: [rsa.jwk] };

    // The first token fetches the set.
    assert.equal((await s.as(old, '/orders/o1')).status, 200);
    assert.equal(served, 1);
    // The provider rotates: the new kid is unknown, but a fetch began less than 30 s ago.
    keys = { keys: [second.jwk] };
    now += 29;
    const early = await s.as(fresh, '/orders/o1');
    assert.equal(early.status, 401);
    assert.match((await early.json()).detail, /no key of the key set has its kid "rsa2"/);
    assert.equal(served, 1);
    // 30 s after the last fetch began, the unknown kid fetches the set again.
    now += 1;
    assert.equal((await s.as(fresh, '/orders/o1')).status, 200);
    assert.equal(served, 2);
    // The old key left the set: a token not seen before that names it is refused, with no fetch.
    const oldUnseen = await mint(rsa, 'RS256', claims({ sub: 'carol' }));
    assert.equal((await s.as(oldUnseen, '/orders/o1')).status, 401);
    assert.equal(served, 2);
    // The URL fails after the set's 10 minutes: the last good set is kept.
    status = 503;
    now += 600;
    assert.equal((await s.as(await mint(second, 'RS256', claims({ sub: 'dave' })), '/orders/o1')).status, 200);
    assert.equal(served, 3);
    assert.equal(set.fetches, 3);
    status = 200;
  });

  test('a URL that cannot be fetched at start-up -> JWTs refused until it can be, then accepted', async () => {
    let now = NOW;
    const clock = (): number => now;
    status = 500;
    const set = remoteKeySet(url, { now: clock });
    const s = await serve({ jwt: { keys: set, issuer: ISSUER, audience: AUDIENCE }, now: clock });
    await set.refresh();
    keys = { keys: [rsa.jwk] };
    status = 200;
    const token = await mint(rsa, 'RS256');
    const refused = await s.as(token, '/orders/o1');
    assert.equal(refused.status, 401);
    assert.match((await refused.json()).detail, /the key set could not be fetched yet$/);
    now += 30;
    assert.equal((await s.as(token, '/orders/o1')).status, 200);
  });
});

describe('an embedder\'s authenticator', () => {
  test('X-Api-Key principals beside JWTs -> read by their access, rate-limited per key, refused with its problem', async () => {
    const apiKeys: Authenticator = {
      authenticate: (headers) => {
        const key = headers['x-api-key'];
        if (typeof key !== 'string') return undefined;
        if (key === 'k-orders') return { key: 'api:orders', access: undefined, grants: new Map([['orders', 'write']]) };
        return key === 'k-read' ? { key: 'api:reader', access: 'read' } : new HttpProblem(401, 'Unknown API key');
      },
    };
    const s = await serve({ jwt: { keys: staticKeySet({ keys: [rsa.jwk] }), issuer: ISSUER, audience: AUDIENCE }, authenticator: apiKeys, rateLimit: 1, rateLimitBurst: 2 });
    const reader = { headers: { 'x-api-key': 'k-read' } };
    assert.equal((await s.request('/orders/o1', reader)).status, 200);
    assert.deepEqual(await (await s.request('/me', reader)).json(), { roles: ['read'], _links: { index: { href: '/' }, orders: { href: '/orders' }, products: { href: '/products' } } });
    assert.equal((await s.request('/orders/o1', reader)).status, 429);
    const denied = await s.request('/orders', { method: 'POST', headers: { 'x-api-key': 'k-other', 'content-type': 'application/json' }, body: '{}' });
    assert.equal(denied.status, 401);
    assert.equal(denied.headers.get('www-authenticate'), 'Bearer realm="halserve"');
    assert.deepEqual(await denied.json(), { type: RFC2616, title: 'Unauthorized', detail: 'Unknown API key', status: 401 });
    // A principal with grants only: /me lists what it may read, roles [] (no access over every resource).
    const orders = { headers: { 'x-api-key': 'k-orders' } };
    assert.deepEqual(await (await s.request('/me', orders)).json(), { roles: [], _links: { index: { href: '/' }, orders: { href: '/orders' } } });
    const notGranted = await s.request('/products/p1', orders);
    assert.equal(notGranted.status, 403);
    // Not a static read-only token's words: this principal may not read products at all.
    assert.equal((await notGranted.json()).detail, 'This credential may not read "products"');
    // A JWT is still accepted, in its own bucket.
    assert.equal((await s.as(await mint(rsa, 'RS256'), '/orders/o1')).status, 200);
  });
});

describe('the change feed for a token limited to some resources', () => {
  test('products:read -> /changes lists only products\' changes; resource=orders -> 403 insufficient_scope', async () => {
    const changes = new LocalChangeLog();
    const orders = createMemoryStore([], { changes, resource: 'orders' });
    const products = createMemoryStore([], { changes, resource: 'products' });
    const s = await startServer({
      resources: [
        { name: 'orders', store: orders },
        { name: 'products', store: products },
      ],
      jwt: { keys: staticKeySet({ keys: [rsa.jwk] }), issuer: ISSUER, audience: AUDIENCE },
      now: () => NOW,
    });
    await orders.create(rec('o9', { secret: 'an order' }));
    await products.create(rec('p9', { name: 'Lamp' }));
    const token = await mint(rsa, 'RS256', claims({ scope: 'products:read' }));
    const as = (path: string): Promise<TestResponse> => s.request(path, { headers: { authorization: `Bearer ${token}` } });
    const page = await as('/changes');
    assert.equal(page.status, 200);
    const body = await page.json();
    assert.deepEqual(body._embedded.changes.map((e: { resource: string; id: string }) => `${e.resource}/${e.id}`), ['products/p9']);
    const refused = await as('/changes?resource=orders');
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get('www-authenticate'), INSUFFICIENT);
    // The parameter's name percent-encoded is the same parameter (the feed decodes it): refused alike.
    for (const path of ['/changes?res%6Furce=orders', '/changes?%72esource=orders&limit=5']) {
      const encoded = await as(path);
      assert.equal(encoded.status, 403, path);
      assert.equal(encoded.headers.get('www-authenticate'), INSUFFICIENT);
    }
    const everything = await mint(rsa, 'RS256', claims({ scope: 'read' }));
    const all = await (await s.request('/changes', { headers: { authorization: `Bearer ${everything}` } })).json();
    assert.deepEqual(all._embedded.changes.map((e: { resource: string; id: string }) => `${e.resource}/${e.id}`), ['orders/o9', 'products/p9']);
  });
});

describe('what links tell a token about a resource it may not read (docs/relations.md §5)', () => {
  // Orders and reviews link to customers; a customer's data, and how many orders or reviews link
  // to it, belong to those resources' readers.
  const changes = new LocalChangeLog();
  const customers = createMemoryStore([rec('c1', { name: 'Alice Secret', email: 'alice@example.com' }), rec('c2', { name: 'Bob Hidden' })], { changes, resource: 'customers' });
  const orders = createMemoryStore([rec('o1', { customer: 'c1' }), rec('o2', { customer: 'c1' })], { changes, resource: 'orders' });
  const reviews = createMemoryStore([rec('r1', { customer: 'c1' })], { changes, resource: 'reviews' });
  const linking = { type: 'object', properties: { customer: { type: 'string', 'x-link': 'customers' } } };
  const started = startServer({
    resources: [
      { name: 'customers', store: customers },
      { name: 'orders', store: orders, schema: linking },
      { name: 'reviews', store: reviews, schema: linking },
    ],
    jwt: { keys: staticKeySet({ keys: [rsa.jwk] }), issuer: ISSUER, audience: AUDIENCE },
    now: () => NOW,
  });
  const as = async (scope: string, path: string, init: RequestInit = {}): Promise<TestResponse> => {
    const token = await mint(rsa, 'RS256', claims({ scope }));
    return (await started).request(path, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) } });
  };
  const remove: RequestInit = { method: 'DELETE' };

  test('DELETE of a customer only orders and reviews link to, by customers:write -> 409 that says entities it may not read link to it: no rel, count or href of theirs', async () => {
    const refused = await as('customers:write', '/customers/c1', remove);
    assert.equal(refused.status, 409);
    const text = await refused.text();
    assert.deepEqual(JSON.parse(text), {
      type: RFC2616,
      title: 'Conflict',
      detail: 'The customers entity "c1" is still linked to by entities this credential may not read; they must be changed or deleted first',
      status: 409,
      referencedBy: { count: 0, links: [], unreadable: true },
    });
    assert.doesNotMatch(text, /orders|reviews/);
    assert.ok((await customers.get('c1')) !== undefined, 'not deleted');
  });

  test('the same with reviews:read -> the reviews that link are detailed, the orders only said to exist', async () => {
    const refused = await as('customers:write reviews:read', '/customers/c1', remove);
    assert.equal(refused.status, 409);
    const text = await refused.text();
    const body = JSON.parse(text);
    assert.equal(body.detail, 'The customers entity "c1" is still linked to by 1 entity of reviews, and by entities this credential may not read; they must be changed or deleted first');
    assert.deepEqual(body.referencedBy, { count: 1, links: [{ rel: 'reviews', count: 1, href: '/reviews?customer=c1' }], unreadable: true });
    assert.doesNotMatch(text, /orders/);
  });

  test('the same with read over both -> every rel, count and href, as before', async () => {
    for (const scope of ['customers:write orders:read reviews:read', 'write']) {
      const body = await (await as(scope, '/customers/c1', remove)).json();
      assert.equal(body.detail, 'The customers entity "c1" is still linked to 3 times (orders 2, reviews 1); change or delete the entities that link first', scope);
      assert.deepEqual(body.referencedBy, { count: 3, links: [{ rel: 'orders', count: 2, href: '/orders?customer=c1' }, { rel: 'reviews', count: 1, href: '/reviews?customer=c1' }] }, scope);
    }
  });

  test('orders:write -> a link to no customer is refused naming only the id it sent; a link to one is made; nothing of any customer is shown, anywhere it looks', async () => {
    const json = { 'content-type': 'application/json' };
    const dangling = { customer: { 'x-link': 'must be the id of an entity of customers; there is none with id "nobody"' } };
    for (const [path, init] of [
      ['/orders', post({ customer: 'nobody' })],
      ['/orders/o1', { method: 'PUT', headers: json, body: JSON.stringify({ customer: 'nobody' }) }],
      ['/orders/o1', { method: 'PATCH', headers: json, body: JSON.stringify({ customer: 'nobody' }) }],
    ] as const) {
      const res = await as('orders:write', path, init);
      assert.equal(res.status, 400, init.method);
      assert.deepEqual((await res.json()).validationMessages, dangling, init.method);
    }
    const made = await as('orders:write', '/orders', post({ customer: 'c2' }));
    assert.equal(made.status, 201);
    const seen = [await made.text()];
    const forms = { headers: { accept: 'application/prs.hal-forms+json' } };
    for (const [path, init] of [['/orders/o1', {}], ['/orders', forms], ['/orders/o1', forms], ['/orders?facets=customer', {}], ['/changes', {}], ['/', {}], ['/me', {}], ['/openapi.json', {}]] as const) {
      const res = await as('orders:write', path, init);
      assert.equal(res.status, 200, path);
      seen.push(await res.text());
    }
    for (const path of ['/orders/o1?embed=customer', '/orders?embed=customer', '/customers/c1', '/changes?resource=customers']) assert.equal((await as('orders:write', path)).status, 403, path);
    for (const text of seen) assert.doesNotMatch(text, /Alice|Bob|example\.com/);
    // The forms point at the collection to choose from, which this token may not list: no id of it inline.
    const templates = (await (await as('orders:write', '/orders', forms)).json())._templates;
    assert.deepEqual(templates.default.properties[0].options, { link: { href: '/customers', type: 'application/hal+json' }, valueField: 'id', maxItems: 1 });
  });
});
