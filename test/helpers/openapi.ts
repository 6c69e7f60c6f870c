import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import { relationGraph } from '../../src/conventions/relations.js';
import type { OpenApiResource } from '../../src/representations/openapi.js';

type Json = Record<string, unknown>;

const unescape = (segment: string): string => decodeURIComponent(segment).replaceAll('~1', '/').replaceAll('~0', '~');
const escape = (segment: string): string => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * Checks responses against an OpenAPI 3.1 document: the status must be declared for the
 * operation, and the body valid against the schema declared for its media type (JSON Schema
 * 2020-12, by Ajv). Refs between parts of the document resolve as they would for any client.
 */
export class Conformance {
  readonly #doc: Json;
  readonly #ajv: InstanceType<typeof Ajv2020.default>;
  readonly #compiled = new Map<string, ReturnType<InstanceType<typeof Ajv2020.default>['compile']>>();

  constructor(doc: Json) {
    this.#doc = doc;
    // Not strict: schemas carry OpenAPI's own annotations (`example`, `x-link`).
    this.#ajv = new Ajv2020.default({ strict: false, validateSchema: false, allErrors: true });
    this.#ajv.addSchema(doc, 'openapi');
  }

  /** The value at a `#/…` pointer, following `$ref`s on the way, and the pointer it was found at. */
  #at(pointer: string): { value: unknown; pointer: string } {
    const segments = pointer.replace(/^#?\//, '').split('/');
    let value: unknown = this.#doc;
    let at = '';
    for (let i = 0; i < segments.length; i++) {
      const segment = unescape(segments[i] ?? '');
      value = (value as Json | undefined)?.[segment];
      at += `/${escape(segment)}`;
      const ref = (value as Json | undefined)?.['$ref'];
      if (typeof ref === 'string') return this.#at([ref, ...segments.slice(i + 1)].join('/'));
    }
    return { value, pointer: at };
  }

  /** The template of `doc.paths` that `path` fits (`/products/abc` → `/products/{id}`). */
  template(path: string): string | undefined {
    const paths = Object.keys(this.#doc['paths'] as Json);
    const exact = paths.find((p) => p === path);
    if (exact) return exact;
    return paths.find((p) => {
      const a = p.split('/');
      const b = path.split('/');
      return a.length === b.length && a.every((s, i) => s.startsWith('{') || s === b[i]);
    });
  }

  /** Asserts that `res` (already read into `body`) is a response the document declares for `method path`. */
  check(method: string, url: string, status: number, contentType: string | null, body: string): void {
    const path = new URL(url, 'http://x').pathname;
    const template = this.template(path);
    assert.ok(template, `${path} is not in the document`);
    const operation = this.#at(`#/paths/${escape(template)}/${method.toLowerCase()}`);
    if (operation.value === undefined) {
      assert.equal(status, 405, `${method} ${template} is not in the document`);
      return;
    }
    const responses = (operation.value as Json)['responses'] as Json;
    assert.ok(Object.hasOwn(responses, String(status)), `${method} ${template} does not declare ${status}`);
    const response = this.#at(`${operation.pointer}/responses/${status}`);
    const content = (response.value as Json)['content'] as Json | undefined;
    if (status === 204 || status === 304 || method === 'HEAD') {
      assert.equal(body, '', `${status} has a body`);
      return;
    }
    assert.ok(content, `${method} ${template} ${status} declares no content`);
    const type = (contentType ?? '').split(';')[0]?.trim() ?? '';
    assert.ok(Object.hasOwn(content, type), `${method} ${template} ${status} does not declare ${type}`);
    if (!type.includes('json')) return;
    const schemaPointer = `${response.pointer}/content/${escape(type)}/schema`;
    let validate = this.#compiled.get(schemaPointer);
    if (validate === undefined) {
      validate = this.#ajv.compile({ $ref: `openapi#${encodeURI(schemaPointer)}` });
      this.#compiled.set(schemaPointer, validate);
    }
    const valid = validate(JSON.parse(body));
    assert.ok(valid, `${method} ${path} ${status}: ${JSON.stringify(validate.errors?.slice(0, 5))}`);
  }

  /** Asserts that `body` is a request body the document declares for `method path` in `contentType`. */
  checkRequest(method: string, url: string, contentType: string, body: unknown): void {
    const template = this.template(new URL(url, 'http://x').pathname);
    assert.ok(template, `${url} is not in the document`);
    const operation = this.#at(`#/paths/${escape(template)}/${method.toLowerCase()}`);
    const schemaPointer = `${operation.pointer}/requestBody/content/${escape(contentType)}/schema`;
    assert.ok(this.#at(schemaPointer).value !== undefined, `${method} ${template} declares no ${contentType} body`);
    const validate = this.#ajv.compile({ $ref: `openapi#${encodeURI(schemaPointer)}` });
    assert.ok(validate(body), `${method} ${template} body: ${JSON.stringify(validate.errors?.slice(0, 5))}`);
  }
}

/** `count` resources with the demo catalogue's schema (every fifth without one), each linking to the next and to the seventh after it. */
export function catalogue(count: number): OpenApiResource[] {
  const base = JSON.parse(readFileSync(new URL('../../data/products.schema.json', import.meta.url), 'utf8')) as { properties: Record<string, Record<string, unknown>> };
  const name = (i: number): string => `r${i % count}`;
  return Array.from({ length: count }, (_, i) => {
    const schema = structuredClone(base);
    schema.properties['category'] = { ...schema.properties['category'], 'x-link': name(i + 1) };
    schema.properties['owner'] = { type: 'array', items: { type: 'string' }, 'x-link': name(i + 7) };
    return { name: name(i), schema: i % 5 === 4 ? undefined : schema };
  });
}

/** `catalogue(count)`, its relations, and the options an OpenAPI document of it is made with (base path `/api`, tokens on). */
export function catalogueOptions(count: number) {
  const RESOURCES = catalogue(count);
  const GRAPH = relationGraph(RESOURCES);
  return { RESOURCES, GRAPH, options: { resources: RESOURCES, relations: GRAPH, basePath: '/api', authenticated: true, version: '1.2.3' } };
}
