import { STATUS_CODES } from 'node:http';

/** `type` of every problem document: the seed's link to RFC 2616 §10 (docs/conventions.md §7, docs/conventions.md §7). */
export const PROBLEM_TYPE = 'http://www.w3.org/Protocols/rfc2616/rfc2616-sec10.html';
/** RFC 7807 §3 media type of problem documents (docs/conventions.md §7). */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** Extra members of a problem document (docs/conventions.md §7: `pages`, `page`; docs/conventions.md §7: `validationMessages`). */
export type ProblemExtras = Readonly<Record<string, unknown>>;

/** A problem document as sent (docs/conventions.md §7). */
export interface ProblemDocument {
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  readonly status: number;
  readonly [extra: string]: unknown;
}

/**
 * An HTTP error that the one error boundary turns into an `application/problem+json` response.
 * Handlers throw it; nothing else writes an error response.
 */
export class HttpProblem extends Error {
  override readonly name = 'HttpProblem';
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly extras: ProblemExtras;
  /** Response headers that belong to the problem (`Allow` on 405, `WWW-Authenticate` on 401). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    detail: string,
    extras: ProblemExtras = {},
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(detail);
    this.status = status;
    this.title = statusTitle(status);
    this.detail = detail;
    this.extras = extras;
    this.headers = headers;
  }

  /** The problem document, members in the seed's order, extras last. */
  toJSON(): ProblemDocument {
    return problemDocument(this.status, this.detail, this.extras);
  }
}

/** The short status name used as `title` (docs/conventions.md §7), e.g. 409 → "Conflict". */
export function statusTitle(status: number): string {
  return STATUS_CODES[status] ?? 'Unknown Status';
}

/** Builds a problem document (docs/conventions.md §7), members in the seed's order, extras last. */
export function problemDocument(status: number, detail: string, extras: ProblemExtras = {}): ProblemDocument {
  return { type: PROBLEM_TYPE, title: statusTitle(status), detail, status, ...extras };
}

// One factory per status the service sends, so the wording of each lives in one place.

export const badRequest = (detail: string, extras?: ProblemExtras): HttpProblem => new HttpProblem(400, detail, extras);

export const unauthorized = (detail: string): HttpProblem =>
  // RFC 6750 §3: the challenge names the realm (docs/conventions.md §6).
  new HttpProblem(401, detail, {}, { 'www-authenticate': 'Bearer realm="halserve"' });

export const forbidden = (detail: string): HttpProblem => new HttpProblem(403, detail);

export const notFound = (detail: string): HttpProblem => new HttpProblem(404, detail);

export const methodNotAllowed = (method: string, allow: readonly string[]): HttpProblem =>
  new HttpProblem(405, `Method ${method} is not allowed here; allowed: ${allow.join(', ')}`, {}, { allow: allow.join(', ') });

export const notAcceptable = (offered: readonly string[]): HttpProblem =>
  // The answer depends on Accept, as the 200 would (RFC 9110 §12.5.5).
  new HttpProblem(406, `Expecting an Accept header that allows one of the ${offered.join(', ')}`, {}, { vary: 'Accept' });

/** docs/conventions.md §7: a page outside the collection's range. */
export const pageOutOfRange = (pages: number, page: number): HttpProblem =>
  new HttpProblem(409, 'requested page is out of range', { pages, page });

export const preconditionFailed = (detail: string): HttpProblem => new HttpProblem(412, detail);

/** A body over a limit of `unit`s: bytes, or values and members that bound the work of parsing it (docs/conventions.md §8). */
export const payloadTooLarge = (limit: number, unit = 'bytes'): HttpProblem =>
  new HttpProblem(413, `Request body is larger than the limit of ${limit} ${unit}`);

/** docs/conventions.md §7: the wording lists the accepted media types ("Expecting one of the application/json"). */
export const unsupportedMediaType = (accepted: readonly string[], detail = `Expecting one of the ${accepted.join(', ')}`, patch = false): HttpProblem =>
  // RFC 5789 §2.2: a PATCH's 415 says which patch documents the resource takes.
  new HttpProblem(415, detail, {}, patch ? { 'accept-patch': accepted.join(', ') } : {});

/** RFC 9110 §10.1.1: an expectation the server cannot meet. */
export const expectationFailed = (): HttpProblem => new HttpProblem(417, 'The only expectation this server meets is 100-continue', {}, { connection: 'close' });

