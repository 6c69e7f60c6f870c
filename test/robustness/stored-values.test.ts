import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileSchema } from '../../src/conventions/schema.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { prng } from '../helpers/prng.js';
import { startServer } from '../helpers/server.js';

/**
 * Whatever a client managed to store, every way of reading it back answers: values a body may
 * carry (lone surrogates, NUL, line separators, `__proto__`, numbers JavaScript rounds, strings
 * that look like JSON or URLs) are written through HTTP, then read through every view that builds
 * text or links from them — facets, sorts, filters on their own values, searches, embeds, each
 * as HAL, plain JSON, HAL-FORMS and HTML. No answer may be a 5xx, and every 4xx is a problem
 * document. Seeded: HALSERVE_QA_STORED_SEED replays another schedule.
 */

const SEED = Number(process.env['HALSERVE_QA_STORED_SEED'] ?? 20261202);

const STRINGS = ['\\ud800', 'a\\udc00', '\\udfff\\ud83d', '\\u0000', '\\u2028\\u2029', '\\ud83d\\ude00', '', ' ', 'a,b', '%2C', '%', '&x=1', '#', '?', '/', '..', '[gte]', '\\"', '\\\\', '<\\/script>', 'null', '0', '__proto__'];
const VALUES = [...STRINGS.map((s) => `"${s}"`), '-0', '12345678901234567890', '1e-7', 'null', 'true', '{}', '[]', '{"__proto__":{"x":1}}', '["\\ud800",1]', '{"a":"\\ud800"}'];
const FIELDS = ['name', 'tags', '__proto__', 'constructor', 'deep'];
const ACCEPTS = ['application/hal+json', 'application/json', 'application/prs.hal-forms+json', 'text/html'];

const NODE_SCHEMA = { type: 'object', properties: { parent: { type: 'string', 'x-link': 'nodes' }, label: {} } };

test(`adversarial stored values, read back through every view (seed ${SEED}) -> no 5xx, every 4xx a problem document`, async () => {
  const next = prng(SEED);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const s = await startServer({
    resources: [
      { name: 'items', store: createMemoryStore() },
      { name: 'nodes', store: createMemoryStore(), schema: NODE_SCHEMA, validate: compileSchema(NODE_SCHEMA, 'nodes.schema.json') },
    ],
  });
  const json = { 'content-type': 'application/json' };
  for (let i = 0; i < 24; i++) {
    const body = `{${FIELDS.filter(() => next() < 0.6).map((f) => `"${f}":${f === 'tags' ? `[${pick(VALUES)},${pick(VALUES)}]` : f === 'deep' ? `{"x":${pick(VALUES)}}` : pick(VALUES)}`).join(',')}}`;
    const res = await s.request('/items', { method: 'POST', headers: json, body });
    assert.equal(res.status, 201, body);
  }
  let parent: string | undefined;
  for (let i = 0; i < 4; i++) {
    const res = await s.request('/nodes', { method: 'POST', headers: json, body: JSON.stringify({ label: pick(STRINGS), ...(parent ? { parent } : {}) }) });
    parent = ((await res.json()) as { id: string }).id;
  }
  const queries = [
    ...FIELDS.flatMap((f) => [`facets=${f}`, `sort=-${f}`, `${f}[exists]=true&facets=${f},deep.x`, `q=${encodeURIComponent(pick(STRINGS))}&facets=${f}`]),
    ...STRINGS.map((v) => `name=${encodeURIComponent(v)}&tags[ne]=${encodeURIComponent(v)}&facets=name,tags`),
  ];
  const paths = [...queries.map((q) => `/items?${q}&limit=3`), `/nodes?embed=parent,nodes&facets=label,parent`, `/nodes/${parent}?embed=parent,nodes`];
  const failures: string[] = [];
  for (const path of paths) {
    for (const accept of ACCEPTS) {
      const res = await s.request(path, { headers: { accept } });
      const text = await res.text();
      if (res.status >= 500) failures.push(`${res.status} for ${path} (${accept})`);
      else if (res.status >= 400 && (res.headers.get('content-type') !== 'application/problem+json' || JSON.parse(text).status !== res.status)) failures.push(`bare ${res.status} for ${path} (${accept})`);
      else if (res.status === 200 && accept !== 'text/html') JSON.parse(text);
    }
  }
  assert.deepEqual(failures, []);
});
