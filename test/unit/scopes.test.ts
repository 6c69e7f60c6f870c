import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { scopePermissions, scopeValues } from '../../src/conventions/scopes.js';

describe('scopeValues', () => {
  for (const [claims, expected] of [
    [{}, []],
    [{ scope: 'openid read  orders:write' }, ['openid', 'read', 'orders:write']],
    [{ scp: ['orders:read', 'write'] }, ['orders:read', 'write']],
    [{ scp: 'a b' }, ['a', 'b']],
    [{ scope: 'read', scp: ['orders:write'] }, ['read', 'orders:write']],
    [{ scope: ['read'] }, 'its scope claim is not a string'],
    [{ scp: [1] }, 'its scp claim is neither a string nor an array of strings'],
    [{ scp: { read: true } }, 'its scp claim is neither a string nor an array of strings'],
  ] as const) {
    test(`${JSON.stringify(claims)} -> ${JSON.stringify(expected)}`, () => assert.deepEqual(scopeValues(claims), expected));
  }
});

describe('scopePermissions', () => {
  const served = new Set(['orders', 'products', 'a:b']);
  for (const [values, access, grants, applied] of [
    [['read'], 'read', [], ['read']],
    [['read', 'write', 'read'], 'write', [], ['read', 'write']],
    [['orders:read', 'orders:write', 'products:read'], undefined, [['orders', 'write'], ['products', 'read']], ['orders:read', 'orders:write', 'products:read']],
    [['openid', 'profile', 'users:read', 'orders:admin', ':read', 'orders'], undefined, [], []],
    [['a:b:read'], undefined, [['a:b', 'read']], ['a:b:read']],
  ] as const) {
    test(`${values.join(' ')} -> access ${access}, grants ${JSON.stringify(grants)}`, () => {
      const p = scopePermissions(values, served);
      assert.equal(p.access, access);
      assert.deepEqual([...p.grants], grants);
      assert.deepEqual(p.applied, applied);
    });
  }
});
