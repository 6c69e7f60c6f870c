import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createHandler } from '../../src/http/app.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { spawnCli, startCli, tempDir } from '../helpers/process.js';
import { records, startItems } from '../helpers/server.js';
import { assertFetchProblem, assertRawProblem, rawExchange } from './raw.js';

/** Bearer tokens (docs/conventions.md §6) as odd clients and odd operators use them. */

const TOKENS = ['w+r/i=te~_.-', 'read:re"ad'];
const JSON_HEADERS = { 'content-type': 'application/json' };

describe('tokens and headers', () => {
  test('tokens with + / = ~ _ . - and a quote -> accepted as configured', async () => {
    const s = await startItems(records(1), { tokens: TOKENS });
    assert.equal((await s.request('/items', { headers: { authorization: 'Bearer w+r/i=te~_.-' } })).status, 200);
    assert.equal((await s.request('/items', { headers: { authorization: 'Bearer re"ad' } })).status, 200);
  });

  for (const [label, authorization] of [
    ['empty Authorization', ''],
    ['"Bearer" with no token', 'Bearer'],
    ['"Bearer " and spaces', 'Bearer    '],
    ['token followed by more words', 'Bearer w+r/i=te~_.- extra'],
    ['tab instead of a space', 'Bearer\tw+r/i=te~_.-'],
    ['token in quotes', 'Bearer "w+r/i=te~_.-"'],
    ['the read: prefix sent as part of the token', 'Bearer read:re"ad'],
    ['a prefix of the token', 'Bearer w+r/i'],
    ['the token with a trailing NUL escape', 'Bearer w+r/i=te~_.-%00'],
  ] as const) {
    test(`${label} -> 401 with WWW-Authenticate, nothing written`, async () => {
      const s = await startItems(records(1), { tokens: TOKENS });
      const res = await s.request('/items', { method: 'POST', headers: { authorization, ...JSON_HEADERS }, body: '{}' });
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="halserve"');
      await assertFetchProblem(res, 401);
      assert.equal(s.store.size, 1);
    });
  }

  test('Authorization sent twice -> 400 whichever comes first (Node would keep the first and drop the other; which was meant cannot be known)', async () => {
    const s = await startItems(records(1), { tokens: TOKENS });
    const twice = (first: string, second: string): string =>
      `GET /items HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${first}\r\nAuthorization: Bearer ${second}\r\n\r\n`;
    assert.equal((await rawExchange(s.url, twice('nope', 're"ad'), { responses: 1 })).responses[0]?.status, 400);
    assert.equal((await rawExchange(s.url, twice('re"ad', 'nope'), { responses: 1 })).responses[0]?.status, 400);
  });

  test('read token on OPTIONS and HEAD -> 204 and 200', async () => {
    const s = await startItems(records(1), { tokens: TOKENS });
    const headers = { authorization: 'Bearer re"ad' };
    const options = await s.request('/items/e000', { method: 'OPTIONS', headers });
    assert.equal(options.status, 204);
    assert.equal(options.headers.get('allow'), 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS');
    const head = await s.request('/items/e000', { method: 'HEAD', headers });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
  });

  test('OPTIONS without a token (not a CORS preflight) -> 401', async () => {
    const s = await startItems(records(1), { tokens: TOKENS });
    await assertFetchProblem(await s.request('/items', { method: 'OPTIONS' }), 401);
  });

  test('read token on a write to an unknown resource -> 403, not 404 (nothing learnt)', async () => {
    const s = await startItems(records(1), { tokens: TOKENS });
    const res = await s.request('/secret', { method: 'POST', headers: { authorization: 'Bearer re"ad', ...JSON_HEADERS }, body: '{}' });
    await assertFetchProblem(res, 403, 'This token may only read');
  });

  test('a 401 body never echoes the token sent', async () => {
    const s = await startItems(records(1), { tokens: TOKENS });
    const text = await (await s.request('/items', { headers: { authorization: 'Bearer sup3r-s3cret-guess' } })).text();
    assert.doesNotMatch(text, /sup3r-s3cret-guess/);
  });

  for (const [label, token] of [
    ['"tök" (not ASCII: header values arrive as Latin-1)', 'tök'],
    ['"a b" (a space: "Bearer a b" is never one token)', 'a b'],
    ['"read:" (empty after the prefix)', 'read:'],
  ] as const) {
    test(`token ${label} configured -> refused by createHandler, without repeating the token`, () => {
      assert.throws(
        () => createHandler({ resources: [{ name: 'items', store: createMemoryStore() }], tokens: ['fine', token] }),
        (error: Error) => /token 2/.test(error.message) && (token === 'read:' || !error.message.includes(token)),
      );
    });
  }
});

describe('bodies of refused requests', () => {
  for (const [label, headers, status] of [
    ['no token', '', 401],
    ['read token', 'Authorization: Bearer re"ad\r\n', 403],
    ['write token, text/plain', 'Authorization: Bearer w+r/i=te~_.-\r\n', 415],
  ] as const) {
    test(`${label}, POST declaring 100 MB -> ${status} problem, nothing stored`, async () => {
      const s = await startItems([], { tokens: TOKENS });
      const type = status === 415 ? 'text/plain' : 'application/json';
      const { responses } = await rawExchange(s.url, `POST /items HTTP/1.1\r\nHost: x\r\n${headers}Content-Type: ${type}\r\nContent-Length: 100000000\r\n\r\n{`, {
        responses: 1,
      });
      assertRawProblem(responses[0], status);
      assert.equal(s.store.size, 0);
    });
  }

  test(
    'no token, POST declaring 100 MB -> 401 and the connection closed, the body never read',
    async () => {
      const s = await startItems([], { tokens: TOKENS });
      const { responses, closedByServer } = await rawExchange(s.url, 'POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{', {
        timeoutMs: 1000,
      });
      assert.equal(responses[0]?.status, 401);
      assert.equal(closedByServer, true);
    },
  );
});

describe('operator mistakes with tokens (CLI)', () => {
  test(
    '--token read: (empty after the prefix) -> exit 1 with a one-line message',
    async () => {
      const dir = await tempDir('halserve-qa-');
      const proc = spawnCli(['--port', '0', '--data', dir, '--resource', 'items', '--token', 'read:']);
      assert.equal(await proc.exited, 1);
      assert.equal(proc.stderr().trim().split('\n').length, 1, proc.stderr());
      assert.match(proc.stderr(), /token/);
    },
  );

  test('--token "a,b" -> two tokens a and b (the comma splits, as in HALSERVE_TOKENS)', async () => {
    const dir = await tempDir('halserve-qa-');
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'items', '--token', 'a,b', '--log', 'off']);
    const get = (token: string): Promise<number> => fetch(`${cli.url}/items`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => (await r.arrayBuffer(), r.status));
    assert.equal(await get('a'), 200);
    assert.equal(await get('b'), 200);
    assert.equal(await get('a,b'), 401);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });
});
