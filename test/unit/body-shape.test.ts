import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BodyShapeScanner, checkBodyShape, checkValueShape, type BodyShapeLimits, type ShapeViolation } from '../../src/http/body-shape.js';
import { unscannedBytes } from '../../src/http/body.js';
import { prng } from '../helpers/prng.js';

/** What the scanner must count, computed from the parsed value: the reference it is held to. */
function shapeOf(value: unknown, depth = 1): { values: number; members: number; depth: number } {
  let values = 1;
  let members = 0;
  let deepest = 0;
  if (typeof value === 'object' && value !== null) {
    deepest = depth;
    const children = Object.values(value);
    if (!Array.isArray(value)) members = children.length;
    for (const child of children) {
      const inner = shapeOf(child, depth + 1);
      values += inner.values;
      members = Math.max(members, inner.members);
      deepest = Math.max(deepest, inner.depth);
    }
  }
  return { values, members, depth: deepest };
}

const LOOSE: BodyShapeLimits = { values: 1e9, members: 1e9, depth: 1e6 };

/** The text scanned whole, split in two at every byte, and one byte at a time: the outcomes, which must all agree. */
function scanEverySplit(text: string, limits: BodyShapeLimits): ShapeViolation | undefined {
  const bytes = Buffer.from(text);
  const whole = checkBodyShape(bytes, limits);
  for (let cut = 0; cut <= bytes.length; cut++) {
    const scanner = new BodyShapeScanner(limits);
    const first = scanner.write(bytes.subarray(0, cut));
    const outcome = first ?? scanner.write(bytes.subarray(cut));
    assert.deepEqual(outcome, whole, `split at byte ${cut} of ${JSON.stringify(text)}`);
  }
  const scanner = new BodyShapeScanner(limits);
  let outcome: ShapeViolation | undefined;
  for (let i = 0; i < bytes.length; i++) outcome = scanner.write(bytes.subarray(i, i + 1)) ?? outcome;
  assert.deepEqual(outcome, whole, `one byte at a time: ${JSON.stringify(text)}`);
  return whole;
}

/**
 * A body exactly at its own limits passes; one below any of them is refused with that limit, at
 * every split. The parsed value counts the same through `checkValueShape` (which leaves depth to the parser).
 */
function assertExact(text: string): void {
  // A BOM is dropped by the decoder before JSON.parse (RFC 8259 §8.1).
  const parsed: unknown = JSON.parse(text.replace(/^\ufeff/, ''));
  const { values, members, depth } = shapeOf(parsed);
  const exact = { values, members, depth };
  assert.equal(scanEverySplit(text, exact), undefined, `${text} at its own limits`);
  assert.equal(checkValueShape(parsed, exact), undefined, `${text} parsed, at its own limits`);
  for (const limit of ['values', 'members', 'depth'] as const) {
    if (exact[limit] === 0) continue;
    const tighter = { ...exact, [limit]: exact[limit] - 1 };
    assert.deepEqual(scanEverySplit(text, tighter), { limit, max: tighter[limit] }, `${text} with ${limit} ${tighter[limit]}`);
    if (limit !== 'depth') assert.deepEqual(checkValueShape(parsed, tighter), { limit, max: tighter[limit] }, `${text} parsed, with ${limit} ${tighter[limit]}`);
  }
}

