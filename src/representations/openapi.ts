import { DEFAULT_LIMIT, MAX_LIMIT } from '../conventions/pagination.js';
import { HAL_FORMS } from '../conventions/media-types.js';
import { DATABASE_RETRY_AFTER_SECONDS, LASTING_WRITE_RETRY_AFTER_SECONDS, PROBLEM_MEDIA_TYPE, PROBLEM_TYPE, problemDocument, QUERY_RETRY_AFTER_SECONDS, READY_RETRY_AFTER_SECONDS, STREAMS_RETRY_AFTER_SECONDS, WRITE_RETRY_AFTER_SECONDS } from '../conventions/problem.js';
import { RESERVED_PARAMETERS } from '../conventions/query.js';
import { relationGraph, type RelationGraph, type ResourceRelations } from '../conventions/relations.js';
import { TEXT_EVENT_STREAM } from '../conventions/event-stream.js';

/**
 * The OpenAPI 3.1 document of a running service (docs/conventions.md §4.1), from its resources and
 * their schemas. Pure: resources in, a plain object out (`openApiDocument`), or its JSON text in
 * pieces (`openApiChunks`) for a caller that makes it without holding the event loop.
 */

/** A JSON schema object as read from `<name>.schema.json`. */
export type JsonSchema = Readonly<Record<string, unknown>>;

export interface OpenApiResource {
  readonly name: string;
  readonly schema?: JsonSchema | undefined;
}

export interface OpenApiOptions {
  readonly resources: readonly OpenApiResource[];
  /** The relations among them (`relationGraph` of their schemas): the handler's own. Default: computed here. */
  readonly relations?: RelationGraph;
  /** Where the API is mounted (`''` or `/api`). */
  readonly basePath: string;
  /** True when bearer tokens are configured: every operation but the open ones then requires one. */
  readonly authenticated: boolean;
  readonly version: string;
}

type Json = Record<string, unknown>;

const HAL_JSON = 'application/hal+json';
const JSON_TYPE = 'application/json';
const MERGE_PATCH = 'application/merge-patch+json';
/** docs/queries.md's operators; the bare name is `eq`. */
const OPERATORS: readonly (readonly [string, string])[] = [
  ['eq', 'equals one of the comma-separated values'],
  ['ne', 'is present and equals none of the values'],
  ['gt', 'is greater than the value (numbers numerically, strings by UTF-16 code unit)'],
  ['gte', 'is greater than or equal to the value'],
  ['lt', 'is less than the value'],
  ['lte', 'is less than or equal to the value'],
  ['exists', '`true`: the field is present (null counts); `false`: absent'],
];

const ref = (kind: string, name: string): Json => ({ $ref: `#/components/${kind}/${name}` });
/** JSON pointer escaping (RFC 6901 §3). */
const pointer = (segment: string): string => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/** The seed's own examples (docs/conventions.md §7), sent byte for byte. */
const EXAMPLE_409 = problemDocument(409, 'requested page is out of range', { pages: 15, page: 999 });
const EXAMPLE_415 = problemDocument(415, 'Expecting one of the application/json');

interface ProblemResponse {
  readonly description: string;
  readonly example: Json;
}

/** Every problem status the service sends, each with an example document (docs/conventions.md §7). */
const PROBLEMS: Readonly<Record<string, ProblemResponse>> = {
  '400': { description: 'Bad request: a malformed parameter or body, or a body the schema refuses (`validationMessages`).', example: problemDocument(400, 'Validation failed', { validationMessages: { price: { minimum: 'must be >= 0' } } }) },
  '401': { description: 'No bearer token, an unknown one, or a JWT that fails a check (`WWW-Authenticate` then says `error="invalid_token"`).', example: problemDocument(401, 'A bearer token is required: Authorization: Bearer <token>') },
  '403': { description: 'A token without the permission: a read-only token on a write, or a JWT without the scope of the resource (`error="insufficient_scope"`).', example: problemDocument(403, 'This token may only read') },
  '404': { description: 'No such resource or entity.', example: problemDocument(404, 'There is no products entity with id "x"') },
  '406': { description: 'Neither application/hal+json nor application/json is acceptable.', example: problemDocument(406, 'Expecting an Accept header that allows one of the application/hal+json, application/json') },
  '409': { description: 'The requested page is out of range (docs/conventions.md §7); for a delete, the entity is still linked to; for a POST or PATCH, a request with the same `Idempotency-Key` is still being processed.', example: EXAMPLE_409 },
  '410': { description: 'The cursor is older than a delete the change feed no longer remembers (past `--changes-retention`): list again and follow the page\'s `changes` link.', example: problemDocument(410, 'cursor 3 is older than a delete this server no longer remembers (changes since 17 are kept): list the collection again and follow its changes link') },
  '412': { description: '`If-Match`, `If-None-Match` or `If-Unmodified-Since` does not hold.', example: problemDocument(412, 'If-Match does not match the current ETag') },
  '413': { description: 'The body is over a limit: bytes, values, or members of one object.', example: problemDocument(413, 'Request body is larger than the limit of 1048576 bytes') },
  '415': { description: 'No or another Content-Type (docs/conventions.md §7).', example: EXAMPLE_415 },
  '422': { description: 'The `Idempotency-Key` was first used for a request with another body.', example: problemDocument(422, 'This Idempotency-Key was used for a request with another body: send a new key for a new request') },
  '501': { description: 'An `Idempotency-Key` sent to a store that keeps no answers.', example: problemDocument(501, 'This store does not keep Idempotency-Key answers: send the request without the header') },
  '429': { description: 'Over the rate limit (only with `--rate-limit`): wait `X-RateLimit-Wait` seconds; or (for a stream) the client holds `--max-streams-per-client` open streams.', example: problemDocument(429, 'Too many requests: wait 0.25 s') },
  '500': { description: 'An unexpected failure; no internals are shown.', example: problemDocument(500, 'The server failed to handle the request') },
  '503': { description: 'The change could not be saved (disk full, an I/O error, the log replaced) or the database is unreachable, a query ran past its budget, or (for a stream) `--max-streams` are open or the server is shutting down.', example: problemDocument(503, 'The change could not be saved; it was not applied. Try again later') },
};

