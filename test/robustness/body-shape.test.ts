import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startCli, tempDir } from '../helpers/process.js';
import { records, RFC2616, startItems, type TestResponse, type TestServer } from '../helpers/server.js';
import { parseResponses, portOf, type RawResponse } from './raw.js';

/**
 * Bodies whose shape would hold the event loop (issue 8 §4, docs/conventions.md §8): too many values, or too
 * many members in one object, are a 413 problem before the body is parsed; a body at the limits is
 * taken. The counting is done as chunks arrive, so a body split anywhere counts the same.
 */

const JSON_HEADERS = { 'content-type': 'application/json' };
const post = (s: TestServer, body: string | Uint8Array): Promise<TestResponse> => s.request('/items', { method: 'POST', headers: JSON_HEADERS, body });

const problem = (status: number, title: string, detail: string): Record<string, unknown> => ({ type: RFC2616, title, detail, status });
const tooManyValues = (max: number): Record<string, unknown> => problem(413, 'Payload Too Large', `Request body is larger than the limit of ${max} values`);
const tooManyMembers = (max: number): Record<string, unknown> => problem(413, 'Payload Too Large', `Request body is larger than the limit of ${max} members in one object`);

/** The whole answer: status, content type, the connection closed (the body may still be arriving), the document. */
async function assertRefused(res: TestResponse, expected: Record<string, unknown>): Promise<void> {
  assert.equal(res.status, expected['status']);
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  assert.equal(res.headers.get('connection'), 'close');
  assert.deepEqual(await res.json(), expected);
}

/** `{"k0":0,…}` with `n` members: n + 1 values. */
const membersBody = (n: number): string => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])));
/** `{"a":[0,0,…]}` holding `n` values in all. */
const valuesBody = (n: number): string => `{"a":[${new Array(n - 2).fill('0').join(',')}]}`;

describe('default limits: 2,500 values, 1,000 members per object', () => {
  test('2,500 values -> 201; 2,501 values -> 413 problem, nothing more stored', async () => {
    const s = await startItems();
    const res = await post(s, valuesBody(2_500));
    assert.equal(res.status, 201);
    assert.equal(((await res.json()).a as unknown[]).length, 2_498);
    await assertRefused(await post(s, valuesBody(2_501)), tooManyValues(2_500));
    assert.equal(s.store.size, 1);
  });

  test('1,000 members -> 201; 1,001 members -> 413 problem, nothing more stored', async () => {
    const s = await startItems();
    assert.equal((await post(s, membersBody(1_000))).status, 201);
    await assertRefused(await post(s, membersBody(1_001)), tooManyMembers(1_000));
    assert.equal(s.store.size, 1);
  });

  test('121,838 members in 1 MiB (the body that held the loop for 264–630 ms) -> 413 problem', async () => {
    const s = await startItems();
    // Names in base 36 ("0" … "2lzh"): the most members of one-digit values that fit in 1 MiB.
    const body = JSON.stringify(Object.fromEntries(Array.from({ length: 121_838 }, (_, i) => [i.toString(36), 0])));
    assert.ok(Buffer.byteLength(body) <= 1024 * 1024);
    await assertRefused(await post(s, body), tooManyMembers(1_000));
    assert.equal(s.store.size, 0);
  });

  test('249 objects of 9 members each (2,492 values) -> 201: members are counted per object', async () => {
    const s = await startItems();
    const body = JSON.stringify({ a: Array.from({ length: 249 }, (_, i) => Object.fromEntries(Array.from({ length: 9 }, (_, j) => [`m${i}-${j}`, j]))) });
    assert.equal((await post(s, body)).status, 201);
  });

  test('a 1 MiB body that is one string -> 201: bytes alone are no shape', async () => {
    const s = await startItems();
    const body = `{"s":"${'x\\"'.repeat((1024 * 1024 - 8) / 3)}"}`;
    assert.ok(Buffer.byteLength(body) <= 1024 * 1024);
    assert.equal((await post(s, body)).status, 201);
  });
});