describe('body shape: counts equal the parsed value (values, members of the largest object, depth)', () => {
  for (const text of [
    '{}',
    '{"a":1}',
    '{"a":1,"b":[1,2,3],"c":{"d":null,"e":true,"f":false}}',
    '{"a":[],"b":{},"c":[{}],"d":[[]]}',
    ' \n{ "a" : -1.5e+10 , "b" :\t"x" }\r\n',
    '{"k":"a\\"b","l":"\\\\","m":"\\\\\\"","n":"\\u0022","o":"\\u005c"}',
    '{"\\"":1,"\\\\":"\\\\\\\\","x":"[{,:}]"}',
    '{"emoji":"😀 é ü","\\ud83d\\ude00":"\\u00e9"}',
    '{"a":[1,[2,[3,[4,{"b":[5,{"c":"}"}]}]]]]}',
    '{"a":["x","y",{"k1":1,"k2":2,"k3":3}],"z":"{\\"not\\":\\"an object\\"}"}',
    '{"t":true,"f":false,"n":null,"num":0,"neg":-0.0,"exp":1E-7}',
    '\ufeff{"bom":1}',
  ]) {
    test(`${JSON.stringify(text)} -> exact at every split`, () => assertExact(text));
  }

  test('a body nested 40 deep, with members after each deep child -> exact at every split (the scanner\'s stacks grow past their first 16 levels and keep what they held)', () => {
    const nest = (n: number): string => (n === 0 ? '1' : n % 2 === 1 ? `{"x${n}":${nest(n - 1)},"y${n}":[${n}],"z${n}":{}}` : `[${nest(n - 1)},{"w":${n}}]`);
    const text = nest(40);
    assert.equal(shapeOf(JSON.parse(text)).depth > 16, true);
    assertExact(text);
  });

  test('random bodies with escapes, nesting and unicode (seeded) -> exact at every split', () => {
    let seed = 20261122;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pieces = ['"', '\\', '\\u0041', '{', '}', '[', ']', ',', ':', 'é', '😀', 'a', ' ', '\n', '\\"', '\\\\'];
    const string = (): string => Array.from({ length: random(6) }, () => pieces[random(pieces.length)] ?? '').join('');
    const value = (depth: number): unknown => {
      const kind = depth > 4 ? random(4) : random(6);
      if (kind === 0) return string();
      if (kind === 1) return random(1000) - 500 + random(10) / 10;
      if (kind === 2) return [true, false, null][random(3)];
      if (kind === 3) return random(2) === 0 ? [] : {};
      if (kind === 4) return Array.from({ length: random(4) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: random(4) }, () => [string(), value(depth + 1)]));
    };
    for (let i = 0; i < 60; i++) {
      const body = { [string()]: value(1), [string()]: value(1) };
      assertExact(random(2) === 0 ? JSON.stringify(body) : JSON.stringify(body, null, 1));
    }
  });
});

describe('body shape: limits', () => {
  const limits: BodyShapeLimits = { values: 5, members: 2, depth: 3 };
  for (const [text, outcome] of [
    ['{"a":1,"b":2}', undefined],
    ['{"a":1,"b":2,"c":3}', { limit: 'members', max: 2 }],
    ['{"a":[1,2,3]}', undefined],
    ['{"a":[1,2,3,4]}', { limit: 'values', max: 5 }],
    ['{"a":[[1]]}', undefined],
    ['{"a":[[[1]]]}', { limit: 'depth', max: 3 }],
    // Members are counted per object: two objects of two members each are within a limit of two.
    ['{"a":{"x":1,"y":2},"b":{}}', undefined],
    // Strings that look like structure are not structure.
    ['{"a":"[1,2,3,4,5,6]","b":"{\\"c\\":[7,8,9]}"}', undefined],
    // Literals count once, however many letters they have.
    ['{"a":[true,false,null]}', undefined],
  ] as const) {
    test(`${text} with values 5, members 2, depth 3 -> ${outcome ? `${outcome.limit} ${outcome.max}` : 'within'}`, () => {
      assert.deepEqual(scanEverySplit(text, limits), outcome);
    });
  }

  test('121,838 members in one object (the old pathological body) -> refused in the first chunk, never counted whole', () => {
    const body = Buffer.from(JSON.stringify(Object.fromEntries(Array.from({ length: 121_838 }, (_, i) => [`k${i}`, i]))));
    const scanner = new BodyShapeScanner({ values: 10_000, members: 1_000, depth: 1024 });
    assert.deepEqual(scanner.write(body.subarray(0, 65_536)), { limit: 'members', max: 1_000 });
    assert.equal(scanner.values, 1_001);
    // Once refused, a scanner stays refused and reads nothing more.
    assert.deepEqual(scanner.write(body.subarray(65_536)), { limit: 'members', max: 1_000 });
    assert.equal(scanner.values, 1_001);
  });

  test('a 4 MiB string with escapes throughout -> 2 values, at any chunk size', () => {
    const text = JSON.stringify({ s: 'x\\"y'.repeat(1024 * 1024) });
    for (const size of [1, 7, 65_536]) {
      const bytes = Buffer.from(text);
      const scanner = new BodyShapeScanner(LOOSE);
      // One byte at a time over 4 MiB is slow; the short sizes scan the first 64 KiB and the rest at once.
      const head = size < 65_536 ? 65_536 : bytes.length;
      for (let i = 0; i < head; i += size) assert.equal(scanner.write(bytes.subarray(i, Math.min(head, i + size))), undefined);
      assert.equal(scanner.write(bytes.subarray(head)), undefined);
      assert.equal(scanner.values, 2);
    }
  });

  test('an empty chunk -> nothing changes', () => {
    const scanner = new BodyShapeScanner(LOOSE);
    assert.equal(scanner.write(new Uint8Array(0)), undefined);
    assert.equal(scanner.values, 0);
  });
});

