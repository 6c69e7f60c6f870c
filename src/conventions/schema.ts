/**
 * Request-body validation against the JSON Schema subset of docs/conventions.md §1.
 *
 * A schema is compiled once at start-up into a tree of plain nodes with every message prepared; a
 * request only walks that tree. The walk goes no deeper than the schema does, so however a body is
 * nested, a client cannot make validation recurse further than the operator's schema allows.
 * Pure: no I/O.
 */

import { SERVER_MANAGED } from './entity.js';

/** `{ "<field>": { "<rule>": "<message>" } }` (docs/conventions.md §7); field is a dotted path for nested values (`dimensions.width`, `tags.0`). */
export type ValidationMessages = Record<string, Record<string, string>>;

/** Checks the client's fields of an entity (server-managed fields already removed); undefined when valid. */
export type Validator = (value: Readonly<Record<string, unknown>>) => ValidationMessages | undefined;

/** Thrown by compileSchema; message is one line the user sees, naming `source` and the JSON pointer of the problem. */
export class SchemaError extends Error {
  override readonly name = 'SchemaError';
}

// JSON Schema validation §6.1.1: the seven primitive types, as bits so a node's allowed set is one mask.
const STRING = 1;
const NUMBER = 2;
const INTEGER = 4;
const BOOLEAN = 8;
const OBJECT = 16;
const ARRAY = 32;
const NULL = 64;

const TYPE_BITS: ReadonlyMap<string, number> = new Map([
  ['string', STRING],
  ['number', NUMBER],
  ['integer', INTEGER],
  ['boolean', BOOLEAN],
  ['object', OBJECT],
  ['array', ARRAY],
  ['null', NULL],
]);

/**
 * Keywords that constrain only values of some types (JSON Schema validation §6.2–6.5). When `type`
 * is given, such a keyword that none of its types can reach is refused: it would be a constraint
 * silently ignored (docs/conventions.md §1).
 */
const APPLIES_TO: ReadonlyMap<string, number> = new Map([
  ['minLength', STRING],
  ['maxLength', STRING],
  ['pattern', STRING],
  ['minimum', NUMBER | INTEGER],
  ['maximum', NUMBER | INTEGER],
  ['properties', OBJECT],
  ['required', OBJECT],
  ['additionalProperties', OBJECT],
  ['items', ARRAY],
  ['minItems', ARRAY],
  ['maxItems', ARRAY],
]);

/** Annotation keywords (JSON Schema core §8, validation §9): they constrain nothing, so they are allowed. */
const ANNOTATIONS: ReadonlyMap<string, 'string' | 'array' | 'any'> = new Map([
  ['$schema', 'string'],
  ['$id', 'string'],
  ['$comment', 'string'],
  ['title', 'string'],
  ['description', 'string'],
  ['default', 'any'],
  ['examples', 'array'],
]);

/** docs/relations.md: a top-level string (or array of strings) property whose values are ids of another resource. */
export const LINK_KEYWORD = 'x-link';

const SUPPORTED = ['type', 'enum', ...APPLIES_TO.keys(), ...ANNOTATIONS.keys(), LINK_KEYWORD].join(', ');

/** A compiled schema: every keyword resolved, every message made. Absent limits are ±Infinity. */
interface Node {
  /** Allowed type bits; 0 allows every type. */
  readonly types: number;
  readonly typeMessage: string;
  /** The enum's primitive members (compared by SameValueZero) and its object and array members. */
  readonly enumPrimitives: ReadonlySet<unknown> | undefined;
  readonly enumStructured: readonly unknown[];
  readonly enumMessage: string;
  readonly minLength: number;
  readonly maxLength: number;
  readonly pattern: RegExp | undefined;
  readonly minimum: number;
  readonly maximum: number;
  readonly required: readonly string[];
  readonly properties: ReadonlyMap<string, Node>;
  /** true: other fields allowed; false: refused; a node: other fields must satisfy it. */
  readonly additional: Node | boolean;
  readonly items: Node | undefined;
  readonly minItems: number;
  readonly maxItems: number;
  readonly messages: Readonly<Record<'minLength' | 'maxLength' | 'pattern' | 'minimum' | 'maximum' | 'minItems' | 'maxItems', string>>;
}