describe('configured limits (maxBodyValues 6, maxBodyMembers 3)', () => {
  const limits = { maxBodyValues: 6, maxBodyMembers: 3 };

  for (const [label, body, expected] of [
    ['6 values, 3 members', '{"a":"x\\"y","b":"\\u0041","c":[1,2]}', undefined],
    ['7 values', '{"a":"x\\"y","b":"\\u0041","c":[1,2,3]}', tooManyValues(6)],
    ['4 members', '{"a":1,"b":2,"c":3,"d":4}', tooManyMembers(3)],
    ['structure inside strings', '{"a":"[1,2,3,4,5,6,7]","b":"{\\"x\\":1,\\"y\\":2,\\"z\\":3,\\"w\\":4}"}', undefined],
  ] as const) {
    test(`POST ${label} -> ${expected ? '413 problem' : '201'}`, async () => {
      const s = await startItems([], limits);
      const res = await post(s, body);
      if (expected) {
        await assertRefused(res, expected);
        assert.equal(s.store.size, 0);
      } else {
        assert.equal(res.status, 201);
        assert.deepEqual(Object.keys(await res.json()).slice(3, -1), Object.keys(JSON.parse(body)));
      }
    });
  }

  test('PATCHes that add members one at a time -> 200 up to 3 members, then 400 problem, entity unchanged', async () => {
    const s = await startItems([{ id: 'p1', createdAt: 1, updatedAt: 1, a: 1, b: 2 }], limits);
    const patch = (body: string): Promise<TestResponse> =>
      s.request('/items/p1', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body });
    assert.equal((await patch('{"c":3}')).status, 200);
    const res = await patch('{"d":4}');
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(await res.json(), problem(400, 'Bad Request', 'The entity would be larger than the limit of 3 members in one object'));
    // Removing one member makes room for another.
    assert.equal((await patch('{"a":null,"d":4}')).status, 200);
    assert.deepEqual(await (await patch('{"c":[1,2,3]}')).json(), problem(400, 'Bad Request', 'The entity would be larger than the limit of 6 values'));
    assert.deepEqual(s.store.get('p1')?.record, { id: 'p1', createdAt: 1, updatedAt: s.store.get('p1')?.record.updatedAt, b: 2, c: 3, d: 4 });
  });

  test('PUT and PATCH with 7 values -> 413 problem, entity unchanged', async () => {
    const s = await startItems(records(1), limits);
    for (const [method, type] of [['PUT', 'application/json'], ['PATCH', 'application/merge-patch+json']] as const) {
      const res = await s.request('/items/e000', { method, headers: { 'content-type': type }, body: '{"a":[1,2,3,4,5,6]}' });
      await assertRefused(res, tooManyValues(6));
    }
    assert.deepEqual(s.store.get('e000')?.record, records(1)[0]);
  });
});

/**
 * Sends one POST whose body goes out in `pieces`, each written a few milliseconds after the last, so
 * that the server reads them as separate chunks; resolves with the response.
 */
function postInPieces(url: string, pieces: readonly Buffer[]): Promise<RawResponse | undefined> {
  const length = pieces.reduce((sum, piece) => sum + piece.length, 0);
  return new Promise((resolve, reject) => {
    const socket = connect(portOf(url), '127.0.0.1');
    socket.setNoDelay(true);
    let text = '';
    const done = (): void => {
      socket.destroy();
      resolve(parseResponses(text)[0]);
    };
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (parseResponses(text).length > 0) done();
    });
    socket.on('close', done);
    socket.on('error', reject);
    socket.on('connect', async () => {
      socket.write(`POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`);
      for (const piece of pieces) {
        await sleep(2);
        if (!socket.destroyed) socket.write(piece);
      }
    });
  });
}

