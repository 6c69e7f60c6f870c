import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { catalogueOptions } from '../helpers/openapi.js';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { relationsAmong } from '../../src/conventions/relations.js';
import { ASYNC_COMPRESSION_BYTES, asyncCompressionFree, encodeAsync } from '../../src/http/encoding.js';
import { OpenApiDocuments } from '../../src/http/openapi-documents.js';
import { contentTag } from '../../src/representations/html.js';
import { openApiDocument } from '../../src/representations/openapi.js';


const { RESOURCES, GRAPH, options } = catalogueOptions(12);
const documents = (extra: { maxEntries?: number; maxBytes?: number } = {}): OpenApiDocuments => new OpenApiDocuments({ ...options, ...extra });
const only =
  (...names: string[]) =>
  (name: string): boolean =>
    names.includes(name);

describe('OpenApiDocuments (/openapi.json per set of resources read)', () => {
  test('the whole document -> made once; a set naming every resource gets it', async () => {
    const d = documents();
    assert.equal(d.made, 1);
    const whole = await d.whole;
    assert.equal(whole.representation.body.toString(), JSON.stringify(openApiDocument(options)));
    assert.equal(whole.representation.etag, contentTag(whole.representation.body));
    assert.equal(d.whole, whole, 'kept as it is once made: no promise to wait for');
    assert.equal(d.of(() => true), whole);
    assert.equal(d.made, 1);
  });

  test('the whole document -> not made while the server is built (it held the loop before listening): made a resource at a time, the loop turning between, to the byte the document made whole', async () => {
    const many = catalogueOptions(40).options;
    const d = new OpenApiDocuments(many);
    const making = d.whole;
    assert.ok(making instanceof Promise, 'not made yet when built');
    assert.equal(d.of(() => true), making, 'a set naming every resource waits for the same making');
    let turns = 0;
    let made = false;
    const turn = (): void => {
      turns++;
      if (!made) setImmediate(turn);
    };
    setImmediate(turn);
    const whole = await making;
    made = true;
    assert.ok(turns > 0, 'the loop turned while it was made');
    const text = JSON.stringify(openApiDocument(many));
    assert.equal(whole.representation.body.toString(), text);
    assert.equal(whole.representation.etag, contentTag(text));
    assert.equal(d.made, 1);
  });

  test('the same set -> the same document, made once, with the bytes and tag of the document of those resources alone', async () => {
    const d = documents();
    const [a, b] = await Promise.all([d.of(only('r0', 'r1')), d.of(only('r1', 'r0'))]);
    assert.equal(a, b, 'one making for two requests of one set at once');
    assert.equal(await d.of(only('r0', 'r1')), a);
    assert.equal(d.made, 2);
    const alone = JSON.stringify(openApiDocument({ ...options, resources: RESOURCES.slice(0, 2), relations: relationsAmong(GRAPH, new Set(['r0', 'r1'])) }));
    assert.equal(a.representation.body.toString(), alone);
    assert.equal(a.representation.etag, contentTag(alone));
    assert.equal(a.representation.type, 'application/json');
  });

  test('different sets -> different documents and tags; none describes a resource of another set', async () => {
    const d = documents();
    const a = await d.of(only('r0'));
    const b = await d.of(only('r1'));
    const none = await d.of(() => false);
    assert.notEqual(a.representation.etag, b.representation.etag);
    assert.notEqual(a.representation.etag, none.representation.etag);
    const paths = (doc: typeof a): string[] => Object.keys((JSON.parse(doc.representation.body.toString()) as { paths: object }).paths);
    assert.ok(paths(a).includes('/r0') && !paths(a).includes('/r1'));
    assert.ok(paths(b).includes('/r1') && !paths(b).includes('/r0'));
    assert.deepEqual(paths(none).filter((path) => /^(\/v1)?\/r\d/.test(path)), []);
    assert.equal(d.made, 4);
  });

  test('more sets than maxEntries -> the least recently used made again, the others kept', async () => {
    const d = documents({ maxEntries: 3 });
    for (const name of ['r0', 'r1', 'r2', 'r3']) await d.of(only(name));
    assert.equal(d.kept, 3);
    assert.equal(d.made, 5);
    const again = await d.of(only('r3'));
    assert.equal(d.made, 5, 'r3 kept');
    await d.of(only('r0'));
    assert.equal(d.made, 6, 'r0 evicted: made again');
    assert.equal(await d.of(only('r3')), again);
    assert.equal(d.kept, 3);
  });

  test('more bytes than maxBytes -> documents evicted to fit; one larger than the bound is made for each request', async () => {
    const one = (await documents().of(only('r0'))).representation.body.length;
    const d = documents({ maxBytes: Math.floor(2.5 * one) });
    for (const name of ['r0', 'r1', 'r2']) await d.of(only(name));
    assert.equal(d.kept, 2);
    const tiny = documents({ maxBytes: 100 });
    await tiny.of(only('r0'));
    await tiny.of(only('r0'));
    assert.equal(tiny.kept, 0);
    assert.equal(tiny.made, 3);
  });

  test('compressed forms -> made once per coding, the document\'s bytes', async () => {
    const d = documents();
    const doc = await d.of(only('r0', 'r2'));
    const br = doc.encoded('br');
    assert.ok(br !== undefined);
    assert.equal(doc.encoded('br'), br);
    assert.deepEqual(brotliDecompressSync(await br), doc.representation.body);
    assert.deepEqual(gunzipSync((await doc.encoded('gzip')) ?? Buffer.alloc(0)), doc.representation.body);
  });

  test('a large document while the compressions off the loop are all taken -> none started (sent as it is); made once one is free', async () => {
    const whole = await documents().whole;
    assert.ok(whole.representation.body.length >= ASYNC_COMPRESSION_BYTES, 'the whole document is large');
    const others = [encodeAsync(Buffer.alloc(4 << 20, 'a'), 'gzip'), encodeAsync(Buffer.alloc(4 << 20, 'b'), 'gzip')];
    assert.equal(asyncCompressionFree(), false);
    assert.equal(whole.encoded('br'), undefined);
    await Promise.all(others);
    const br = whole.encoded('br');
    assert.ok(br !== undefined);
    assert.deepEqual(brotliDecompressSync(await br), whole.representation.body);
  });
});
