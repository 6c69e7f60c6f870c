import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createTokenScrubber, redactQuery } from '../../src/http/access-log.js';

describe('redactQuery', () => {
  for (const [query, expected] of [
    ['', ''],
    ['page=2&limit=5', 'page=2&limit=5'],
    ['access_token=s3cret', 'access_token=[redacted]'],
    ['a=1&token=s3cret&b=2', 'a=1&token=[redacted]&b=2'],
    ['API_KEY=x&api-key=y&apikey=z', 'API_KEY=[redacted]&api-key=[redacted]&apikey=[redacted]'],
    ['access%5Ftoken=s3cret', 'access%5Ftoken=[redacted]'],
    ['password=p&client_secret=c', 'password=[redacted]&client_secret=[redacted]'],
    ['tokens=fine&status=active', 'tokens=fine&status=active'],
    ['bearer=b&jwt=j&x_api_key=k&api-token=t&X-Auth-Token=a&user.password=p', 'bearer=[redacted]&jwt=[redacted]&x_api_key=[redacted]&api-token=[redacted]&X-Auth-Token=[redacted]&user.password=[redacted]'],
    ['monkey=1&keyword=2&author=3&tokenizer=4', 'monkey=1&keyword=2&author=3&tokenizer=4'],
    ['bad%zz=1&token', 'bad%zz=1&token'],
  ] as const) {
    test(`${JSON.stringify(query)} -> ${JSON.stringify(expected)}`, () => assert.equal(redactQuery(query), expected));
  }
});

