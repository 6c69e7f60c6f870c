import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkIfMatch, checkIfNoneMatch, codedTag, entityTag, notModified, parseTagList, versionTags } from '../../src/conventions/conditional.js';
import { chooseEncoding } from '../../src/conventions/accept-encoding.js';
import { encode } from '../../src/http/encoding.js';
import { HttpProblem } from '../../src/conventions/problem.js';
import { gunzipSync, brotliDecompressSync } from 'node:zlib';

const HAL = 'application/hal+json';

describe('entity tags', () => {
  test('HAL -> "v"; JSON -> "v-json"; coded -> suffix inside the quotes', () => {
    assert.equal(entityTag('1.a', HAL, HAL), '"1.a"');
    assert.equal(entityTag('1.a', 'application/json', HAL), '"1.a-json"');
    assert.equal(codedTag('"1.a-json"', 'br'), '"1.a-json-br"');
  });
  for (const [header, tags] of [
    ['*', ['*']],
    ['"a"', ['"a"']],
    ['"a", W/"b" ,"c,d"', ['"a"', 'W/"b"', '"c,d"']],
    ['junk', []],
  ] as const) {
    test(`parseTagList(${header}) -> ${JSON.stringify(tags)}`, () => assert.deepEqual(parseTagList(header), tags));
  }
});

describe('notModified (weak comparison)', () => {
  for (const [header, etag, expected] of [
    [undefined, '"a"', false],
    ['"a"', '"a"', true],
    ['W/"a"', '"a"', true],
    ['"a-gzip"', '"a"', true],
    ['"b", "a-json-br"', '"a-json"', true],
    ['"a-json"', '"a"', false],
    ['*', '"a"', true],
    ['"b"', '"a"', false],
  ] as const) {
    test(`If-None-Match ${header} against ${etag} -> ${expected}`, () => assert.equal(notModified(header, etag), expected));
  }
});

describe('checkIfMatch (strong comparison)', () => {
  for (const [header, ok] of [
    [undefined, true],
    ['*', true],
    ['"v1"', true],
    ['"v1-json"', true],
    ['"v1-gzip"', true],
    ['"x", "v1-json-br"', true],
    ['W/"v1"', false],
    ['"v2"', false],
  ] as const) {
    test(`If-Match ${header} on version v1 -> ${ok ? 'passes' : '412'}`, () => {
      if (ok) assert.doesNotThrow(() => checkIfMatch(header, versionTags('v1', HAL)));
      else assert.throws(() => checkIfMatch(header, versionTags('v1', HAL)), (e: unknown) => e instanceof HttpProblem && e.status === 412);
    });
  }
});

describe('a file store tag of an earlier version ("<line>.<hash>") names the version of its hash', () => {
  for (const [header, version, ok] of [
    ['"1.13sb741ydyi"', '13sb741ydyi', true],
    ['"2s.13sb741ydyi-json-br"', '13sb741ydyi', true],
    ['"1.13sb741ydyi"', '13sb741ydyz', false],
    ['W/"1.13sb741ydyi"', '13sb741ydyi', false],
    // A tag with dots of its own (PostgreSQL's `rev.pos.hash`) is compared whole.
    ['"1.8q.yks3c5wt1o"', '1.8q.yks3c5wt1o', true],
    ['"2.8q.yks3c5wt1o"', '1.8q.yks3c5wt1o', false],
    ['"7.8q.yks3c5wt1o"', '8q.yks3c5wt1o', false],
  ] as const) {
    test(`If-Match ${header} on version ${version} -> ${ok ? 'passes' : '412'}`, () => {
      if (ok) assert.doesNotThrow(() => checkIfMatch(header, versionTags(version, HAL)));
      else assert.throws(() => checkIfMatch(header, versionTags(version, HAL)), (e: unknown) => e instanceof HttpProblem && e.status === 412);
    });
  }
  test('If-None-Match with it -> 200: it vouches for the data, not for the bytes of before (no epoch); a collection page tag is compared whole', () => {
    assert.equal(notModified('W/"1.13sb741ydyi-gzip"', '"13sb741ydyi"'), false);
    assert.equal(notModified('W/"1.13sb741ydyi-gzip"', '"13sb741ydyi:0a1b2c3d"'), false);
    assert.equal(notModified('"c.5"', '"5"'), false);
    assert.equal(notModified('"c.5"', '"c.5"'), true);
  });
  test('If-Match with it under an epoch -> passes', () => {
    assert.doesNotThrow(() => checkIfMatch('"2s.13sb741ydyi-json-br"', versionTags('13sb741ydyi', HAL, '0a1b2c3d')));
    assert.throws(() => checkIfMatch('"2s.13sb741ydyz"', versionTags('13sb741ydyi', HAL, '0a1b2c3d')), (e: unknown) => e instanceof HttpProblem && e.status === 412);
  });
});