/** Sent with a replayed answer (see the `Idempotency-Key` parameter). */
const REPLAYED_HEADER: Json = {
  'Idempotency-Replayed': { description: '`true`: this is the first answer to this `Idempotency-Key`, sent again; nothing was written.', schema: { type: 'string', enum: ['true'] } },
};

const RATE_HEADERS: Json = {
  'X-RateLimit-Limit': { description: 'Requests allowed at once, the burst (only with `--rate-limit`).', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the burst (only with `--rate-limit`).', schema: { type: 'integer' } },
  'RateLimit-Policy': { description: 'draft-ietf-httpapi-ratelimit-headers: `"default";q=<burst>;w=<seconds a burst takes to come back>` (only with `--rate-limit`).', schema: { type: 'string' }, example: '"default";q=50;w=1' },
  RateLimit: { description: 'draft-ietf-httpapi-ratelimit-headers: `"default";r=<remaining>;t=<seconds until one more request is allowed>` (only with `--rate-limit`).', schema: { type: 'string' }, example: '"default";r=49;t=0' },
};

/** Server-Sent Events: `id:` a cursor, `event:` a type, `data:` a ChangeEvent on one line; comments while idle. */
const EVENT_STREAM_CONTENT: Json = {
  schema: { type: 'string', description: 'Messages `id: <cursor>`, `event: <type>`, `data: <ChangeEvent JSON>`; a comment at least every 15 s.' },
  example: 'retry: 2000\n\nid: 42\nevent: created\ndata: {"cursor":"42","type":"created","resource":"products","id":"x1","at":1767225600,"entity":{"id":"x1","createdAt":1767225600,"updatedAt":1767225600,"_links":{"self":{"href":"/products/x1"}}}}\n\n',
};

function problemResponse(status: string): Json {
  const problem = PROBLEMS[status] as ProblemResponse;
  const headers: Json = { ...RATE_HEADERS };
  if (status === '401') headers['WWW-Authenticate'] = { schema: { type: 'string' }, example: 'Bearer realm="halserve"' };
  if (status === '403') headers['WWW-Authenticate'] = { description: 'With JWTs on: RFC 6750 §3.1\'s insufficient_scope.', schema: { type: 'string' }, example: 'Bearer realm="halserve", error="insufficient_scope"' };
  if (status === '503') headers['Retry-After'] = { description: `Whole seconds after which to try again, by cause: ${QUERY_RETRY_AFTER_SECONDS} (a query), ${DATABASE_RETRY_AFTER_SECONDS} (the database), ${STREAMS_RETRY_AFTER_SECONDS} (streams), ${WRITE_RETRY_AFTER_SECONDS} (a write's I/O error), ${LASTING_WRITE_RETRY_AFTER_SECONDS} (disk full, the log replaced).`, schema: { type: 'integer' } };
  if (status === '429') {
    headers['Retry-After'] = { description: 'Whole seconds to wait, rounded up.', schema: { type: 'integer' } };
    headers['X-RateLimit-Wait'] = { description: 'Seconds to wait as a decimal, e.g. 0.25.', schema: { type: 'number' } };
  }
  return {
    description: problem.description,
    headers,
    content: { [PROBLEM_MEDIA_TYPE]: { schema: ref('schemas', 'Problem'), example: problem.example } },
  };
}

/** The problem responses of an operation, by status. */
function problems(statuses: readonly string[]): Json {
  return Object.fromEntries(statuses.map((s) => [s, ref('responses', `Problem${s}`)]));
}

/** `dimensions.weight` for every property reachable through nested objects; arrays are leaves (their elements match). */
function fieldPaths(schema: JsonSchema | undefined, prefix = ''): { path: string; schema: JsonSchema }[] {
  const properties = schema?.['properties'];
  if (typeof properties !== 'object' || properties === null) return [];
  const out: { path: string; schema: JsonSchema }[] = [];
  for (const [name, child] of Object.entries(properties as Record<string, JsonSchema>)) {
    const path = `${prefix}${name}`;
    out.push({ path, schema: child });
    out.push(...fieldPaths(child, `${path}.`));
  }
  return out;
}

/** A query parameter's value: what the field holds, or for an array field, what its elements hold. */
function valueSchema(field: JsonSchema): Json {
  const items = field['type'] === 'array' && typeof field['items'] === 'object' ? (field['items'] as JsonSchema) : field;
  const type = items['type'];
  return typeof type === 'string' && ['string', 'number', 'integer', 'boolean'].includes(type) ? { type: 'string', description: `compared as ${type}` } : { type: 'string' };
}

function filterParameters(resource: OpenApiResource): Json[] {
  if (resource.schema === undefined) {
    return [
      {
        name: 'filters',
        in: 'query',
        description: 'Any other parameter filters on a field: `field=a,b`, `field[op]=v` with op one of eq, ne, gt, gte, lt, lte, exists; dotted paths reach nested fields (docs/queries.md). This resource has no schema, so a filter on an absent field matches nothing.',
        style: 'form',
        explode: true,
        schema: { type: 'object', additionalProperties: { type: 'string' } },
      },
    ];
  }
  const fields = [
    { path: 'id', schema: { type: 'string' } as JsonSchema },
    { path: 'createdAt', schema: { type: 'integer' } as JsonSchema },
    { path: 'updatedAt', schema: { type: 'integer' } as JsonSchema },
    ...fieldPaths(resource.schema),
  ];
  const out: Json[] = [];
  for (const field of fields) {
    // A field named like a reserved parameter (`page`) is filtered only as `page[eq]`: the bare name is the reserved one's.
    if (!RESERVED_PARAMETERS.has(field.path)) out.push({ name: field.path, in: 'query', description: `\`${field.path}\` equals one of the comma-separated values.`, schema: valueSchema(field.schema) });
    for (const [op, meaning] of OPERATORS) {
      out.push({
        name: `${field.path}[${op}]`,
        in: 'query',
        description: `\`${field.path}\` ${meaning}.`,
        schema: op === 'exists' ? { type: 'string', enum: ['true', 'false'] } : valueSchema(field.schema),
      });
    }
  }
  return out;
}

/** The schema file without the keywords that only make sense at a document's root. */
function fieldsSchema(schema: JsonSchema | undefined): Json {
  if (schema === undefined) return { type: 'object', description: 'Any JSON object: this resource has no schema.' };
  const { $schema: _schema, $id: _id, ...rest } = schema as Json;
  return rest;
}

/**
 * A request body's schema: the resource's fields, and — where the schema allows no other member —
 * the server-managed ones too, which a body may hold (a client sending back what it read) and the
 * server ignores (docs/conventions.md §2).
 */
function requestFields(fields: Json): Json {
  if (fields['additionalProperties'] !== false) return fields;
  const ignored = { description: 'Server-managed: ignored in a request body.' };
  const managed = Object.fromEntries(['id', 'createdAt', 'updatedAt', '_links', '_embedded', '_templates'].map((name) => [name, ignored]));
  return { ...fields, properties: { ...managed, ...((fields['properties'] ?? {}) as Json) } };
}

/**
 * A resource's components and operations are named after it as it is (`products.Entity`,
 * `products.list`): names are unique and hold no dot, so no two resources, and no fixed component,
 * can share a name.
 */
function resourceSchemas(resource: OpenApiResource, relations: ResourceRelations): Json {
  const t = resource.name;
  const fields = fieldsSchema(resource.schema);
  const properties = (fields['properties'] ?? {}) as Json;
  const required = Array.isArray(fields['required']) ? (fields['required'] as string[]) : [];
  const entity: Json = {
    ...fields,
    description: `A ${resource.name} entity (docs/conventions.md §2): the server's id and times, the client's fields, and a self link.`,
    type: 'object',
    required: ['id', 'createdAt', 'updatedAt', ...required, '_links'],
    properties: {
      id: { type: 'string', description: 'Server-assigned, URL-safe.' },
      createdAt: { type: 'integer', description: 'Unix seconds.' },
      updatedAt: { type: 'integer', description: 'Unix seconds.' },
      ...properties,
      _links: { type: 'object', required: ['self'], properties: { self: ref('schemas', 'Link'), ...relationLinkSchemas(relations) }, additionalProperties: ref('schemas', 'LinkOrLinks') },
      _embedded: { type: 'object', description: 'With `embed`: the related entities, by rel (docs/relations.md).', properties: embeddedSchemas(relations) },
      // Declared here, not only beside it in the HAL-FORMS answer's allOf: a schema of
      // additionalProperties false would refuse it there, and every HAL-FORMS answer with it.
      ...(fields['additionalProperties'] === false ? { _templates: { ...ref('schemas', 'Templates'), description: 'In a HAL-FORMS answer only (docs/forms.md).' } } : {}),
    },
  };
  const page: Json = {
    description: `A page of ${resource.name} (docs/conventions.md §2).`,
    type: 'object',
    required: ['total', 'count', 'pages', 'page', 'limit', '_links', '_embedded'],
    properties: {
      total: { type: 'integer', minimum: 0 },
      count: { type: 'integer', minimum: 0 },
      pages: { type: 'integer', minimum: 1 },
      page: { type: 'integer', minimum: 1 },
      limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
      facets: {
        type: 'object',
        description: 'With `facets`: for each requested field, its most frequent values (at most 50), by count descending.',
        additionalProperties: {
          type: 'array',
          items: {
            type: 'object',
            required: ['value', 'count', '_links'],
            properties: { value: {}, count: { type: 'integer', minimum: 1 }, _links: { type: 'object', required: ['self'], properties: { self: ref('schemas', 'Link') } } },
          },
        },
      },
      _links: {
        type: 'object',
        required: ['self', 'first', 'last'],
        properties: {
          ...Object.fromEntries(['self', 'first', 'prev', 'next', 'last'].map((rel) => [rel, ref('schemas', 'Link')])),
          changes: { ...ref('schemas', 'Link'), description: 'The changes after the state this page shows: `/changes?since=<cursor>&resource=<name>` (list, then watch).' },
        },
      },
      _embedded: {
        type: 'object',
        required: [resource.name],
        properties: { [resource.name]: { type: 'array', items: ref('schemas', `${t}.Entity`) } },
      },
    },
  };
  return { [`${t}.Fields`]: requestFields(fields), [`${t}.Entity`]: entity, [`${t}.Page`]: page };
}

/** docs/relations.md: each forward link (a link, or an array of them for an array field) and each reverse link. */
function relationLinkSchemas({ forward, reverse }: ResourceRelations): Json {
  const out: Json = {};
  for (const { field, target, many } of forward) {
    const description = `The ${target} entit${many ? 'ies' : 'y'} whose id${many ? 's' : ''} \`${field}\` holds (\`/${target}/<id>\`).`;
    out[field] = many ? { type: 'array', items: ref('schemas', 'Link'), description } : { ...ref('schemas', 'Link'), description };
  }
  for (const { rel, source, field } of reverse) {
    out[rel] = { ...ref('schemas', 'Link'), description: `The ${source} that link here through \`${field}\`: \`/${source}?${field}=<id>\`, a filtered collection.` };
  }
  return out;
}

/** What `embed=<rel>` puts in `_embedded`: the linked entity (null if it is gone), their array, or the first page of a reverse rel. */
function embeddedSchemas({ forward, reverse }: ResourceRelations): Json {
  const out: Json = {};
  for (const { field, target, many } of forward) {
    out[field] = many ? { type: 'array', items: ref('schemas', `${target}.Entity`) } : { oneOf: [ref('schemas', `${target}.Entity`), { type: 'null' }] };
  }
  for (const { rel, source } of reverse) out[rel] = ref('schemas', `${source}.Page`);
  return out;
}

/** The `embed` parameter of a resource whose entities carry links; none for one without. */
function embedParameters({ forward, reverse }: ResourceRelations): Json[] {
  const rels = [...forward.map((l) => l.field), ...reverse.map((l) => l.rel)];
  if (rels.length === 0) return [];
  return [
    {
      name: 'embed',
      in: 'query',
      description: `Comma-separated rels whose entities are put in \`_embedded\` of each entity (docs/relations.md): ${rels.map((r) => `\`${r}\``).join(', ')}. A reverse rel embeds its first page. Another rel is a 400.`,
      schema: { type: 'string' },
      example: rels.join(','),
    },
  ];
}

const halContent = (schema: Json, example?: unknown): Json => {
  const media = example === undefined ? { schema } : { schema, example };
  return { [HAL_JSON]: media, [JSON_TYPE]: media };
};

/** Collections and entities also answer in HAL-FORMS: the same document plus `_templates` (README, Forms for any client). */
const formsContent = (schema: Json): Json => ({
  ...halContent(schema),
  [HAL_FORMS]: { schema: { allOf: [schema, { type: 'object', required: ['_templates'], properties: { _templates: ref('schemas', 'Templates') } }] } },
});

const ETAG_HEADER: Json = { description: 'Strong tag of this representation (docs/conventions.md §5).', schema: { type: 'string' } };
const LAST_MODIFIED_HEADER: Json = {
  description: 'The entity\'s `updatedAt` as an HTTP-date, never later than `Date` (RFC 9110 §8.8.2); not on HAL-FORMS answers nor with `embed` (docs/conventions.md §5).',
  schema: { type: 'string' },
  example: 'Thu, 01 Jan 2026 00:00:00 GMT',
};

function resourcePaths(resource: OpenApiResource, relations: ResourceRelations): Json {
  const t = resource.name;
  const embed = embedParameters(relations);
  const tags = [resource.name];
  const entityResponse = (status: string, description: string, extra: Json = {}): Json => ({
    [status]: { description, headers: { ETag: ETAG_HEADER, 'Last-Modified': LAST_MODIFIED_HEADER, ...RATE_HEADERS, ...extra }, content: formsContent(ref('schemas', `${t}.Entity`)) },
  });
  const body = (types: readonly string[], description: string): Json => ({
    required: true,
    description,
    content: Object.fromEntries(types.map((type) => [type, { schema: ref('schemas', `${t}.Fields`) }])),
  });
  const ifMatch = ref('parameters', 'IfMatch');
  const ifNoneMatch = ref('parameters', 'IfNoneMatch');
  const ifModifiedSince = ref('parameters', 'IfModifiedSince');
  const ifUnmodifiedSince = ref('parameters', 'IfUnmodifiedSince');
  const idempotencyKey = ref('parameters', 'IdempotencyKey');
  const collection: Json = {
    get: {
      operationId: `${t}.list`,
      summary: `A page of ${resource.name}, filtered, sorted, searched`,
      tags,
      parameters: [ref('parameters', 'page'), ref('parameters', 'limit'), ref('parameters', 'sort'), ref('parameters', 'q'), ref('parameters', 'facets'), ...embed, ...filterParameters(resource), ifNoneMatch, ifMatch, ref('parameters', 'LastEventId')],
      responses: {
        '200': {
          description:
            'The page, with the same links in a `Link` header (RFC 8288). With `Accept: text/event-stream`: the changes of the entities the filters and `q` select, as they happen (from `Last-Event-ID`, else from now): `created`/`updated` while an entity matches, `removed` once it does not; `page`, `limit`, `sort`, `embed` are ignored.',
          headers: { ETag: ETAG_HEADER, Link: { schema: { type: 'string' } }, ...RATE_HEADERS },
          content: { ...formsContent(ref('schemas', `${t}.Page`)), [TEXT_EVENT_STREAM]: EVENT_STREAM_CONTENT },
        },
        '304': { description: 'The client\'s copy (If-None-Match) is current.' },
        ...problems(['400', '401', '403', '404', '406', '409', '410', '412', '429', '500', '503']),
      },
    },
    post: {
      operationId: `${t}.create`,
      summary: `Creates a ${resource.name} entity`,
      tags,
      parameters: [ifMatch, ifNoneMatch, idempotencyKey],
      requestBody: body([JSON_TYPE], 'The client fields; server-managed ones (`id`, `createdAt`, `updatedAt`, `_links`, `_embedded`) are ignored.'),
      responses: {
        ...entityResponse('201', 'Created, and durable (or, with `Idempotency-Replayed: true`, the first answer to this key again).', { Location: { schema: { type: 'string' } }, ...REPLAYED_HEADER }),
        ...problems(['400', '401', '403', '404', '406', '409', '412', '413', '415', '422', '429', '500', '501', '503']),
      },
    },
  };
  const entity: Json = {
    parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
    get: {
      operationId: `${t}.get`,
      summary: `One ${resource.name} entity`,
      tags,
      parameters: [...embed, ifNoneMatch, ifMatch, ifModifiedSince, ifUnmodifiedSince],
      responses: {
        ...entityResponse('200', 'The entity.'),
        '304': { description: 'The client\'s copy (If-None-Match, or without it If-Modified-Since) is current.' },
        ...problems(['400', '401', '403', '404', '406', '412', '429', '500']),
      },
    },
    put: {
      operationId: `${t}.replace`,
      summary: `Replaces the client fields of a ${resource.name} entity`,
      tags,
      parameters: [ifMatch, ifNoneMatch, ifUnmodifiedSince],
      requestBody: body([JSON_TYPE], 'Every client field.'),
      responses: { ...entityResponse('200', 'Replaced, and durable.'), ...problems(['400', '401', '403', '404', '406', '412', '413', '415', '429', '500', '503']) },
    },
    patch: {
      operationId: `${t}.patch`,
      summary: `Changes some client fields of a ${resource.name} entity (JSON Merge Patch, RFC 7396)`,
      tags,
      parameters: [ifMatch, ifNoneMatch, ifUnmodifiedSince, idempotencyKey],
      requestBody: {
        required: true,
        description: 'A merge patch: the fields to change, `null` to remove one. The merged entity must satisfy the schema.',
        content: { [JSON_TYPE]: { schema: { type: 'object' } }, [MERGE_PATCH]: { schema: { type: 'object' } } },
      },
      responses: {
        ...entityResponse('200', 'Changed, and durable (or, with `Idempotency-Replayed: true`, the first answer to this key again).', REPLAYED_HEADER),
        ...problems(['400', '401', '403', '404', '406', '409', '412', '413', '415', '422', '429', '500', '501', '503']),
      },
    },
    delete: {
      operationId: `${t}.delete`,
      summary: `Deletes a ${resource.name} entity`,
      tags,
      parameters: [ifMatch, ifUnmodifiedSince],
      responses: { '204': { description: 'Deleted, and durable.', headers: RATE_HEADERS }, ...problems(['400', '401', '403', '404', '409', '412', '429', '500', '503']) },
    },
  };
  return { [`/${resource.name}`]: collection, [`/${resource.name}/{id}`]: entity };
}

function servicePaths(names: readonly string[], authenticated: boolean): Json {
  const open = authenticated ? { security: [] } : {};
  const health = (id: string, summary: string): Json => ({
    get: {
      operationId: id,
      summary,
      tags: ['operation'],
      ...open,
      responses: {
        '200': { description: 'Yes.', content: { [JSON_TYPE]: { schema: ref('schemas', 'Health'), example: { status: 'ok' } } } },
        '503': { description: 'No.', headers: { 'Retry-After': { description: `Whole seconds after which to ask again (${READY_RETRY_AFTER_SECONDS}).`, schema: { type: 'integer' } } }, content: { [JSON_TYPE]: { schema: ref('schemas', 'Health'), example: { status: 'unavailable' } } } },
        ...problems(['406']),
      },
    },
  });
  return {
    '/': {
      get: {
        operationId: 'index',
        summary: 'The entry point: a link to every collection',
        tags: ['discovery'],
        responses: {
          '200': { description: 'The index.', headers: RATE_HEADERS, content: halContent(ref('schemas', 'Index'), { _links: Object.fromEntries(names.map((n) => [n, { href: `/${n}` }])) }) },
          ...problems(['400', '401', '406', '429', '500']),
        },
      },
    },
    '/ping': {
      get: {
        operationId: 'ping',
        summary: 'The server\'s time (the Shopping Feed SDK\'s Client::ping)',
        tags: ['operation'],
        ...open,
        responses: {
          '200': { description: 'Unix seconds.', headers: RATE_HEADERS, content: halContent({ type: 'object', required: ['timestamp'], properties: { timestamp: { type: 'integer' } } }, { timestamp: 1767225600 }) },
          ...problems(['400', '406', '429', '500']),
        },
      },
    },
    '/me': {
      get: {
        operationId: 'me',
        summary: 'The caller\'s roles and links (the Shopping Feed SDK\'s Client::authenticate)',
        tags: ['operation'],
        responses: {
          '200': { description: 'Roles: `read` and `write` for a plain token, `read` for a `read:` one.', headers: RATE_HEADERS, content: halContent(ref('schemas', 'Me')) },
          ...problems(['400', '401', '406', '429', '500']),
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'metrics',
        summary: 'Prometheus text exposition',
        tags: ['operation'],
        responses: {
          '200': { description: 'The metrics (README lists each).', headers: RATE_HEADERS, content: { 'text/plain': { schema: { type: 'string' } } } },
          ...problems(['400', '401', '403', '406', '429', '500']),
        },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openapi',
        summary: 'This document',
        tags: ['discovery'],
        responses: {
          '200': { description: 'OpenAPI 3.1.', headers: { ETag: ETAG_HEADER, ...RATE_HEADERS }, content: { [JSON_TYPE]: { schema: { type: 'object' } } } },
          '304': { description: 'The client\'s copy (If-None-Match) is current.' },
          ...problems(['400', '401', '406', '429', '500']),
        },
      },
    },
    '/changes': {
      get: {
        operationId: 'changes',
        summary: 'What changed: the data set\'s changes after a cursor, oldest first (list, then watch)',
        tags: ['discovery'],
        parameters: [
          { name: 'since', in: 'query', description: 'A cursor from an event, a page\'s `cursor`, or a collection\'s `changes` link; `now` for the latest. Without it: from the oldest change kept.', schema: { type: 'string', pattern: '^[A-Za-z0-9._~-]{1,255}$' } },
          { name: 'limit', in: 'query', description: `Events per page; larger values are clamped to ${MAX_LIMIT}.`, schema: { type: 'integer', minimum: 1, default: DEFAULT_LIMIT } },
          { name: 'resource', in: 'query', description: 'Comma-separated resource names: only their changes.', schema: { type: 'string' } },
          ref('parameters', 'LastEventId'),
        ],
        responses: {
          '200': {
            description: 'A page of events; `next` is always present (a feed has no last page). With `Accept: text/event-stream`: the events as they happen, from `Last-Event-ID`, else `since`, else now.',
            headers: RATE_HEADERS,
            content: { ...halContent(ref('schemas', 'ChangesPage')), [TEXT_EVENT_STREAM]: EVENT_STREAM_CONTENT },
          },
          ...problems(['400', '401', '403', '406', '410', '429', '500', '503']),
        },
      },
    },
    '/healthz': health('healthz', 'Liveness'),
    '/readyz': health('readyz', 'Readiness: the stores are open and the server is not shutting down'),
  };
}

/** The components but the resources' own schemas, which `schemas` ends with (see `openApiDocument`). */
function fixedComponents(): Json {
  return {
    securitySchemes: {
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description: 'A token from `--token`/`HALSERVE_TOKENS`, or a JWT signed by a key of `--jwks`. A plain token may read and write; a `read:`-prefixed one may only GET and HEAD (a write gets 403). A JWT may do what its `scope` (or `scp`) allows: `read`, `write`, `<resource>:read`, `<resource>:write`.',
      },
    },
    parameters: {
      page: { name: 'page', in: 'query', description: 'Page number, from 1 (docs/conventions.md §3).', schema: { type: 'integer', minimum: 1, default: 1 } },
      limit: { name: 'limit', in: 'query', description: `Entities per page; larger values are clamped to ${MAX_LIMIT}.`, schema: { type: 'integer', minimum: 1, default: DEFAULT_LIMIT } },
      sort: { name: 'sort', in: 'query', description: 'Comma-separated fields (dotted paths allowed), `-` for descending: `-price,name`.', schema: { type: 'string' }, example: '-price,name' },
      q: { name: 'q', in: 'query', description: 'Search: every word occurs, case-insensitively, in some string field.', schema: { type: 'string' } },
      facets: {
        name: 'facets',
        in: 'query',
        description: 'Comma-separated fields (dotted paths allowed, at most 8) whose most frequent values over the filtered set, with exact counts and a link narrowing the query to each, are added as `facets` (docs/queries.md, Facets).',
        schema: { type: 'string' },
        example: 'category,brand',
      },
      IfMatch: { name: 'If-Match', in: 'header', description: 'Only if the current ETag (the entity\'s; on a POST, the collection\'s, as its pages carry it) is one of these (RFC 9110 §13.1.1).', schema: { type: 'string' } },
      IdempotencyKey: {
        name: 'Idempotency-Key',
        in: 'header',
        description:
          'draft-ietf-httpapi-idempotency-key-header: a Structured Field string (`"8e03978e-…"`) or the bare key, 1–255 visible ASCII characters (else 400). For at least 24 hours the same key from the same principal to the same method and path gets the first answer again (status, `Location`, `ETag`, body) with `Idempotency-Replayed: true`, writing nothing; the key with another body is a 422, and while the first request is processed a 409. Kept across restarts and crashes.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
        example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
      },
      IfNoneMatch: { name: 'If-None-Match', in: 'header', description: 'On reads, 304 when current; on writes, 412 when it matches (`*` always does on a POST: the collection exists).', schema: { type: 'string' } },
      IfModifiedSince: {
        name: 'If-Modified-Since',
        in: 'header',
        description: 'An HTTP-date: 304 when the entity\'s `Last-Modified` is at or before it (RFC 9110 §13.1.3). Ignored with If-None-Match, with `embed`, in HAL-FORMS, and when it is not an HTTP-date or later than the server\'s clock.',
        schema: { type: 'string' },
      },
      IfUnmodifiedSince: {
        name: 'If-Unmodified-Since',
        in: 'header',
        description: 'An HTTP-date: 412, nothing written, when the entity\'s `Last-Modified` is after it (RFC 9110 §13.1.4). Whole seconds: two writes in one second share a date, so If-Match is the sure guard against lost updates. Ignored with If-Match, and when it is not an HTTP-date.',
        schema: { type: 'string' },
      },
      LastEventId: { name: 'Last-Event-ID', in: 'header', description: 'On a stream: continue after this event id (a cursor), with no gap and no repeat.', schema: { type: 'string' } },
    },
    schemas: {
      Link: { type: 'object', required: ['href'], properties: { href: { type: 'string' } } },
      Templates: {
        type: 'object',
        description: 'HAL-FORMS templates by name: `default` (POST on a collection, PUT on an entity), `update` (PATCH), `delete`.',
        additionalProperties: {
          type: 'object',
          required: ['method', 'target', 'properties'],
          properties: {
            title: { type: 'string' },
            method: { type: 'string', enum: ['POST', 'PUT', 'PATCH', 'DELETE'] },
            contentType: { type: 'string' },
            target: { type: 'string' },
            properties: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
          },
        },
      },
      LinkOrLinks: { oneOf: [ref('schemas', 'Link'), { type: 'array', items: ref('schemas', 'Link') }] },
      Index: { type: 'object', required: ['_links'], properties: { _links: { type: 'object', additionalProperties: ref('schemas', 'Link') } } },
      Me: {
        type: 'object',
        required: ['roles', '_links'],
        properties: {
          sub: { type: 'string', description: 'The JWT\'s subject (JWTs only).' },
          scopes: { type: 'array', items: { type: 'string' }, description: 'The scope values applied (JWTs only).' },
          roles: { type: 'array', items: { type: 'string', enum: ['read', 'write'] } },
          _links: { type: 'object', additionalProperties: ref('schemas', 'Link') },
        },
      },
      Health: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok', 'unavailable'] } } },
      ChangeEvent: {
        description: 'One change: its cursor, type, resource, id, the Unix second it was applied, and the entity as it left it (none for a delete, or a `removed` of a deleted entity).',
        type: 'object',
        required: ['cursor', 'type', 'resource', 'id', 'at'],
        properties: {
          cursor: { type: 'string', pattern: '^[A-Za-z0-9._~-]{1,255}$' },
          type: { type: 'string', enum: ['created', 'updated', 'deleted', 'removed'] },
          resource: { type: 'string' },
          id: { type: 'string' },
          at: { type: 'integer' },
          entity: { type: 'object', required: ['id', '_links'] },
        },
      },
      ChangesPage: {
        type: 'object',
        required: ['count', 'limit', 'cursor', '_links', '_embedded'],
        properties: {
          count: { type: 'integer', minimum: 0 },
          limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
          cursor: { type: 'string', description: 'The last event\'s cursor; on an empty page, where it started.' },
          _links: { type: 'object', required: ['self', 'next'], properties: { self: ref('schemas', 'Link'), next: ref('schemas', 'Link') } },
          _embedded: { type: 'object', required: ['changes'], properties: { changes: { type: 'array', items: ref('schemas', 'ChangeEvent') } } },
        },
      },
      Problem: {
        description: 'A problem document (docs/conventions.md §7, RFC 7807).',
        type: 'object',
        required: ['type', 'title', 'detail', 'status'],
        properties: {
          type: { type: 'string', const: PROBLEM_TYPE },
          title: { type: 'string' },
          detail: { type: 'string' },
          status: { type: 'integer' },
          validationMessages: {
            description: 'On 400 `Validation failed`: per field, per rule, a message.',
            type: 'object',
            additionalProperties: { type: 'object', additionalProperties: { type: 'string' } },
          },
          pages: { type: 'integer', description: 'On 409: the number of pages.' },
          page: { type: 'integer', description: 'On 409: the page asked for.' },
          referencedBy: {
            description:
              'On 409 for a delete: how many entities still link to the entity, and where they are (docs/relations.md §4), of the resources the credential may read; `unreadable` when entities of others link to it too (§5: of those, nothing more is said).',
            type: 'object',
            required: ['count', 'links'],
            properties: {
              count: { type: 'integer', minimum: 0, description: 'The sum of the counts of `links`.' },
              links: { type: 'array', items: { type: 'object', required: ['rel', 'count', 'href'], properties: { rel: { type: 'string' }, count: { type: 'integer' }, href: { type: 'string' } } } },
              unreadable: { type: 'boolean', const: true, description: 'Entities of resources the credential may not read link to it too.' },
            },
          },
        },
      },
    },
    responses: Object.fromEntries(Object.keys(PROBLEMS).map((status) => [`Problem${status}`, problemResponse(status)])),
  };
}

/**
 * HEAD beside every GET (the same answers without a body, RFC 9110 §9.3.2) and OPTIONS on every
 * path (204 with `Allow`), so that the document has every method the server answers.
 */
function addHeadAndOptions(item: Json): void {
  const get = item['get'] as Json | undefined;
  if (get !== undefined) {
    const responses: Json = {};
    for (const [status, response] of Object.entries(get['responses'] as Json)) {
      const description = (response as Json)['description'] ?? (PROBLEMS[status]?.description as string | undefined) ?? 'See GET.';
      responses[status] = { description: `${String(description)} No body.` };
    }
    item['head'] = {
      operationId: `${String(get['operationId'])}Head`,
      summary: `Headers of GET: ${String(get['summary'])}`,
      tags: get['tags'],
      ...(get['security'] === undefined ? {} : { security: get['security'] }),
      ...(get['parameters'] === undefined ? {} : { parameters: get['parameters'] }),
      responses,
    };
  }
  const first = Object.values(item).find((operation): operation is Json => typeof operation === 'object' && operation !== null && 'operationId' in operation);
  item['options'] = {
    operationId: `${String(first?.['operationId'] ?? 'path')}Options`,
    summary: 'The methods this path allows',
    tags: first?.['tags'],
    responses: {
      '204': { description: 'The methods, in `Allow`.', headers: { Allow: { schema: { type: 'string' }, example: 'GET, HEAD, POST, OPTIONS' } } },
      ...problems(['400', '401', '404', '429']),
    },
  };
}

const relationsOf = (graph: RelationGraph, name: string): ResourceRelations => graph.get(name) ?? { forward: [], reverse: [] };

/** A resource's paths, each with HEAD and OPTIONS. */
function ownPaths(resource: OpenApiResource, graph: RelationGraph): Json {
  const paths = resourcePaths(resource, relationsOf(graph, resource.name));
  for (const item of Object.values(paths) as Json[]) addHeadAndOptions(item);
  return paths;
}

/** The service's own paths, each with HEAD and OPTIONS. */
function ownServicePaths(resources: readonly OpenApiResource[], authenticated: boolean): Json {
  const paths = servicePaths(resources.map((r) => r.name), authenticated);
  for (const item of Object.values(paths) as Json[]) addHeadAndOptions(item);
  return paths;
}

/** The same operations under /v1, by reference (a Path Item may be a $ref in OpenAPI 3.1). */
function v1Path(path: string): [string, Json] {
  // The fragment is a URI: `{` and `}` of a template are percent-encoded (RFC 6901 §6).
  return [path === '/' ? '/v1' : `/v1${path}`, { $ref: `#/paths/${encodeURI(pointer(path))}` }];
}

/** The members before `paths`. */
function frame(options: OpenApiOptions): Json {
  const { resources, basePath, authenticated } = options;
  return {
    openapi: '3.1.0',
    info: {
      title: 'halserve',
      version: options.version,
      description:
        'HAL+JSON collections of JSON-lines resources, following the Shopping Feed API conventions. Every route is also served under `/v1`. Errors are `application/problem+json`.',
    },
    servers: [{ url: basePath === '' ? '/' : basePath }],
    ...(authenticated ? { security: [{ bearer: [] }] } : {}),
    tags: [
      { name: 'discovery', description: 'The entry point and this document' },
      { name: 'operation', description: 'Health, ping, identity and metrics' },
      ...resources.map((r) => ({ name: r.name, description: `The ${r.name} collection` })),
    ],
  };
}

/** The OpenAPI 3.1 document: every route both unprefixed and under `/v1` (docs/conventions.md §4). */
export function openApiDocument(options: OpenApiOptions): Json {
  const { resources } = options;
  const graph = options.relations ?? relationGraph(resources);
  const paths: Json = { ...ownServicePaths(resources, options.authenticated), ...Object.assign({}, ...resources.map((r) => ownPaths(r, graph))) };
  for (const path of Object.keys(paths)) {
    const [v1, item] = v1Path(path);
    paths[v1] = item;
  }
  const fixed = fixedComponents();
  const schemas = { ...(fixed['schemas'] as Json), ...Object.assign({}, ...resources.map((r) => resourceSchemas(r, relationsOf(graph, r.name)))) };
  return { ...frame(options), paths, components: { ...fixed, schemas } };
}

/** `"key":value`, as `JSON.stringify` writes a member. */
const member = (key: string, value: unknown): string => `${JSON.stringify(key)}:${JSON.stringify(value)}`;

/**
 * The document's JSON text, `JSON.stringify(openApiDocument(options))` to the byte, in pieces: the
 * paths and the schemas of one resource at a time, so that a caller can give up the event loop
 * between them (a document of a hundred resources is megabytes, and tens of milliseconds to make
 * whole; docs/conventions.md §8). Resource names are unique and none is a service path (config.ts
 * reserves those), so no member is written twice where the object would have kept the last.
 */
export function* openApiChunks(options: OpenApiOptions): Generator<string, void, undefined> {
  const { resources } = options;
  const graph = options.relations ?? relationGraph(resources);
  const head = JSON.stringify(frame(options));
  const service = ownServicePaths(resources, options.authenticated);
  const keys = Object.keys(service);
  yield `${head.slice(0, -1)},"paths":{${Object.entries(service).map(([k, v]) => member(k, v)).join(',')}`;
  for (const resource of resources) {
    const own = Object.entries(ownPaths(resource, graph));
    for (const [k] of own) keys.push(k);
    yield `,${own.map(([k, v]) => member(k, v)).join(',')}`;
  }
  yield `,${keys.map((path) => member(...v1Path(path))).join(',')}}`;
  const components = fixedComponents();
  // `schemas` is neither first nor last among the components: the members around it are written
  // whole, `schemas` left in its place as a marker.
  const [before, after] = JSON.stringify({ ...components, schemas: null }).split(',"schemas":null');
  yield `,"components":${before as string},"schemas":${JSON.stringify(components['schemas']).slice(0, -1)}`;
  for (const resource of resources) {
    yield `,${Object.entries(resourceSchemas(resource, relationsOf(graph, resource.name))).map(([k, v]) => member(k, v)).join(',')}`;
  }
  yield `}${after as string}}`;
}