/** A request Node's parser refused: 400, 408, 414 or 431 (RFC 9110 §15.5.9, RFC 9112 §3, RFC 6585 §5); the connection is closed after it. */
export const unparsable = (status: number, detail: string): HttpProblem => new HttpProblem(status, detail, {}, { connection: 'close' });

/**
 * RFC 9110 §10.2.3: every 503 says when to try again, in whole seconds chosen for its cause
 * (docs/conventions.md §7 lists them): a client that retries at once only adds to the load of a
 * server that cannot serve it, and one that guesses waits longer than it needs to. Without seconds (an
 * embedder's call written before they were asked for), 5: as for a write that may pass.
 */
export const serviceUnavailable = (detail: string, retryAfterSeconds: number = WRITE_RETRY_AFTER_SECONDS): HttpProblem =>
  new HttpProblem(503, detail, {}, { 'retry-after': String(retryAfterSeconds) });

/** A query past its budget, or held back by the index limit: the index it started goes on being built, so a retry soon succeeds. */
export const QUERY_RETRY_AFTER_SECONDS = 1;

/** How long a client is asked to wait before retrying a write while the database is away (a restart takes seconds). */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/** The server at its stream limit, or shutting down (its drain lasts at most 5 s): a stream ends, or another instance takes over. */
export const STREAMS_RETRY_AFTER_SECONDS = 5;

/** `/readyz` while not ready: the cause is not said there (starting, draining, a store away), and a probe asks again on its own period. */
export const READY_RETRY_AFTER_SECONDS = 5;

/**
 * Causes of a failed write (errno codes: `failureCause`) that last until someone acts: room made on
 * the disk or under the quota, the file system writable again, the log's file back (ESTALE: a log
 * replaced under the server refuses writes until a restart, docs/storage.md §1).
 */
const LASTING_WRITE_FAILURES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EFBIG', 'ESTALE']);

/** A write refused for one of those: no sooner than an operator or a clean-up can act. */
export const LASTING_WRITE_RETRY_AFTER_SECONDS = 30;

/** Any other failed write (an I/O error that may pass, a store closed as the server shuts down). */
export const WRITE_RETRY_AFTER_SECONDS = 5;

/** Seconds a client is asked to wait after a write that failed with `cause` (an errno code, or `unknown`). */
export const writeRetryAfterSeconds = (cause: string): number =>
  LASTING_WRITE_FAILURES.has(cause) ? LASTING_WRITE_RETRY_AFTER_SECONDS : WRITE_RETRY_AFTER_SECONDS;

/** docs/storage.md §1: the log could not be written (disk full, I/O error); nothing was applied. */
export const writeFailed = (cause: string): HttpProblem =>
  serviceUnavailable('The change could not be saved; it was not applied. Try again later', writeRetryAfterSeconds(cause));

/**
 * docs/storage.md §2: the database is unreachable. A write was not acknowledged (it may be
 * retried); a read the database answers (the change feed's pages) was not answered.
 */
export const databaseUnavailable = (write = true): HttpProblem =>
  serviceUnavailable(write ? 'The database is unreachable; the change was not acknowledged. Try again shortly' : 'The database is unreachable. Try again shortly', DATABASE_RETRY_AFTER_SECONDS);

/** docs/conventions.md §7: validation failures. */
export const validationFailed = (validationMessages: Readonly<Record<string, Readonly<Record<string, string>>>>): HttpProblem =>
  new HttpProblem(400, 'Validation failed', { validationMessages });

/** docs/conventions.md §7: an unexpected failure shows no internals. */
export const internalError = (): HttpProblem => new HttpProblem(500, 'The server failed to handle the request');

/**
 * RFC 6585 §4 and docs/conventions.md §4.1: over the rate limit. `Retry-After` is whole seconds rounded up
 * (RFC 9110 §10.2.3); `X-RateLimit-Wait` the exact wait, as the Shopping Feed API sends it.
 */
export const tooManyRequests = (waitSeconds: number, waitText: string): HttpProblem =>
  new HttpProblem(429, `Too many requests: wait ${waitText} s`, {}, { 'retry-after': String(Math.max(1, Math.ceil(waitSeconds))), 'x-ratelimit-wait': waitText });
