import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LineScanner } from '../../src/store/log/line-scanner.js';

const scanner = new LineScanner();
const scan = (text: string): boolean => {
  const bytes = Buffer.from(text);
  return scanner.scan(bytes, 0, bytes.length);
};

const accepted: [string, { id?: string; deleted?: boolean; idNotString?: boolean }][] = [
  ['{}', {}],
  ['{"id":"a"}', { id: 'a' }],
  ['  {"id":"a"}\r', { id: 'a' }],
  ['{"id":"a","_deleted":true}', { id: 'a', deleted: true }],
  ['{"_deleted":false,"id":"a"}', { id: 'a', deleted: false }],
  ['{"id":1}', { idNotString: true }],
  ['{"id":"first","id":"last"}', { id: 'last' }],
  ['{"a":[1,-2.5e+3,0,{"b":null}],"c":{"d":[true,false]},"id":"x"}', { id: 'x' }],
  ['{"id":"é\\"\\u0041","x":"\\/\\b\\f\\n\\r\\t\\\\"}', { id: 'é"A' }],
  ['{"nested":{"id":"inner"}}', {}],
  [`{"deep":${'['.repeat(200)}${']'.repeat(200)}}`, {}],
];

for (const [text, expected] of accepted) {
  test(`${text.slice(0, 60)} -> accepted with ${JSON.stringify(expected)}`, () => {
    assert.equal(scan(text), true);
    const r = scanner.result;
    const bytes = Buffer.from(text);
    const id = r.idStart < 0 ? undefined : (JSON.parse(`"${bytes.toString('utf8', r.idStart, r.idEnd)}"`) as string);
    assert.equal(id, expected.id);
    assert.equal(r.deleted, expected.deleted ?? false);
    assert.equal(r.idNotString, expected.idNotString ?? false);
    assert.equal(bytes.toString('utf8', r.objectStart, r.objectEnd), text.trim());
  });
}

const rejected = [
  '', ' ', '[]', '"s"', '1', 'null', '{', '{"a":1', '{"a":1,}', '{"a":01}', '{"a":1.}', '{"a":.5}',
  '{"a":-}', '{"a":1e}', '{"a":tru}', '{"a":nul}', '{"a":[1 2]}', '{"a" 1}', '{a:1}', '{"a":1}}',
  '{"a":1} x', '{"a":"\t"}', '{"a":"\\x"}', '{"a":"\\u12"}', '{"a":[}', '{"a":{"b"}}', "{'a':1}",
  '{"id":"a"}{"id":"b"}', '{"a":"unterminated}',
];
for (const text of rejected) {
  test(`${JSON.stringify(text)} -> rejected, as JSON.parse would or as a non-object`, () => {
    assert.equal(scan(text), false);
  });
}

test('50000 generated lines and their prefixes -> the scanner agrees with JSON.parse', () => {
  let seed = 7;
  const rand = (): number => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  const values = (): unknown => {
    const r = rand();
    if (r < 0.2) return Math.floor(rand() * 1e6) / 100 - 500;
    if (r < 0.4) return 's"\\\n\u0001é' + rand().toString(36);
    if (r < 0.5) return [1, 'two', null, true];
    if (r < 0.6) return { k: { j: [false] } };
    return rand().toString(36);
  };
  for (let i = 0; i < 50_000; i++) {
    const text = JSON.stringify({ id: rand().toString(36), a: values(), b: values(), _deleted: rand() < 0.3 });
    const cut = text.slice(0, Math.floor(rand() * (text.length + 1)));
    for (const candidate of [text, cut]) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(candidate);
      } catch {
        parsed = undefined;
      }
      const isObject = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
      assert.equal(scan(candidate), isObject, candidate);
    }
  }
});
