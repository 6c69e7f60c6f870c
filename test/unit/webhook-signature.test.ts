import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { secretKey, secretProblem, signWebhook, webhookHeaders } from '../../src/conventions/webhook-signature.js';
import { webhookLabel, webhookUrlProblem } from '../../src/conventions/webhook-url.js';

const WHSEC = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
const PLAIN = 'a plain secret of 24+ characters';

describe('signWebhook (Standard Webhooks, v1 HMAC-SHA256)', () => {
  test('the specification\'s own example -> its signature', () => {
    // https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md (Signature scheme).
    const key = secretKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    const body = '{"test": 2432232314}';
    assert.equal(signWebhook(key, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, body), 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  for (const [label, secret, raw] of [
    ['a whsec_ secret', WHSEC, false],
    ['a plain secret (its UTF-8 bytes)', PLAIN, true],
  ] as const) {
    test(`${label} -> the standardwebhooks package verifies the headers`, () => {
      const body = '{"cursor":"7","type":"created"}';
      const timestamp = Math.floor(Date.now() / 1000);
      const headers = webhookHeaders(secretKey(secret), '7', timestamp, body);
      assert.deepEqual(Object.keys(headers), ['webhook-id', 'webhook-timestamp', 'webhook-signature']);
      const verifier = raw ? new Webhook(secret, { format: 'raw' }) : new Webhook(secret);
      assert.deepEqual(verifier.verify(body, headers), { cursor: '7', type: 'created' });
      assert.equal(headers['webhook-signature'], verifier.sign('7', new Date(timestamp * 1000), body));
    });
  }

  test('another body, id or timestamp -> the package refuses the signature', () => {
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders(secretKey(WHSEC), '7', timestamp, '{"a":1}');
    const verifier = new Webhook(WHSEC);
    assert.throws(() => verifier.verify('{"a":2}', headers), /No matching signature/);
    assert.throws(() => verifier.verify('{"a":1}', { ...headers, 'webhook-id': '8' }), /No matching signature/);
    assert.throws(() => verifier.verify('{"a":1}', { ...headers, 'webhook-timestamp': String(timestamp + 1) }), /No matching signature/);
  });
});

describe('secretProblem', () => {
  for (const [secret, problem] of [
    [WHSEC, undefined],
    [PLAIN, undefined],
    ['é'.repeat(24), undefined],
    ['short', 'a secret must be at least 24 characters (or whsec_ and base64 of at least 24 bytes)'],
    [`whsec_${Buffer.alloc(23).toString('base64')}`, 'a whsec_ secret must hold at least 24 bytes, not 23'],
    ['whsec_not*base64!but-long-enough-to-count', 'a whsec_ secret must be followed by base64 (A-Z a-z 0-9 + /, padded with =)'],
    ['whsec_abc', 'a whsec_ secret must be followed by base64 (A-Z a-z 0-9 + /, padded with =)'],
  ] as const) {
    test(`${JSON.stringify(secret)} -> ${problem ?? 'accepted'}`, () => assert.equal(secretProblem(secret), problem));
  }

  test('secretKey: whsec_ -> the decoded bytes; any other -> its UTF-8 bytes', () => {
    assert.deepEqual(secretKey(WHSEC), Buffer.from('0123456789abcdef0123456789abcdef'));
    assert.deepEqual(secretKey(PLAIN), Buffer.from(PLAIN, 'utf8'));
  });
});

describe('webhook URLs', () => {
  for (const [url, problem] of [
    ['https://example.com/hook', undefined],
    ['http://127.0.0.1:9000/', undefined],
    ['ftp://example.com/hook', '"ftp://example.com/hook" is not an http:// or https:// URL'],
    ['example.com/hook', '"example.com/hook" is not a URL (webhooks are http:// or https:// URLs)'],
    ['mailto:a@example.com', '"mailto:[redacted]@example.com" is not an http:// or https:// URL'],
    // Quoted without user-info, query or fragment: the message goes to stderr, a log.
    ['htps://alice:hunter2@hooks.example/x?token=q1#f', '"htps://[redacted]@hooks.example/x?[redacted]" is not an http:// or https:// URL'],
    ['https://alice:hunter2@/x?token=q1', '"https://[redacted]@/x?[redacted]" is not a URL (webhooks are http:// or https:// URLs)'],
    ['http//alice:hunter2@hooks.example/x', '"http//[redacted]@hooks.example/x" is not a URL (webhooks are http:// or https:// URLs)'],
  ] as const) {
    test(`${url} -> ${problem ?? 'accepted'}`, () => assert.equal(webhookUrlProblem(url), problem));
  }

  for (const [url, label] of [
    ['https://user:pass@example.com/hook?token=secret#x', 'https://example.com:443/hook'],
    ['http://example.com', 'http://example.com:80/'],
    ['http://127.0.0.1:9000/a/b', 'http://127.0.0.1:9000/a/b'],
    ['http://[::1]:8080/h', 'http://[::1]:8080/h'],
  ] as const) {
    test(`label of ${url} -> ${label} (no user-info, no query)`, () => assert.equal(webhookLabel(new URL(url)), label));
  }
});
