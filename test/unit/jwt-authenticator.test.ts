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

  test('known -> a remembered token\'s principal until exp + 60 s; before its check, after it, or for a forged twin: undefined; no dot or none: null (never a JWT)', () => {
    let now = NOW;
    const auth = jwtAuthenticator({ keys: { select: (kid, alg) => selectKey(keys, kid, alg) }, issuer: 'i', audience: 'a' }, { resources: new Set(['x']), now: () => now });
    const good = `Bearer ${token({ sub: 's', scope: 'read' })}`;
    assert.equal(auth.known?.(good), undefined);
    const principal = auth.authenticate({ authorization: good });
    assert.equal(auth.known?.(good), principal);
    const [, , signature] = good.split('.');
    assert.equal(auth.known?.(`Bearer ${b64({ alg: 'RS256', kid: 'k' })}.${b64({ iss: 'i', aud: 'a', exp: NOW + 100, sub: 'admin', scope: 'write' })}.${signature}`), undefined);
    now = NOW + 160;
    assert.equal(auth.known?.(good), principal);
    now = NOW + 161;
    assert.equal(auth.known?.(good), undefined);
    assert.equal(auth.known?.('Bearer static-token'), null);
    assert.equal(auth.known?.(undefined), null);
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

describe('jwtAuthenticator, many subjects (Ed25519, quick to sign)', () => {
  const ed = generateKeyPairSync('ed25519');
  const edKeys = importKeySet({ keys: [{ ...ed.publicKey.export({ format: 'jwk' }), kid: 'e' }] }, 'set');
  const edToken = (sub: string, pad = ''): string => {
    const input = `${b64({ alg: 'EdDSA', kid: 'e' })}.${b64({ iss: 'i', aud: 'a', exp: NOW + 100, sub, scope: 'read', ...(pad === '' ? {} : { pad }) })}`;
    return `${input}.${sign(null, Buffer.from(input), ed.privateKey).toString('base64url')}`;
  };
  /** An authenticator over the Ed25519 set, and the signature checks it has asked a key for. */
  const counted = (): { auth: ReturnType<typeof jwtAuthenticator>; verified: () => number } => {
    let selects = 0;
    const counting: KeySet = { select: (kid, alg) => (selects++, selectKey(edKeys, kid, alg)) };
    return { auth: jwtAuthenticator({ keys: counting, issuer: 'i', audience: 'a' }, { resources: new Set(['x']), now: () => NOW }), verified: () => selects };
  };
  const ask = (auth: ReturnType<typeof jwtAuthenticator>, header: string): Principal => {
    const found = auth.authenticate({ authorization: header });
    assert.ok(!(found instanceof Promise) && found !== undefined && !(found instanceof HttpProblem));
    return found;
  };

  test('2,000 subjects, each token twice in turn -> each verified once (the second round from the cache)', () => {
    const headers = Array.from({ length: 2000 }, (_, i) => `Bearer ${edToken(`user-${i}`)}`);
    const { auth, verified } = counted();
    for (let round = 0; round < 2; round++) for (const header of headers) ask(auth, header);
    assert.equal(verified(), 2000);
  });

  test('a subject that keeps asking while 3,000 others come once each -> verified once (the least recently used go first)', () => {
    const hot = `Bearer ${edToken('hot')}`;
    const { auth, verified } = counted();
    for (let i = 0; i < 3000; i++) {
      ask(auth, hot);
      ask(auth, `Bearer ${edToken(`passer-${i}`)}`);
    }
    assert.equal(verified(), 3001);
  });

  test('tokens near the 8 KiB limit -> the cache keeps at most 16 MiB of them: 2,200 in turn, twice -> every one verified again', () => {
    const pad = 'x'.repeat(5600);
    const headers = Array.from({ length: 2200 }, (_, i) => `Bearer ${edToken(`big-${i}`, pad)}`);
    assert.ok(headers.every((h) => h.length > 7600 && h.length < 8192), `${headers[0]!.length} characters`);
    const { auth, verified } = counted();
    for (let round = 0; round < 2; round++) for (const header of headers) ask(auth, header);
    assert.equal(verified(), 4400);
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
