import assert from 'node:assert/strict';
import { generateKeyPairSync, type JsonWebKey, type KeyPairKeyObjectResult } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { keySetUrlProblem } from '../../src/conventions/credential-forms.js';
import { importKeySet, readKeySetFile, remoteKeySet, selectKey, type KeyRefusal } from '../../src/http/jwks.js';
import type { VerificationKey } from '../../src/http/jwt.js';
import { tempDir } from '../helpers/process.js';

const jwkOf = (type: 'rsa' | 'ec' | 'ed25519' | 'ed448' | 'x25519', extra: Record<string, unknown> = {}, options: Record<string, unknown> = {}): Record<string, unknown> => {
  const { publicKey } = generateKeyPairSync(type as 'rsa', { modulusLength: 2048, namedCurve: 'P-256', ...options } as never) as unknown as KeyPairKeyObjectResult;
  return { ...(publicKey.export({ format: 'jwk' }) as JsonWebKey), ...extra };
};
const rsa = jwkOf('rsa', { kid: 'r' });
const ec = jwkOf('ec', { kid: 'e' });
const ed = jwkOf('ed25519', { kid: 'd' });

const algorithms = (keys: VerificationKey[]): [string | undefined, readonly string[]][] => keys.map((k) => [k.kid, k.algorithms]);

describe('importKeySet', () => {
  test('RSA, EC P-256 and Ed25519 keys -> the algorithms their types admit', () => {
    assert.deepEqual(algorithms(importKeySet({ keys: [rsa, ec, ed] }, 'set')), [['r', ['RS256', 'PS256']], ['e', ['ES256']], ['d', ['EdDSA']]]);
  });
  test('a key\'s own alg -> narrows it; an alg that does not fit its type -> the key is not used', () => {
    const keys = importKeySet({ keys: [{ ...rsa, alg: 'PS256' }, { ...rsa, kid: 'h', alg: 'HS256' }, { ...ec, alg: 'RS256' }, ed] }, 'set');
    assert.deepEqual(algorithms(keys), [['r', ['PS256']], ['d', ['EdDSA']]]);
  });
  test('symmetric, encryption, non-verify, small RSA, P-384, Ed448, X25519 and broken keys -> none used', () => {
    const unusable = [
      { kty: 'oct', k: 'c2VjcmV0', kid: 'o' },
      { ...rsa, use: 'enc' },
      { ...rsa, key_ops: ['encrypt'] },
      jwkOf('rsa', {}, { modulusLength: 1024 }),
      jwkOf('ec', {}, { namedCurve: 'P-384' }),
      jwkOf('ed448'),
      jwkOf('x25519'),
      { kty: 'RSA', n: 'AQAB' },
      { ...rsa, kid: 5 },
      'not a key',
      { kty: 'XYZ' },
    ];
    assert.deepEqual(algorithms(importKeySet({ keys: [...unusable, ed] }, 'set')), [['d', ['EdDSA']]]);
    assert.throws(() => importKeySet({ keys: unusable }, 'keys.json'), { name: 'JwksError', message: /^keys\.json: no key of the set can verify RS256, PS256, ES256, EdDSA/ });
  });
  test('a private JWK in the set -> only its public half is used', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const [key] = importKeySet({ keys: [{ ...(privateKey.export({ format: 'jwk' }) as JsonWebKey), kid: 'p' }] }, 'set');
    assert.equal(key?.key.type, 'public');
  });
  for (const document of [[], { keys: {} }, null, 'x']) {
    test(`${JSON.stringify(document)} -> JwksError`, () => assert.throws(() => importKeySet(document, 'set'), { name: 'JwksError', message: 'set: not a JSON Web Key Set (an object with a "keys" array)' }));
  }
});

describe('selectKey', () => {
  const keys = importKeySet({ keys: [rsa, { ...jwkOf('rsa'), kid: 'r2' }, ec] }, 'set');
  const reason = (found: VerificationKey | KeyRefusal): string => ('reason' in found ? found.reason : `key ${found.kid}`);
  for (const [kid, alg, expected] of [
    ['r', 'PS256', 'key r'],
    ['e', 'RS256', 'its algorithm RS256 does not fit the key "e" (ES256)'],
    ['x', 'RS256', 'no key of the key set has its kid "x"'],
    [undefined, 'ES256', 'key e'],
    [undefined, 'RS256', 'it has no kid and 2 keys of the set take RS256'],
    [undefined, 'EdDSA', 'it has no kid and no key of the set takes EdDSA'],
  ] as const) {
    test(`kid ${kid}, ${alg} -> ${expected}`, () => assert.equal(reason(selectKey(keys, kid, alg)), expected));
  }
});

