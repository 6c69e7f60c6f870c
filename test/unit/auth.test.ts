import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, test } from 'node:test';
import { bearerToken, composeAuthenticators, permits, type Authenticator, type Principal } from '../../src/http/auth.js';
import { checkScope } from '../../src/http/route-scopes.js';
import { parseTokens, staticTokenAuthenticator, staticTokenKey } from '../../src/http/static-tokens.js';
import { HttpProblem } from '../../src/conventions/problem.js';

describe('bearerToken', () => {
  for (const [header, token] of [
    [undefined, undefined],
    ['Bearer abc', 'abc'],
    ['bearer  abc ', 'abc'],
    ['BEARER a.b-c~d', 'a.b-c~d'],
    ['Basic abc', undefined],
    ['Bearer', undefined],
    ['Bearer a b', undefined],
    ['abc', undefined],
  ] as const) {
    test(`${JSON.stringify(header)} -> ${JSON.stringify(token)}`, () => assert.equal(bearerToken(header), token));
  }
});

/** The status a request gets from authentication and the scope check of an entity route. */
function outcome(auth: ReturnType<typeof composeAuthenticators>, header: string | undefined, write: boolean): number {
  const headers: IncomingHttpHeaders = header === undefined ? {} : { authorization: header };
  const found = auth.authenticate(headers);
  assert.ok(!(found instanceof Promise));
  if (found instanceof HttpProblem) return found.status;
  try {
    checkScope(found, { method: write ? 'POST' : 'GET', pattern: '/:name', params: { name: 'items' }, query: '' }, () => undefined, auth.errorCodes);
    return 200;
  } catch (error) {
    assert.ok(error instanceof HttpProblem);
    return error.status;
  }
}

describe('static tokens, composed', () => {
  const auth = composeAuthenticators([staticTokenAuthenticator(['w', 'read:r', 'read:both', 'both'])]);
  for (const [header, write, status] of [
    ['Bearer w', false, 200],
    ['Bearer w', true, 200],
    ['Bearer r', false, 200],
    ['Bearer r', true, 403],
    ['Bearer both', true, 200],
    ['Bearer read:r', false, 401],
    ['Bearer x', false, 401],
    ['Basic dzp3', false, 401],
    [undefined, false, 401],
  ] as const) {
    test(`${header ?? 'no header'} ${write ? 'write' : 'read'} -> ${status}`, () => assert.equal(outcome(auth, header, write), status));
  }
  test('twice the same token -> the same principal object (the second from the cache)', () => {
    const first = auth.authenticate({ authorization: 'Bearer w' });
    assert.equal(auth.authenticate({ authorization: 'Bearer w' }), first);
  });
  test('401 without a credential -> WWW-Authenticate: Bearer realm="halserve", no error code', () => {
    const refused = auth.authenticate({});
    assert.ok(refused instanceof HttpProblem);
    assert.deepEqual(refused.headers, { 'www-authenticate': 'Bearer realm="halserve"' });
    assert.equal(refused.detail, 'A bearer token is required: Authorization: Bearer <token>');
  });
  test('401 for an unknown token without JWTs -> no error code (RFC 6750 codes only with --jwks)', () => {
    const refused = auth.authenticate({ authorization: 'Bearer nope' });
    assert.ok(refused instanceof HttpProblem);
    assert.deepEqual(refused.headers, { 'www-authenticate': 'Bearer realm="halserve"' });
    assert.equal(refused.detail, 'The bearer token is not valid');
  });
  test('no authenticators -> disabled', () => assert.equal(composeAuthenticators([]).enabled, false));
  for (const token of ['', 'read:']) {
    test(`empty token ${JSON.stringify(token)} -> refused`, () => assert.throws(() => parseTokens([token]), /empty/));
  }
});

describe('static tokens, many clients (1,000 tokens configured)', () => {
  const tokens = Array.from({ length: 1000 }, (_, i) => `client-${String(i).padStart(4, '0')}-token`);
  const header = (i: number): IncomingHttpHeaders => ({ authorization: `Bearer ${tokens[i]}` });

  test('each client\'s token twice, round-robin -> each checked once (the second round from the cache), one comparison a check', () => {
    const auth = staticTokenAuthenticator(tokens);
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < tokens.length; i++) assert.equal((auth.authenticate(header(i)) as Principal).key, staticTokenKey(tokens[i]!));
    }
    assert.equal(auth.checks, 1000);
    assert.equal(auth.comparisons, 1000);
  });

  test('unknown tokens -> no comparison at all, whatever the number configured; still refused', () => {
    const auth = staticTokenAuthenticator(tokens);
    for (let i = 0; i < 100; i++) assert.equal(auth.authenticate({ authorization: `Bearer stranger-${i}` }), undefined);
    assert.equal(auth.checks, 100);
    assert.equal(auth.comparisons, 0);
  });

  test('a token configured read: and plain -> it may write, whichever comes first', () => {
    for (const list of [['read:both', 'both'], ['both', 'read:both']]) {
      assert.equal((staticTokenAuthenticator(list).authenticate({ authorization: 'Bearer both' }) as Principal).access, 'write');
    }
  });
});

