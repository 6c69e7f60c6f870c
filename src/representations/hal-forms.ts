import { SERVER_MANAGED } from '../conventions/entity.js';
import { LINK_KEYWORD } from '../conventions/schema.js';
import { HAL_FORMS, HAL_JSON, JSON_TYPE } from '../conventions/media-types.js';

export { HAL_FORMS };

/**
 * HAL-FORMS (https://rwcbook.github.io/hal-forms/): the `_templates` a HAL document carries to say
 * which requests it takes and with which fields, generated from a resource's schema. Pure: a
 * schema in, JSON text out; made once per resource at start-up, values filled per entity.
 */

/** RFC 7396 §4. */
const MERGE_PATCH_JSON = 'application/merge-patch+json';

type Schema = Readonly<Record<string, unknown>>;

/** One property of a template (HAL-FORMS: "properties"), without its value. */
export interface TemplateProperty {
  readonly name: string;
  readonly prompt: string;
  readonly required?: true;
  /** HAL-FORMS property types: `text`, `number`, `checkbox`, `textarea` (an object or an array, as JSON). */
  readonly type: 'text' | 'number' | 'checkbox' | 'textarea';
  readonly regex?: string;
  readonly min?: number;
  readonly max?: number;
  readonly step?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly placeholder?: string;
  /** HAL-FORMS `options`: the values to choose from, inline (`enum`) or at a link (`x-link`: the target collection). */
  readonly options?: TemplateOptions;
}

export interface TemplateOptions {
  readonly inline?: readonly unknown[];
  readonly link?: { readonly href: string; readonly type: string };
  readonly valueField?: string;
  readonly minItems?: number;
  readonly maxItems?: number;
}

const isObject = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The JSON type a property holds: its `type`, the first other than `null` of a list; none when it has none. */
function typeOf(schema: Schema): string | undefined {
  const type = schema['type'];
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return (type as unknown[]).find((t): t is string => typeof t === 'string' && t !== 'null');
  return undefined;
}

function fieldType(type: string | undefined): TemplateProperty['type'] {
  switch (type) {
    case 'string':
      return 'text';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'checkbox';
    default:
      // An object, an array, or any JSON value (no type): written as JSON.
      return 'textarea';
  }
}

/** An `enum`'s values as HAL-FORMS inline options: strings as they are, other values with their JSON text as prompt. */
function inlineOptions(values: readonly unknown[]): unknown[] {
  return values.map((value) => (typeof value === 'string' ? value : { prompt: JSON.stringify(value), value }));
}

/**
 * The template properties of a schema's top-level properties, in its order:
 * `prompt` from `title`, `regex` from `pattern`, `min`/`max` from `minimum`/`maximum`,
 * `placeholder` from `description` or the first of `examples`; an `enum` (or an array of one) as
 * inline options, an `x-link` as a link to the target collection (under `basePath`), whose
 * entities' `id` is the value. A server-managed member the schema describes (`id`, `createdAt`,
 * `_links`, …) is no property: a request body's is dropped, so a form must not ask for it.
 * Without a schema, or one without properties: none.
 */
