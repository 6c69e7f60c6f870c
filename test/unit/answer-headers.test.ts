import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entityHeadersJson, type EntityAnswerHeaders } from '../../src/http/answer-headers.js';
import { HAL_FORMS, HAL_JSON, JSON_TYPE } from '../../src/http/negotiation.js';
import { httpDate } from '../../src/conventions/last-modified.js';
import { entityHref } from '../../src/conventions/hal.js';
import { jsonReply } from '../../src/http/reply.js';

/** The headers object `entityReply` (resource-routes.ts) sends: `jsonReply`'s members, then the tag, the date and the location. */
function headersOf(mediaType: string, etag: string, modified: string | undefined, location: string | undefined): EntityAnswerHeaders {
  const extra = location === undefined ? {} : { location };
  const dated = modified === undefined ? extra : { 'last-modified': modified, ...extra };
  return jsonReply(201, mediaType, '{}', { etag, ...dated }).headers as unknown as EntityAnswerHeaders;
}

test("an entity answer's headers as JSON text -> exactly JSON.stringify of the headers object, for every media type, tag, date, collection path and id", () => {
  const mediaTypes = [HAL_JSON, HAL_FORMS, JSON_TYPE, 'application/hal+json; charset="utf-8"', 'text/x-"odd"\\type'];
  const tags = ['"1r9txf3r7tm:7rezijju"', '"7-json"', '""', 'W/"weak"', '"back\\slash"', '"in"side"', '"é"', '"\u0000"', 'unquoted', '"', '"\ud800"'];
  const dates = [undefined, httpDate(0), httpDate(1796269048), 'Thu, 03 Dec 2026 03:37:28 GMT', 'a "date"\n'];
  const collections = ['/items', '/api/v2/items', "/a!$&'()*+,;=:@%7E~/things", '/we"ird', '/back\\slash', '/é', ''];
  const ids = ['kF-Ik-VH5GBpKgnm', 'a b', 'a"b', 'a\\b', 'é€😀', '\ud800', '\u0000\n', "!*'()~-_."];
  let cases = 0;
  for (const mediaType of mediaTypes)
    for (const etag of tags)
      for (const modified of dates)
        for (const collection of collections)
          for (const location of [undefined, ...ids.map((id) => entityHref(collection, id)), `${collection}x"`, 'elsewhere"\\']) {
            const headers = headersOf(mediaType, etag, modified, location);
            assert.equal(entityHeadersJson(headers, collection), JSON.stringify(headers), JSON.stringify({ mediaType, etag, modified, collection, location }));
            cases++;
          }
  assert.ok(cases > 10_000, `${cases} cases`);
});

test('the text parses back to the headers object, members in the order they were sent', () => {
  const headers = headersOf(HAL_JSON, '"v-1"', httpDate(1796269048), '/items/a%20b');
  const parsed = JSON.parse(entityHeadersJson(headers, '/items')) as Record<string, string>;
  assert.deepEqual(Object.entries(parsed), Object.entries(headers));
  assert.deepEqual(Object.keys(parsed), ['content-type', 'vary', 'etag', 'last-modified', 'location']);
});
