import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, test } from 'node:test';
import { jsonReply, prepared, send, type Reply } from '../../src/http/reply.js';

/** What `send` hands to Node: the status, the header list and the body. */
interface Written {
  status: number;
  headers: string[];
  body: unknown;
}

function exchange(request: Partial<IncomingMessage>): { req: IncomingMessage; res: ServerResponse; written: Written } {
  const written: Written = { status: 0, headers: [], body: undefined };
  const res = {
    headersSent: false,
    writeHead(status: number, headers: string[]) {
      written.status = status;
      written.headers = [...headers];
      return this;
    },
    end(body?: unknown) {
      written.body = body;
    },
    destroy() {},
  } as unknown as ServerResponse;
  const req = { method: 'GET', complete: true, headers: {}, ...request } as IncomingMessage;
  return { req, res, written };
}

function sent(reply: Reply, request: Partial<IncomingMessage>, extra?: Record<string, string>): { written: Written; bytes: number | Promise<number> } {
  const { req, res, written } = exchange(request);
  const bytes = send(req, res, reply, extra);
  return { written, bytes };
}

const small = jsonReply(200, 'application/hal+json', Buffer.from('{"id":"a"}'), { etag: '"v1"' });
const large = jsonReply(200, 'application/json', Buffer.from(`{"items":"${'x'.repeat(2000)}"}`), { etag: '"p1"', link: '</items?page=2>; rel="next"' });

describe('send with a prepared reply', () => {
  const cases: [string, Reply, Partial<IncomingMessage>, Record<string, string> | undefined][] = [
    ['GET, small body', small, {}, undefined],
    ['HEAD, small body', small, { method: 'HEAD' }, undefined],
    ['GET, large body, no Accept-Encoding', large, {}, undefined],
    ['GET, large body, gzip accepted', large, { headers: { 'accept-encoding': 'gzip' } }, undefined],
    ['HEAD, large body, gzip accepted', large, { method: 'HEAD', headers: { 'accept-encoding': 'gzip' } }, undefined],
    ['GET with CORS headers', small, {}, { 'access-control-allow-origin': '*', vary: 'Origin' }],
    ['a request whose declared body was not read', small, { method: 'POST', complete: false, headers: { 'content-length': '5' } }, undefined],
    ['a reply without a body', { status: 204, headers: { allow: 'GET' } }, {}, undefined],
  ];
  for (const [name, reply, request, extra] of cases) {
    test(`${name} -> the same status, headers, body and byte count as the reply made afresh`, () => {
      const fresh = sent(reply, request, extra);
      const kept = sent(prepared(reply), request, extra);
      assert.deepEqual(kept.written, fresh.written);
      assert.equal(kept.bytes, fresh.bytes);
    });
  }

  // A reply made once for the CORS headers of a request without Origin (resource-routes.ts `originless`):
  // sent to that request, to one that gets other CORS headers, or none, it is what a fresh one gives.
  const originless = { vary: 'Origin' };
  const granted = { 'access-control-allow-origin': 'https://app.example', vary: 'Origin' };
  for (const [name, reply, request] of cases) {
    for (const [given, extra] of [['the Origin-less headers it was made with', originless], ['an allowed origin\'s headers', granted], ['no headers', undefined]] as const) {
      test(`${name}, prepared with Vary: Origin, sent with ${given} -> what the reply made afresh gives`, () => {
        const fresh = sent(reply, request, extra);
        const kept = sent(prepared(reply, originless), request, extra);
        assert.deepEqual(kept.written, fresh.written);
        assert.equal(kept.bytes, fresh.bytes);
      });
    }
  }

  test('prepared with extra headers -> merged as send merges them: Vary after the reply\'s own, before Accept-Encoding', () => {
    const made = prepared(large, { 'access-control-allow-origin': '*', vary: 'Origin' });
    assert.deepEqual(made.head, ['content-type', 'application/json', 'link', '</items?page=2>; rel="next"', 'access-control-allow-origin', '*', 'vary', 'Accept, Origin, Accept-Encoding', 'etag', '"p1"', 'content-length', String(large.body!.length)]);
  });

  test('prepared -> the header list with Vary and ETag last, Content-Length at the end', () => {
    assert.deepEqual(prepared(large).head, ['content-type', 'application/json', 'link', '</items?page=2>; rel="next"', 'vary', 'Accept, Accept-Encoding', 'etag', '"p1"', 'content-length', String(large.body!.length)]);
  });
});

describe('send with a body compressed beforehand (encoded)', () => {
  const packed = { coding: 'br' as const, body: Buffer.from('already compressed') };
  const reply: Reply = { ...large, encoded: packed };
  const header = (written: Written, name: string): string | undefined => written.headers[written.headers.indexOf(name) + 1];

  test('the coding it was made with -> those bytes, with the coding, its tag, Vary and their length; nothing compressed', () => {
    const { written, bytes } = sent(reply, { headers: { 'accept-encoding': 'br, gzip' } });
    assert.equal(written.body, packed.body);
    assert.equal(bytes, packed.body.length);
    assert.equal(header(written, 'content-encoding'), 'br');
    assert.equal(header(written, 'etag'), '"p1-br"');
    assert.equal(header(written, 'vary'), 'Accept, Accept-Encoding');
    assert.equal(header(written, 'content-length'), String(packed.body.length));
  });

  test('another coding, or none -> as without it: gzip made now, or the body as it is', () => {
    assert.deepEqual(sent(reply, { headers: { 'accept-encoding': 'gzip' } }).written, sent(large, { headers: { 'accept-encoding': 'gzip' } }).written);
    assert.deepEqual(sent(reply, {}).written, sent(large, {}).written);
  });
});
