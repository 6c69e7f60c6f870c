import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pageCount, pageRange, parsePageRequest } from '../../src/conventions/pagination.js';
import { HttpProblem } from '../../src/conventions/problem.js';

describe('parsePageRequest', () => {
  for (const [page, limit, expected] of [
    [undefined, undefined, { page: 1, limit: 20 }],
    ['3', '10', { page: 3, limit: 10 }],
    ['007', '5', { page: 7, limit: 5 }],
    ['1', '200', { page: 1, limit: 200 }],
    ['1', '201', { page: 1, limit: 200 }],
    ['1', '99999999999999999999', { page: 1, limit: 200 }],
    ['0', undefined, { page: 0, limit: 20 }],
    ['-2', undefined, { page: -2, limit: 20 }],
  ] as const) {
    test(`page=${page} limit=${limit} -> ${JSON.stringify(expected)}`, () => {
      assert.deepEqual(parsePageRequest(page, limit), expected);
    });
  }

  for (const [page, limit, detail] of [
    ['x', undefined, 'Query parameter page must be a base-10 integer'],
    [' 1', undefined, 'Query parameter page must be a base-10 integer'],
    ['+1', undefined, 'Query parameter page must be a base-10 integer'],
    ['1', '2.0', 'Query parameter limit must be a base-10 integer'],
    ['1', '', 'Query parameter limit must be a base-10 integer'],
    ['1', '0', 'Query parameter limit must be at least 1'],
    ['1', '-1', 'Query parameter limit must be at least 1'],
  ] as const) {
    test(`page=${JSON.stringify(page)} limit=${JSON.stringify(limit)} -> 400 ${detail}`, () => {
      assert.throws(
        () => parsePageRequest(page, limit),
        (error: unknown) => error instanceof HttpProblem && error.status === 400 && error.detail === detail,
      );
    });
  }
});

describe('pageCount', () => {
  for (const [total, limit, pages] of [
    [0, 20, 1],
    [1, 20, 1],
    [20, 20, 1],
    [21, 20, 2],
    [201, 200, 2],
    [1_000_000, 200, 5000],
  ] as const) {
    test(`total ${total}, limit ${limit} -> ${pages} pages`, () => assert.equal(pageCount(total, limit), pages));
  }
});

describe('pageRange', () => {
  for (const [total, page, limit, expected] of [
    [45, 1, 20, { total: 45, page: 1, limit: 20, pages: 3, offset: 0, count: 20 }],
    [45, 3, 20, { total: 45, page: 3, limit: 20, pages: 3, offset: 40, count: 5 }],
    [0, 1, 20, { total: 0, page: 1, limit: 20, pages: 1, offset: 0, count: 0 }],
  ] as const) {
    test(`total ${total}, page ${page}, limit ${limit} -> offset ${expected.offset}, count ${expected.count}`, () => {
      assert.deepEqual(pageRange(total, { page, limit }), expected);
    });
  }

  for (const [total, page, pages] of [
    [45, 4, 3],
    [45, 0, 3],
    [0, 2, 1],
    [10, -1, 1],
  ] as const) {
    test(`total ${total}, page ${page} -> 409 with pages ${pages} and page ${page}`, () => {
      assert.throws(
        () => pageRange(total, { page, limit: 20 }),
        (error: unknown) =>
          error instanceof HttpProblem &&
          error.status === 409 &&
          JSON.stringify(error) ===
            JSON.stringify({ type: 'http://www.w3.org/Protocols/rfc2616/rfc2616-sec10.html', title: 'Conflict', detail: 'requested page is out of range', status: 409, pages, page }),
      );
    });
  }
});
