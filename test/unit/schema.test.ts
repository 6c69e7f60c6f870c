import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { compileSchema, declaredPaths, SchemaError, type ValidationMessages } from '../../src/conventions/schema.js';

const SOURCE = 'data/things.schema.json';

/** A root schema with one field `v` described by `field`, so every keyword can be tried on a value. */
const one = (field: unknown): Record<string, unknown> => ({ type: 'object', properties: { v: field } });

interface Case {
  readonly name: string;
  readonly schema: unknown;
  readonly body: Record<string, unknown>;
  readonly expected?: ValidationMessages;
}

const validCases: readonly Case[] = [
  { name: 'empty schema, any fields', schema: {}, body: { a: 1, b: [null] } },
  { name: 'server-managed members described by the types the server writes, and annotations', schema: { properties: { id: { type: 'string', description: 'server-assigned' }, createdAt: { type: 'integer', title: 'Created' }, updatedAt: { type: ['number', 'null'] }, _links: { description: 'HAL links' } } }, body: { a: 1 } },
  { name: 'annotations only', schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: 'urn:x', title: 'T', description: 'D', $comment: 'C', default: {}, examples: [{}] }, body: { a: 1 } },
  { name: 'type string', schema: one({ type: 'string' }), body: { v: 'x' } },
  { name: 'type number with a fraction', schema: one({ type: 'number' }), body: { v: 1.5 } },
  { name: 'type number with an integer', schema: one({ type: 'number' }), body: { v: 2 } },
  { name: 'type integer', schema: one({ type: 'integer' }), body: { v: -3 } },
  { name: 'type integer 1.0', schema: one({ type: 'integer' }), body: { v: 1.0 } },
  { name: 'type boolean', schema: one({ type: 'boolean' }), body: { v: false } },
  { name: 'type null', schema: one({ type: 'null' }), body: { v: null } },
  { name: 'type object', schema: one({ type: 'object' }), body: { v: {} } },
  { name: 'type array', schema: one({ type: 'array' }), body: { v: [] } },
  { name: 'type [string, null] with null', schema: one({ type: ['string', 'null'] }), body: { v: null } },
  { name: 'root type [object, null]', schema: { type: ['object', 'null'] }, body: { v: 1 } },
  { name: 'enum string member', schema: one({ enum: ['active', 'paused'] }), body: { v: 'paused' } },
  { name: 'enum number, null and boolean members', schema: one({ enum: [0, null, true] }), body: { v: null } },
  { name: 'enum object member, keys in another order', schema: one({ enum: [{ a: 1, b: [1, { c: 2 }] }] }), body: { v: { b: [1, { c: 2 }], a: 1 } } },
  { name: 'enum array member', schema: one({ enum: [[1, 2]] }), body: { v: [1, 2] } },
  { name: 'minLength exactly met', schema: one({ minLength: 3 }), body: { v: 'abc' } },
  { name: 'minLength counts an astral character once', schema: one({ minLength: 2, maxLength: 2 }), body: { v: 'a😀' } },
  { name: 'maxLength exactly met', schema: one({ maxLength: 3 }), body: { v: 'abc' } },
  { name: 'maxLength 1 with one astral character', schema: one({ maxLength: 1 }), body: { v: '😀' } },
  { name: 'pattern found anywhere (not anchored)', schema: one({ pattern: '[0-9]{2}' }), body: { v: 'ab12cd' } },
  { name: 'pattern over code points', schema: one({ pattern: '^.$' }), body: { v: '😀' } },
  { name: 'minimum equal', schema: one({ minimum: 0 }), body: { v: 0 } },
  { name: 'maximum equal', schema: one({ maximum: 9.5 }), body: { v: 9.5 } },
  { name: 'minItems and maxItems met', schema: one({ minItems: 1, maxItems: 2 }), body: { v: [1, 2] } },
  { name: 'items all valid', schema: one({ items: { type: 'integer' } }), body: { v: [1, 2, 3] } },
  { name: 'string keywords ignore a number (no type)', schema: one({ minLength: 5, pattern: '^x$' }), body: { v: 7 } },
  { name: 'number keywords ignore a string (no type)', schema: one({ minimum: 5 }), body: { v: 'a' } },
  { name: 'array keywords ignore an object (no type)', schema: one({ minItems: 1, items: { type: 'string' } }), body: { v: { a: 1 } } },
  { name: 'object keywords ignore an array (no type)', schema: one({ properties: { a: {} }, required: ['a'], additionalProperties: false }), body: { v: [1] } },
  { name: 'required present', schema: { required: ['a'] }, body: { a: null } },
  { name: 'additionalProperties false, only listed fields', schema: { properties: { a: {} }, additionalProperties: false }, body: { a: 1 } },
  { name: 'additionalProperties true', schema: { properties: { a: {} }, additionalProperties: true }, body: { b: 1 } },
  { name: 'additionalProperties schema met', schema: { properties: { a: {} }, additionalProperties: { type: 'number' } }, body: { a: 'x', b: 1 } },
  { name: 'undefined field counts as absent', schema: { properties: { a: { type: 'string' } }, additionalProperties: false }, body: { b: undefined } },
  { name: 'nested object valid', schema: one({ type: 'object', required: ['w'], properties: { w: { type: 'number', minimum: 0 } } }), body: { v: { w: 1 } } },
  { name: 'type with its own keywords', schema: one({ type: ['string', 'integer'], minLength: 2, minimum: 10 }), body: { v: 12 } },
];

