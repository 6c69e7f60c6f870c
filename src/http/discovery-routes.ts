import { createRequire } from 'node:module';
import { notModified } from '../conventions/conditional.js';
import { notFound } from '../conventions/problem.js';
import { ASSET_SEGMENT, BROWSER_ASSETS, BROWSER_CSP, browserShell, type StaticRepresentation } from '../representations/html.js';
import type { IncomingMessage } from 'node:http';
import { chooseEncoding } from '../conventions/accept-encoding.js';
import type { OpenApiResource } from '../representations/openapi.js';
import type { RelationGraph } from '../conventions/relations.js';
import { COMPRESSION_THRESHOLD_BYTES } from './encoding.js';
import { mapMaybe } from './maybe-promise.js';
import { OpenApiDocuments, type OpenApiDocument } from './openapi-documents.js';
import type { RouteHandler } from './context.js';
import { notModifiedReply, type Reply } from './reply.js';
import type { Router } from './router.js';

/** The route of the browser's assets. */
export const BROWSER_PATTERN = `/${ASSET_SEGMENT}/:asset`;
/** The routes whose URLs a person may open in a browser and get the HAL browser for (docs/conventions.md §4.1). */
export const SHELL_PATTERNS: ReadonlySet<string> = new Set(['/', '/:name', '/:name/:id', '/me', '/ping']);

export interface DiscoveryOptions {
  readonly basePath: string;
  readonly resources: readonly OpenApiResource[];
  /** Their relations, as the handler serves them. */
  readonly relations: RelationGraph;
  readonly tokensConfigured: boolean;
}

export interface Discovery {
  /** The HTML shell, for any resource URL; 304 when the client's copy is current. */
  shell(ifNoneMatch: string | undefined): Reply;
  /** One of the shell's assets, or a 404 problem; 304 when the client's copy is current. */
  asset(name: string, ifNoneMatch: string | undefined): Reply;
}

/** The package's version, for the document's `info.version`; this file sits two levels below the package root, in src/ and in dist/. */
function packageVersion(): string {
  try {
    const pkg = createRequire(import.meta.url)('../../package.json') as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/**
 * A document's reply: 304 when `If-None-Match` names it, else its bytes, compressed once for every
 * request that takes the same coding (`send` adds the coding's tag and `Vary`, as for any body).
 */
function documentReply(document: OpenApiDocument, req: IncomingMessage): Reply | Promise<Reply> {
  const representation = document.representation;
  const ifNoneMatch = req.headers['if-none-match'];
  const coding = req.method === 'GET' && representation.body.length >= COMPRESSION_THRESHOLD_BYTES && !notModified(ifNoneMatch, representation.etag) ? chooseEncoding(req.headers['accept-encoding']) : undefined;
  const encoding = coding === undefined ? undefined : document.encoded(coding);
  if (coding === undefined || encoding === undefined) return staticReply(representation, ifNoneMatch);
  return encoding.then(
    (body) => ({ ...staticReply(representation, ifNoneMatch), encoded: { coding, body } }),
    // Compressed as any body is, if at all.
    () => staticReply(representation, ifNoneMatch),
  );
}

/** A representation made at start-up, or 304 when `If-None-Match` names it (RFC 9110 §13.1.2). */
function staticReply(representation: StaticRepresentation, ifNoneMatch: string | undefined, headers: Readonly<Record<string, string>> = {}): Reply {
  if (notModified(ifNoneMatch, representation.etag)) return notModifiedReply({ ...headers, etag: representation.etag }, representation.body);
  return {
    status: 200,
    headers: { 'content-type': representation.type, 'x-content-type-options': 'nosniff', ...headers, etag: representation.etag },
    body: representation.body,
  };
}

/**
 * `/openapi.json`, and the browser's shell and assets: each built once. The whole document is
 * made in the background, in slices, from here on (a request for it meanwhile waits for that making).
 * A token that may read only some resources (a JWT's `<resource>:read` scopes) is described only
 * those, as `/` lists only those: their relations among themselves, none to a resource it may not
 * read (a document per set of resources, made when first asked for and kept: openapi-documents.ts).
 */
export function addDiscoveryRoutes(router: Router<RouteHandler>, options: DiscoveryOptions): Discovery {
  const documents = new OpenApiDocuments({ resources: options.resources, relations: options.relations, basePath: options.basePath, authenticated: options.tokensConfigured, version: packageVersion() });
  router.add('GET', '/openapi.json', ({ req, principal }) => {
    const document = principal === undefined || principal.access !== undefined ? documents.whole : documents.of((name) => principal.grants?.has(name) === true);
    return mapMaybe(document, (own) => documentReply(own, req));
  });
  // Registered so that OPTIONS and 405 know the path; served by the boundary before authentication.
  router.add('GET', BROWSER_PATTERN, () => {
    throw notFound('There is no such asset');
  });
  const shell = browserShell(options.basePath);
  return {
    shell: (ifNoneMatch) =>
      staticReply(shell, ifNoneMatch, { 'content-security-policy': BROWSER_CSP, vary: 'Accept', 'cache-control': 'no-cache', 'referrer-policy': 'no-referrer' }),
    asset(name, ifNoneMatch) {
      const asset = BROWSER_ASSETS.get(name);
      if (!asset) throw notFound(`There is no browser asset named ${JSON.stringify(name)}`);
      return staticReply(asset, ifNoneMatch, { 'cache-control': 'no-cache' });
    },
  };
}
