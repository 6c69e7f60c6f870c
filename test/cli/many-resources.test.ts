import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { brotliDecompressSync } from 'node:zlib';
import { relationGraph } from '../../src/conventions/relations.js';
import { contentTag } from '../../src/representations/html.js';
import { openApiDocument, type JsonSchema, type OpenApiResource } from '../../src/representations/openapi.js';
import { catalogue } from '../helpers/openapi.js';
import { spawnCli, startCli, tempDir } from '../helpers/process.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** A data directory of `count` resources of the demo catalogue's schema (every fifth without one), each linking to others, with no entities. */
async function catalogueDir(count: number): Promise<{ dir: string; resources: OpenApiResource[] }> {
  const dir = await tempDir();
  // In the order the server serves them: by name.
  const resources = catalogue(count).sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const { name, schema } of resources) {
    await writeFile(join(dir, `${name}.jsonl`), '');
    if (schema !== undefined) await writeFile(join(dir, `${name}.schema.json`), JSON.stringify(schema));
  }
  return { dir, resources };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    })
      .on('error', reject)
      .end();
  });
}

describe('halserve CLI: many resources', () => {
  test('/openapi.json asked for as the server starts (made in the background, in slices) -> the bytes and tag of the document made whole, to every request at once, br, HEAD and 304 alike', async () => {
    const { dir, resources } = await catalogueDir(40);
    const proc = await startCli(['--port', '0', '--data', dir, '--log', 'off']);
    const expected = JSON.stringify(openApiDocument({ resources, relations: relationGraph(resources), basePath: '', authenticated: false, version: VERSION }));
    const tag = contentTag(expected);
    const url = `${proc.url}/openapi.json`;
    const [a, b, br, head, revalidated, health] = await Promise.all([
      get(url),
      get(`${proc.url}/v1/openapi.json`),
      get(url, { 'accept-encoding': 'br' }),
      get(url, {}, 'HEAD'),
      get(url, { 'if-none-match': tag }),
      get(`${proc.url}/healthz`),
    ]);
    assert.equal(health.status, 200);
    for (const answer of [a, b]) {
      assert.equal(answer.status, 200);
      // Compared without printing megabytes when they differ.
      assert.ok(answer.body.equals(Buffer.from(expected)), 'the bytes of the document made whole');
      assert.equal(answer.headers['etag'], tag);
      assert.equal(answer.headers['content-type'], 'application/json');
    }
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(br.headers['etag'], `${tag.slice(0, -1)}-br"`);
    assert.ok(brotliDecompressSync(br.body).equals(Buffer.from(expected)), 'br: the same bytes');
    assert.equal(head.status, 200);
    assert.equal(head.headers['etag'], tag);
    assert.equal(Number(head.headers['content-length']), Buffer.byteLength(expected));
    assert.equal(revalidated.status, 304);
    proc.child.kill('SIGTERM');
    assert.equal(await proc.exited, 0);
  });

  for (const [kind, schema, line] of [
    ['not JSON', () => '{"type":"object","properties":{', (file: string) => `${file}: not valid JSON: `],
    ['a keyword of the wrong type', (s: JsonSchema) => JSON.stringify({ ...s, properties: { ...(s['properties'] as object), price: { type: 'number', minimum: 'zero' } } }), (file: string) => `invalid schema ${file}#/properties/price/minimum: `],
    ['an x-link to a resource not served', (s: JsonSchema) => JSON.stringify({ ...s, properties: { ...(s['properties'] as object), owner: { type: 'string', 'x-link': 'r2OO' } } }), (file: string) => `${file}: resource r117: property owner has "x-link": "r2OO", but no resource is named "r2OO" (served: r0, r1, r10, r100, r101, r102, r103, r104, r105, r106 and 190 more)`],
  ] as const) {
    test(`one broken schema among 200 (${kind}) -> exit 1, one short line naming its file; nothing opened`, async () => {
      const { dir, resources } = await catalogueDir(200);
      const file = join(dir, 'r117.schema.json');
      await writeFile(file, schema(resources.find((r) => r.name === 'r117')!.schema!));
      const before = (await readdir(dir)).sort();
      const proc = spawnCli(['--port', '0', '--data', dir]);
      assert.equal(await proc.exited, 1);
      const stderr = proc.stderr();
      assert.ok(stderr.startsWith(`halserve: ${line(file)}`), stderr);
      assert.equal(stderr.split('\n').length, 2, 'one line');
      assert.ok(stderr.length < 400, `a short line: ${stderr.length} characters`);
      assert.equal(proc.stdout(), '');
      assert.deepEqual((await readdir(dir)).sort(), before);
    });
  }
});