const invalidCases: readonly Case[] = [
  { name: 'string for number', schema: one({ type: 'number' }), body: { v: '1' }, expected: { v: { type: 'must be number' } } },
  { name: 'fraction for integer', schema: one({ type: 'integer' }), body: { v: 1.5 }, expected: { v: { type: 'must be integer' } } },
  { name: 'number for string', schema: one({ type: 'string' }), body: { v: 1 }, expected: { v: { type: 'must be string' } } },
  { name: 'string for boolean', schema: one({ type: 'boolean' }), body: { v: 'true' }, expected: { v: { type: 'must be boolean' } } },
  { name: 'false for null', schema: one({ type: 'null' }), body: { v: false }, expected: { v: { type: 'must be null' } } },
  { name: 'array for object', schema: one({ type: 'object' }), body: { v: [] }, expected: { v: { type: 'must be object' } } },
  { name: 'null for object', schema: one({ type: 'object' }), body: { v: null }, expected: { v: { type: 'must be object' } } },
  { name: 'object for array', schema: one({ type: 'array' }), body: { v: {} }, expected: { v: { type: 'must be array' } } },
  { name: 'number for [string, null]', schema: one({ type: ['string', 'null'] }), body: { v: 1 }, expected: { v: { type: 'must be string or null' } } },
  { name: 'NaN (not JSON) for number', schema: one({ type: 'number' }), body: { v: NaN }, expected: { v: { type: 'must be number' } } },
  { name: 'function (not JSON) for object', schema: one({ type: 'object' }), body: { v: () => 1 }, expected: { v: { type: 'must be object' } } },
  { name: 'type failure hides the other rules', schema: one({ type: 'string', enum: ['a'], minLength: 3 }), body: { v: 5 }, expected: { v: { type: 'must be string' } } },
  { name: 'enum miss', schema: one({ enum: ['active', 'paused'] }), body: { v: 'archived' }, expected: { v: { enum: 'must be one of: active, paused' } } },
  { name: 'enum miss on non-string members', schema: one({ enum: [1, null, { a: 1 }] }), body: { v: '1' }, expected: { v: { enum: 'must be one of: 1, null, {"a":1}' } } },
  { name: 'enum object member differs', schema: one({ enum: [{ a: 1 }] }), body: { v: { a: 2 } }, expected: { v: { enum: 'must be one of: {"a":1}' } } },
  { name: 'enum object member, extra key', schema: one({ enum: [{ a: 1 }] }), body: { v: { a: 1, b: 1 } }, expected: { v: { enum: 'must be one of: {"a":1}' } } },
  { name: 'enum object member, other key', schema: one({ enum: [{ a: 1 }] }), body: { v: { b: 1 } }, expected: { v: { enum: 'must be one of: {"a":1}' } } },
  { name: 'enum array member, other length', schema: one({ enum: [[1, 2]] }), body: { v: [1] }, expected: { v: { enum: 'must be one of: [1,2]' } } },
  { name: 'enum array member for an object', schema: one({ enum: [[1]] }), body: { v: { 0: 1 } }, expected: { v: { enum: 'must be one of: [1]' } } },
  { name: 'enum object member for null', schema: one({ enum: [{ a: null }] }), body: { v: { a: 0 } }, expected: { v: { enum: 'must be one of: {"a":null}' } } },
  { name: 'enum of primitives, object given', schema: one({ enum: ['a'] }), body: { v: { a: 1 } }, expected: { v: { enum: 'must be one of: a' } } },
  { name: 'minLength short by UTF-16 length', schema: one({ minLength: 3 }), body: { v: 'ab' }, expected: { v: { minLength: 'must be at least 3 characters long' } } },
  { name: 'minLength short by code points', schema: one({ minLength: 2 }), body: { v: '😀' }, expected: { v: { minLength: 'must be at least 2 characters long' } } },
  { name: 'minLength 1 with empty string', schema: one({ minLength: 1 }), body: { v: '' }, expected: { v: { minLength: 'must be at least 1 character long' } } },
  { name: 'maxLength long by half the UTF-16 length', schema: one({ maxLength: 1 }), body: { v: 'abc' }, expected: { v: { maxLength: 'must be at most 1 character long' } } },
  { name: 'maxLength long by code points', schema: one({ maxLength: 2 }), body: { v: 'a😀b' }, expected: { v: { maxLength: 'must be at most 2 characters long' } } },
  { name: 'maxLength with a lone surrogate', schema: one({ maxLength: 2 }), body: { v: '\ud800ab' }, expected: { v: { maxLength: 'must be at most 2 characters long' } } },
  { name: 'pattern miss', schema: one({ pattern: '^[A-Z]{3}$' }), body: { v: 'EURO' }, expected: { v: { pattern: 'must match the pattern ^[A-Z]{3}$' } } },
  { name: 'minimum below', schema: one({ minimum: 0 }), body: { v: -0.01 }, expected: { v: { minimum: 'must be >= 0' } } },
  { name: 'maximum above', schema: one({ maximum: 100 }), body: { v: 101 }, expected: { v: { maximum: 'must be <= 100' } } },
  { name: 'minItems short', schema: one({ minItems: 2 }), body: { v: [1] }, expected: { v: { minItems: 'must have at least 2 items' } } },
  { name: 'minItems 1 with empty array', schema: one({ minItems: 1 }), body: { v: [] }, expected: { v: { minItems: 'must have at least 1 item' } } },
  { name: 'maxItems over', schema: one({ maxItems: 1 }), body: { v: [1, 2] }, expected: { v: { maxItems: 'must have at most 1 item' } } },
  { name: 'items: each bad element by index', schema: one({ items: { type: 'string' } }), body: { v: ['a', 1, 'b', null] }, expected: { 'v.1': { type: 'must be string' }, 'v.3': { type: 'must be string' } } },
  { name: 'required missing', schema: { required: ['name', 'price'] }, body: { price: 1 }, expected: { name: { required: 'is required' } } },
  { name: 'required not met by Object.prototype', schema: { required: ['constructor', 'toString'] }, body: {}, expected: { constructor: { required: 'is required' }, toString: { required: 'is required' } } },
  { name: 'required undefined field', schema: { required: ['a'] }, body: { a: undefined }, expected: { a: { required: 'is required' } } },
  { name: 'additionalProperties false', schema: { properties: { a: {} }, additionalProperties: false }, body: { a: 1, color: 'red' }, expected: { color: { additionalProperties: 'is not allowed' } } },
  { name: 'additionalProperties false, __proto__ field', schema: { additionalProperties: false }, body: JSON.parse('{"__proto__":{"x":1}}') as Record<string, unknown>, expected: JSON.parse('{"__proto__":{"additionalProperties":"is not allowed"}}') as ValidationMessages },
  { name: 'additionalProperties schema not met', schema: { properties: { a: {} }, additionalProperties: { type: 'number', minimum: 0 } }, body: { a: 'x', b: -1, c: 'y' }, expected: { b: { minimum: 'must be >= 0' }, c: { type: 'must be number' } } },
  { name: 'properties checked only where present', schema: { properties: { a: { type: 'string' }, b: { type: 'string' } } }, body: { b: 2 }, expected: { b: { type: 'must be string' } } },
  { name: 'several rules of one field', schema: one({ type: 'string', minLength: 5, pattern: '^[a-z]+$', enum: ['hello'] }), body: { v: 'AB' }, expected: { v: { enum: 'must be one of: hello', minLength: 'must be at least 5 characters long', pattern: 'must match the pattern ^[a-z]+$' } } },
  { name: 'minimum and maximum of an integer type', schema: one({ type: 'integer', minimum: 1, maximum: 0.5 + 0.5 }), body: { v: 2 }, expected: { v: { maximum: 'must be <= 1' } } },
  {
    name: 'nested object: paths are dotted',
    schema: one({ type: 'object', required: ['width', 'height'], additionalProperties: false, properties: { width: { type: 'number', minimum: 0 }, height: { type: 'number' } } }),
    body: { v: { width: -1, depth: 2 } },
    expected: { 'v.height': { required: 'is required' }, 'v.width': { minimum: 'must be >= 0' }, 'v.depth': { additionalProperties: 'is not allowed' } },
  },
  {
    name: 'objects in arrays in objects',
    schema: one({ type: 'array', items: { type: 'object', required: ['sku'], properties: { sku: { type: 'string' }, qty: { type: 'integer', minimum: 1 } } } }),
    body: { v: [{ sku: 'a', qty: 1 }, { qty: 0 }, 'x'] },
    expected: { 'v.1.sku': { required: 'is required' }, 'v.1.qty': { minimum: 'must be >= 1' }, 'v.2': { type: 'must be object' } },
  },
  { name: 'arrays in arrays', schema: one({ items: { items: { type: 'number' } } }), body: { v: [[1], [2, 'x']] }, expected: { 'v.1.1': { type: 'must be number' } } },
  {
    name: 'every failure collected, in schema order',
    schema: { type: 'object', required: ['name', 'price'], additionalProperties: false, properties: { name: { type: 'string' }, price: { type: 'number', minimum: 0 }, status: { enum: ['active', 'paused'] } } },
    body: { price: -5, status: 'gone', color: 'red' },
    expected: { name: { required: 'is required' }, price: { minimum: 'must be >= 0' }, status: { enum: 'must be one of: active, paused' }, color: { additionalProperties: 'is not allowed' } },
  },
];