/**
 * Compiles a schema once at start-up (the hot path only runs the compiled checks). Throws SchemaError
 * on an unknown keyword or a malformed keyword value (e.g. `minLength: "x"`, bad regex).
 *
 * The root describes the request body, which is always an object: its `type`, if given, must allow
 * `object`, and keywords that only constrain other types are refused there. `default` and `examples`
 * are annotations only: nothing is filled in.
 *
 * @param schema the parsed schema document
 * @param source where it came from (a file path), named in every SchemaError
 */
export function compileSchema(schema: unknown, source: string): Validator {
  const root = compile(schema, '', { source, ancestors: new Set() });
  return (value) => {
    const out: Collector = { messages: undefined, fields: 0, full: false };
    check(root, value, '', out);
    return out.messages;
  };
}

interface Context {
  readonly source: string;
  /** Schemas being compiled on the current path, to refuse a cyclic object instead of overflowing. */
  readonly ancestors: Set<object>;
}

/** One schema object being compiled: its keywords and where it sits in the document. */
interface Site {
  readonly ctx: Context;
  readonly schema: Record<string, unknown>;
  readonly pointer: string;
}

function fail(ctx: Context, pointer: string, reason: string): never {
  throw new SchemaError(`invalid schema ${ctx.source}#${pointer}: ${reason}`);
}

/** The JSON pointer of one keyword of the schema at `site`. */
function at(site: Site, key: string): string {
  return `${site.pointer}/${escapePointer(key)}`;
}

function compile(schema: unknown, pointer: string, ctx: Context): Node {
  if (!isObject(schema)) return fail(ctx, pointer, `a schema must be a JSON object, got ${show(schema)}`);
  if (ctx.ancestors.has(schema)) return fail(ctx, pointer, 'the schema refers to itself (a cycle)');
  ctx.ancestors.add(schema);
  const site: Site = { ctx, schema, pointer };
  const isRoot = pointer === '';

  checkKeywords(site);
  const { types, typeNames } = readType(site);
  if (isRoot && types !== 0 && (types & OBJECT) === 0) {
    fail(ctx, at(site, 'type'), 'the root schema must allow type "object": a request body is always a JSON object');
  }
  // The root always meets an object (the body), so that is what its keywords must be able to constrain.
  const reachable = isRoot ? OBJECT : types;
  for (const [key, appliesTo] of APPLIES_TO) {
    if (reachable !== 0 && Object.hasOwn(schema, key) && (reachable & appliesTo) === 0) {
      const reason = isRoot ? 'cannot apply to the root: a request body is always a JSON object' : `never applies: type is ${typeNames.join(' or ')}`;
      fail(ctx, at(site, key), `${key} ${reason}`);
    }
  }
  if (isRoot && Object.hasOwn(schema, 'enum')) fail(ctx, at(site, 'enum'), 'enum cannot apply to the root: put it on a property');

  const minLength = readCount(site, 'minLength', 0);
  const maxLength = readCount(site, 'maxLength', Infinity);
  const minItems = readCount(site, 'minItems', 0);
  const maxItems = readCount(site, 'maxItems', Infinity);
  const minimum = readNumber(site, 'minimum', -Infinity);
  const maximum = readNumber(site, 'maximum', Infinity);
  ordered(site, 'minLength', minLength, 'maxLength', maxLength);
  ordered(site, 'minItems', minItems, 'maxItems', maxItems);
  ordered(site, 'minimum', minimum, 'maximum', maximum);
  const pattern = readPattern(site);

  const properties = new Map<string, Node>();
  const rawProperties = schema['properties'];
  if (rawProperties !== undefined) {
    if (!isObject(rawProperties)) fail(ctx, at(site, 'properties'), `properties must be an object of schemas, got ${show(rawProperties)}`);
    for (const name of Object.keys(rawProperties)) {
      properties.set(name, compile(rawProperties[name], `${at(site, 'properties')}/${escapePointer(name)}`, ctx));
    }
  }
  const rawAdditional = schema['additionalProperties'];
  const additional = rawAdditional === undefined || typeof rawAdditional === 'boolean'
    ? rawAdditional ?? true
    : compile(rawAdditional, at(site, 'additionalProperties'), ctx);
  const required = readRequired(site, (name) => additional !== false || properties.has(name));
  if (isRoot) checkManaged(site, properties, required);

  const rawItems = schema['items'];
  if (Array.isArray(rawItems)) fail(ctx, at(site, 'items'), 'items must be one schema (the array form, for tuples, is not supported)');
  const items = rawItems === undefined ? undefined : compile(rawItems, at(site, 'items'), ctx);
  if (Object.hasOwn(schema, LINK_KEYWORD)) checkLink(site, types, items);

  ctx.ancestors.delete(schema);
  return {
    types,
    typeMessage: `must be ${typeNames.join(' or ')}`,
    ...readEnum(site),
    minLength,
    maxLength,
    pattern,
    minimum,
    maximum,
    required,
    properties,
    additional,
    items,
    minItems,
    maxItems,
    messages: {
      minLength: `must be at least ${plural(minLength, 'character')} long`,
      maxLength: `must be at most ${plural(maxLength, 'character')} long`,
      pattern: `must match the pattern ${pattern?.source ?? ''}`,
      minimum: `must be >= ${minimum}`,
      maximum: `must be <= ${maximum}`,
      minItems: `must have at least ${plural(minItems, 'item')}`,
      maxItems: `must have at most ${plural(maxItems, 'item')}`,
    },
  };
}

