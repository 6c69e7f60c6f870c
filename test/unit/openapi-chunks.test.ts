import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { catalogueOptions } from '../helpers/openapi.js';
import { relationsAmong } from '../../src/conventions/relations.js';
import { openApiChunks, openApiDocument } from '../../src/representations/openapi.js';


const { RESOURCES, GRAPH, options } = catalogueOptions(12);

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