/** [name, schema, the whole one-line message]. */
const startupErrors: readonly (readonly [string, unknown, string])[] = [
  ['root is an array', [], `invalid schema ${SOURCE}#: a schema must be a JSON object, got []`],
  ['a server-managed id required', { required: ['id', 'name'], properties: { name: { type: 'string' } } }, `invalid schema ${SOURCE}#/required/0: "id" is server-managed: it is dropped from a request body before the body is checked, so requiring it would refuse every write`],
  ['createdAt required', { required: ['createdAt'] }, `invalid schema ${SOURCE}#/required/0: "createdAt" is server-managed: it is dropped from a request body before the body is checked, so requiring it would refuse every write`],
  ['id of another type than the server writes', { properties: { id: { type: 'integer' } } }, `invalid schema ${SOURCE}#/properties/id/type: "id" is server-managed: the server sets it and ignores it in a request body, so type would never be checked; only type "string" and annotations may describe it`],
  ['a constraint on updatedAt', { properties: { updatedAt: { type: 'integer', maximum: 0 } } }, `invalid schema ${SOURCE}#/properties/updatedAt/maximum: "updatedAt" is server-managed: the server sets it and ignores it in a request body, so maximum would never be checked; only type "integer" and annotations may describe it`],
  ['_links described', { properties: { _links: { type: 'object' } } }, `invalid schema ${SOURCE}#/properties/_links/type: "_links" is server-managed: the server sets it and ignores it in a request body, so type would never be checked; only annotations may describe it`],
  ['root is null', null, `invalid schema ${SOURCE}#: a schema must be a JSON object, got null`],
  ['root is true', true, `invalid schema ${SOURCE}#: a schema must be a JSON object, got true`],
  ['unknown keyword at the root', { format: 'email' }, `invalid schema ${SOURCE}#/format: unknown keyword "format" (supported: type, enum, minLength, maxLength, pattern, minimum, maximum, properties, required, additionalProperties, items, minItems, maxItems, $schema, $id, $comment, title, description, default, examples, x-link)`],
  ['unknown keyword nested, pointer escaped', { properties: { 'a/b~c': { type: 'string', format: 'email' } } }, `invalid schema ${SOURCE}#/properties/a~1b~0c/format: unknown keyword "format" (supported: type, enum, minLength, maxLength, pattern, minimum, maximum, properties, required, additionalProperties, items, minItems, maxItems, $schema, $id, $comment, title, description, default, examples, x-link)`],
  ['title not a string', { title: 1 }, `invalid schema ${SOURCE}#/title: title must be a string, got 1`],
  ['examples not an array', { examples: {} }, `invalid schema ${SOURCE}#/examples: examples must be an array, got {}`],
  ['type unknown name', one({ type: 'float' }), `invalid schema ${SOURCE}#/properties/v/type: type must be one of string, number, integer, boolean, object, array, null (or an array of them), got "float"`],
  ['type not a string', one({ type: 7 }), `invalid schema ${SOURCE}#/properties/v/type: type must be one of string, number, integer, boolean, object, array, null (or an array of them), got 7`],
  ['type empty array', one({ type: [] }), `invalid schema ${SOURCE}#/properties/v/type: type must not be an empty array`],
  ['type listed twice', one({ type: ['string', 'string'] }), `invalid schema ${SOURCE}#/properties/v/type: type lists "string" twice`],
  ['root type not object', { type: 'array' }, `invalid schema ${SOURCE}#/type: the root schema must allow type "object": a request body is always a JSON object`],
  ['string keyword at the root', { minLength: 1 }, `invalid schema ${SOURCE}#/minLength: minLength cannot apply to the root: a request body is always a JSON object`],
  ['enum at the root', { enum: [{}] }, `invalid schema ${SOURCE}#/enum: enum cannot apply to the root: put it on a property`],
  ['keyword its type never reaches', one({ type: 'string', minimum: 0 }), `invalid schema ${SOURCE}#/properties/v/minimum: minimum never applies: type is string`],
  ['keyword no listed type reaches', one({ type: ['string', 'null'], items: {} }), `invalid schema ${SOURCE}#/properties/v/items: items never applies: type is string or null`],
  ['enum not an array', one({ enum: 'a' }), `invalid schema ${SOURCE}#/properties/v/enum: enum must be a non-empty array, got "a"`],
  ['enum empty', one({ enum: [] }), `invalid schema ${SOURCE}#/properties/v/enum: enum must be a non-empty array, got []`],
  ['minLength not a number', one({ minLength: 'x' }), `invalid schema ${SOURCE}#/properties/v/minLength: minLength must be a non-negative integer, got "x"`],
  ['maxLength negative', one({ maxLength: -1 }), `invalid schema ${SOURCE}#/properties/v/maxLength: maxLength must be a non-negative integer, got -1`],
  ['minItems fractional', one({ minItems: 1.5 }), `invalid schema ${SOURCE}#/properties/v/minItems: minItems must be a non-negative integer, got 1.5`],
  ['maxItems null', one({ maxItems: null }), `invalid schema ${SOURCE}#/properties/v/maxItems: maxItems must be a non-negative integer, got null`],
  ['minimum a string', one({ minimum: '0' }), `invalid schema ${SOURCE}#/properties/v/minimum: minimum must be a number, got "0"`],
  ['maximum not finite (embedder)', one({ maximum: Infinity }), `invalid schema ${SOURCE}#/properties/v/maximum: maximum must be a number, got Infinity`],
  ['maximum a bigint (embedder)', one({ maximum: 10n }), `invalid schema ${SOURCE}#/properties/v/maximum: maximum must be a number, got 10`],
  ['minLength above maxLength', one({ minLength: 5, maxLength: 2 }), `invalid schema ${SOURCE}#/properties/v/minLength: minLength 5 is greater than maxLength 2: no value can be valid`],
  ['minItems above maxItems', one({ minItems: 3, maxItems: 2 }), `invalid schema ${SOURCE}#/properties/v/minItems: minItems 3 is greater than maxItems 2: no value can be valid`],
  ['minimum above maximum', one({ minimum: 1, maximum: 0 }), `invalid schema ${SOURCE}#/properties/v/minimum: minimum 1 is greater than maximum 0: no value can be valid`],
  ['pattern not a string', one({ pattern: 1 }), `invalid schema ${SOURCE}#/properties/v/pattern: pattern must be a string, got 1`],
  ['pattern bad regex', one({ pattern: '([a-z]' }), `invalid schema ${SOURCE}#/properties/v/pattern: pattern is not a valid regular expression: Invalid regular expression: /([a-z]/u: Unterminated group`],
  ['pattern invalid with unicode flag', one({ pattern: '\\_' }), `invalid schema ${SOURCE}#/properties/v/pattern: pattern is not a valid regular expression: Invalid regular expression: /\\_/u: Invalid escape`],
  ['properties an array', { properties: [] }, `invalid schema ${SOURCE}#/properties: properties must be an object of schemas, got []`],
  ['property schema a string', { properties: { a: 'string' } }, `invalid schema ${SOURCE}#/properties/a: a schema must be a JSON object, got "string"`],
  ['property schema a symbol (embedder)', { properties: { a: Symbol('s') } }, `invalid schema ${SOURCE}#/properties/a: a schema must be a JSON object, got Symbol(s)`],
  ['boolean property schema', { properties: { a: true } }, `invalid schema ${SOURCE}#/properties/a: a schema must be a JSON object, got true`],
  ['additionalProperties a number', { additionalProperties: 0 }, `invalid schema ${SOURCE}#/additionalProperties: a schema must be a JSON object, got 0`],
  ['additionalProperties bad schema', { additionalProperties: { type: 'decimal' } }, `invalid schema ${SOURCE}#/additionalProperties/type: type must be one of string, number, integer, boolean, object, array, null (or an array of them), got "decimal"`],
  ['required not an array', { required: 'name' }, `invalid schema ${SOURCE}#/required: required must be an array of field names, got "name"`],
  ['required holds a number', { required: ['a', 1] }, `invalid schema ${SOURCE}#/required/1: required must list field names (strings), got 1`],
  ['required lists a name twice', { required: ['a', 'a'] }, `invalid schema ${SOURCE}#/required/1: required lists "a" twice`],
  ['required field forbidden by additionalProperties false', { properties: { a: {} }, required: ['a', 'b'], additionalProperties: false }, `invalid schema ${SOURCE}#/required/1: "b" is required but not in properties, and additionalProperties is false: no object can be valid`],
  ['items tuple form', one({ items: [{}] }), `invalid schema ${SOURCE}#/properties/v/items: items must be one schema (the array form, for tuples, is not supported)`],
  ['items not a schema', one({ items: 'string' }), `invalid schema ${SOURCE}#/properties/v/items: a schema must be a JSON object, got "string"`],
  ['x-link not a string', one({ type: 'string', 'x-link': 1 }), `invalid schema ${SOURCE}#/properties/v/x-link: x-link must name a resource, got 1`],
  ['x-link empty', one({ type: 'string', 'x-link': '' }), `invalid schema ${SOURCE}#/properties/v/x-link: x-link must name a resource, got ""`],
  ['x-link on the root', { 'x-link': 'things' }, `invalid schema ${SOURCE}#/x-link: x-link may only annotate a property of the root schema`],
  ['x-link on a nested property', one({ type: 'object', properties: { w: { type: 'string', 'x-link': 'things' } } }), `invalid schema ${SOURCE}#/properties/v/properties/w/x-link: x-link may only annotate a property of the root schema`],
  ['x-link on array items', one({ type: 'array', items: { type: 'string', 'x-link': 'things' } }), `invalid schema ${SOURCE}#/properties/v/items/x-link: x-link may only annotate a property of the root schema`],
  ['x-link without a type', one({ 'x-link': 'things' }), `invalid schema ${SOURCE}#/properties/v/x-link: x-link needs type "string", or type "array" with items of type "string"`],
  ['x-link on a number', one({ type: 'number', 'x-link': 'things' }), `invalid schema ${SOURCE}#/properties/v/x-link: x-link needs type "string", or type "array" with items of type "string"`],
  ['x-link on an array of numbers', one({ type: 'array', items: { type: 'number' }, 'x-link': 'things' }), `invalid schema ${SOURCE}#/properties/v/x-link: x-link needs type "string", or type "array" with items of type "string"`],
  ['x-link on an array without items', one({ type: 'array', 'x-link': 'things' }), `invalid schema ${SOURCE}#/properties/v/x-link: x-link needs type "string", or type "array" with items of type "string"`],
  ['x-link on string or number', one({ type: ['string', 'number'], 'x-link': 'things' }), `invalid schema ${SOURCE}#/properties/v/x-link: x-link needs type "string", or type "array" with items of type "string"`],
  ['long bad value shortened', one({ minimum: 'x'.repeat(100) }), `invalid schema ${SOURCE}#/properties/v/minimum: minimum must be a number, got "${'x'.repeat(36)}...`],
];

