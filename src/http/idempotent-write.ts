import type { IncomingMessage } from 'node:http';
import { IDEMPOTENCY_KEY, IDEMPOTENCY_REPLAYED, ledgerName, legacyFingerprint, parseIdempotencyKey, requestFingerprint } from '../conventions/idempotency-key.js';
import { HttpProblem } from '../conventions/problem.js';
import { KeyInFlightError, KeyReusedError, ReplayedAnswer, type IdempotencyLedger, type KeyedWrite, type StoredAnswer, type WriteOutcome } from '../store/idempotency.js';
import type { StoredEntity } from '../store/store.js';
import { clientKey, type Principal } from './auth.js';
import { problemReply, type Reply } from './reply.js';

/**
 * A POST or PATCH with `Idempotency-Key` (docs/conventions.md): the first request with a key is
 * processed and its answer remembered by the store, together with the write; a retry from the same
 * principal to the same method and resource gets that answer again, with `Idempotency-Replayed: true`,
 * writing nothing; the key with another body is a 422, and while the first is still processed a
 * 409.
 *
 * Only the answers of the write's own rules are remembered: a 2xx, a 400 `Validation failed`, a 404
 * and a 412. Anything answered before the write is considered (the key, the JSON, authentication,
 * rate limits) never reaches here, and a 5xx or any other refusal is not remembered: a retry after
 * it is processed afresh (or, if the write was in fact made, replays its answer).
 */

/** The key of a request, parsed: a 400 problem for a malformed one; undefined without one. */
export function requestKey(req: IncomingMessage): string | undefined {
  const value = req.headers[IDEMPOTENCY_KEY];
  // Node joins the lines of a header sent twice with ", ": when one of them is empty, what is left
  // (`k, ` trimmed) reads as the one key `k,`. A value with a comma is looked at line by line.
  if (typeof value === 'string' && value.includes(',')) {
    const lines = req.headersDistinct[IDEMPOTENCY_KEY];
    if (lines !== undefined && lines.length > 1) return parseIdempotencyKey(lines);
  }
  return parseIdempotencyKey(value);
}