/** Refuses unknown keywords and annotations of the wrong shape. */
function checkKeywords(site: Site): void {
  for (const [key, value] of Object.entries(site.schema)) {
    const kind = ANNOTATIONS.get(key);
    if (kind === undefined) {
      if (key !== 'type' && key !== 'enum' && key !== LINK_KEYWORD && !APPLIES_TO.has(key)) {
        fail(site.ctx, at(site, key), `unknown keyword "${key}" (supported: ${SUPPORTED})`);
      }
    } else if (kind === 'string' && typeof value !== 'string') {
      fail(site.ctx, at(site, key), `${key} must be a string, got ${show(value)}`);
    } else if (kind === 'array' && !Array.isArray(value)) {
      fail(site.ctx, at(site, key), `${key} must be an array, got ${show(value)}`);
    }
  }
}

/**
 * `x-link` (docs/relations.md) names the resource whose ids the property holds. It is refused where no
 * link could be made of it: anywhere but a property of the root (a rel is a top-level field's
 * name), or on a property that may hold something other than a string or an array of strings.
 * Whether the resource exists is checked once every schema is read (`relationGraph`).
 */
function checkLink(site: Site, types: number, items: Node | undefined): void {
  const where = at(site, LINK_KEYWORD);
  const target = site.schema[LINK_KEYWORD];
  if (typeof target !== 'string' || target === '') fail(site.ctx, where, `${LINK_KEYWORD} must name a resource, got ${show(target)}`);
  if (!/^\/properties\/[^/]+$/.test(site.pointer)) fail(site.ctx, where, `${LINK_KEYWORD} may only annotate a property of the root schema`);
  const kind = types & ~NULL;
  const strings = kind === STRING || (kind === ARRAY && items !== undefined && (items.types & ~NULL) === STRING);
  if (!strings) fail(site.ctx, where, `${LINK_KEYWORD} needs type "string", or type "array" with items of type "string"`);
}