describe('tags under a representation epoch ("<version>:<epoch>")', () => {
  const NOW = '0a1b2c3d';
  const BEFORE = 'zz9y8x7w';
  test('the epoch goes between the version and the media type\'s suffixes', () => {
    assert.equal(entityTag('1.a', HAL, HAL, NOW), '"1.a:0a1b2c3d"');
    assert.equal(entityTag('1.a', 'application/json', HAL, NOW), '"1.a:0a1b2c3d-json"');
    assert.deepEqual(versionTags('v1', HAL, NOW), ['"v1:0a1b2c3d"', '"v1:0a1b2c3d-json"', '"v1:0a1b2c3d-forms"', '"v1:0a1b2c3d-forms-read"']);
  });
  for (const [header, expected] of [
    ['"v1:0a1b2c3d"', true],
    ['W/"v1:0a1b2c3d-gzip"', true],
    ['"v1:zz9y8x7w"', false],
    ['"v1:zz9y8x7w-br"', false],
    ['"v1"', false],
    ['"v2:0a1b2c3d"', false],
  ] as const) {
    test(`If-None-Match ${header} on a GET of v1 under ${NOW} -> ${expected ? '304' : '200'} (the whole tag)`, () => assert.equal(notModified(header, entityTag('v1', HAL, HAL, NOW)), expected));
  }
  for (const [header, version, ok] of [
    ['"v1:0a1b2c3d"', 'v1', true],
    ['"v1:zz9y8x7w"', 'v1', true],
    ['"v1:zz9y8x7w-json-gzip"', 'v1', true],
    ['"v1:zz9y8x7w-forms-read"', 'v1', true],
    ['"v1"', 'v1', true],
    ['"v1-json"', 'v1', true],
    ['"v0:zz9y8x7w"', 'v1', false],
    ['"v0:0a1b2c3d"', 'v1', false],
    ['W/"v1:zz9y8x7w"', 'v1', false],
    // PostgreSQL's versions, dots and all; a collection's tag.
    ['"1.8q.yks3c5wt1o:zz9y8x7w-json"', '1.8q.yks3c5wt1o', true],
    ['"2.8q.yks3c5wt1o:zz9y8x7w"', '1.8q.yks3c5wt1o', false],
    ['"c.f.ab-3.1:zz9y8x7w"', 'c.f.ab-3.1', true],
    ['"c.f.ab-3.1:zz9y8x7w"', 'c.f.ab-3.2', false],
  ] as const) {
    test(`If-Match ${header} on version ${version} under ${NOW} -> ${ok ? 'passes (the data is the same)' : '412'}`, () => {
      if (ok) assert.doesNotThrow(() => checkIfMatch(header, versionTags(version, HAL, NOW)));
      else assert.throws(() => checkIfMatch(header, versionTags(version, HAL, NOW)), (e: unknown) => e instanceof HttpProblem && e.status === 412);
    });
  }
  test(`If-None-Match on a write names the data too: a tag of the current version under ${BEFORE} -> 412`, () => {
    assert.throws(() => checkIfNoneMatch(`"v1:${BEFORE}"`, versionTags('v1', HAL, NOW)), (e: unknown) => e instanceof HttpProblem && e.status === 412);
    assert.doesNotThrow(() => checkIfNoneMatch(`"v0:${BEFORE}"`, versionTags('v1', HAL, NOW)));
  });
});

describe('checkIfNoneMatch on a write', () => {
  for (const [header, ok] of [
    [undefined, true],
    ['*', false],
    ['"v1"', false],
    ['W/"v1-json"', false],
    ['"v2"', true],
  ] as const) {
    test(`If-None-Match ${header} on version v1 -> ${ok ? 'passes' : '412'}`, () => {
      if (ok) assert.doesNotThrow(() => checkIfNoneMatch(header, versionTags('v1', HAL)));
      else assert.throws(() => checkIfNoneMatch(header, versionTags('v1', HAL)), (e: unknown) => e instanceof HttpProblem && e.status === 412);
    });
  }
});

describe('chooseEncoding', () => {
  for (const [header, coding] of [
    [undefined, undefined],
    ['', undefined],
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate, br', 'br'],
    ['br;q=0.5, gzip', 'gzip'],
    ['br;q=0, gzip;q=0', undefined],
    ['*', 'br'],
    ['*;q=0', undefined],
    ['identity', undefined],
    ['deflate', undefined],
  ] as const) {
    test(`Accept-Encoding ${JSON.stringify(header)} -> ${coding}`, () => assert.equal(chooseEncoding(header), coding));
  }
  test('encode -> round-trips for both codings', () => {
    const body = JSON.stringify({ text: 'x'.repeat(5000) });
    assert.equal(gunzipSync(encode(body, 'gzip')).toString(), body);
    assert.equal(brotliDecompressSync(encode(body, 'br')).toString(), body);
  });
});
