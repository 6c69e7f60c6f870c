import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bearerToken, createAuthenticator, parseTokens } from '../../src/http/auth.js';
import { HttpProblem } from '../../src/conventions/problem.js';

describe('bearerToken', () => {
  for (const [header, token] of [
    [undefined, undefined],
    ['Bearer abc', 'abc'],
    ['bearer  abc ', 'abc'],
    ['BEARER a.b-c~d', 'a.b-c~d'],
    ['Basic abc', undefined],
    ['Bearer', undefined],
    ['Bearer a b', undefined],
    ['abc', undefined],
  ] as const) {
    test(`${JSON.stringify(header)} -> ${JSON.stringify(token)}`, () => assert.equal(bearerToken(header), token));
  }
});

describe('createAuthenticator', () => {
  const auth = createAuthenticator(['w', 'read:r', 'read:both', 'both']);
  const outcome = (header: string | undefined, write: boolean): number => {
    try {
      auth.check(header, write);
      return 200;
    } catch (error) {
      assert.ok(error instanceof HttpProblem);
      return error.status;
    }
  };
  for (const [header, write, status] of [
    ['Bearer w', false, 200],
    ['Bearer w', true, 200],
    ['Bearer r', false, 200],
    ['Bearer r', true, 403],
    ['Bearer both', true, 200],
    ['Bearer read:r', false, 401],
    ['Bearer x', false, 401],
    [undefined, false, 401],
  ] as const) {
    test(`${header ?? 'no header'} ${write ? 'write' : 'read'} -> ${status}`, () => assert.equal(outcome(header, write), status));
  }
  test('401 -> carries WWW-Authenticate: Bearer realm="halserve"', () => {
    assert.throws(() => auth.check(undefined, false), (e: unknown) => e instanceof HttpProblem && e.headers['www-authenticate'] === 'Bearer realm="halserve"');
  });
  test('no tokens -> disabled, everything allowed', () => {
    const open = createAuthenticator([]);
    assert.equal(open.enabled, false);
    assert.doesNotThrow(() => open.check(undefined, true));
  });
  for (const token of ['', 'read:']) {
    test(`empty token ${JSON.stringify(token)} -> refused`, () => assert.throws(() => parseTokens([token]), /empty/));
  }
});
