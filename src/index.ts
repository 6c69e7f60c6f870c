/**
 * halserve as a library: the request handler, the pure functions of the conventions, and the
 * stores. Importing it has no side effects.
 */
export { createHandler } from './app.js';
export { VERSION_PREFIX } from './request.js';
export type { AccessLogEntry, Handler, HandlerOptions, ResourceOptions } from './app.js';
export { bearerToken, createAuthenticator, parseTokens, READ_ONLY_PREFIX } from './auth.js';
export type { Access, Authenticator } from './auth.js';
export { checkIfMatch, checkIfNoneMatch, codedTag, entityTag, notModified, parseTagList, versionTags } from './conditional.js';
export { createHalServer, SERVER_TIMEOUTS, trackConnections } from './server.js';
export { chooseEncoding, COMPRESSION_THRESHOLD_BYTES, encode } from './encoding.js';
export type { ContentCoding } from './encoding.js';
export { DEFAULT_MAX_BODY_BYTES, parseJsonObject, readBody } from './body.js';
export type { JsonObject } from './body.js';
export { isLoopback, parseConfig, resourceNameProblem, RESERVED_NAMES, RESOURCE_NAME } from './config.js';
export type { Config } from './config.js';
export { clientFields, createdRecord, mergePatch, replacedRecord, SERVER_MANAGED } from './entity.js';
export type { ClientFields } from './entity.js';
export { carriedQuery, collectionJson, collectionLinks, entityHref, entityJson, indexDocument, linkHeader, pageHref } from './hal.js';
export type { CollectionLinks, CollectionRelation, Link } from './hal.js';
export { HAL_JSON, isAcceptedContentType, JSON_TYPE, mediaTypeOf, MERGE_PATCH_JSON, negotiate, OFFERED_TYPES, parseAccept } from './negotiation.js';
export { DEFAULT_LIMIT, DEFAULT_PAGE, MAX_LIMIT, pageCount, pageRange, parsePageRequest } from './pagination.js';
export type { PageRange, PageRequest } from './pagination.js';
export * from './problem.js';
export { compareValues, matchesFilters, parseCollectionQuery, parseSort, sortComparator } from './query.js';
export type { CollectionQuery, SortKey } from './query.js';
export { createRouter, splitPath } from './router.js';
export type { Match, Params, Router } from './router.js';
export { compileSchema, SchemaError } from './schema.js';
export type { ValidationMessages, Validator } from './schema.js';
export { createMemoryStore } from './store/memory-store.js';
export * from './store/store.js';