describe('createTokenScrubber', () => {
  test('configured tokens, plain and read:, raw and percent-encoded -> [redacted]', () => {
    const scrub = createTokenScrubber(['w-secret', 'read:r/secret']);
    assert.equal(scrub('/w-secret/x'), '/[redacted]/x');
    assert.equal(scrub('/items?q=r%2Fsecret'), '/items?q=[redacted]');
    assert.equal(scrub('/items?q=r/secret'), '/items?q=[redacted]');
    assert.equal(scrub('/items'), '/items');
    // Unreserved characters percent-encoded (RFC 3986 §2.3): the same token.
    assert.equal(scrub('/items?q=w%2Dsecret&page=%32'), '/items?q=[redacted]&page=2');
    assert.equal(scrub('/items/%77-secret'), '/items/[redacted]');
  });

  test('a base64 token with + / = encoded in part, or in lower-case hex -> [redacted]', () => {
    // .NET's HttpUtility.UrlEncode writes lower-case hex; many clients encode + and leave / and = as they are.
    const scrub = createTokenScrubber(['tok+en/with=chars']);
    assert.equal(scrub('/items?x=tok%2Ben/with=chars'), '/items?x=[redacted]');
    assert.equal(scrub('/items?x=tok%2ben%2fwith%3dchars'), '/items?x=[redacted]');
    assert.equal(scrub('/items/tok+en%2Fwith%3Dchars'), '/items/[redacted]');
    // No secret: escapes kept as sent.
    assert.equal(scrub('/items?x=a%2Bb%2fc'), '/items?x=a%2Bb%2fc');
  });

  describe('1,000 tokens configured (a busy deployment\'s clients)', () => {
    const tokens = [...Array.from({ length: 999 }, (_, i) => `client-${String(i).padStart(4, '0')}+key/${i}`), 'read:ab1'];
    const scrub = createTokenScrubber(tokens);

    test('any of them, raw, percent-encoded, the shortest, or one with more characters after it -> [redacted]', () => {
      assert.equal(scrub('/items/client-0737+key/737'), '/items/[redacted]');
      assert.equal(scrub('/items?x=client-0737%2Bkey%2F737&page=2'), '/items?x=[redacted]&page=2');
      assert.equal(scrub('/items?q=ab1'), '/items?q=[redacted]');
      assert.equal(scrub('/a/client-0012+key/120/b'), '/a/[redacted]0/b');
      assert.equal(scrub('/items/client-0999+key/99'), '/items/client-0999+key/99');
      assert.equal(scrub('/items?x=a%2Bb%2fc'), '/items?x=a%2Bb%2fc');
    });

    test('a path and a query holding none -> searched in one pass (fewer string searches than characters), not once a token', () => {
      // Counted by the calls of the two String searches a scrubber can make, put back right after.
      const { includes, startsWith } = String.prototype;
      let searches = 0;
      String.prototype.includes = function (this: string, ...args: Parameters<typeof includes>) {
        searches++;
        return includes.apply(this, args);
      };
      String.prototype.startsWith = function (this: string, ...args: Parameters<typeof startsWith>) {
        searches++;
        return startsWith.apply(this, args);
      };
      const texts = ['/items/3f2c9a8e-1b4d-4c6e-9f0a-7d5e2b1c8a90', 'limit=20&page=3&sort=-createdAt&status=active'];
      let scrubbed: string[];
      try {
        scrubbed = texts.map(scrub);
      } finally {
        String.prototype.includes = includes;
        String.prototype.startsWith = startsWith;
      }
      assert.deepEqual(scrubbed, texts);
      assert.ok(searches < texts.join('').length, `${searches} string searches`);
    });
  });

  test('no tokens -> text unchanged', () => assert.equal(createTokenScrubber([])('/a?b=c'), '/a?b=c'));

  const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl';
  const spacedJwt = [' {"alg":"RS256"}', '\n{"sub":"alice"}', 'signature'].map((part) => Buffer.from(part).toString('base64url')).join('.');
  for (const [text, expected] of [
    [`/items/${jwt}`, '/items/[redacted]'],
    [`/items?x=1&jwt=${jwt}&y=2`, '/items?x=1&jwt=[redacted]&y=2'],
    [`/items?q=${jwt.split('.').slice(0, 2).join('.')}.`, '/items?q=[redacted]'],
    ['/items/eyJ-only-one-part', '/items/eyJ-only-one-part'],
    ['/v1.2.3/eyes.open', '/v1.2.3/eyes.open'],
    // Dots sent as %2E: the text is logged decoded, the token replaced.
    [`/items?q=${jwt.replaceAll('.', '%2E')}&page=2`, '/items?q=[redacted]&page=2'],
    [`/items/${jwt.replaceAll('.', '%2e')}`, '/items/[redacted]'],
    // Letters percent-encoded: %65 is e.
    [`/items?q=%65${jwt.slice(1)}`, '/items?q=[redacted]'],
    // A header that begins with white space does not encode as eyJ, and is still a JWT.
    [`/items?hint=${spacedJwt}`, '/items?hint=[redacted]'],
    [`/items?hint=${spacedJwt.replaceAll('.', '%2E')}`, '/items?hint=[redacted]'],
    // No secret: logged as sent, escapes kept.
    ['/items/a%2Eb?q=x%20y&price=15.59', '/items/a%2Eb?q=x%20y&price=15.59'],
    // A piece of one (a header and a dot), the dot encoded.
    ['/items?q=eyJzdWIi%2E', '/items?q=[redacted]'],
    // Right after base64url characters: an undecoded escape of white space (a header value pasted
    // into a URL), or letters; what stands before it is kept.
    [`/items?filter=Bearer%20${jwt}`, '/items?filter=Bearer%20[redacted]'],
    [`/items/Bearer%20${jwt.replaceAll('.', '%2E')}`, '/items/Bearer%20[redacted]'],
    [`/items?q=x%09${spacedJwt}`, '/items?q=x%09[redacted]'],
    [`/items/abc${jwt}`, '/items/abc[redacted]'],
    ['/files/Code.js?v=1.2.3', '/files/Code.js?v=1.2.3'],
  ] as const) {
    test(`JWT-like text ${JSON.stringify(text)} -> ${JSON.stringify(expected)}, with or without tokens`, () => {
      assert.equal(createTokenScrubber([])(text), expected);
      assert.equal(createTokenScrubber(['w-secret'])(text), expected);
    });
  }
});