describe('unscannedBytes: bodies too small to break a limit are not scanned', () => {
  // Every byte class the scanner tells apart, so that invalid texts are tried too.
  const ALPHABET = '{}[],:"\\ 0-tx';

  for (const [values, members, depth] of [
    [6, 3, 1024],
    [12, 2, 1024],
    [40, 40, 9],
    [2_500, 1_000, 1024],
  ] as const) {
    const limits = { values, members, depth };
    const bound = unscannedBytes({ values, members }, depth);

    test(`limits ${values}/${members}/${depth}: no text of up to ${bound} bytes breaks them, valid JSON or not`, () => {
      const random = prng(values * 31 + members * 7 + depth);
      // Each length, random texts; and the texts that pack the most of each thing into the bound.
      for (let length = 1; length <= Math.min(bound, 64); length++) {
        for (let n = 0; n < 200; n++) {
          let text = '';
          for (let i = 0; i < length; i++) text += ALPHABET[Math.floor(random() * ALPHABET.length)];
          assert.equal(checkBodyShape(Buffer.from(text), limits), undefined, JSON.stringify(text));
        }
      }
      for (const densest of ['0,'.repeat(bound).slice(0, bound), '['.repeat(bound), `{${'"",'.repeat(bound)}`.slice(0, bound), `{${',"'.repeat(bound)}`.slice(0, bound)]) {
        assert.equal(checkBodyShape(Buffer.from(densest), limits), undefined, densest.slice(0, 40));
      }
    });
  }

  test('the bound is the least of the three: one byte more can break the tightest limit', () => {
    assert.equal(unscannedBytes({ values: 6, members: 3 }), 6);
    assert.deepEqual(checkBodyShape(Buffer.from('[0,0,0'), { values: 3, members: 3, depth: 1024 }), { limit: 'values', max: 3 });
    assert.equal(unscannedBytes({ values: 2_500, members: 1_000 }), 1024);
    assert.deepEqual(checkBodyShape(Buffer.from('['.repeat(1025)), { values: 2_500, members: 1_000, depth: 1024 }), { limit: 'depth', max: 1024 });
    assert.equal(unscannedBytes({ values: 100, members: 2 }), 4);
    assert.deepEqual(checkBodyShape(Buffer.from('{"",""",'), { values: 100, members: 2, depth: 1024 }), undefined);
    assert.deepEqual(checkBodyShape(Buffer.from('{"","",""'), { values: 100, members: 2, depth: 1024 }), { limit: 'members', max: 2 });
  });
});
