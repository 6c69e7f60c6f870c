import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonString } from '../../src/structures/json-string.js';

test('jsonString -> the text JSON.stringify writes, for strings with nothing to escape and for every kind of escape', () => {
  const alphabet = ['a', 'Z', '0', '/', '-', '_', '"', '\\', '\n', '\t', '\u0000', '\u001f', '\u007f', 'é', '€', '\ud83d\ude00', '\ud800', '\udfff', ' '];
  let seed = 5;
  const random = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
  let plain = 0;
  for (let i = 0; i < 5000; i++) {
    const text = Array.from({ length: Math.floor(random() * 8) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
    const expected = JSON.stringify(text);
    if (expected === `"${text}"`) plain++;
    assert.equal(jsonString(text), expected, expected);
  }
  // Both ways were taken.
  assert.ok(plain > 500 && plain < 4500, `${plain} of 5000 with nothing to escape`);
});