export function templateProperties(schema: Schema | undefined, basePath: string): TemplateProperty[] {
  const properties = schema?.['properties'];
  if (!isObject(properties)) return [];
  const required = new Set(Array.isArray(schema?.['required']) ? (schema['required'] as unknown[]) : []);
  const out: TemplateProperty[] = [];
  for (const [name, child] of Object.entries(properties)) {
    if (SERVER_MANAGED.has(name)) continue;
    const sub: Schema = isObject(child) ? child : {};
    const type = typeOf(sub);
    const items: Schema = type === 'array' && isObject(sub['items']) ? sub['items'] : {};
    const choices = Array.isArray(sub['enum']) ? (sub['enum'] as unknown[]) : Array.isArray(items['enum']) ? (items['enum'] as unknown[]) : undefined;
    const link = sub[LINK_KEYWORD];
    const many = type === 'array';
    let options: TemplateOptions | undefined;
    if (typeof link === 'string') {
      options = { link: { href: `${basePath}/${link}`, type: HAL_JSON }, valueField: 'id', ...countOptions(sub, many) };
    } else if (choices !== undefined) {
      options = { inline: inlineOptions(choices), ...countOptions(sub, many) };
    }
    const placeholder = typeof sub['description'] === 'string' ? sub['description'] : Array.isArray(sub['examples']) && sub['examples'].length > 0 ? exampleText(sub['examples'][0]) : undefined;
    const number = (key: string): number | undefined => (typeof sub[key] === 'number' ? (sub[key] as number) : undefined);
    // An integer's steps count from `min` (HTML's step base, which HAL-FORMS follows): a fractional
    // bound would offer 0.5, 1.5, … and refuse 1, so it becomes the nearest integer within it.
    const min = type === 'integer' && number('minimum') !== undefined ? Math.ceil(number('minimum')!) : number('minimum');
    const max = type === 'integer' && number('maximum') !== undefined ? Math.floor(number('maximum')!) : number('maximum');
    const fields: Record<string, unknown> = {
      name,
      prompt: typeof sub['title'] === 'string' ? sub['title'] : name,
      ...(required.has(name) ? { required: true } : {}),
      // A choice among entities or values is made from the options, whatever the value's type.
      type: options !== undefined ? 'text' : fieldType(type),
      ...(typeof sub['pattern'] === 'string' ? { regex: sub['pattern'] } : {}),
      ...(min !== undefined ? { min } : {}),
      ...(max !== undefined ? { max } : {}),
      ...(type === 'integer' ? { step: 1 } : {}),
      ...(number('minLength') !== undefined ? { minLength: number('minLength') } : {}),
      ...(number('maxLength') !== undefined ? { maxLength: number('maxLength') } : {}),
      ...(placeholder !== undefined ? { placeholder } : {}),
      ...(options !== undefined ? { options } : {}),
    };
    out.push(fields as unknown as TemplateProperty);
  }
  return out;
}

/** How many options may be chosen: one for a single value, the schema's `minItems`/`maxItems` for an array. */
function countOptions(schema: Schema, many: boolean): Pick<TemplateOptions, 'minItems' | 'maxItems'> {
  if (!many) return { maxItems: 1 };
  return {
    ...(typeof schema['minItems'] === 'number' ? { minItems: schema['minItems'] } : {}),
    ...(typeof schema['maxItems'] === 'number' ? { maxItems: schema['maxItems'] } : {}),
  };
}

function exampleText(example: unknown): string {
  return typeof example === 'string' ? example : JSON.stringify(example);
}

/** The `_templates` of a collection page: `default` creates (POST to the collection). */
export function collectionTemplates(properties: readonly TemplateProperty[], target: string): string {
  return JSON.stringify({ default: { title: 'Create', method: 'POST', contentType: JSON_TYPE, target, properties } });
}

/**
 * The `_templates` of an entity: `default` replaces (PUT), `update` merge-patches (PATCH: no
 * property is required, a patch sends what changes), `delete` deletes. Each property carries the
 * entity's current value (as the JSON value it holds, so that a client which submits the values it
 * was given sends back what it read); an absent field has none.
 */
export function entityTemplates(properties: readonly TemplateProperty[], target: string, record: Readonly<Record<string, unknown>>): string {
  const valued = properties.map((p) => (Object.hasOwn(record, p.name) && record[p.name] !== undefined ? { ...p, value: record[p.name] } : p));
  const optional = valued.map(({ required: _required, ...rest }) => rest);
  return JSON.stringify({
    default: { title: 'Replace', method: 'PUT', contentType: JSON_TYPE, target, properties: valued },
    update: { title: 'Update', method: 'PATCH', contentType: MERGE_PATCH_JSON, target, properties: optional },
    delete: { title: 'Delete', method: 'DELETE', target, properties: [] },
  });
}

/**
 * The `_templates` of a page or an entity for a principal that may not write its resource: none.
 * A template is an affordance the client may use; one that could only end in a 403 is not offered.
 */
export const NO_TEMPLATES = '{}';

/** A HAL document's text with `_templates` added as its last member. */
export function withTemplates(hal: Buffer | string, templates: string): Buffer {
  const text = typeof hal === 'string' ? hal : hal.toString('utf8');
  const close = text.lastIndexOf('}');
  return Buffer.from(`${text.slice(0, close)},"_templates":${templates}}`);
}
