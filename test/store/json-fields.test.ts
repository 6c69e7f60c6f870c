import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { valueAt } from '../../src/conventions/query.js';
import { valuesAt } from '../../src/store/log/json-fields.js';

const paths: string[][] = [['a'], ['b'], ['a', 'b'], ['a', 'b', 'c'], ['é'], ['x y'], ['q"k'], ['n'], ['arr'], ['arr', '0'], ['__proto__'], ['z']];
const read = (text: string): unknown[] => {
  const bytes = Buffer.from(`  ${text}\n`);
  return valuesAt(bytes, 2, bytes.length - 1, paths);
};
const expected = (text: string): unknown[] => {
  const record: unknown = JSON.parse(text);
  return paths.map((path) => valueAt(record, path));
};

describe('valuesAt: the values JSON.parse would give, without parsing the record', () => {
  for (const text of [
    '{}',
    '{"a":1,"b":"two"}',
    '{ "a" : { "b" : { "c" : [1, {"d":2}] } } , "b" : null }',
    '{"a":{"b":"x"},"a":{"c":1}}',
    '{"a":{"b":"x"},"a":5}',
    '{"a":5,"a":{"b":"y"}}',
    '{"\\u00e9":"accent","x y":true,"q\\"k":false}',
    '{"é":"raw utf-8 \\n escaped \\"quote\\" \\\\ end","n":-1.5e3}',
    '{"arr":[1,"]",{"}":"{"}],"z":"after"}',
    '{"__proto__":{"polluted":true},"z":0}',
    '{"a":"\\\\","b":"\\\\\\"","z":[]}',
    '{"b":{"a":1},"a":{"b":{"c":"deep"}}}',
    '{"n":0,"z":-0}',
    '{"n":-42,"z":999999999999999}',
    '{"n":-999999999999999,"z":1234567890123456}',
    '{"n":9007199254740993,"z":-12345678901234567890}',
    '{"n":10.0,"z":1e3}',
    '{"n":-0.5,"z":7E-2}',
  ]) {
    test(`${text} -> same values as JSON.parse + valueAt`, () => {
      assert.deepEqual(read(text), expected(text));
    });
  }
  test('random records -> same values as JSON.parse + valueAt', () => {
    let seed = 7;
    const rnd = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const names = ['a', 'b', 'c', 'é', 'x y', 'q"k', 'n', 'arr', 'z', '0'];
    const value = (depth: number): unknown => {
      const r = rnd();
      if (depth < 3 && r < 0.25) return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 4) }, () => [names[Math.floor(rnd() * names.length)]!, value(depth + 1)]));
      if (depth < 3 && r < 0.35) return Array.from({ length: Math.floor(rnd() * 3) }, () => value(depth + 1));
      if (r < 0.5) return ['', 'plain', 'q"uote', 'back\\slash', 'ünï', '}{][,:', '\n'][Math.floor(rnd() * 7)];
      // Long strings (searched natively past 24 bytes) with quotes and backslashes anywhere.
      if (r < 0.6) return Array.from({ length: Math.floor(rnd() * 40) }, () => ['ab', '"', '\\', '\\"', 'ü', 'x'.repeat(9)][Math.floor(rnd() * 6)]).join('');
      if (r < 0.85) return Math.round((rnd() - 0.5) * 1e6) / 100;
      return [true, false, null][Math.floor(rnd() * 3)];
    };
    for (let i = 0; i < 2000; i++) {
      const text = JSON.stringify(Object.fromEntries(Array.from({ length: Math.floor(rnd() * 6) }, () => [names[Math.floor(rnd() * names.length)]!, value(0)])));
      assert.deepEqual(read(text), expected(text), text);
    }
  });
});
