import { createHash } from 'node:crypto';
import type { ContentCoding } from '../conventions/accept-encoding.js';
import { relationsAmong, type RelationGraph } from '../conventions/relations.js';
import { digestTag, type StaticRepresentation } from '../representations/html.js';
import { openApiChunks, type OpenApiOptions, type OpenApiResource } from '../representations/openapi.js';
import { runSliced, type Slice, type Work } from '../store/index/slices.js';
import { LruMap } from '../structures/lru-map.js';
import { ASYNC_COMPRESSION_BYTES, asyncCompressionFree, encode, encodeAsync } from './encoding.js';

/**
 * The `/openapi.json` documents: the whole one, made as the server starts, and one per set of resources a
 * token limited to some may read (docs/auth.md §2), made when first asked for and kept. A document
 * depends on nothing else a request brings (base path, schemas, relations and version are the
 * configuration's; CORS and rate-limit fields are headers added as it is sent), so its bytes, its
 * tag and its compressed forms are made once per set, not per request.
 *
 * Why kept, and made in slices: a document of a hundred resources with schemas is megabytes
 * (every filter operator of every field), tens of milliseconds of the event loop to make whole,
 * and brotli's or gzip's work again on every 200 (bench/NOTES.md, 2026-12-02 14:27). Every
 * document is made resource by resource, giving up the loop between them (docs/conventions.md §8);
 * requests for a document being made wait for that one making. The whole one is begun when this
 * is built, in the turns other work leaves, so that it is ready before most clients ask: made
 * whole here, it held the loop in one stretch before the server could listen, 0.15–0.45 s at 80
 * resources and 0.5–1.6 s at 200 (16 MB; bench/NOTES.md, 2026-12-02 16:10), which every start
 * paid in readiness, asked for or not. A request that comes for it meanwhile promotes it to a
 * request's work, which takes turns before background work. Its compressed forms are made once
 * per coding, a large one on libuv's pool within the bound every large body's compression keeps
 * (encoding.ts).
 *
 * The sets are bounded (a JWT's scopes are whatever its issuer put there): `maxEntries` documents
 * and `maxBytes` of them are kept, least recently used first out; one evicted is made again.
 */

/** A document and its compressed forms, each made once. */
export interface OpenApiDocument {
  readonly representation: StaticRepresentation;
  /**
   * The body compressed with a coding, made on first need (a large one off the event loop);
   * undefined when it is not made yet and the compressions off the loop are all taken
   * (`asyncCompressionFree`): the body then goes out as it is, as any large body would.
   */
  encoded(coding: ContentCoding): Promise<Buffer> | undefined;
}

export interface OpenApiDocumentsOptions {
  readonly resources: readonly OpenApiResource[];
  readonly relations: RelationGraph;
  readonly basePath: string;
  readonly authenticated: boolean;
  readonly version: string;
  /** Limited documents kept at most. */
  readonly maxEntries?: number;
  /** Their bytes (identity and compressed) kept at most. */
  readonly maxBytes?: number;
}

/** A few dozen sets: the roles of an identity provider, not one per token. */
export const LIMITED_DOCUMENTS = 32;
/** Enough for a few dozen documents of a hundred resources each (a few MB apiece). */
export const LIMITED_DOCUMENT_BYTES = 128 * 1024 * 1024;

const JSON_TYPE = 'application/json';

export class OpenApiDocuments {
  readonly #options: OpenApiDocumentsOptions;
  /** The whole document, or its making until it is made. */
  #whole: OpenApiDocument | Promise<OpenApiDocument>;
  /** A request waits for the whole document: its making takes turns as a request's work does. */
  #wholeWanted = false;
  readonly #kept: LruMap<OpenApiDocument>;
  /** Sets being made: the requests that ask meanwhile wait for the same making. */
  readonly #making = new Map<string, Promise<OpenApiDocument>>();
  #made = 0;

