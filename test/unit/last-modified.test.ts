import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkIfUnmodifiedSince, httpDate, modificationDate, parseHttpDate, unmodifiedSince, unmodifiedSinceCondition } from '../../src/conventions/last-modified.js';

/** src/conventions/last-modified.ts: dates in and out, and the two date conditions (RFC 9110 §5.6.7, §13.1.3, §13.1.4). */

const NOW = 1_800_000_000;

describe('HTTP-dates', () => {
  test('httpDate -> IMF-fixdate, two-digit day; the three formats parse back to the same second', () => {
    assert.equal(httpDate(784111777), 'Sun, 06 Nov 1994 08:49:37 GMT');
    assert.equal(httpDate(0), 'Thu, 01 Jan 1970 00:00:00 GMT');
    for (const text of ['Sun, 06 Nov 1994 08:49:37 GMT', 'Sunday, 06-Nov-94 08:49:37 GMT', 'Sun Nov  6 08:49:37 1994', ' Sun, 06 Nov 1994 08:49:37 GMT ']) assert.equal(parseHttpDate(text), 784111777, text);
  });

  test('anything else -> undefined', () => {
    for (const text of ['', 'Sun, 6 Nov 1994 08:49:37 GMT', 'sun, 06 nov 1994 08:49:37 gmt', 'Sun, 06 Nov 1994 08:49:37 +0000', 'Sun, 06 Nov 1994 24:00:00 GMT', 'Sun, 30 Feb 1994 08:49:37 GMT', '784111777', 'Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT']) {
      assert.equal(parseHttpDate(text), undefined, text);
    }
  });
});

describe('modification dates and conditions', () => {
  test('modificationDate: whole seconds, never after now, none for what is no date', () => {
    assert.equal(modificationDate(1_700_000_000.9, NOW), 1_700_000_000);
    assert.equal(modificationDate(NOW + 10, NOW), NOW);
    for (const value of ['1700000000', null, undefined, -1, Number.NaN, Infinity]) assert.equal(modificationDate(value, NOW), undefined, String(value));
  });

  test('If-Modified-Since: at or after -> not modified; before, invalid, in the future, no date -> modified', () => {
    const at = httpDate(1_700_000_000);
    assert.equal(unmodifiedSince(at, 1_700_000_000, NOW), true);
    assert.equal(unmodifiedSince(httpDate(1_700_000_001), 1_700_000_000, NOW), true);
    assert.equal(unmodifiedSince(httpDate(1_699_999_999), 1_700_000_000, NOW), false);
    assert.equal(unmodifiedSince('soon', 1_700_000_000, NOW), false);
    assert.equal(unmodifiedSince(httpDate(NOW + 1), 1_700_000_000, NOW), false);
    assert.equal(unmodifiedSince(at, undefined, NOW), false);
  });

  test('If-Unmodified-Since: ignored beside If-Match or when invalid; a later modification -> 412', () => {
    const at = httpDate(1_700_000_000);
    assert.equal(unmodifiedSinceCondition('"x"', at), undefined);
    assert.equal(unmodifiedSinceCondition(undefined, 'soon'), undefined);
    assert.equal(unmodifiedSinceCondition(undefined, at), 1_700_000_000);
    checkIfUnmodifiedSince(1_700_000_000, 1_700_000_000);
    checkIfUnmodifiedSince(1_700_000_000, undefined);
    assert.throws(() => checkIfUnmodifiedSince(1_700_000_000, 1_700_000_001), { status: 412 });
  });
});