function readType(site: Site): { types: number; typeNames: string[] } {
  const raw = site.schema['type'];
  const typeNames: string[] = [];
  let types = 0;
  if (raw === undefined) return { types, typeNames };
  const names: unknown[] = Array.isArray(raw) ? raw : [raw];
  if (names.length === 0) fail(site.ctx, at(site, 'type'), 'type must not be an empty array');
  for (const name of names) {
    const bit = typeof name === 'string' ? TYPE_BITS.get(name) : undefined;
    if (bit === undefined) {
      fail(site.ctx, at(site, 'type'), `type must be one of ${[...TYPE_BITS.keys()].join(', ')} (or an array of them), got ${show(name)}`);
    }
    if ((types & bit) !== 0) fail(site.ctx, at(site, 'type'), `type lists "${String(name)}" twice`);
    types |= bit;
    typeNames.push(String(name));
  }
  return { types, typeNames };
}

function readEnum(site: Site): Pick<Node, 'enumPrimitives' | 'enumStructured' | 'enumMessage'> {
  const members = site.schema['enum'];
  if (members === undefined) return { enumPrimitives: undefined, enumStructured: [], enumMessage: '' };
  if (!Array.isArray(members) || members.length === 0) {
    fail(site.ctx, at(site, 'enum'), `enum must be a non-empty array, got ${show(members)}`);
  }
  const enumPrimitives = new Set<unknown>();
  const enumStructured: unknown[] = [];
  for (const member of members as unknown[]) {
    if (member !== null && typeof member === 'object') enumStructured.push(member);
    else enumPrimitives.add(member);
  }
  const listed = members.map((m: unknown) => (typeof m === 'string' ? m : JSON.stringify(m)));
  return { enumPrimitives, enumStructured, enumMessage: `must be one of: ${listed.join(', ')}` };
}

function readCount(site: Site, key: string, absent: number): number {
  const n = site.schema[key];
  if (n === undefined) return absent;
  if (typeof n === 'number' && Number.isInteger(n) && n >= 0) return n;
  return fail(site.ctx, at(site, key), `${key} must be a non-negative integer, got ${show(n)}`);
}

function readNumber(site: Site, key: string, absent: number): number {
  const n = site.schema[key];
  if (n === undefined) return absent;
  if (typeof n === 'number' && Number.isFinite(n)) return n;
  return fail(site.ctx, at(site, key), `${key} must be a number, got ${show(n)}`);
}

/** A lower bound above its upper bound would refuse every value: a mistake worth stopping for. */
function ordered(site: Site, low: string, lowValue: number, high: string, highValue: number): void {
  if (lowValue > highValue) {
    fail(site.ctx, at(site, low), `${low} ${lowValue} is greater than ${high} ${highValue}: no value can be valid`);
  }
}

function readPattern(site: Site): RegExp | undefined {
  const source = site.schema['pattern'];
  if (source === undefined) return undefined;
  if (typeof source !== 'string') return fail(site.ctx, at(site, 'pattern'), `pattern must be a string, got ${show(source)}`);
  try {
    // JSON Schema patterns are ECMA-262 regular expressions over code points, hence the `u` flag.
    return new RegExp(source, 'u');
  } catch (error) {
    return fail(site.ctx, at(site, 'pattern'), `pattern is not a valid regular expression: ${(error as Error).message}`);
  }
}

/** `required`'s names; `satisfiable(name)` is false when no object could have that field. */
function readRequired(site: Site, satisfiable: (name: string) => boolean): string[] {
  const raw = site.schema['required'];
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) return fail(site.ctx, at(site, 'required'), `required must be an array of field names, got ${show(raw)}`);
  const names: string[] = [];
  raw.forEach((name: unknown, i) => {
    const where = `${at(site, 'required')}/${i}`;
    if (typeof name !== 'string') fail(site.ctx, where, `required must list field names (strings), got ${show(name)}`);
    if (names.includes(name)) fail(site.ctx, where, `required lists "${name}" twice`);
    if (!satisfiable(name)) {
      fail(site.ctx, where, `"${name}" is required but not in properties, and additionalProperties is false: no object can be valid`);
    }
    names.push(name);
  });
  return names;
}

/**
 * What the server writes in each member it manages (docs/conventions.md §2), which a schema may
 * describe (for `/openapi.json`, and as a field filters and sorts know) with `type` and annotations.
 */
