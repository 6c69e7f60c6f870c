import assert from 'node:assert/strict';
import { constants, generateKeyPairSync, sign } from 'node:crypto';
import { describe, test } from 'node:test';
import { HttpProblem } from '../../src/conventions/problem.js';
import type { Principal } from '../../src/http/auth.js';
import { importKeySet, selectKey, type KeySet } from '../../src/http/jwks.js';
import { jwtAuthenticator, jwtPrincipalKey } from '../../src/http/jwt-authenticator.js';
import { decodeJwt, verifySignature } from '../../src/http/jwt.js';

const NOW = 1_800_000_000;
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const keys = importKeySet({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k' }] }, 'set');
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const token = (claims: Record<string, unknown>, header: Record<string, unknown> = { alg: 'RS256', kid: 'k' }): string => {
  const input = `${b64(header)}.${b64({ iss: 'i', aud: 'a', exp: NOW + 100, ...claims })}`;
  const signature = header['alg'] === 'PS256' ? sign('sha256', Buffer.from(input), { key: privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }) : sign('sha256', Buffer.from(input), privateKey);
  return `${input}.${signature.toString('base64url')}`;
};

describe('jwtAuthenticator', () => {
  test('the same token twice -> verified once (the second from the cache), until exp + 60 s by the clock, which its principal says (until)', () => {
    let now = NOW;
    let selects = 0;
    const counting: KeySet = { select: (kid, alg) => (selects++, selectKey(keys, kid, alg)) };
    const auth = jwtAuthenticator({ keys: counting, issuer: 'i', audience: 'a' }, { resources: new Set(['x']), now: () => now });
    const headers = { authorization: `Bearer ${token({ sub: 's', scope: 'x:read' })}` };
    const first = auth.authenticate(headers) as Principal;
    assert.deepEqual({ ...first, grants: [...(first.grants ?? [])] }, { key: jwtPrincipalKey('i', 's', ''), access: undefined, grants: [['x', 'read']], subject: 's', scopes: ['x:read'], until: NOW + 160 });
    assert.equal(auth.authenticate(headers), first);
    now = NOW + 160;
    assert.equal(auth.authenticate(headers), first);
    assert.equal(selects, 1);
    now = NOW + 161;
    assert.ok(auth.authenticate(headers) instanceof HttpProblem);
  });

  test('a token cached, then one with its signature but another payload (the same tail) -> not taken from the cache: refused; the cached one still accepted', () => {
    let selects = 0;
    const counting: KeySet = { select: (kid, alg) => (selects++, selectKey(keys, kid, alg)) };
    const auth = jwtAuthenticator({ keys: counting, issuer: 'i', audience: 'a' }, { resources: new Set(['x']), now: () => NOW });
    const good = token({ sub: 's', scope: 'x:read' });
    const first = auth.authenticate({ authorization: `Bearer ${good}` }) as Principal;
    assert.equal(first.subject, 's');
    const [, , signature] = good.split('.');
    const forged = `${b64({ alg: 'RS256', kid: 'k' })}.${b64({ iss: 'i', aud: 'a', exp: NOW + 100, sub: 'admin', scope: 'write' })}.${signature}`;
    const refused = auth.authenticate({ authorization: `Bearer ${forged}` });
    assert.ok(refused instanceof HttpProblem, 'verified, not answered from the cache');
    assert.equal(selects, 2);
    assert.equal(auth.authenticate({ authorization: `Bearer ${good}` }), first);
    assert.equal(selects, 2);
  });

  test('a bearer credential without a dot, or none -> not a JWT: left to other authenticators', () => {
    const auth = jwtAuthenticator({ keys: { select: () => assert.fail('no key wanted') }, issuer: 'i', audience: 'a' }, { resources: new Set(), now: () => NOW });
    assert.equal(auth.authenticate({ authorization: 'Bearer static-token' }), undefined);
    assert.equal(auth.authenticate({ authorization: 'Basic YTpi' }), undefined);
    assert.equal(auth.authenticate({}), undefined);
  });

  test('principal keys -> issuer and subject together; without sub, the token; never the token\'s text', () => {
    assert.equal(jwtPrincipalKey('i', 's', 'one'), jwtPrincipalKey('i', 's', 'two'));
    assert.notEqual(jwtPrincipalKey('i', 's', 'one'), jwtPrincipalKey('j', 's', 'one'));
    assert.notEqual(jwtPrincipalKey('i', undefined, 'one'), jwtPrincipalKey('i', undefined, 'two'));
    assert.match(jwtPrincipalKey('i', undefined, 'one'), /^jwt-token:[0-9a-f]{32}$/);
    // Issuer and subject cannot be shifted into each other.
    assert.notEqual(jwtPrincipalKey('ab', 'c', ''), jwtPrincipalKey('a', 'bc', ''));
  });
});

describe('verifySignature', () => {
  test('an algorithm the key does not admit -> false, even with a good signature', () => {
    const decoded = decodeJwt(token({}, { alg: 'PS256', kid: 'k' }));
    assert.ok(typeof decoded !== 'string');
    const [key] = keys;
    assert.ok(key);
    assert.equal(verifySignature(decoded, key), true);
    assert.equal(verifySignature(decoded, { ...key, algorithms: ['RS256'] }), false);
  });
  test('an ES256 signature of the wrong length -> false', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const [key] = importKeySet({ keys: [ec.publicKey.export({ format: 'jwk' })] }, 'set');
    const decoded = decodeJwt(`${b64({ alg: 'ES256' })}.${b64({})}.${Buffer.alloc(70).toString('base64url')}`);
    assert.ok(typeof decoded !== 'string' && key);
    assert.equal(verifySignature(decoded, key), false);
  });
});

describe('decodeJwt', () => {
  for (const [header, reason] of [
    [{ alg: 'RS256', kid: 7 }, 'its kid is not a string'],
    [{ kid: 'k' }, 'its header has no alg'],
    [{ alg: 'ES512' }, 'its algorithm "ES512" is not one of RS256, PS256, ES256, EdDSA'],
  ] as const) {
    test(`header ${JSON.stringify(header)} -> ${reason}`, () => assert.equal(decodeJwt(`${b64(header)}.${b64({})}.c2ln`), reason));
  }
});
