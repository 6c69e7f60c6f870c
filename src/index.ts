/**
 * halserve as a library: the request handler, the pure functions of the conventions, and the
 * stores. Importing it has no side effects.
 */
export { createHandler } from './http/app.js';
export { VERSION_PREFIX } from './http/request.js';
export type { AccessLogEntry, Handler, HandlerOptions, ResourceOptions, ServedResource } from './http/app.js';
export { ServerMetrics } from './metrics/server-metrics.js';
export type { QueryKind } from './metrics/server-metrics.js';
export { Counter, Gauge, Histogram, Registry } from './metrics/registry.js';
export { PROMETHEUS_TEXT, prometheusText } from './representations/prometheus.js';
export { openApiDocument } from './representations/openapi.js';
export type { JsonSchema, OpenApiOptions, OpenApiResource } from './representations/openapi.js';
export { representationTag } from './representations/hal.js';
export { RateLimiter, rateLimitHeaders, waitText } from './http/rate-limit.js';
export type { RateDecision, RateLimiterOptions } from './http/rate-limit.js';
export { createTokenScrubber, redactQuery, REDACTED } from './http/access-log.js';
export { bearerToken, createAuthenticator, parseTokens, READ_ONLY_PREFIX } from './http/auth.js';
export type { Access, Authenticator, Principal } from './http/auth.js';
export { checkIfMatch, checkIfNoneMatch, codedTag, entityTag, notModified, parseTagList, versionTags } from './conventions/conditional.js';
export { createHalServer, SERVER_TIMEOUTS, trackConnections } from './http/server.js';
export { chooseEncoding, COMPRESSION_THRESHOLD_BYTES, encode } from './http/encoding.js';
export type { ContentCoding } from './http/encoding.js';
export { bodyLimits, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_BODY_MEMBERS, DEFAULT_MAX_BODY_VALUES, MAX_BODY_DEPTH, parseJsonObject, readBody } from './http/body.js';
export type { BodyLimits, JsonObject } from './http/body.js';
export { BodyShapeScanner, checkBodyShape, checkValueShape } from './http/body-shape.js';
export type { BodyShapeLimits, ShapeViolation } from './http/body-shape.js';
export { isLoopback, parseConfig, resourceNameProblem, RESERVED_NAMES, RESOURCE_NAME } from './config.js';
export type { Config } from './config.js';
export { clientFields, createdRecord, mergePatch, replacedRecord, SERVER_MANAGED } from './conventions/entity.js';
export type { ClientFields } from './conventions/entity.js';
export { carriedQuery, collectionJson, collectionLinks, entityHref, entityJson, indexDocument, linkHeader, pageHref } from './conventions/hal.js';
export type { CollectionLinks, CollectionRelation, Link } from './conventions/hal.js';
export { HAL_JSON, isAcceptedContentType, JSON_TYPE, mediaTypeOf, MERGE_PATCH_JSON, negotiate, OFFERED_TYPES, parseAccept, prefersHtml } from './http/negotiation.js';
export { DEFAULT_LIMIT, DEFAULT_PAGE, MAX_LIMIT, pageCount, pageRange, parsePageRequest } from './conventions/pagination.js';
export type { PageRange, PageRequest } from './conventions/pagination.js';
export * from './conventions/problem.js';
export { compareValues, fold, matches, matchesFilter, matchesSearch, parseCollectionQuery, parseSort, sortComparator, valueAt } from './conventions/query.js';
export type { CollectionQuery, Filter, FilterOperator, PathCheck, SortKey } from './conventions/query.js';
export { createRouter, splitPath } from './http/router.js';
export type { Match, Params, Router } from './http/router.js';
export { compileSchema, declaredPaths, SchemaError } from './conventions/schema.js';
export type { ValidationMessages, Validator } from './conventions/schema.js';
export { createMemoryStore } from './store/memory-store.js';
export { openDataDir } from './store/log/data-dir.js';
export type { DataDir, DataDirOptions } from './store/log/data-dir.js';
export { openJsonlStore } from './store/log/jsonl-store.js';
export type { CompactionPolicy, JsonlStore, JsonlStoreOptions } from './store/log/jsonl-store.js';
export * from './store/store.js';