const MANAGED_TYPES: ReadonlyMap<string, { readonly types: number; readonly name: string }> = new Map([
  ['id', { types: STRING, name: 'string' }],
  ['createdAt', { types: INTEGER | NUMBER, name: 'integer' }],
  ['updatedAt', { types: INTEGER | NUMBER, name: 'integer' }],
]);

/**
 * Refuses a root schema that constrains a server-managed member: a request body's are dropped
 * before it is checked, so a constraint there would be ignored (a requirement of one would refuse
 * every write), and a type other than the server's would be false of every entity.
 */
function checkManaged(site: Site, properties: ReadonlyMap<string, Node>, required: readonly string[]): void {
  required.forEach((name, i) => {
    if (SERVER_MANAGED.has(name)) {
      fail(site.ctx, `${at(site, 'required')}/${i}`, `"${name}" is server-managed: it is dropped from a request body before the body is checked, so requiring it would refuse every write`);
    }
  });
  const raw = site.schema['properties'] as Record<string, Record<string, unknown>> | undefined;
  for (const [name, node] of properties) {
    if (!SERVER_MANAGED.has(name)) continue;
    const where = `${at(site, 'properties')}/${escapePointer(name)}`;
    const managed = MANAGED_TYPES.get(name);
    for (const key of Object.keys(raw?.[name] ?? {})) {
      if (ANNOTATIONS.has(key)) continue;
      if (key === 'type' && managed !== undefined && (node.types & managed.types) !== 0) continue;
      const described = managed === undefined ? 'annotations' : `type "${managed.name}" and annotations`;
      fail(site.ctx, `${where}/${escapePointer(key)}`, `"${name}" is server-managed: the server sets it and ignores it in a request body, so ${key} would never be checked; only ${described} may describe it`);
    }
  }
}

/**
 * At most this many fields are reported: a body of 100,000 bad items must not buy an answer a
 * hundred times its size. Past it, the field `*` says the list was cut.
 */
export const MAX_REPORTED_FIELDS = 100;

/** Failures found so far; created on the first one so a valid body allocates nothing. */
interface Collector {
  messages: ValidationMessages | undefined;
  fields: number;
  /** Set once the report is full: the walk stops there. */
  full: boolean;
}

function report(out: Collector, field: string, rule: string, message: string): void {
  if (out.full) return;
  const messages = (out.messages ??= {});
  let rules = Object.hasOwn(messages, field) ? messages[field] : undefined;
  if (rules === undefined) {
    if (out.fields === MAX_REPORTED_FIELDS) {
      out.full = true;
      messages['*'] = { truncated: `only the first ${MAX_REPORTED_FIELDS} fields with failures are listed` };
      return;
    }
    out.fields++;
    rules = {};
    // defineProperty, not assignment: a client's field named `__proto__` must stay an ordinary key.
    Object.defineProperty(messages, field, { value: rules, enumerable: true, writable: true, configurable: true });
  }
  rules[rule] = message;
}

function check(node: Node, value: unknown, path: string, out: Collector): void {
  const bits = typeBits(value);
  if (node.types !== 0 && (node.types & bits) === 0) {
    // The other rules would only repeat the type failure in other words.
    report(out, path, 'type', node.typeMessage);
    return;
  }
  if (node.enumPrimitives !== undefined && !inEnum(node, value)) report(out, path, 'enum', node.enumMessage);

  if (bits === STRING) {
    const s = value as string;
    if (tooShort(s, node.minLength)) report(out, path, 'minLength', node.messages.minLength);
    if (tooLong(s, node.maxLength)) report(out, path, 'maxLength', node.messages.maxLength);
    if (node.pattern !== undefined && !node.pattern.test(s)) report(out, path, 'pattern', node.messages.pattern);
  } else if ((bits & NUMBER) !== 0) {
    const n = value as number;
    if (n < node.minimum) report(out, path, 'minimum', node.messages.minimum);
    if (n > node.maximum) report(out, path, 'maximum', node.messages.maximum);
  } else if (bits === OBJECT) {
    checkObject(node, value as Readonly<Record<string, unknown>>, path, out);
  } else if (bits === ARRAY) {
    const list = value as readonly unknown[];
    if (list.length < node.minItems) report(out, path, 'minItems', node.messages.minItems);
    if (list.length > node.maxItems) report(out, path, 'maxItems', node.messages.maxItems);
    if (node.items !== undefined) {
      for (let i = 0; i < list.length && !out.full; i++) check(node.items, list[i], join(path, String(i)), out);
    }
  }
}

