import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as problems from '../../src/conventions/problem.js';

const TYPE = 'http://www.w3.org/Protocols/rfc2616/rfc2616-sec10.html';

describe('problem documents (docs/conventions.md §7)', () => {
  for (const [problem, expected, headers] of [
    [problems.badRequest('b'), { type: TYPE, title: 'Bad Request', detail: 'b', status: 400 }, {}],
    [problems.unauthorized('u'), { type: TYPE, title: 'Unauthorized', detail: 'u', status: 401 }, { 'www-authenticate': 'Bearer realm="halserve"' }],
    [problems.forbidden('f'), { type: TYPE, title: 'Forbidden', detail: 'f', status: 403 }, {}],
    [problems.notFound('n'), { type: TYPE, title: 'Not Found', detail: 'n', status: 404 }, {}],
    [problems.methodNotAllowed('PUT', ['GET', 'HEAD']), { type: TYPE, title: 'Method Not Allowed', detail: 'Method PUT is not allowed here; allowed: GET, HEAD', status: 405 }, { allow: 'GET, HEAD' }],
    [problems.notAcceptable(['a/b']), { type: TYPE, title: 'Not Acceptable', detail: 'Expecting an Accept header that allows one of the a/b', status: 406 }, { vary: 'Accept' }],
    [problems.pageOutOfRange(3, 9), { type: TYPE, title: 'Conflict', detail: 'requested page is out of range', status: 409, pages: 3, page: 9 }, {}],
    [problems.preconditionFailed('p'), { type: TYPE, title: 'Precondition Failed', detail: 'p', status: 412 }, {}],
    [problems.payloadTooLarge(10), { type: TYPE, title: 'Payload Too Large', detail: 'Request body is larger than the limit of 10 bytes', status: 413 }, {}],
    [problems.unsupportedMediaType(['application/json']), { type: TYPE, title: 'Unsupported Media Type', detail: 'Expecting one of the application/json', status: 415 }, {}],
    [problems.internalError(), { type: TYPE, title: 'Internal Server Error', detail: 'The server failed to handle the request', status: 500 }, {}],
    [problems.serviceUnavailable('s', 7), { type: TYPE, title: 'Service Unavailable', detail: 's', status: 503 }, { 'retry-after': '7' }],
    [problems.validationFailed({ a: { required: 'is required' } }), { type: TYPE, title: 'Bad Request', detail: 'Validation failed', status: 400, validationMessages: { a: { required: 'is required' } } }, {}],
  ] as const) {
    test(`${problem.status} ${problem.title} -> exact document, members in seed order`, () => {
      assert.equal(JSON.stringify(problem), JSON.stringify(expected));
      assert.deepEqual(problem.headers, headers);
    });
  }
  test('unknown status -> a title all the same', () => assert.equal(problems.statusTitle(599), 'Unknown Status'));

  test('a failed write -> Retry-After by cause: 30 s while the disk is full or the log replaced, 5 s for what may pass', () => {
    const saved = 'The change could not be saved; it was not applied. Try again later';
    for (const cause of ['ENOSPC', 'EDQUOT', 'EROFS', 'EFBIG', 'ESTALE']) {
      assert.deepEqual(problems.writeFailed(cause).headers, { 'retry-after': '30' }, cause);
    }
    for (const cause of ['EIO', 'unknown']) assert.deepEqual(problems.writeFailed(cause).headers, { 'retry-after': '5' }, cause);
    assert.equal(problems.writeFailed('ENOSPC').detail, saved);
    assert.deepEqual(problems.databaseUnavailable().headers, { 'retry-after': '2' });
  });
});