describe('compileSchema: valid bodies', () => {
  for (const { name, schema, body } of validCases) {
    test(`${name} -> undefined`, () => {
      assert.equal(compileSchema(schema, SOURCE)(body), undefined);
    });
  }
});

describe('compileSchema: invalid bodies', () => {
  for (const { name, schema, body, expected } of invalidCases) {
    test(`${name} -> ${JSON.stringify(expected)}`, () => {
      const messages = compileSchema(schema, SOURCE)(body);
      assert.deepEqual(messages, expected);
      // The order of fields is part of what a client reads: schema order, then unknown fields.
      assert.deepEqual(Object.keys(messages ?? {}), Object.keys(expected ?? {}));
    });
  }
});

describe('compileSchema: start-up errors', () => {
  for (const [name, schema, message] of startupErrors) {
    test(`${name} -> SchemaError naming source and pointer`, () => {
      assert.throws(() => compileSchema(schema, SOURCE), (error: unknown) => {
        assert.ok(error instanceof SchemaError);
        assert.equal(error.name, 'SchemaError');
        assert.equal(error.message, message);
        assert.doesNotMatch(error.message, /\n/);
        return true;
      });
    });
  }

  test('a schema object that contains itself -> SchemaError, not a stack overflow', () => {
    const cyclic: Record<string, unknown> = { type: 'object' };
    cyclic['properties'] = { self: cyclic };
    assert.throws(() => compileSchema(cyclic, SOURCE), {
      name: 'SchemaError',
      message: `invalid schema ${SOURCE}#/properties/self: the schema refers to itself (a cycle)`,
    });
  });

  test('one schema object reused in two places (not a cycle) -> compiles', () => {
    const price = { type: 'number', minimum: 0 };
    const validate = compileSchema({ properties: { price, cost: price } }, SOURCE);
    assert.deepEqual(validate({ price: -1, cost: -2 }), { price: { minimum: 'must be >= 0' }, cost: { minimum: 'must be >= 0' } });
  });
});

