import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_BODY_DEPTH, parseJsonObject } from '../../src/http/body.js';
import { HttpProblem } from '../../src/conventions/problem.js';

/** `parseJsonObject` is exported for embedders, who may call it on a body no scanner has counted. */
const parse = (text: string): unknown => parseJsonObject(Buffer.from(text));

function assertProblem(text: string, detail: string): void {
  assert.throws(
    () => parse(text),
    (error: unknown) => error instanceof HttpProblem && error.status === 400 && error.detail === detail,
    text.slice(0, 60),
  );
}

const deepArrays = (levels: number): string => `{"a":${'['.repeat(levels)}1${']'.repeat(levels)}}`;
const deepObjects = (levels: number): string => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

describe('parseJsonObject', () => {
  test(`${MAX_BODY_DEPTH} levels -> parsed; one more -> 400, in arrays and in objects`, () => {
    assert.deepEqual(JSON.stringify(parse(deepArrays(MAX_BODY_DEPTH - 1))), deepArrays(MAX_BODY_DEPTH - 1));
    assert.deepEqual(JSON.stringify(parse(deepObjects(MAX_BODY_DEPTH))), deepObjects(MAX_BODY_DEPTH));
    assertProblem(deepArrays(MAX_BODY_DEPTH), `Request body is nested deeper than ${MAX_BODY_DEPTH} levels`);
    assertProblem(deepObjects(MAX_BODY_DEPTH + 1), `Request body is nested deeper than ${MAX_BODY_DEPTH} levels`);
  });

  test('200,000 levels, unscanned -> 400, not a stack overflow', () => {
    assertProblem(deepArrays(200_000), `Request body is nested deeper than ${MAX_BODY_DEPTH} levels`);
    assertProblem(deepObjects(200_000), `Request body is nested deeper than ${MAX_BODY_DEPTH} levels`);
  });

  test('a number that overflows to ±Infinity anywhere -> 400; deep finite ones and underflow -> parsed', () => {
    for (const text of ['{"a":1e400}', '{"a":[0,[1,[-1e309]]]}', '{"a":{"b":{"c":2e308}},"d":1}', '{"x":1,"y":[true,null,"1e400",1e999]}']) {
      assertProblem(text, 'Request body holds a number too large to represent');
    }
    assert.deepEqual(parse('{"a":[0,[1,[-1e308]]],"b":1e-400,"c":"1e400"}'), { a: [0, [1, [-1e308]]], b: 0, c: '1e400' });
  });

  test('not an object, not JSON, not UTF-8 -> 400 problems', () => {
    assertProblem('[1]', 'Request body must be a JSON object');
    assertProblem('null', 'Request body must be a JSON object');
    assert.throws(() => parse('{"a":'), (error: unknown) => error instanceof HttpProblem && error.status === 400 && error.detail.startsWith('Request body is not valid JSON'));
    assert.throws(() => parseJsonObject(Buffer.from([0x7b, 0xff, 0x7d])), (error: unknown) => error instanceof HttpProblem && error.detail === 'Request body is not valid UTF-8');
  });

  test('a "__proto__" member stays data', () => {
    const value = parse('{"__proto__":{"polluted":1},"a":1}') as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(value), Object.prototype);
    assert.deepEqual(Object.keys(value), ['__proto__', 'a']);
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });
});
