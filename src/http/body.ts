import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, payloadTooLarge, unsupportedMediaType, type HttpProblem } from '../conventions/problem.js';
import { BodyShapeScanner, checkValueShape, type ShapeViolation } from './body-shape.js';
import type { ClientFields } from '../conventions/entity.js';
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_BODY_MEMBERS, DEFAULT_MAX_BODY_VALUES } from '../conventions/limits.js';

/** Deeper bodies are refused: serialising or merging them would exhaust the stack. */
export const MAX_BODY_DEPTH = 1024;

/** What one request body may be: bytes, then the shape that bounds the work of parsing it. */
export interface BodyLimits {
  readonly bytes: number;
  readonly values: number;
  readonly members: number;
}

/** The limits in force for a handler's options, defaults filled in. */
export function bodyLimits(options: { readonly maxBodyBytes?: number; readonly maxBodyValues?: number; readonly maxBodyMembers?: number }): BodyLimits {
  return {
    bytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    values: options.maxBodyValues ?? DEFAULT_MAX_BODY_VALUES,
    members: options.maxBodyMembers ?? DEFAULT_MAX_BODY_MEMBERS,
  };
}

/**
 * Holds an entity a merge patch made to the values and members of `limits` (a 400 problem, like a
 * merged entity its schema refuses). A body is counted as it arrives (`readBody`), and a POST's or
 * PUT's fields are part of their body, so they are within the limits already; a merge patch adds to
 * what the entity held, so its result is counted again.
 */
export function checkMergedLimits(fields: ClientFields, limits: BodyLimits): void {
  const violation = checkValueShape(fields, limits);
  if (violation) {
    const what = violation.limit === 'values' ? `${violation.max} values` : `${violation.max} members in one object`;
    throw badRequest(`The entity would be larger than the limit of ${what}`);
  }
}

/** The problem for a body whose shape broke a limit: too many values or members is a 413, too deep a 400 as before. */
function shapeProblem({ limit, max }: ShapeViolation): HttpProblem {
  if (limit === 'values') return payloadTooLarge(max, 'values');
  if (limit === 'members') return payloadTooLarge(max, 'members in one object');
  return badRequest(`Request body is nested deeper than ${max} levels`);
}

/** A JSON object from a request body: still unchecked beyond being an object. */
export type JsonObject = Record<string, unknown>;

/** The client went away before its body was complete: nothing to answer, nothing to log. */
export class ClientAbortedError extends Error {
  override readonly name = 'ClientAbortedError';
}

/**
 * The largest body that no text can make break `limits`' shape: the scanner counts at most one
 * value and one level of depth per byte, and a member takes at least two (its quote and the `{` or
 * `,` before it). A body this small is not scanned at all (almost every body is this small).
 */
export function unscannedBytes(limits: Pick<BodyLimits, 'values' | 'members'>, depth = MAX_BODY_DEPTH): number {
  return Math.min(limits.values, 2 * limits.members, depth);
}

/**
 * Reads a request body of at most `limits` bytes (a number), or within `BodyLimits`, whose shape is
 * then counted chunk by chunk as it arrives, once it is larger than `unscannedBytes`. A declared or
 * actual size over the limit is a 413 problem, and so are too many values or members, raised as
 * soon as it is known, so such a body is never buffered whole nor parsed. A client that sent
 * `Expect: 100-continue` is told to go on only once the body is wanted (RFC 9110 §10.1.1).
 */
export function readBody(req: IncomingMessage, limits: number | BodyLimits, res?: ServerResponse): Promise<Buffer> {
  const limit = typeof limits === 'number' ? limits : limits.bytes;
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(payloadTooLarge(limit));
  if (res && req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();
  const unscanned = typeof limits === 'number' ? Infinity : unscannedBytes(limits);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let shape: BodyShapeScanner | undefined;
    // Settled once; the listeners stay (a request is read once) and do nothing after.
    let done = false;
    const refuse = (problem: HttpProblem): void => {
      done = true;
      chunks.length = 0;
      req.resume(); // drain the rest without keeping it
      reject(problem);
    };
    req.on('data', (chunk: Buffer): void => {
      if (done) return;
      size += chunk.length;
      if (size > limit) return refuse(payloadTooLarge(limit));
      chunks.push(chunk);
      if (size <= unscanned) return;
      let violation: ShapeViolation | undefined;
      if (shape === undefined) {
        // Past the size no shape can break the limits in: counted from the first byte on.
        shape = new BodyShapeScanner({ values: (limits as BodyLimits).values, members: (limits as BodyLimits).members, depth: MAX_BODY_DEPTH });
        for (const earlier of chunks) violation ??= shape.write(earlier);
      } else violation = shape.write(chunk);
      if (violation) refuse(shapeProblem(violation));
    });
    req.on('end', (): void => {
      if (done) return;
      done = true;
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
      // The listeners outlive the body: they must not keep its chunks for as long as the request lives.
      chunks.length = 0;
    });
    // A client gone before the end: Node (16 and later) destroys the request with an error
    // (`aborted`, ECONNRESET), after the deprecated 'aborted' event.
    req.on('error', (): void => {
      if (done) return;
      done = true;
      chunks.length = 0;
      reject(new ClientAbortedError('the client closed the connection before its body was complete'));
    });
  });
}

/**
 * Checks a body's headers before a byte of it is read (docs/conventions.md §7 rule 2): its media type must be one
 * of `accepted`, its charset UTF-8 if one is named (RFC 8259 §8.1), and it must not be compressed.
 */
export function checkBodyHeaders(req: IncomingMessage, accepted: readonly string[], isAccepted: (contentType: string | undefined) => boolean): void {
  const patch = req.method === 'PATCH';
  if (!isAccepted(req.headers['content-type'])) throw unsupportedMediaType(accepted, undefined, patch);
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    // RFC 9110 §15.5.16: a content coding the server does not take is a 415.
    throw unsupportedMediaType(accepted, 'Request bodies must not carry a Content-Encoding', patch);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses a body as a JSON object (docs/conventions.md §5): not UTF-8, not JSON, not an object, nested deeper
 * than `MAX_BODY_DEPTH`, or holding a number JSON cannot carry back (1e400 parses as Infinity and
 * would be stored as null) → 400.
 */
export function parseJsonObject(body: Uint8Array): JsonObject {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw badRequest('Request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw badRequest(`Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest('Request body must be a JSON object');
  }
  checkJsonValue(value);
  return value as JsonObject;
}

/**
 * Checks a parsed value's numbers and depth. Recursive, and it refuses a level past
 * `MAX_BODY_DEPTH` before descending into it, so that the walk itself never goes deeper than that
 * (V8's stack holds far more frames). Allocates nothing: it runs for every body.
 */
function checkJsonValue(value: unknown, depth = 1): void {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw badRequest('Request body holds a number too large to represent');
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  if (depth > MAX_BODY_DEPTH) throw badRequest(`Request body is nested deeper than ${MAX_BODY_DEPTH} levels`);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) checkJsonValue(value[i], depth + 1);
    return;
  }
  for (const key in value) checkJsonValue((value as Record<string, unknown>)[key], depth + 1);
}