describe('compileSchema: x-link (docs/relations.md)', () => {
  for (const [name, property, body] of [
    ['a string', { type: 'string', 'x-link': 'things' }, 'a'],
    ['a string or null', { type: ['string', 'null'], 'x-link': 'things' }, null],
    ['an array of strings', { type: 'array', items: { type: 'string' }, 'x-link': 'things' }, ['a', 'b']],
  ] as const) {
    test(`on ${name} -> compiles, constrains nothing itself`, () => {
      assert.equal(compileSchema(one(property), SOURCE)({ v: body }), undefined);
    });
  }
});

describe('compileSchema: the compiled validator', () => {
  test('one validator, many bodies -> each result independent', () => {
    const validate = compileSchema({ required: ['a'] }, SOURCE);
    assert.deepEqual(validate({}), { a: { required: 'is required' } });
    assert.equal(validate({ a: 1 }), undefined);
    assert.deepEqual(validate({}), { a: { required: 'is required' } });
  });

  test('a __proto__ field in the messages -> an own key, prototype untouched', () => {
    const messages = compileSchema({ additionalProperties: false }, SOURCE)(JSON.parse('{"__proto__":1}') as Record<string, unknown>);
    assert.ok(messages !== undefined);
    assert.equal(Object.getPrototypeOf(messages), Object.prototype);
    assert.deepEqual(Object.keys(messages), ['__proto__']);
    assert.equal(JSON.stringify(messages), '{"__proto__":{"additionalProperties":"is not allowed"}}');
  });

  test('schema compiled, then the source object changed -> validator unchanged', () => {
    const schema = { properties: { a: { type: 'string' } } };
    const validate = compileSchema(schema, SOURCE);
    schema.properties.a.type = 'number';
    assert.deepEqual(validate({ a: 1 }), { a: { type: 'must be string' } });
  });
});

describe('declaredPaths (docs/queries.md: filters and sorts on undeclared fields are refused)', () => {
  const declared = declaredPaths({
    type: 'object',
    properties: { price: { type: 'number' }, dimensions: { type: 'object', properties: { weight: { type: 'number' } } }, tags: { type: 'array' } },
  });
  for (const [path, expected] of [
    ['price', true],
    ['dimensions', true],
    ['dimensions.weight', true],
    ['dimensions.height', false],
    ['tags', true],
    ['tags.0', false],
    ['colour', false],
    ['id', true],
    ['createdAt', true],
    ['updatedAt', true],
    ['price.cents', false],
    ['toString', false],
  ] as const) {
    test(`${path} -> ${expected ? 'declared' : 'not declared'}`, () => assert.equal(declared(path.split('.')), expected));
  }
});