/** The statuses of problems that are the write's own answer, and remembered. */
function remembered(problem: HttpProblem): boolean {
  return problem.status === 404 || problem.status === 412 || (problem.status === 400 && problem.detail === 'Validation failed');
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * A reply as the ledger keeps it. Its headers object is kept as it is, not copied: a reply's
 * headers are made for it (`jsonReply`, `problemReply`) and nothing changes them once made
 * (`send` reads them), and every answer kept is one object fewer for the collector to carry.
 */
function storedAnswer(reply: Reply): StoredAnswer {
  const body = reply.body;
  return { status: reply.status, headers: reply.headers ?? NO_HEADERS, body: body === undefined ? '' : typeof body === 'string' ? body : body.toString('utf8'), headersJson: reply.headersJson };
}

/** The remembered answer, sent again. */
export function replayReply(answer: StoredAnswer): Reply {
  return { status: answer.status, headers: { ...answer.headers, [IDEMPOTENCY_REPLAYED]: 'true' }, body: answer.body };
}

export interface KeyedRequest {
  readonly req: IncomingMessage;
  readonly principal: Principal | undefined;
  /** The client's key (`requestKey`). */
  readonly key: string;
  /** The resource the write names, by its own path (`ledgerTarget`: whatever prefix, alias or escapes the request used). */
  readonly target: string;
  /** The parsed body. */
  readonly body: unknown;
  /** The body's bytes as they came: what the request's digest is of. */
  readonly bytes: Uint8Array;
  /** The store's ledger; undefined: the store keeps no answers (a 501). */
  readonly ledger: IdempotencyLedger | undefined;
  /** The write, given the key to pass to the store. */
  readonly write: (keyed: KeyedWrite) => Promise<StoredEntity>;
  /** The answer to the written entity. */
  readonly reply: (entity: StoredEntity) => Reply;
  /** The answer when the store found no entity to write (an update of a missing id). */
  readonly missing: () => HttpProblem;
}

/** Processes a keyed write, or replays the answer its key has. */
export async function keyedWrite(request: KeyedRequest): Promise<Reply> {
  const { req, ledger } = request;
  if (ledger === undefined) throw new HttpProblem(501, 'This store does not keep Idempotency-Key answers: send the request without the header');
  const name = ledgerName(clientKey(req, request.principal), req.method ?? 'POST', request.target, request.key);
  const key = name.key;
  // The digest is made when first asked for: by the store's write order, with the rest of its
  // batch's (write-batcher.ts), or by a claim that finds an answer to compare with.
  const digest = new Digest(request.bytes);
  const fingerprint = (): string => digest.value;
  const legacy = (): string => legacyFingerprint(request.body);
  let claim;
  try {
    // A local store answers at once: no turn of the microtask queue for it.
    const claimed = ledger.claim(key, fingerprint, legacy);
    claim = claimed instanceof Promise ? await claimed : claimed;
  } catch (error) {
    throw keyProblem(error);
  }
  if (claim.kind === 'replay') return replayReply(claim.answer);
  /** Whether the store's write order saw the request (and recorded its answer, or chose not to). */
  let decided = false;
  /**
   * The reply whose answer the store recorded: sent as it is, so a replay (the recorded copy, its
   * body decoded from these bytes) is byte for byte the same.
   */
  let given: Reply | undefined;
  const answer = (outcome: WriteOutcome): StoredAnswer | undefined => {
    decided = true;
    if ('error' in outcome) given = outcome.error instanceof HttpProblem && remembered(outcome.error) ? problemReply(outcome.error) : undefined;
    else given = outcome.entity === undefined ? problemReply(request.missing()) : request.reply(outcome.entity);
    return given === undefined ? undefined : storedAnswer(given);
  };
  try {
    const entity = await request.write(new DigestedWrite(key, name.json, digest, legacy, answer));
    return given ?? request.reply(entity);
  } catch (error) {
    if (error instanceof ReplayedAnswer) return replayReply(error.answer);
    if (error instanceof KeyReusedError || error instanceof KeyInFlightError) throw keyProblem(error);
    // Refused before the write order (validation of a POST, a PATCH's missing entity): remembered
    // now. A store whose claim does not look for answers (PostgreSQL's) finds one only here: the
    // key already has an answer, which is the one to give (or a 422 for another body), not this.
    if (!decided && error instanceof HttpProblem && remembered(error)) {
      const fixed = storedAnswer(problemReply(error));
      try {
        await ledger.remember(new DigestedWrite(key, name.json, digest, legacy, () => fixed));
      } catch (failure) {
        if (failure instanceof ReplayedAnswer) return replayReply(failure.answer);
        throw keyProblem(failure);
      }
    }
    throw error;
  } finally {
    claim.release();
  }
}

/** A request's digest (`requestFingerprint`), made when first asked for. */
class Digest {
  readonly #bytes: Uint8Array;
  #value: string | undefined;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  get value(): string {
    return (this.#value ??= requestFingerprint(this.#bytes));
  }
}

/**
 * The keyed write the store gets, its `fingerprint` made when first read. A class: an object
 * literal with a getter took a hidden class of its own each time it was made, and the stores'
 * reads of it went megamorphic (a keyed POST cost 18 µs more, measured).
 */
class DigestedWrite implements KeyedWrite {
  readonly key: string;
  readonly keyJson: string | undefined;
  readonly legacyFingerprint: () => string;
  readonly answer: KeyedWrite['answer'];
  readonly #digest: Digest;

  constructor(key: string, keyJson: string | undefined, digest: Digest, legacy: () => string, answer: KeyedWrite['answer']) {
    this.key = key;
    this.keyJson = keyJson;
    this.#digest = digest;
    this.legacyFingerprint = legacy;
    this.answer = answer;
  }

  get fingerprint(): string {
    return this.#digest.value;
  }
}

function keyProblem(error: unknown): unknown {
  if (error instanceof KeyInFlightError) return new HttpProblem(409, 'A request with this Idempotency-Key is still being processed: retry once it has been answered');
  if (error instanceof KeyReusedError) return new HttpProblem(422, 'This Idempotency-Key was used for a request with another body: send a new key for a new request');
  return error;
}
