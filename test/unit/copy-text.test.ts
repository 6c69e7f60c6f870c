import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decimalColumn, splitColumns, unescapeColumn } from '../../src/store/pg/copy-text.js';

const unescape = (text: string): string => {
  const src = Buffer.from(text, 'latin1');
  const dst = Buffer.alloc(src.length + 4, 0x2a);
  const end = unescapeColumn(src, 0, src.length, dst, 2);
  return dst.toString('latin1', 2, end);
};

describe('unescapeColumn (COPY text format)', () => {
  const cases: [string, string, string][] = [
    ['no backslash', '{"a":1}', '{"a":1}'],
    ['\\\\ -> one backslash', '{"a":"x\\\\"y"}', '{"a":"x\\"y"}'],
    ['\\t \\n \\r \\b \\f \\v -> control characters', 'a\\tb\\nc\\rd\\be\\ff\\vg', 'a\tb\nc\rd\be\ff\vg'],
    ['octal \\101, \\7 and \\60x', '\\101-\\7-\\60x', 'A-\x07-0x'],
    ['hex \\x41 and \\x4', '\\x41-\\x4', 'A-\x04'],
    ['\\x without a hex digit -> x', '\\xg', 'xg'],
    ['any other escaped character -> itself', '\\"\\q', '"q'],
    ['a backslash at the very end -> kept', 'ab\\', 'ab\\'],
  ];
  for (const [name, input, expected] of cases) test(`${name}`, () => assert.equal(unescape(input), expected));

  test('a column inside a longer row -> only its bytes, written where asked', () => {
    const src = Buffer.from('id\\\\1\tbody');
    const dst = Buffer.alloc(16);
    const end = unescapeColumn(src, 0, 5, dst, 3);
    assert.equal(dst.toString('latin1', 3, end), 'id\\1');
  });
});

describe('splitColumns and decimalColumn', () => {
  test('five columns -> their bounds; the last runs to the end of the row', () => {
    const row = Buffer.from('items\tid1\t42\t7\t{"a":"\\t"}');
    const bounds = new Int32Array(6);
    assert.equal(splitColumns(row, 0, row.length, bounds, 5), true);
    const column = (k: number): string => row.toString('latin1', bounds[k]!, bounds[k + 1]! - 1);
    assert.deepEqual([0, 1, 2, 3, 4].map(column), ['items', 'id1', '42', '7', '{"a":"\\t"}']);
    assert.equal(decimalColumn(row, bounds[2]!, bounds[3]! - 1), 42);
  });

  test('fewer columns than asked -> false', () => {
    const row = Buffer.from('items\tid1');
    assert.equal(splitColumns(row, 0, row.length, new Int32Array(6), 5), false);
  });
});
