import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HttpProblem } from '../../src/conventions/problem.js';
import { createHash } from 'node:crypto';
import { currentLedgerKey, ledgerKey, ledgerName, ledgerTarget, legacyFingerprint, parseIdempotencyKey, requestFingerprint } from '../../src/conventions/idempotency-key.js';
import { AnswerBook, KeyInFlightError, KeyReusedError, matchesRequest, sizeOf } from '../../src/store/idempotency.js';
import { AnswerRing } from '../../src/store/log/answer-ring.js';

test('Idempotency-Key as an sf-string, with escapes, or bare (a UUID starting with a digit) -> the key', () => {
  assert.equal(parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"'), '8e03978e-40d5-43e8-bc93-6894a57f9324');
  assert.equal(parseIdempotencyKey('8e03978e-40d5'), '8e03978e-40d5');
  assert.equal(parseIdempotencyKey('"a\\"b\\\\c"'), 'a"b\\c');
  assert.equal(parseIdempotencyKey(' "k" '), 'k');
  assert.equal(parseIdempotencyKey('x'.repeat(255)), 'x'.repeat(255));
  assert.equal(parseIdempotencyKey(undefined), undefined);
});

test('malformed Idempotency-Key values -> a 400 problem each', () => {
  for (const value of ['', '""', '"a', '"a"b', '"a";p=1', '"\\x"', 'a b', 'a,b, c', 'é', 'x'.repeat(256), '"tab\there"']) {
    assert.throws(() => parseIdempotencyKey(value), (e: unknown) => e instanceof HttpProblem && e.status === 400, JSON.stringify(value));
  }
  assert.throws(() => parseIdempotencyKey(['a', 'b']), (e: unknown) => e instanceof HttpProblem && /more than one/.test(e.detail));
});

test('ledger keys -> the JSON array of the parts, as JSON.stringify writes it, whatever characters they hold (the text answers recorded earlier are found by)', () => {
  const alphabet = ['a', 'Z', '0', '/', '-', ':', '"', '\\', '\n', '\u0000', '\u001f', '\u007f', 'é', '€', '\ud83d\ude00', '\ud800', '\udfff', ' ', '%22'];
  let seed = 17;
  const random = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const part = (): string => Array.from({ length: Math.floor(random() * 6) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
  let escaped = 0;
  for (let i = 0; i < 5000; i++) {
    const parts = [part(), random() < 0.5 ? 'POST' : part(), part(), part()] as const;
    const expected = JSON.stringify(parts);
    if (expected.length !== parts.join('').length + 13) escaped++;
    assert.equal(ledgerKey(...parts), expected, JSON.stringify(parts));
    // The key's own JSON string literal, where it came at no cost, is the one JSON.stringify writes.
    const { key, json } = ledgerName(...parts);
    assert.equal(key, expected);
    if (json !== undefined) assert.equal(json, JSON.stringify(expected), JSON.stringify(parts));
    if (!/["\\\u0000-\u001f\ud800-\udfff]/.test(parts.join(''))) assert.notEqual(json, undefined, 'parts with nothing to escape give the literal');
  }
  // Both ways were taken: parts written as they are, and parts JSON escapes.
  assert.ok(escaped > 1000 && escaped < 4900, `${escaped} of 5000 escaped`);
});

test('ledger keys of different requests -> never equal, whatever the parts hold', () => {
  assert.notEqual(ledgerKey('a\nb', 'POST', '/x', 'k'), ledgerKey('a', 'b\nPOST', '/x', 'k'));
  assert.equal(ledgerKey('p', 'POST', '/x', 'k'), ledgerKey('p', 'POST', '/x', 'k'));
});

test('ledger targets -> the resource\'s own path, never the base path: the collection for a POST, the entity (its id escaped as links escape it) for a PATCH', () => {
  assert.equal(ledgerTarget('items'), '/items');
  assert.equal(ledgerTarget('items', 'a b/c'), '/items/a%20b%2Fc');
  assert.equal(ledgerTarget('items', 'sE27qNG1i88C7buQ'), '/items/sE27qNG1i88C7buQ');
});

test('ledger keys an earlier version made (under --base-path, or the path as the request spelled it) -> this version\'s key of the same write; this version\'s unchanged', () => {
  const principals = ['token:abd208465775ca70', 'address:::1', 'a"b\\', 'x","POST","/y', 'POST', 'é\n'];
  const clients = ['k', 'upgrade-key-1', 'a"b', '/items', '","PATCH","/z'];
  for (const principal of principals) {
    for (const client of clients) {
      const post = ledgerKey(principal, 'POST', ledgerTarget('items'), client);
      const patch = ledgerKey(principal, 'PATCH', ledgerTarget('items', 'a b'), client);
      const what = JSON.stringify([principal, client]);
      // This version's: the same string, not a copy.
      assert.equal(currentLedgerKey(post), post, what);
      assert.equal(currentLedgerKey(patch), patch, what);
      for (const earlier of ['/api/items', '/a/b/items', '/items/items', '/api/v1/items', '/v1/items', '/%69tems']) {
        assert.equal(currentLedgerKey(ledgerKey(principal, 'POST', earlier, client)), post, `${what} POST ${earlier}`);
      }
      for (const earlier of ['/api/items/a%20b', '/items/items/a%20b', '/v1/items/a%20b', '/api/v1/items/%61%20b', '/items/a%20b/']) {
        assert.equal(currentLedgerKey(ledgerKey(principal, 'PATCH', earlier, client)), patch, `${what} PATCH ${earlier}`);
      }
      // A path spelled with a quote (JSON escapes it), before 2026-12-02.
      assert.equal(currentLedgerKey(ledgerKey(principal, 'PATCH', '/api/items/a"b', client)), ledgerKey(principal, 'PATCH', ledgerTarget('items', 'a"b'), client), what);
    }
  }
  // Keys of no keyed method (a test's own names) are left as they are.
  for (const key of ['old', 'k', '["p","PUT","/api/items","k"]', '[1,"POST"]']) assert.equal(currentLedgerKey(key), key);
});

test('AnswerBook: claim, in flight -> KeyInFlightError; released without an answer -> claimable again; answered -> replay or KeyReusedError', () => {
  const book = new AnswerBook({ now: () => 0 });
  const claim = book.claim('k', () => 'f');
  assert.equal(claim.kind, 'fresh');
  assert.throws(() => book.claim('k', () => 'f'), KeyInFlightError);
  if (claim.kind === 'fresh') claim.release();
  const again = book.claim('k', () => 'f');
  book.put('k', { fingerprint: 'f', at: 0, answer: { status: 201, headers: {}, body: 'x' } });
  if (again.kind === 'fresh') again.release();
  assert.deepEqual(book.claim('k', () => 'f'), { kind: 'replay', answer: { status: 201, headers: {}, body: 'x' } });
  assert.throws(() => book.claim('k', () => 'g'), KeyReusedError);
});

test('AnswerBook.claim -> the request\'s digest made only when the key has an answer to compare it with', () => {
  const book = new AnswerBook({ now: () => 0 });
  let digests = 0;
  const digest = (): string => {
    digests++;
    return 'f';
  };
  const claim = book.claim('k', digest);
  assert.equal(digests, 0);
  book.put('k', { fingerprint: 'f', at: 0, answer: { status: 201, headers: {}, body: 'x' } });
  if (claim.kind === 'fresh') claim.release();
  assert.equal(book.claim('k', digest).kind, 'replay');
  assert.equal(digests, 1);
});

test('AnswerBook past its bound -> the oldest answers go first', () => {
  let now = 0;
  const book = new AnswerBook({ now: () => now, maxAnswers: 2, ttlMs: 100 });
  for (const k of ['a', 'b', 'c']) book.put(k, { fingerprint: 'f', at: now++, answer: { status: 200, headers: {}, body: '' } });
  assert.deepEqual([...book.entries()].map(([k]) => k), ['b', 'c']);
  now = 101;
  assert.equal(book.get('b'), undefined);
  assert.ok(book.get('c'));
});

for (const [name, table] of [
  ['objects (LruAnswers)', undefined],
  ['bytes (AnswerRing)', (maxAnswers: number, maxBytes: number) => new AnswerRing({ maxAnswers, maxBytes })],
] as const) {
  test(`AnswerBook of ${name}: pushedOut counts the answers its bounds let go inside their time, not those that expired`, () => {
    let now = 0;
    const book = new AnswerBook({ now: () => now, maxAnswers: 2, ttlMs: 100 }, table);
    const put = (k: string): void => book.put(k, { fingerprint: 'f', at: now, answer: { status: 201, headers: { location: `/x/${k}` }, body: k } });
    put('a');
    put('b');
    assert.equal(book.pushedOut, 0);
    // Both expired: they leave by their time before c is recorded, and push nothing out.
    now = 150;
    put('c');
    put('d');
    assert.equal(book.pushedOut, 0);
    assert.deepEqual([...book.entries()].map(([k]) => k), ['c', 'd']);
    // c is inside its time: e pushes it out.
    put('e');
    assert.equal(book.pushedOut, 1);
    assert.deepEqual([...book.entries()].map(([k]) => k), ['d', 'e']);
  });
}

test('AnswerBook past its byte bound -> the oldest answers go first, the newest is kept', () => {
  const book = new AnswerBook({ now: () => 0, maxBytes: 3000 });
  const big = { status: 201, headers: {}, body: 'x'.repeat(1000) };
  for (const k of ['a', 'b', 'c', 'd']) book.put(k, { fingerprint: 'f', at: 0, answer: big });
  assert.deepEqual([...book.entries()].map(([k]) => k), ['c', 'd']);
  book.put('d', { fingerprint: 'f', at: 0, answer: big });
  assert.equal(book.size, 2);
});

test('AnswerBook over a long run past its bound -> exactly the newest answers, in the order recorded; one recorded again moves to the end; expired ones go as new ones come', () => {
  let now = 0;
  const book = new AnswerBook({ now: () => now, maxAnswers: 100, ttlMs: 50_000 });
  const answer = { status: 201, headers: { location: '/x' }, body: 'x' };
  for (let i = 0; i < 10_000; i++) book.put(`k${i}`, { fingerprint: 'f', at: now++, answer });
  assert.deepEqual([...book.entries()].map(([k]) => k), Array.from({ length: 100 }, (_, i) => `k${9900 + i}`));
  book.put('k9950', { fingerprint: 'g', at: now, answer });
  const keys = [...book.entries()].map(([k]) => k);
  assert.equal(keys.length, 100);
  assert.equal(keys.at(-1), 'k9950');
  assert.equal(book.get('k9950')!.fingerprint, 'g');
  // The 20 oldest pass their time to live: the next answer recorded drops them.
  now = 9919 + 50_000;
  book.put('new', { fingerprint: 'f', at: now, answer });
  assert.equal(book.size, 81);
  assert.equal([...book.entries()][0]![0], 'k9920');
});

test('AnswerBook.latest -> none while a claim holds the key and nothing was recorded under it; an answer recorded since, after the release too', () => {
  const book = new AnswerBook();
  const answer = { status: 201, headers: {}, body: 'x' };
  book.put('old', { fingerprint: 'f', at: Date.now(), answer });
  assert.equal(book.latest('old')?.fingerprint, 'f');
  const claim = book.claim('k', () => 'f');
  assert.equal(claim.kind, 'fresh');
  assert.equal(book.latest('k'), undefined);
  const recorded = { fingerprint: 'f', at: Date.now(), answer };
  book.put('k', recorded);
  assert.equal(book.latest('k'), recorded);
  if (claim.kind === 'fresh') claim.release();
  assert.equal(book.latest('k'), recorded);
  // Claimed again after the release: the answer is there, a replay.
  assert.equal(book.claim('k', () => 'f').kind, 'replay');
});

test('AnswerBook with maxAnswers 0 -> keys in flight only, no answer kept', () => {
  const book = new AnswerBook({ maxAnswers: 0 });
  book.put('k', { fingerprint: 'f', at: Date.now(), answer: { status: 201, headers: {}, body: '' } });
  assert.equal(book.size, 0);
  assert.deepEqual([...book.entries()], []);
  const claim = book.claim('k', () => 'f');
  assert.equal(claim.kind, 'fresh');
  assert.throws(() => book.claim('k', () => 'f'), KeyInFlightError);
});

test('a fingerprint is b. and the SHA-256 (base64url) of the body\'s bytes; the legacy one, of the body as JSON, as earlier versions stored it', () => {
  const bytes = Buffer.from('{"sku":"LMP-1","name":"Lampe à poser","price":39.9}');
  assert.equal(requestFingerprint(bytes), `b.${createHash('sha256').update(bytes).digest('base64url')}`);
  // The same value sent with other spacing is another request.
  assert.notEqual(requestFingerprint(Buffer.from('{ "sku": "LMP-1", "name": "Lampe à poser", "price": 39.9 }')), requestFingerprint(bytes));
  // Logs and answer files hold fingerprints of earlier versions: a retry after an upgrade must match the one stored before it.
  const body = { sku: 'LMP-1', name: 'Lampe à poser', price: 39.9 };
  assert.equal(legacyFingerprint(body), '2e7mSjxWGLZFXGL6FOWFpNduFnR8lLNTq7KwK1U1Gi8');
  for (const other of [{}, [], 'text \ud800', { a: [1, { b: null }], '𝄞': '\u2028' }]) {
    assert.equal(legacyFingerprint(other), createHash('sha256').update(JSON.stringify(other)).digest('base64url'));
  }
  assert.notEqual(legacyFingerprint({ a: 1, b: 2 }), legacyFingerprint({ b: 2, a: 1 }));
});

test('matchesRequest -> the same digest; an unmarked one of an earlier version, its digest of the bytes or of the value, computed only when asked for', () => {
  let computed = 0;
  const legacy = (): string => {
    computed++;
    return 'old';
  };
  assert.equal(matchesRequest('b.new', 'b.new', legacy), true);
  assert.equal(computed, 0);
  // Recorded by this version: the bytes' digest alone decides, the value's is never asked for.
  assert.equal(matchesRequest('b.other', 'b.new', legacy), false);
  assert.equal(computed, 0);
  // Recorded by an earlier version: its unmarked digest of the bytes, or of the value re-serialised.
  assert.equal(matchesRequest('new', 'b.new', legacy), true);
  assert.equal(computed, 0);
  assert.equal(matchesRequest('old', 'b.new', legacy), true);
  assert.equal(matchesRequest('other', 'b.new', legacy), false);
  assert.equal(computed, 2);
  assert.equal(matchesRequest('old', 'b.new'), false);
});

test('a compact body, then the same JSON re-spaced under the same key -> another request (422), not a replay', () => {
  const first = Buffer.from('{"name":"idem3"}');
  const stored = requestFingerprint(first);
  for (const retry of ['{ "name":"idem3" }', '{"name":"idem3"}\n', '{"name": "idem3"}']) {
    const bytes = Buffer.from(retry);
    assert.equal(matchesRequest(stored, requestFingerprint(bytes), () => legacyFingerprint(JSON.parse(retry))), false, retry);
  }
  assert.equal(matchesRequest(stored, requestFingerprint(Buffer.from('{"name":"idem3"}')), () => legacyFingerprint({ name: 'idem3' })), true);
});

test("sizeOf: an answer kept with its headers' text (headersJson) weighs that text too, so the byte bound holds for it", () => {
  const answer = { status: 201, headers: { etag: '"v"' }, body: '{}' };
  const plain = sizeOf({ fingerprint: 'f', at: 0, answer });
  const withText = sizeOf({ fingerprint: 'f', at: 0, answer: { ...answer, headersJson: JSON.stringify(answer.headers) } });
  assert.equal(withText - plain, JSON.stringify(answer.headers).length);
});