  constructor(options: OpenApiDocumentsOptions) {
    this.#options = options;
    this.#kept = new LruMap({ maxEntries: options.maxEntries ?? LIMITED_DOCUMENTS, maxWeight: options.maxBytes ?? LIMITED_DOCUMENT_BYTES });
    // Not now: the first turn goes to what comes after (the server's listening); then the turns
    // other work leaves, until a request waits for it.
    const making = runSliced(
      (slice) => describe(this.#describing(options.resources, options.relations), slice),
      Infinity,
      undefined,
      undefined,
      () => (this.#wholeWanted ? 'foreground' : 'background'),
    );
    const keep = (representation: StaticRepresentation): OpenApiDocument => (this.#whole = this.#document(representation, undefined));
    this.#whole = making instanceof Promise ? making.then(keep) : keep(making);
    // A failure (none is known: the configuration was checked) is the answer of every request that
    // waits for it, not an unhandled rejection that would end the process.
    if (this.#whole instanceof Promise) this.#whole.catch(() => undefined);
    this.#made++;
  }

  /** Documents made since start (the whole one included): how often the cache missed. */
  get made(): number {
    return this.#made;
  }

  /** Limited documents kept now. */
  get kept(): number {
    return this.#kept.size;
  }

  /**
   * The whole document: for a credential that may read every resource (or when there are no
   * credentials); its making while it is not made yet, which then no longer waits for idle turns.
   */
  get whole(): OpenApiDocument | Promise<OpenApiDocument> {
    if (this.#whole instanceof Promise) this.#wholeWanted = true;
    return this.#whole;
  }

  /** The document of the resources `readable` says may be read, in the configuration's order. */
  of(readable: (name: string) => boolean): OpenApiDocument | Promise<OpenApiDocument> {
    const resources = this.#options.resources.filter((resource) => readable(resource.name));
    if (resources.length === this.#options.resources.length) return this.whole;
    // Names hold no `/` (config.ts), so the key is the set.
    const key = resources.map((resource) => resource.name).join('/');
    const kept = this.#kept.get(key);
    if (kept !== undefined) return kept;
    const making = this.#making.get(key);
    if (making !== undefined) return making;
    const relations = relationsAmong(this.#options.relations, new Set(resources.map((resource) => resource.name)));
    this.#made++;
    const made = runSliced((slice) => describe(this.#describing(resources, relations), slice));
    const keep = (representation: StaticRepresentation): OpenApiDocument => {
      const document = this.#document(representation, key);
      this.#kept.set(key, document, representation.body.length);
      return document;
    };
    if (!(made instanceof Promise)) return keep(made);
    const promise = made.then(keep).finally(() => this.#making.delete(key));
    this.#making.set(key, promise);
    return promise;
  }

  #describing(resources: readonly OpenApiResource[], relations: RelationGraph): OpenApiOptions {
    const { basePath, authenticated, version } = this.#options;
    return { resources, relations, basePath, authenticated, version };
  }

  /** A document whose compressed forms are made once; `key`: where it is kept, to weigh them there too. */
  #document(representation: StaticRepresentation, key: string | undefined): OpenApiDocument {
    const encodings = new Map<ContentCoding, Promise<Buffer>>();
    let weight = representation.body.length;
    const document: OpenApiDocument = {
      representation,
      encoded: (coding) => {
        let encoding = encodings.get(coding);
        if (encoding === undefined) {
          const body = representation.body;
          if (body.length < ASYNC_COMPRESSION_BYTES) encoding = Promise.resolve(encode(body, coding));
          else if (asyncCompressionFree()) encoding = encodeAsync(body, coding);
          else return undefined;
          encodings.set(coding, encoding);
          encoding.then(
            (bytes) => {
              weight += bytes.length;
              // Weighed again where it is kept, while it still is.
              if (key !== undefined && this.#kept.peek(key) === document) this.#kept.set(key, document, weight);
            },
            // A failure is not kept: the next request tries again.
            () => encodings.delete(coding),
          );
        }
        return encoding;
      },
    };
    return document;
  }
}

/** The document's bytes and tag, made a resource at a time, giving up the loop when the slice is spent. */
function* describe(options: OpenApiOptions, slice: Slice): Work<StaticRepresentation> {
  const hash = createHash('sha256');
  const parts: Buffer[] = [];
  for (const text of openApiChunks(options)) {
    const bytes = Buffer.from(text);
    hash.update(bytes);
    parts.push(bytes);
    if (slice.due) yield undefined;
  }
  return { body: Buffer.concat(parts), type: JSON_TYPE, etag: digestTag(hash) };
}