describe('keySetUrlProblem', () => {
  for (const [url, ok] of [
    ['https://idp.example/jwks', true],
    ['http://127.0.0.1:8080/jwks', true],
    ['http://127.1.2.3/jwks', true],
    ['http://localhost/jwks', true],
    ['http://[::1]/jwks', true],
    ['http://idp.example/jwks', false],
    ['http://127.0.0.1.nip.io/jwks', false],
    ['file:///etc/jwks.json', false],
    ['https://', false],
  ] as const) {
    test(`${url} -> ${ok ? 'allowed' : 'refused'}`, () => assert.equal(keySetUrlProblem(url) === undefined, ok));
  }
});

describe('readKeySetFile', () => {
  test('a file that is not JSON -> JwksError naming it', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'k.json'), '{');
    await assert.rejects(readKeySetFile(join(dir, 'k.json')), { name: 'JwksError', message: `--jwks ${join(dir, 'k.json')}: not valid JSON` });
  });
  test('a good file -> its keys', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'k.json'), JSON.stringify({ keys: [rsa] }));
    const set = await readKeySetFile(join(dir, 'k.json'));
    assert.equal((set.select('r', 'RS256') as VerificationKey).kid, 'r');
  });
});

describe('remoteKeySet', () => {
  /** A fetch that answers from `answer` and counts its calls. */
  function fake(): { fetch: typeof fetch; calls: () => number; answer: (status: number, body: unknown, headers?: Record<string, string>) => void } {
    let calls = 0;
    let response = (): Response => new Response('{}');
    return {
      fetch: (async () => {
        calls++;
        return response();
      }) as typeof fetch,
      calls: () => calls,
      answer: (status, body, headers = {}) => (response = () => new Response(typeof body === 'string' || body instanceof ReadableStream ? body : JSON.stringify(body), { status, headers })),
    };
  }

  test('a URL with user-info and a query that fails -> the warning quotes it without them', async () => {
    const f = fake();
    const warned: string[] = [];
    const set = remoteKeySet('https://alice:pw@idp.example/jwks?key=secret', { now: () => 1000, fetch: f.fetch, warn: (m) => warned.push(m) });
    f.answer(500, 'down');
    await set.refresh();
    assert.deepEqual(warned, ['key set https://[redacted]@idp.example/jwks?[redacted] could not be fetched (answered 500); JWTs are refused until it can be']);
  });

  test('a URL with user-info, fetched for real -> the error, which quotes the URL, is said without its credentials', async () => {
    // Node's fetch refuses a URL with user-info, and its message holds the URL as written.
    const warned: string[] = [];
    const set = remoteKeySet('http://alice:s3cret-pw@127.0.0.1:1/jwks?key=qs3cret', { now: () => 1000, warn: (m) => warned.push(m) });
    await set.refresh();
    assert.equal(warned.length, 1);
    assert.match(warned[0] ?? '', /^key set http:\/\/\[redacted\]@127\.0\.0\.1:1\/jwks\?\[redacted\] could not be fetched \(.*http:\/\/\[redacted\]@127\.0\.0\.1:1\/jwks\?\[redacted\]\)/);
    assert.doesNotMatch(warned[0] ?? '', /s3cret/);
  });

  test('a set that expires -> fetched again after 10 minutes; a failing fetch -> the last good set kept, one line said', async () => {
    let now = 1000;
    const f = fake();
    const warned: string[] = [];
    const set = remoteKeySet('https://idp.example/jwks', { now: () => now, fetch: f.fetch, warn: (m) => warned.push(m) });
    f.answer(200, { keys: [rsa] });
    assert.equal(((await set.select('r', 'RS256')) as VerificationKey).kid, 'r');
    assert.equal(set.select('r', 'RS256') instanceof Promise, false);
    now += 599;
    assert.equal(set.select('r', 'RS256') instanceof Promise, false);
    now += 1;
    for (const [status, body, headers] of [[500, 'down'], [200, 'not json'], [200, { keys: [] }], [200, 'x'.repeat(10), { 'content-length': String(2 * 1024 * 1024) }]] as const) {
      f.answer(status, body, headers);
      assert.equal(((await set.select('r', 'RS256')) as VerificationKey).kid, 'r');
      now += 30;
    }
    assert.equal(f.calls(), 5);
    assert.deepEqual(warned.map((w) => w.replace(/^key set https:\/\/idp\.example\/jwks could not be fetched \((.*)\); the last good set is kept$/, '$1')), [
      'answered 500',
      'its set is not valid JSON',
      'its set: no key of the set can verify RS256, PS256, ES256, EdDSA (RSA of 2048 bits or more, EC P-256, OKP Ed25519; use "sig")',
      'its set is larger than 1048576 bytes',
    ]);
  });

  test('many unknown kids at once -> one fetch; then none for 30 s', async () => {
    let now = 1000;
    const f = fake();
    f.answer(200, { keys: [rsa] });
    const set = remoteKeySet('https://idp.example/jwks', { now: () => now, fetch: f.fetch });
    await set.refresh();
    const found = await Promise.all(Array.from({ length: 10 }, (_, i) => set.select(`k${i}`, 'RS256')));
    assert.ok(found.every((k) => 'reason' in k && k.unknownKid));
    assert.equal(f.calls(), 1);
    now += 30;
    await Promise.all(Array.from({ length: 10 }, (_, i) => set.select(`k${i}`, 'RS256')));
    assert.equal(f.calls(), 2);
    assert.equal(set.fetches, 2);
  });

  test('the clock set back an hour -> a kid the set lacks still fetches it once, and the set still ages; then none for 30 s', async () => {
    let now = 10_000;
    const f = fake();
    f.answer(200, { keys: [rsa] });
    const set = remoteKeySet('https://idp.example/jwks', { now: () => now, fetch: f.fetch });
    await set.refresh();
    // The identity provider rotates its key while the server's clock is stepped back (NTP, a VM resumed).
    f.answer(200, { keys: [rsa, ec] });
    now -= 3600;
    assert.equal(((await set.select('e', 'ES256')) as VerificationKey).kid, 'e');
    assert.equal(f.calls(), 2);
    await set.select('k', 'RS256');
    assert.equal(f.calls(), 2);
    // Fetched before the step, the set is of unknown age: it is fetched again, not kept for another hour.
    const aged = remoteKeySet('https://idp.example/jwks', { now: () => now, fetch: f.fetch });
    now += 3600;
    await aged.refresh();
    now -= 3600;
    assert.equal(aged.select('r', 'RS256') instanceof Promise, true);
  });

  test('a set URL whose body stalls after its head, while garbage is collected -> the fetch ends at its timeout; the next one may begin', { timeout: 30_000 }, async () => {
    // Collecting garbage is what lost the timeout: a signal that nothing else held never fired.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const stalled = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[');
    });
    await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
    const collecting = setInterval(gc, 20);
    try {
      let now = 1000;
      const warned: string[] = [];
      const set = remoteKeySet(`http://127.0.0.1:${(stalled.address() as AddressInfo).port}/jwks`, { now: () => now, warn: (m) => warned.push(m), timeoutMs: 200 });
      await set.refresh();
      assert.equal(warned.length, 1);
      assert.match(warned[0]!, /could not be fetched \(no whole answer within 200 ms\); JWTs are refused until it can be$/);
      assert.deepEqual(await set.select('r', 'RS256'), { reason: 'the key set could not be fetched yet', unknownKid: false });
      now += 30;
      await set.refresh();
      assert.equal(set.fetches, 2);
    } finally {
      clearInterval(collecting);
      stalled.closeAllConnections();
      stalled.close();
    }
  });

  test('a set without Content-Length that never ends -> refused once past 1 MiB, its body cancelled; the last good set kept', async () => {
    let now = 1000;
    const f = fake();
    const warned: string[] = [];
    const set = remoteKeySet('https://idp.example/jwks', { now: () => now, fetch: f.fetch, warn: (m) => warned.push(m) });
    f.answer(200, { keys: [rsa] });
    await set.refresh();
    let sent = 0;
    let cancelled = false;
    const chunk = new Uint8Array(64 * 1024).fill(0x20);
    const endless = new ReadableStream<Uint8Array>({
      // Each chunk a turn of the event loop later, as a network would send it.
      pull: async (controller) => {
        await new Promise((resolve) => setImmediate(resolve));
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
      cancel: () => {
        cancelled = true;
      },
    });
    f.answer(200, endless);
    now += 600;
    assert.equal(((await set.select('r', 'RS256')) as VerificationKey).kid, 'r');
    assert.deepEqual(warned, ['key set https://idp.example/jwks could not be fetched (its set is larger than 1048576 bytes); the last good set is kept']);
    assert.ok(cancelled);
    assert.ok(sent <= 2 * 1024 * 1024, `read ${sent} bytes`);
  });

  test('an unusable URL -> JwksError', () => {
    assert.throws(() => remoteKeySet('http://idp.example/jwks', { now: () => 0 }), { name: 'JwksError', message: /^--jwks: http:\/\/idp\.example is neither https/ });
  });
});
