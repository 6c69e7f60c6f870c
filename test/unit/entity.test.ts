import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clientFields, createdRecord, mergePatch, patchedText, replacedRecord, SERVER_MANAGED, withoutManaged } from '../../src/conventions/entity.js';

describe('clientFields', () => {
  test('server-managed members -> dropped, the rest kept in order', () => {
    assert.deepEqual(
      clientFields({ id: 'x', createdAt: 1, updatedAt: 2, _links: {}, _embedded: {}, _deleted: true, b: 1, a: 2 }),
      { b: 1, a: 2 },
    );
  });
  test('own __proto__ member -> stays data', () => {
    const fields = clientFields(JSON.parse('{"__proto__":{"x":1}}'));
    assert.deepEqual(Object.keys(fields), ['__proto__']);
    assert.equal(Object.getPrototypeOf(fields), Object.prototype);
  });
  test('each server-managed member alone -> dropped; none -> a copy, never the object itself', () => {
    for (const name of ['id', 'createdAt', 'updatedAt', '_links', '_embedded', '_deleted', '_change']) {
      assert.deepEqual(clientFields({ a: 1, [name]: 'x', b: 2 }), { a: 1, b: 2 }, name);
    }
    const source = JSON.parse('{"__proto__":{"x":1},"a":[1],"b":{"c":2}}') as Record<string, unknown>;
    const fields = clientFields(source);
    assert.notEqual(fields, source);
    assert.deepEqual(Object.keys(fields), ['__proto__', 'a', 'b']);
    assert.equal(Object.getPrototypeOf(fields), Object.prototype);
    fields['a'] = 0;
    assert.deepEqual(source['a'], [1]);
  });
});

describe('withoutManaged', () => {
  test('no server-managed member -> the object itself; one -> a copy without it, the source untouched', () => {
    const clean = { a: 1, b: [2] };
    assert.equal(withoutManaged(clean), clean);
    const dirty = { a: 1, _links: {}, updatedAt: 3, b: 2 };
    const fields = withoutManaged(dirty);
    assert.notEqual(fields, dirty);
    assert.deepEqual(Object.keys(fields), ['a', 'b']);
    assert.deepEqual(Object.keys(dirty), ['a', '_links', 'updatedAt', 'b']);
  });
});

describe('mergePatch (RFC 7396 appendix A)', () => {
  for (const [target, patch, result] of [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ] as const) {
    test(`${JSON.stringify(target)} + ${JSON.stringify(patch)} -> ${JSON.stringify(result)}`, () => {
      assert.deepEqual(mergePatch(target, patch), result);
    });
  }
  test('the target\'s members keep their order, new ones follow in the patch\'s, removed ones go', () => {
    const merged = mergePatch({ a: 1, b: { x: 1, y: 2 }, c: 3, d: 4 }, { e: 5, c: null, b: { y: null, z: 3 }, a: 0, f: { g: null, h: 1 } });
    assert.equal(JSON.stringify(merged), '{"a":0,"b":{"x":1,"z":3},"d":4,"e":5,"f":{"h":1}}');
  });
  test('target member __proto__ -> kept as data, merged as data', () => {
    const merged = mergePatch(JSON.parse('{"__proto__":{"a":1},"b":2}'), JSON.parse('{"__proto__":{"c":3}}')) as Record<string, unknown>;
    assert.deepEqual(Object.keys(merged), ['__proto__', 'b']);
    assert.equal(Object.getPrototypeOf(merged), Object.prototype);
    assert.equal(JSON.stringify(merged), '{"__proto__":{"a":1,"c":3},"b":2}');
  });
  test('omit -> those members of the target left out at the top level only, as clientFields then mergePatch', () => {
    const record = { id: 'x', createdAt: 1, updatedAt: 2, a: 1, b: { id: 'inner', c: 2 } };
    const patch = { b: { c: 3 }, d: 4 };
    const merged = mergePatch(record, patch, SERVER_MANAGED);
    assert.equal(JSON.stringify(merged), '{"a":1,"b":{"id":"inner","c":3},"d":4}');
    assert.deepEqual(merged, mergePatch(clientFields(record), patch));
    assert.deepEqual(record, { id: 'x', createdAt: 1, updatedAt: 2, a: 1, b: { id: 'inner', c: 2 } }, 'the target is not changed');
  });
  test('patch member __proto__ -> data, not a prototype', () => {
    const merged = mergePatch({}, JSON.parse('{"__proto__":{"polluted":1}}')) as Record<string, unknown>;
    assert.deepEqual(Object.keys(merged), ['__proto__']);
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });
});

describe('patchedText (a merge patch of the stored text)', () => {
  const head = '"id":"x","createdAt":1,"updatedAt":2';
  // RFC 7396 appendix A's object cases, as an entity's client fields: the same value as the record's merge.
  for (const [target, patch] of [
    [{ a: 'b' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }],
    [{ a: 'b' }, { a: null }],
    [{ a: 'b', b: 'c' }, { a: null }],
    [{ a: ['b'] }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }],
    [{ e: null }, { a: 1 }],
    [{}, { a: { bb: { ccc: null } } }],
    [{ a: 1 }, { a: { b: null, c: { d: null, e: 1 } } }],
  ] as const) {
    test(`${JSON.stringify(target)} patched with ${JSON.stringify(patch)} -> the record's merge, updatedAt set`, () => {
      const stored = `{${head}${Object.keys(target).length > 0 ? `,${JSON.stringify(target).slice(1, -1)}` : ''}}`;
      const record = JSON.parse(stored) as Parameters<typeof replacedRecord>[0];
      const expected = replacedRecord(record, 9, mergePatch(record, patch, SERVER_MANAGED) as Record<string, unknown>);
      assert.deepEqual(JSON.parse(patchedText(stored, patch, 9)!), expected);
    });
  }

  test('server-managed members of the stored text other than the three -> left out; the three kept in place', () => {
    assert.equal(patchedText('{"id":"x","_links":{"self":{}},"createdAt":1,"updatedAt":2,"_templates":{},"n":-0}', { m: 1 }, 9), '{"id":"x","createdAt":1,"updatedAt":9,"n":-0,"m":1}');
  });

  for (const stored of ['{"createdAt":1,"updatedAt":2}', '{"id":"x","id":"y","createdAt":1,"updatedAt":2}', '{"id":"x","createdAt":1}', '[1]']) {
    test(`${stored} (not each of id, createdAt and updatedAt once) -> undefined: the record is serialised instead`, () => {
      assert.equal(patchedText(stored, { a: 1 }, 9), undefined);
    });
  }
});

describe('records', () => {
  test('createdRecord -> id, createdAt, updatedAt first', () => {
    assert.deepEqual(Object.entries(createdRecord('i', 5, { z: 1 })), [['id', 'i'], ['createdAt', 5], ['updatedAt', 5], ['z', 1]]);
  });
  test('replacedRecord -> id and createdAt kept, updatedAt now, old fields gone', () => {
    assert.deepEqual(replacedRecord({ id: 'i', createdAt: 1, updatedAt: 1, old: 1 }, 9, { fresh: 2 }), { id: 'i', createdAt: 1, updatedAt: 9, fresh: 2 });
  });
});