describe('principal keys', () => {
  test('a token in another position of the list -> the same key (rate-limit buckets stay put)', () => {
    const [a] = parseTokens(['alpha', 'beta']);
    const [, b] = parseTokens(['beta', 'alpha']);
    assert.equal(a?.principal.key, b?.principal.key);
    assert.equal(a?.principal.key, staticTokenKey('alpha'));
  });
  test('read: and plain spellings of one token -> one key; the key holds no part of the token', () => {
    const [r, w] = parseTokens(['read:secret-token', 'secret-token']);
    assert.equal(r?.principal.key, w?.principal.key);
    assert.match(w?.principal.key ?? '', /^token:[0-9a-f]{16}$/);
    assert.ok(!(w?.principal.key ?? '').includes('secret'));
  });
});

describe('an embedder\'s authenticator, composed', () => {
  const header: Authenticator = {
    authenticate: (headers) => {
      const key = headers['x-api-key'];
      if (key === undefined) return undefined;
      return key === 'k1' ? { key: 'api:k1', access: 'read' } : new HttpProblem(401, 'Unknown API key');
    },
  };
  const auth = composeAuthenticators([staticTokenAuthenticator(['w']), header]);
  test('its credential -> its principal', () => assert.deepEqual(auth.authenticate({ 'x-api-key': 'k1' }), { key: 'api:k1', access: 'read' }));
  test('its refusal without a challenge -> its problem, with the realm\'s WWW-Authenticate added (RFC 9110 §15.5.2)', () => {
    const refused = auth.authenticate({ 'x-api-key': 'k2' }) as HttpProblem;
    assert.equal(refused.detail, 'Unknown API key');
    assert.deepEqual(refused.headers, { 'www-authenticate': 'Bearer realm="halserve"' });
  });
  test('a static token beside it -> still accepted', () => assert.equal((auth.authenticate({ authorization: 'Bearer w' }) as Principal).access, 'write'));
  test('an async authenticator -> its promise settles to the principal', async () => {
    const later: Authenticator = { authenticate: () => Promise.resolve({ key: 'later', access: 'write' }) };
    assert.deepEqual(await composeAuthenticators([header, later]).authenticate({}), { key: 'later', access: 'write' });
  });
});

describe('known: what the authenticators tell without checking (the kept-replies lane)', () => {
  test('a static token -> unknown until checked, then its principal; a value never checked, none, or an invented one -> undefined', () => {
    const auth = composeAuthenticators([staticTokenAuthenticator(['s1', 'read:s2'])]);
    assert.equal(auth.known('Bearer s1'), undefined, 'not yet checked: only the full path can tell');
    const principal = auth.authenticate({ authorization: 'Bearer s1' });
    assert.equal(auth.known('Bearer s1'), principal);
    assert.equal(auth.known('Bearer s2'), undefined);
    assert.equal(auth.known(undefined), undefined);
    assert.ok(auth.authenticate({ authorization: 'Bearer nope' }) instanceof HttpProblem);
    assert.equal(auth.known('Bearer nope'), undefined, 'a refused value is never remembered');
  });

  test('an authenticator before the one that remembers the value, which cannot tell -> undefined (it might take the value first)', () => {
    const unsure: Authenticator = { authenticate: () => undefined, known: () => undefined };
    const never: Authenticator = { authenticate: () => undefined, known: () => null };
    const tokens = staticTokenAuthenticator(['s1']);
    tokens.authenticate({ authorization: 'Bearer s1' });
    assert.equal(composeAuthenticators([unsure, tokens]).known('Bearer s1'), undefined);
    assert.equal(composeAuthenticators([never, tokens]).known('Bearer s1')?.access, 'write');
    // One that does not say (an embedder's) cannot be passed over.
    assert.equal(composeAuthenticators([{ authenticate: () => undefined }, tokens]).known('Bearer s1'), undefined);
  });
});

describe('permits', () => {
  const p: Principal = { key: 'k', access: undefined, grants: new Map([['orders', 'write'], ['products', 'read']]), scopes: [] };
  for (const [resource, need, ok] of [
    ['orders', 'write', true],
    ['orders', 'read', true],
    ['products', 'read', true],
    ['products', 'write', false],
    ['users', 'read', false],
    [undefined, 'read', false],
  ] as const) {
    test(`orders:write products:read, ${need} ${resource ?? 'every resource'} -> ${ok}`, () => assert.equal(permits(p, resource, need), ok));
  }
});
