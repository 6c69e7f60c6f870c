import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SignJWT, type JWK } from 'jose';
import { eventually, spawnCli, startCli, tempDir } from '../helpers/process.js';

/*
 * JWTs behind the CLI (README, "Tokens from an identity provider"): a key set file, the start-up
 * refusals, and no JWT ever on stdout or stderr, wherever a client put it.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };
const ISSUER = 'https://idp.example/';
const AUDIENCE = 'halserve';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk: JWK = { ...(publicKey.export({ format: 'jwk' }) as JWK), kid: 'k1', use: 'sig' };
const now = Math.floor(Date.now() / 1000);
const sign = (claims: Record<string, unknown>): Promise<string> =>
  new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'alice', exp: now + 3600, scope: 'write', ...claims }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(privateKey);

async function keySetDir(): Promise<{ dir: string; jwks: string }> {
  const dir = await tempDir();
  await writeFile(join(dir, 'notes.jsonl'), '');
  const jwks = join(dir, 'jwks.json');
  await writeFile(jwks, JSON.stringify({ keys: [jwk] }));
  return { dir, jwks };
}

describe('JWTs behind the CLI', { timeout: 60_000 }, () => {
  test('JWTs, valid and not, sent every way a client might -> served, and never on stdout or stderr', async () => {
    const { dir, jwks } = await keySetDir();
    const cli = await startCli(['--port', '0', '--data', dir, '--jwks', jwks, '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE]);
    const valid = await sign({});
    const foreign = await sign({ iss: 'https://evil.example/' });
    const [h, , sig] = valid.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ sub: 'mallory' })).toString('base64url')}.${sig}`;
    const statuses: number[] = [];
    for (const token of [valid, foreign, tampered]) {
      const ways: [string, RequestInit][] = [
        ['/notes', { headers: { authorization: `Bearer ${token}` } }],
        [`/notes?access_token=${token}`, {}],
        [`/notes?x=${token}`, { headers: { authorization: `Bearer ${valid}` } }],
        [`/notes/${token}`, { headers: { authorization: `Bearer ${valid}` } }],
        [`/${token}`, {}],
        ['/notes', { method: 'POST', headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` }, body: JSON.stringify({ token }) }],
        ['/notes', { method: 'POST', headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` }, body: `{"broken": ${token}` }],
      ];
      for (const [path, init] of ways) {
        const res = await fetch(`${cli.url}${path}`, init);
        statuses.push(res.status);
        await res.arrayBuffer();
      }
    }
    // The valid token reads and writes; the others are refused.
    assert.deepEqual(statuses.slice(0, 7), [200, 401, 200, 404, 401, 201, 400]);
    assert.deepEqual(statuses.slice(7, 14), [401, 401, 200, 404, 401, 401, 401]);
    await eventually(() => cli.stdout().split('\n').length > 21);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    const out = cli.stdout() + cli.stderr();
    for (const token of [valid, foreign, tampered]) {
      for (const part of token.split('.')) assert.ok(!out.includes(part), 'a part of a JWT reached the output');
    }
    assert.match(cli.stdout(), /"path":"\/notes\/\[redacted\]"/);
    assert.doesNotMatch(cli.stderr(), /authentication is OFF/);
  });

  for (const [args, message] of [
    [['--jwks', 'missing.json', '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE], /^halserve: --jwks missing\.json: cannot be read \(ENOENT\)\n$/],
    [['--jwks', 'keys.json'], /^halserve: --jwks needs --jwt-issuer \(HALSERVE_JWT_ISSUER\): the iss its tokens carry\n$/],
    [['--jwks', 'http://idp.example/jwks', '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE], /^halserve: --jwks: http:\/\/idp\.example is neither https nor http on a loopback address/],
  ] as const) {
    test(`${args.join(' ')} -> exit 1 with one line`, async () => {
      const dir = await tempDir();
      const cli = spawnCli(['--port', '0', '--data', dir, ...args.map((a) => (a.endsWith('.json') ? join(dir, a) : a))]);
      assert.equal(await cli.exited, 1);
      assert.match(cli.stderr().replace(dir + '/', ''), message);
    });
  }

  test('a key set file with no usable key -> exit 1 naming what is usable', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }));
    const cli = spawnCli(['--port', '0', '--data', dir, '--jwks', join(dir, 'jwks.json'), '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE]);
    assert.equal(await cli.exited, 1);
    assert.match(cli.stderr(), /jwks\.json: no key of the set can verify RS256, PS256, ES256, EdDSA/);
  });

  test('a key set URL that cannot be fetched at start-up -> serves anyway, says so once, refuses JWTs', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'notes.jsonl'), '');
    // Nothing listens on port 9 of loopback: the fetch fails at once.
    const cli = await startCli(['--port', '0', '--host', '0.0.0.0', '--data', dir, '--jwks', 'http://127.0.0.1:9/jwks', '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE]);
    await eventually(() => /could not be fetched/.test(cli.stderr()));
    const res = await fetch(`${cli.url.replace('0.0.0.0', '127.0.0.1')}/notes`, { headers: { authorization: `Bearer ${await sign({})}` } });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="halserve", error="invalid_token"');
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    assert.match(cli.stderr(), /^halserve: key set http:\/\/127\.0\.0\.1:9\/jwks could not be fetched \(.*\); JWTs are refused until it can be\n/);
  });
});
