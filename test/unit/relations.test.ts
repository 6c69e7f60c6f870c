import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { entityJson } from '../../src/conventions/hal.js';
import { HttpProblem } from '../../src/conventions/problem.js';
import {
  checkEmbed,
  danglingMessage,
  embedOf,
  embedQuery,
  linkedIds,
  linkFields,
  linkTargets,
  relationGraph,
  RelationError,
  relationLinks,
  relNames,
  reverseHref,
  type ResourceRelations,
} from '../../src/conventions/relations.js';

const PRODUCTS = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    category: { type: 'string', 'x-link': 'categories' },
    related: { type: 'array', items: { type: 'string' }, 'x-link': 'products' },
  },
};

describe('linkFields (docs/relations.md)', () => {
  test('a schema with x-links -> each field, its target and whether it is an array, in schema order', () => {
    assert.deepEqual(linkFields(PRODUCTS), [
      { field: 'category', target: 'categories', many: false },
      { field: 'related', target: 'products', many: true },
    ]);
  });

  test('["array","null"] -> many', () => {
    assert.deepEqual(linkFields({ properties: { a: { type: ['array', 'null'], items: { type: 'string' }, 'x-link': 't' } } }), [{ field: 'a', target: 't', many: true }]);
  });

  for (const [name, schema] of [
    ['no schema', undefined],
    ['no properties', { type: 'object' }],
    ['properties without x-link', { properties: { a: { type: 'string' } } }],
  ] as const) {
    test(`${name} -> no links`, () => assert.deepEqual(linkFields(schema), []));
  }
});

describe('relationGraph (docs/relations.md)', () => {
  test('products -> categories and products -> products -> forward links, and reverse links on each target', () => {
    const graph = relationGraph([{ name: 'categories' }, { name: 'products', schema: PRODUCTS }, { name: 'notes' }]);
    assert.deepEqual(graph.get('products'), {
      forward: [
        { field: 'category', target: 'categories', many: false },
        { field: 'related', target: 'products', many: true },
      ],
      reverse: [{ rel: 'products', source: 'products', field: 'related' }],
    });
    assert.deepEqual(graph.get('categories'), { forward: [], reverse: [{ rel: 'products', source: 'products', field: 'category' }] });
    assert.deepEqual(graph.get('notes'), { forward: [], reverse: [] });
  });

  test('one source linking a target through two fields -> the reverse rels are <source>.<field>', () => {
    const orders = { properties: { buyer: { type: 'string', 'x-link': 'people' }, seller: { type: 'string', 'x-link': 'people' }, item: { type: 'string', 'x-link': 'things' } } };
    const graph = relationGraph([{ name: 'people' }, { name: 'things' }, { name: 'orders', schema: orders }]);
    assert.deepEqual(graph.get('people')?.reverse, [
      { rel: 'orders.buyer', source: 'orders', field: 'buyer' },
      { rel: 'orders.seller', source: 'orders', field: 'seller' },
    ]);
    assert.deepEqual(graph.get('things')?.reverse, [{ rel: 'orders', source: 'orders', field: 'item' }]);
  });

  for (const [name, resources, message] of [
    [
      'a link to a resource not served',
      [{ name: 'products', schema: PRODUCTS }],
      'resource products: property category has "x-link": "categories", but no resource is named "categories" (served: products)',
    ],
    [
      'a link field named self',
      [{ name: 'a', schema: { properties: { self: { type: 'string', 'x-link': 'a' } } } }],
      'resource a: property self cannot be a link: the rel self is the entity\'s own',
    ],
    [
      'a link field whose name a query reads as a nested path (a.b)',
      [{ name: 'a', schema: { properties: { 'a.b': { type: 'string', 'x-link': 'a' } } } }],
      'resource a: property "a.b" cannot be a link: its reverse link filters on it, and a query reads . in a name as a nested path and [ ] as an operator; rename it',
    ],
    [
      'a link field whose name a query reads as an operator (a[b])',
      [{ name: 'a', schema: { properties: { 'a[b]': { type: 'string', 'x-link': 'a' } } } }],
      'resource a: property "a[b]" cannot be a link: its reverse link filters on it, and a query reads . in a name as a nested path and [ ] as an operator; rename it',
    ],
    [
      'a forward link and a reverse link with the same name',
      [{ name: 'a', schema: { properties: { b: { type: 'string', 'x-link': 'b' } } } }, { name: 'b', schema: { properties: { a: { type: 'string', 'x-link': 'a' } } } }],
      'resource a: two links would both be named "b"; rename the property that makes one of them',
    ],
  ] as const) {
    test(`${name} -> RelationError, one line`, () => {
      assert.throws(() => relationGraph(resources), (error: unknown) => {
        assert.ok(error instanceof RelationError);
        assert.equal(error.message, message);
        assert.equal(error.resource, /^resource (\S+):/.exec(message)?.[1], 'the resource whose schema declares it, for its file to be named');
        return true;
      });
    });
  }

  test('a link to a resource not served, among 200 -> the first ten served names and how many more: one short line', () => {
    const resources = Array.from({ length: 200 }, (_, i) => ({ name: `r${String(i).padStart(3, '0')}`, schema: i === 117 ? { properties: { owner: { type: 'string', 'x-link': 'nosuch' } } } : undefined }));
    assert.throws(() => relationGraph(resources), (error: unknown) => {
      assert.ok(error instanceof RelationError);
      assert.equal(error.message, 'resource r117: property owner has "x-link": "nosuch", but no resource is named "nosuch" (served: r000, r001, r002, r003, r004, r005, r006, r007, r008, r009 and 190 more)');
      assert.equal(error.resource, 'r117');
      return true;
    });
  });
});