function checkObject(node: Node, object: Readonly<Record<string, unknown>>, path: string, out: Collector): void {
  for (const name of node.required) {
    if (field(object, name) === undefined) report(out, join(path, name), 'required', 'is required');
  }
  for (const [name, child] of node.properties) {
    const value = field(object, name);
    if (value !== undefined) check(child, value, join(path, name), out);
  }
  if (node.additional === true) return;
  for (const name of Object.keys(object)) {
    if (out.full) return;
    if (node.properties.has(name) || object[name] === undefined) continue;
    if (node.additional === false) report(out, join(path, name), 'additionalProperties', 'is not allowed');
    else check(node.additional, object[name], join(path, name), out);
  }
}

/** An own field only: a body without `constructor` must not "have" the one on Object.prototype. */
function field(object: Readonly<Record<string, unknown>>, name: string): unknown {
  return Object.hasOwn(object, name) ? object[name] : undefined;
}

function join(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

/** The type bits a value satisfies; a non-finite number (never parsed from JSON) satisfies none. */
function typeBits(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return STRING;
    case 'number':
      if (!Number.isFinite(value)) return 0;
      return Number.isInteger(value) ? NUMBER | INTEGER : NUMBER;
    case 'boolean':
      return BOOLEAN;
    case 'object':
      return value === null ? NULL : Array.isArray(value) ? ARRAY : OBJECT;
    default:
      return 0;
  }
}

function inEnum(node: Node, value: unknown): boolean {
  if (value === null || typeof value !== 'object') return node.enumPrimitives?.has(value) === true;
  return node.enumStructured.some((member) => jsonEqual(member, value));
}

/** JSON equality (key order ignored); recursion is bounded by the depth of the schema's member. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = Object.keys(ra);
  return keys.length === Object.keys(rb).length && keys.every((k) => Object.hasOwn(rb, k) && jsonEqual(ra[k], rb[k]));
}

// JSON Schema counts length in code points (validation §6.3.1); the UTF-16 length bounds it within a
// factor of two, so the count is only taken when those bounds cannot decide.
function tooShort(s: string, min: number): boolean {
  if (s.length < min) return true;
  return s.length < 2 * min && codePoints(s) < min;
}

function tooLong(s: string, max: number): boolean {
  if (s.length <= max) return false;
  return Math.ceil(s.length / 2) > max || codePoints(s) > max;
}

function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is a single code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** RFC 6901 §3: `~` and `/` in a reference token are escaped. */
function escapePointer(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** A short rendering of a bad keyword value for an error message. */
function show(value: unknown): string {
  const text = typeof value === 'bigint' || typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** Fields every entity has, whatever its schema (docs/conventions.md §2, §3a). */
const SERVER_FIELDS: ReadonlySet<string> = new Set(['id', 'createdAt', 'updatedAt']);

/**
 * The field paths a schema declares, for filters and sorts (docs/queries.md): the server's fields,
 * and every chain of `properties` from the root (`dimensions.weight`). The schema has already
 * been compiled, so its shape is known to be sound.
 */
export function declaredPaths(schema: unknown): (path: readonly string[]) => boolean {
  return (path) => {
    if (path.length === 1 && SERVER_FIELDS.has(path[0]!)) return true;
    let node = schema;
    for (const segment of path) {
      const properties = (node as { properties?: unknown } | null)?.properties;
      if (typeof properties !== 'object' || properties === null || !Object.hasOwn(properties, segment)) return false;
      node = (properties as Record<string, unknown>)[segment];
    }
    return true;
  };
}
