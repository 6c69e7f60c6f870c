import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createRouter, splitPath } from '../../src/http/router.js';

describe('splitPath', () => {
  for (const [path, segments] of [
    ['/', []],
    ['', []],
    ['/a', ['a']],
    ['/a/b', ['a', 'b']],
    ['/a/', ['a', '']],
    ['//', ['', '']],
    ['/a//b/', ['a', '', 'b', '']],
    ['/%2F/x', ['%2F', 'x']],
  ] as const) {
    test(`${JSON.stringify(path)} -> ${JSON.stringify(segments)}`, () => assert.deepEqual(splitPath(path), segments));
  }
  test('every path of up to 6 characters of "/", "a", "b" -> the segments split("/") gives', () => {
    const paths = [''];
    for (let length = 1; length <= 6; length++) for (const p of paths.filter((q) => q.length === length - 1)) paths.push(`${p}/`, `${p}a`, `${p}b`);
    for (const p of paths.filter((q) => q.startsWith('/') && q !== '/')) assert.deepEqual(splitPath(p), p.slice(1).split('/'), p);
  });
});

describe('createRouter', () => {
  const router = createRouter<string>();
  router.add('GET', '/:name', 'list');
  router.add('POST', '/:name', 'create');
  router.add('GET', '/healthz', 'health');
  router.add('GET', '/:name/:id', 'read');
  router.add('DELETE', '/:name/:id', 'delete');
  router.add('GET', '/', 'index');

  for (const [method, path, handler, params, allow] of [
    ['GET', '/', 'index', {}, 'GET, HEAD, OPTIONS'],
    ['GET', '/healthz', 'health', {}, 'GET, HEAD, OPTIONS'],
    ['HEAD', '/healthz', 'health', {}, 'GET, HEAD, OPTIONS'],
    ['GET', '/things', 'list', { name: 'things' }, 'GET, HEAD, POST, OPTIONS'],
    ['POST', '/things', 'create', { name: 'things' }, 'GET, HEAD, POST, OPTIONS'],
    ['PUT', '/things', undefined, { name: 'things' }, 'GET, HEAD, POST, OPTIONS'],
    ['DELETE', '/things/7', 'delete', { name: 'things', id: '7' }, 'GET, HEAD, DELETE, OPTIONS'],
    ['POST', '/healthz', undefined, {}, 'GET, HEAD, OPTIONS'],
  ] as const) {
    test(`${method} ${path} -> ${handler ?? '405'} ${JSON.stringify(params)}`, () => {
      const match = router.match(method, splitPath(path));
      assert.ok(match);
      assert.equal(match.handler, handler);
      assert.deepEqual(match.params, params);
      assert.equal(match.allow.join(', '), allow);
    });
  }

  test('/a/b/c -> no match', () => assert.equal(router.match('GET', splitPath('/a/b/c')), undefined));
});