describe('link values', () => {
  for (const [value, expected] of [
    ['x', ['x']],
    [['x', 1, 'y', null], ['x', 'y']],
    [null, []],
    [7, []],
    [undefined, []],
  ] as const) {
    test(`linkedIds(${JSON.stringify(value)}) -> ${JSON.stringify(expected)}`, () => assert.deepEqual(linkedIds(value), expected));
  }

  test('linkTargets -> the ids a body sets, each with the path a validation message names; absent and non-string values skipped', () => {
    const forward = linkFields(PRODUCTS);
    assert.deepEqual(linkTargets(forward, { name: 'n', category: 'audio', related: ['p1', 2, 'p3'] }), [
      { resource: 'categories', id: 'audio', path: 'category' },
      { resource: 'products', id: 'p1', path: 'related.0' },
      { resource: 'products', id: 'p3', path: 'related.2' },
    ]);
    assert.deepEqual(linkTargets(forward, { name: 'n' }), []);
    assert.deepEqual(linkTargets(forward, { category: null, related: 'p1' }), []);
  });

  test('danglingMessage -> names the resource and the id', () => {
    assert.equal(danglingMessage('categories', 'nope'), 'must be the id of an entity of categories; there is none with id "nope"');
  });
});

describe('relationLinks and entityJson (docs/relations.md)', () => {
  const relations: ResourceRelations = relationGraph([{ name: 'categories' }, { name: 'products', schema: PRODUCTS }]).get('products')!;
  const values: Record<string, unknown> = { category: 'audio & hi-fi', related: ['p/1', 'p2'] };

  test('forward (one and many) and reverse links, under the base path, ids percent-encoded', () => {
    assert.equal(
      relationLinks(relations, '/api', 'p 0', (field) => values[field]),
      ',"category":{"href":"/api/categories/audio%20%26%20hi-fi"},"related":[{"href":"/api/products/p%2F1"},{"href":"/api/products/p2"}],"products":{"href":"/api/products?related=p%200"}',
    );
  });

  test('a field absent, null or of the wrong kind -> no link for it; an empty array -> an empty array', () => {
    const shown = (v: Record<string, unknown>): string => relationLinks(relations, '', 'x', (field) => v[field]);
    assert.equal(shown({}), ',"products":{"href":"/products?related=x"}');
    assert.equal(shown({ category: null, related: 'p1' }), ',"products":{"href":"/products?related=x"}');
    assert.equal(shown({ category: ['a'], related: [] }), ',"related":[],"products":{"href":"/products?related=x"}');
  });

  test('reverseHref -> a filtered collection', () => assert.equal(reverseHref('/v1x/products', 'category', 'a,b'), '/v1x/products?category=a%2Cb'));
  test('reverseHref of a field named like a reserved parameter -> filtered with [eq]', () => assert.equal(reverseHref('/comments', 'page', 'p1'), '/comments?page[eq]=p1'));

  test('entityJson with links and _embedded -> self first, then the links, then _embedded; valid JSON', () => {
    const text = entityJson('{"id":"p1","category":"c"}', '/products/p1?embed=category', ',"category":{"href":"/categories/c"}', ',"_embedded":{"category":{"id":"c"}}');
    assert.equal(text, '{"id":"p1","category":"c","_links":{"self":{"href":"/products/p1?embed=category"},"category":{"href":"/categories/c"}},"_embedded":{"category":{"id":"c"}}}');
    assert.deepEqual(JSON.parse(entityJson('{}', '/a/b', ',"x":{"href":"/x"}')), { _links: { self: { href: '/a/b' }, x: { href: '/x' } } });
  });
});

describe('embed (docs/relations.md)', () => {
  for (const [query, expected] of [
    ['', []],
    ['page=2', []],
    ['embed=category', ['category']],
    ['embed=products,category', ['category', 'products']],
    ['embed=category&embed=products&embed=category', ['category', 'products']],
    ['embed=,category,', ['category']],
    ['embed=', []],
    ['embedded=x', []],
  ] as const) {
    test(`embedOf(${JSON.stringify(query)}) -> ${JSON.stringify(expected)}`, () => assert.deepEqual(embedOf(query), expected));
  }

  test('checkEmbed: known rels -> fine; an unknown one -> 400 naming the parameter and the rel', () => {
    const known = relNames(relationGraph([{ name: 'categories' }, { name: 'products', schema: PRODUCTS }]).get('products')!);
    assert.deepEqual([...known], ['category', 'related', 'products']);
    checkEmbed(['category', 'products'], known);
    assert.throws(() => checkEmbed(['category', 'nope'], known), (error: unknown) => {
      assert.ok(error instanceof HttpProblem);
      assert.equal(error.status, 400);
      assert.equal(error.detail, 'Query parameter embed names an unknown relation: nope');
      return true;
    });
  });

  test('embedQuery -> ?embed=… or &embed=…, nothing without rels', () => {
    assert.equal(embedQuery(['category', 'products'], '?'), '?embed=category,products');
    assert.equal(embedQuery(['orders.buyer'], '&'), '&embed=orders.buyer');
    assert.equal(embedQuery([], '?'), '');
  });
});
