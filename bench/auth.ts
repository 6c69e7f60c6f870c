/**
 * What authentication costs a request (README, "Tokens from an identity provider"):
 * `node --import tsx bench/auth.ts` (run by `npm run bench`, section `auth`).
 *
 * In one process, without HTTP: the check of a static token and of a JWT once each is cached (ns
 * per check, the median of 7 runs of 200,000 checks, each check a fresh `Authorization` string as
 * a parsed request would bring), and the first verification of RS256, PS256, ES256 and EdDSA
 * tokens (µs, the median of 200 distinct tokens, each checked once: decode, claims, key, signature).
 */
import { generateKeyPairSync, sign, constants, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { serverAuthentication } from '../src/http/credentials.js';
import { staticKeySet } from '../src/http/jwks.js';
import { jwtAuthenticator } from '../src/http/jwt-authenticator.js';

const NOW = 1_800_000_000;
const ISSUER = 'https://idp.example/';
const AUDIENCE = 'halserve';
const CHECKS = 200_000;
const RUNS = 7;
const FIRSTS = 200;

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact JWS signed with node:crypto (the bench needs no dev dependency). */
function jws(alg: string, kid: string, key: KeyObject, claims: Record<string, unknown>): string {
  const input = `${b64({ alg, kid, typ: 'JWT' })}.${b64(claims)}`;
  const data = Buffer.from(input);
  const signature =
    alg === 'RS256' ? sign('sha256', data, key)
    : alg === 'PS256' ? sign('sha256', data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 })
    : alg === 'ES256' ? sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' })
    : sign(null, data, key);
  return `${input}.${signature.toString('base64url')}`;
}

/** ns per check of `header`, each check with a fresh copy of the string (no hash cached on it). */
function cachedCheck(check: (headers: IncomingHttpHeaders) => unknown, header: string): number {
  const copies = Array.from({ length: 1000 }, () => (' ' + header).slice(1));
  if (check({ authorization: header }) === undefined) throw new Error('not accepted');
  const runs: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    // Flattened copies made anew each run: a string's hash is cached on it once computed.
    const fresh = copies.map((c) => Buffer.from(c).toString('latin1'));
    const started = process.hrtime.bigint();
    for (let i = 0; i < CHECKS; i++) check({ authorization: fresh[i % fresh.length]! });
    runs.push(Number(process.hrtime.bigint() - started) / CHECKS);
  }
  return median(runs);
}

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = generateKeyPairSync('ed25519');
const keys = staticKeySet({
  keys: [
    { ...rsa.publicKey.export({ format: 'jwk' }), kid: 'rsa' },
    { ...ec.publicKey.export({ format: 'jwk' }), kid: 'ec' },
    { ...ed.publicKey.export({ format: 'jwk' }), kid: 'ed' },
  ],
});
const context = { resources: new Set(['products', 'orders']), now: () => NOW };
const claims = (i: number): Record<string, unknown> => ({ iss: ISSUER, aud: AUDIENCE, sub: `user-${i}`, exp: NOW + 3600, iat: NOW, scope: 'openid products:read orders:write' });

// As createHandler composes them: static tokens alone, and static tokens beside JWTs.
const tokens = ['read:reader-token-0123456789abcdef', 'writer-token-0123456789abcdef'];
const staticOnly = serverAuthentication({ tokens }, context);
const both = serverAuthentication({ tokens, jwt: { keys, issuer: ISSUER, audience: AUDIENCE } }, context);

const lines: string[] = [];
lines.push(`static token, cached, static tokens only: ${cachedCheck((h) => staticOnly.authenticate(h), 'Bearer writer-token-0123456789abcdef').toFixed(0)} ns per check`);
lines.push(`static token, cached, beside --jwks: ${cachedCheck((h) => both.authenticate(h), 'Bearer writer-token-0123456789abcdef').toFixed(0)} ns per check`);
const token = jws('RS256', 'rsa', rsa.privateKey, claims(0));
lines.push(`JWT (RS256, ${token.length} bytes), cached, beside static tokens: ${cachedCheck((h) => both.authenticate(h), `Bearer ${token}`).toFixed(0)} ns per check`);

for (const [alg, kid, key] of [['RS256', 'rsa', rsa.privateKey], ['PS256', 'rsa', rsa.privateKey], ['ES256', 'ec', ec.privateKey], ['EdDSA', 'ed', ed.privateKey]] as const) {
  const headers = Array.from({ length: FIRSTS }, (_, i) => ({ authorization: `Bearer ${jws(alg, kid, key, claims(i + 1))}` }));
  // A fresh authenticator, so that every token is a first verification.
  const auth = jwtAuthenticator({ keys, issuer: ISSUER, audience: AUDIENCE }, context);
  auth.authenticate({ authorization: `Bearer ${jws(alg, kid, key, claims(-1))}` });
  const times: number[] = [];
  for (const h of headers) {
    const started = process.hrtime.bigint();
    const outcome = auth.authenticate(h);
    times.push(Number(process.hrtime.bigint() - started) / 1000);
    if (outcome === undefined || outcome instanceof Promise || 'status' in outcome) throw new Error(`${alg} not accepted`);
  }
  lines.push(`JWT (${alg}), first verification: ${median(times).toFixed(1)} µs (median of ${FIRSTS})`);
}
process.stdout.write(`${lines.join('\n')}\n`);
