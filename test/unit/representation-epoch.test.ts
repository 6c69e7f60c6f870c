import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { combinedEpoch, EPOCH_LENGTH, REPRESENTATION_VERSION, representationEpoch, type EpochInputs } from '../../src/conventions/representation-epoch.js';
import { relationGraph } from '../../src/conventions/relations.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { startServer } from '../helpers/server.js';

const PLAIN = { type: 'object', properties: { name: { type: 'string' }, category: { type: 'string' } } };
const LINKED = { type: 'object', properties: { name: { type: 'string' }, category: { type: 'string', 'x-link': 'categories' } } };

/** The inputs of `products` among products and categories, with `schema` and `basePath`. */
function inputs(schema: unknown, basePath = ''): EpochInputs {
  const graph = relationGraph([
    { name: 'products', schema: schema as never },
    { name: 'categories', schema: undefined },
  ]);
  return { basePath, schema, relations: graph.get('products') };
}

describe('representationEpoch', () => {
  test(`${EPOCH_LENGTH} base-36 digits, the same for the same configuration (every process, every start)`, () => {
    const epoch = representationEpoch(inputs(PLAIN, '/v1'));
    assert.match(epoch, new RegExp(`^[0-9a-z]{${EPOCH_LENGTH}}$`));
    assert.equal(representationEpoch(inputs(JSON.parse(JSON.stringify(PLAIN)), '/v1')), epoch);
  });

  test('another base path, schema, relation or rendering version -> another epoch', () => {
    const epoch = representationEpoch(inputs(PLAIN));
    const others = [
      representationEpoch(inputs(PLAIN, '/v2')),
      representationEpoch(inputs(LINKED)),
      // A template's field: the forms change, not the links.
      representationEpoch(inputs({ ...PLAIN, required: ['name'] })),
      // Members in another order: the templates' order.
      representationEpoch(inputs({ type: 'object', properties: { category: { type: 'string' }, name: { type: 'string' } } })),
      representationEpoch({ ...inputs(PLAIN), relations: { forward: [], reverse: [{ rel: 'reviews', source: 'reviews', field: 'product' }] } }),
      representationEpoch(inputs(PLAIN), REPRESENTATION_VERSION + 1),
    ];
    for (const other of others) assert.notEqual(other, epoch);
    assert.equal(new Set(others).size, others.length);
  });

  test('no schema and no relations: an epoch of the base path alone', () => {
    assert.equal(representationEpoch({ basePath: '', schema: undefined, relations: undefined }), representationEpoch({ basePath: '', schema: undefined, relations: { forward: [], reverse: [] } }));
    assert.notEqual(representationEpoch({ basePath: '', schema: undefined, relations: undefined }), representationEpoch({ basePath: '/x', schema: undefined, relations: undefined }));
  });

  test('combinedEpoch: of every resource by name, whatever the order; moves with any of them', () => {
    const a = combinedEpoch(new Map([['a', '00000001'], ['b', '00000002']]));
    assert.equal(combinedEpoch(new Map([['b', '00000002'], ['a', '00000001']])), a);
    assert.notEqual(combinedEpoch(new Map([['a', '00000001'], ['b', '00000003']])), a);
    assert.match(a, new RegExp(`^[0-9a-z]{${EPOCH_LENGTH}}$`));
  });
});

/**
 * What REPRESENTATION_VERSION stands for: the bytes halserve renders for a fixed data set, schema
 * and base path. A change of rendering fails this test: bump REPRESENTATION_VERSION (so the tags of
 * before name no current representation) and set RENDERED to the digest it prints.
 */
const RENDERED: Readonly<Record<number, string>> = { 1: '3a8a958a4c6ce878340e985e1a6becea2391da33b57eea97806d806456639f11' };

describe('the rendering REPRESENTATION_VERSION names', () => {
  test(`version ${REPRESENTATION_VERSION}: the same bytes`, async () => {
    const categories = createMemoryStore([{ id: 'c1', createdAt: 1_800_000_000, updatedAt: 1_800_000_000, title: 'Lamps' }]);
    const products = createMemoryStore([{ id: 'p1', createdAt: 1_800_000_000, updatedAt: 1_800_000_001, name: 'Lamp', category: 'c1' }]);
    const server = await startServer({
      basePath: '/v1',
      resources: [
        { name: 'products', store: products, schema: { ...LINKED, required: ['name'] } as never },
        { name: 'categories', store: categories },
      ],
    });
    const digest = createHash('sha256');
    for (const [path, accept] of [
      ['/v1/products/p1', 'application/hal+json'],
      ['/v1/products/p1', 'application/json'],
      ['/v1/products/p1', 'application/prs.hal-forms+json'],
      ['/v1/products/p1?embed=category', 'application/hal+json'],
      ['/v1/categories/c1', 'application/hal+json'],
      ['/v1/products?limit=1', 'application/hal+json'],
      ['/v1/products?limit=1', 'application/prs.hal-forms+json'],
      ['/v1/categories?embed=products', 'application/hal+json'],
    ] as const) {
      const res = await server.request(path, { headers: { accept } });
      assert.equal(res.status, 200, path);
      digest.update(`${path} ${accept}\n${await res.text()}\n`);
    }
    const got = digest.digest('hex');
    assert.equal(got, RENDERED[REPRESENTATION_VERSION], `the rendering changed: bump REPRESENTATION_VERSION in src/conventions/representation-epoch.ts and pin ${got} to it here`);
  });
});