describe('a body split into chunks anywhere counts the same', () => {
  const limits = { maxBodyValues: 6, maxBodyMembers: 3 };
  // Splits fall inside strings, right after a backslash, inside `\u0041` and inside a literal.
  const within = Buffer.from('{"a":"x\\\\\\"y","b":"\\u0041","c":[true,2]}');
  const over = Buffer.from('{"a":"x\\\\\\"y","b":"\\u0041","c":[true,2,3]}');

  test('6 values split in two at every byte -> 201 every time', async () => {
    const s = await startItems([], limits);
    for (let cut = 1; cut < within.length; cut++) {
      const res = await postInPieces(s.url, [within.subarray(0, cut), within.subarray(cut)]);
      assert.equal(res?.status, 201, `split at ${cut}: ${res?.body}`);
    }
    assert.equal(s.store.size, within.length - 1);
  });

  test('7 values split in two at every byte -> 413 problem every time, nothing stored', async () => {
    const s = await startItems([], limits);
    for (let cut = 1; cut < over.length; cut++) {
      const res = await postInPieces(s.url, [over.subarray(0, cut), over.subarray(cut)]);
      assert.equal(res?.status, 413, `split at ${cut}`);
      assert.equal(res?.headers['content-type'], 'application/problem+json');
      assert.deepEqual(JSON.parse(res?.body ?? ''), tooManyValues(6));
    }
    assert.equal(s.store.size, 0);
  });

  test('one byte per chunk -> 201 for 6 values, 413 for 7', async () => {
    const s = await startItems([], limits);
    const bytes = (body: Buffer): Buffer[] => Array.from(body, (_, i) => body.subarray(i, i + 1));
    assert.equal((await postInPieces(s.url, bytes(within)))?.status, 201);
    assert.equal((await postInPieces(s.url, bytes(over)))?.status, 413);
  });

  test('2 MiB declared, 121,838 members: the 413 comes after the first 64 KiB, before the rest is sent', async () => {
    const s = await startItems([], { maxBodyBytes: 16 * 1024 * 1024 });
    const body = Buffer.from(membersBody(121_838));
    const head = body.subarray(0, 64 * 1024);
    // The rest is never written: the answer can only come from what the scanner saw.
    const res = await new Promise<RawResponse | undefined>((resolve) => {
      const socket = connect(portOf(s.url), '127.0.0.1', () => {
        socket.write(`POST /items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
        socket.write(head);
      });
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        const [first] = parseResponses(text);
        if (first) {
          socket.destroy();
          resolve(first);
        }
      });
    });
    assert.equal(res?.status, 413);
    assert.equal(res?.headers['connection'], 'close');
    assert.deepEqual(JSON.parse(res?.body ?? ''), tooManyMembers(1_000));
    assert.equal(s.store.size, 0);
  });
});

describe('the CLI', () => {
  test('--max-body-values 3 and HALSERVE_MAX_BODY_MEMBERS=1 -> both in force', async () => {
    const dir = await tempDir();
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off', '--max-body-values', '3'], { HALSERVE_MAX_BODY_MEMBERS: '1' });
    const send = (body: string): Promise<Response> => fetch(`${cli.url}/items`, { method: 'POST', headers: JSON_HEADERS, body });
    assert.equal((await send('{"a":[1]}')).status, 201);
    assert.deepEqual(await (await send('{"a":[1,2]}')).json(), tooManyValues(3));
    assert.deepEqual(await (await send('{"a":1,"b":2}')).json(), tooManyMembers(1));
    // The JSON-lines store refuses a merged entity past the limits the same way.
    const created = (await (await send('{"a":[1]}')).json()) as { id: string };
    const res = await fetch(`${cli.url}/items/${created.id}`, { method: 'PATCH', headers: JSON_HEADERS, body: '{"b":1}' });
    assert.deepEqual(await res.json(), problem(400, 'Bad Request', 'The entity would be larger than the limit of 1 members in one object'));
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  });
});
