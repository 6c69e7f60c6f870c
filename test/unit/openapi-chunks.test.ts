import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { relationGraph, relationsAmong } from '../../src/conventions/relations.js';
import { openApiChunks, openApiDocument, type OpenApiResource } from '../../src/representations/openapi.js';

/** `count` resources with the demo catalogue's schema (every fifth without one), each linking to the next and to the seventh after it. */
function catalogue(count: number): OpenApiResource[] {
  const base = JSON.parse(readFileSync(new URL('../../data/products.schema.json', import.meta.url), 'utf8')) as { properties: Record<string, Record<string, unknown>> };
  const name = (i: number): string => `r${i % count}`;
  return Array.from({ length: count }, (_, i) => {
    const schema = structuredClone(base);
    schema.properties['category'] = { ...schema.properties['category'], 'x-link': name(i + 1) };
    schema.properties['owner'] = { type: 'array', items: { type: 'string' }, 'x-link': name(i + 7) };
    return { name: name(i), schema: i % 5 === 4 ? undefined : schema };
  });
}

const RESOURCES = catalogue(12);
const GRAPH = relationGraph(RESOURCES);
const options = { resources: RESOURCES, relations: GRAPH, basePath: '/api', authenticated: true, version: '1.2.3' };

describe('openApiChunks', () => {
  test('joined -> JSON.stringify(openApiDocument(…)) to the byte: with and without relations, schemas, tokens, base path, resources', () => {
    const subset = RESOURCES.filter((_, i) => i % 3 === 0);
    for (const each of [
      options,
      { ...options, basePath: '', authenticated: false },
      { ...options, resources: subset, relations: relationsAmong(GRAPH, new Set(subset.map((r) => r.name))) },
      { ...options, resources: [], relations: new Map() },
      { resources: [{ name: 'notes' }], basePath: '', authenticated: false, version: '0.0.0' },
    ]) {
      const chunks = [...openApiChunks(each)];
      assert.equal(chunks.join(''), JSON.stringify(openApiDocument(each)));
      if (each.resources.length > 1) assert.ok(chunks.length >= 2 * each.resources.length, 'a piece per resource, twice (paths, schemas)');
    }
  });
});
