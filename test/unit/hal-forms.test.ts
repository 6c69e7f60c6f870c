import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { collectionTemplates, entityTemplates, templateProperties, withTemplates } from '../../src/representations/hal-forms.js';

describe('templateProperties', () => {
  const cases: [string, Record<string, unknown> | undefined, unknown[]][] = [
    ['no schema -> none', undefined, []],
    ['a schema without properties -> none', { type: 'object' }, []],
    ['a nullable string ["string","null"] -> text', { properties: { a: { type: ['string', 'null'] } } }, [{ name: 'a', prompt: 'a', type: 'text' }]],
    ['an untyped property -> textarea (any JSON)', { properties: { a: {} } }, [{ name: 'a', prompt: 'a', type: 'textarea' }]],
    ['an untyped enum of numbers -> inline options with their JSON text as prompt', { properties: { a: { enum: [1, 'x', null] } } }, [
      { name: 'a', prompt: 'a', type: 'text', options: { inline: [{ prompt: '1', value: 1 }, 'x', { prompt: 'null', value: null }], maxItems: 1 } },
    ]],
    ['an array of an enum, minItems/maxItems -> inline options, those counts', { properties: { a: { type: 'array', items: { enum: ['p', 'q'] }, minItems: 1, maxItems: 2 } } }, [
      { name: 'a', prompt: 'a', type: 'text', options: { inline: ['p', 'q'], minItems: 1, maxItems: 2 } },
    ]],
    ['an example that is not a string -> its JSON as placeholder; description wins over it', { properties: { a: { type: 'object', examples: [{ w: 1 }] }, b: { type: 'string', description: 'd', examples: ['e'] } } }, [
      { name: 'a', prompt: 'a', type: 'textarea', placeholder: '{"w":1}' },
      { name: 'b', prompt: 'b', type: 'text', placeholder: 'd' },
    ]],
    ['an x-link under a base path -> options.link under it', { properties: { c: { type: 'string', 'x-link': 'categories', title: 'Category' } }, required: ['c'] }, [
      { name: 'c', prompt: 'Category', required: true, type: 'text', options: { link: { href: '/api/categories', type: 'application/hal+json' }, valueField: 'id', maxItems: 1 } },
    ]],
    ['server-managed members the schema describes (id, createdAt, updatedAt, _links) -> not properties', {
      properties: { id: { type: 'string', description: 'the id' }, createdAt: { type: 'integer' }, updatedAt: { title: 'Changed' }, _links: { description: 'links' }, n: { type: 'string' } },
    }, [{ name: 'n', prompt: 'n', type: 'text' }]],
    ['an integer with fractional bounds -> min and max the integers within them (steps of 1 count from min)', { properties: { k: { type: 'integer', minimum: 0.5, maximum: 9.5 }, x: { type: 'number', minimum: 0.5 } } }, [
      { name: 'k', prompt: 'k', type: 'number', min: 1, max: 9, step: 1 },
      { name: 'x', prompt: 'x', type: 'number', min: 0.5 },
    ]],
  ];
  for (const [name, schema, expected] of cases) test(name, () => assert.deepEqual(templateProperties(schema, name.includes('base path') ? '/api' : ''), expected));
});

describe('templates', () => {
  const properties = templateProperties({ required: ['n'], properties: { n: { type: 'string' }, k: { type: 'integer' } } }, '');
  test('collectionTemplates -> default: POST to the collection', () => {
    assert.deepEqual(JSON.parse(collectionTemplates(properties, '/items')), {
      default: { title: 'Create', method: 'POST', contentType: 'application/json', target: '/items', properties },
    });
  });
  test('entityTemplates of {n:"x"} -> values where present; update requires nothing; delete has no properties', () => {
    const t = JSON.parse(entityTemplates(properties, '/items/1', { n: 'x' }));
    assert.deepEqual(t.default.properties, [{ name: 'n', prompt: 'n', required: true, type: 'text', value: 'x' }, { name: 'k', prompt: 'k', type: 'number', step: 1 }]);
    assert.deepEqual(t.update.properties, [{ name: 'n', prompt: 'n', type: 'text', value: 'x' }, { name: 'k', prompt: 'k', type: 'number', step: 1 }]);
    assert.deepEqual(t.delete, { title: 'Delete', method: 'DELETE', target: '/items/1', properties: [] });
  });
  test('withTemplates -> _templates as the last member of the document', () => {
    assert.equal(withTemplates('{"a":1,"_links":{}}', '{"default":{}}').toString(), '{"a":1,"_links":{},"_templates":{"default":{}}}');
  });
});
