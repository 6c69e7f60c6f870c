import { FINGERPRINT_MARK } from '../conventions/idempotency-key.js';
import { LruMap } from '../structures/lru-map.js';
import type { StoredEntity } from './store.js';

/**
 * Remembered answers of keyed writes (`Idempotency-Key`, draft-ietf-httpapi-idempotency-key-header;
 * docs/conventions.md): what a store keeps so that a retried POST or PATCH is answered as the first
 * one was, without writing again.
 *
 * The HTTP layer names a keyed write by its *ledger key* (principal, method, path and the client's
 * key) and a *fingerprint* of its request; the store decides the write and records its answer in
 * one step of its write order (write-rules.ts) and makes the answer durable together with the write
 * (the file store: log/answer-file.ts). Here: the types of that exchange, and `AnswerBook`, the
 * bounded in-memory table of answers and of keys in flight that the local stores share.
 */

/** A response as it was sent: what a replay sends again. Header names are lower-case. */
export interface StoredAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /**
   * `JSON.stringify(headers)`, where the answer's maker wrote it already (src/http/answer-headers.ts):
   * a store that writes the answer as JSON writes this text rather than serialise the headers again.
   */
  readonly headersJson?: string | undefined;
}

/** What a write came to: the entity it wrote (undefined: its id was missing), or why it was refused. */
export type WriteOutcome = { readonly entity: StoredEntity | undefined } | { readonly error: unknown };

/** A write that carries an `Idempotency-Key`. */
export interface KeyedWrite {
  /** The ledger key: principal, method, path and the client's key. */
  readonly key: string;
  /** `JSON.stringify(key)`, if the caller has it at no cost (`ledgerName`): a store that writes the key as JSON need not escape it again. */
  readonly keyJson?: string | undefined;
  /**
   * A digest of the request: the same key with another fingerprint is refused (`KeyReusedError`).
   * It may be computed when first read (`keyedWrite` makes it so): a store reads it in its write
   * order, where the digests of a batch are made one after another (write-batcher.ts).
   */
  readonly fingerprint: string;
  /** The request's digest as earlier versions made it, for answers they recorded (`matchesRequest`). */
  readonly legacyFingerprint?: (() => string) | undefined;
  /**
   * The answer the outcome gets, or undefined for an outcome that is never remembered (a 5xx, an
   * error outside the write's own rules). Called inside the store's write order, before the write
   * is made durable, each time the write is decided (a write that runs again is decided again; the
   * last answer is the one recorded): it must be synchronous and must not throw.
   */
  readonly answer: (outcome: WriteOutcome) => StoredAnswer | undefined;
}

/** An answer as the ledger keeps it. */
export interface Remembered {
  readonly fingerprint: string;
  /** When it was recorded: milliseconds of the ledger's clock. */
  readonly at: number;
  readonly answer: StoredAnswer;
}

/**
 * Whether an answer recorded with `stored` was given to the request whose digest is `fingerprint`
 * (`requestFingerprint`): the same digest. An answer recorded by an earlier version has an
 * unmarked digest (idempotency-key.ts `FINGERPRINT_MARK`): of the bytes, as now, or of the body
 * re-serialised (`legacy`, computed only when asked for); either matches it. One recorded now is
 * compared with the bytes' digest alone: the same JSON with other spacing is another body.
 */
export function matchesRequest(stored: string, fingerprint: string, legacy?: () => string): boolean {
  if (stored === fingerprint) return true;
  if (stored.startsWith(FINGERPRINT_MARK) || !fingerprint.startsWith(FINGERPRINT_MARK)) return false;
  return stored === fingerprint.slice(FINGERPRINT_MARK.length) || (legacy !== undefined && stored === legacy());
}

/** A keyed write whose key already has an answer: the write is not made, the answer is sent again. */
export class ReplayedAnswer extends Error {
  override readonly name = 'ReplayedAnswer';
  readonly answer: StoredAnswer;
  constructor(answer: StoredAnswer) {
    super('the key already has an answer');
    this.answer = answer;
  }
}

/** A keyed write whose key was first used with another request (422). */
export class KeyReusedError extends Error {
  override readonly name = 'KeyReusedError';
}

/** A keyed write whose key is held by a request still being processed (409). */
export class KeyInFlightError extends Error {
  override readonly name = 'KeyInFlightError';
}

/**
 * What a keyed request may do before it is processed: send a remembered answer again, or go on
 * holding the key until `release` (a second request with the key meanwhile is `KeyInFlightError`).
 */
export type Claim = { readonly kind: 'replay'; readonly answer: StoredAnswer } | { readonly kind: 'fresh'; readonly release: () => void };

/** The idempotency side of a store (the port's `idempotency`). */
export interface IdempotencyLedger {
  /**
   * Claims `key` for a request with `fingerprint` (and, for answers of earlier versions, `legacy`:
   * `matchesRequest`), each computed only if the key has an answer to compare with. Throws
   * `KeyInFlightError` when another request holds it and `KeyReusedError` when its answer was
   * given to another request.
   */
  claim(key: string, fingerprint: () => string, legacy?: () => string): Claim | Promise<Claim>;
  /**
   * Records `keyed.answer({ entity: undefined })`, the answer of a keyed request refused before it
   * reached the store's write order (a validation failure, a missing entity), durably, in the write
   * order (so after any write of the key); resolves once it is, or rejects like the key's write would.
   */
  remember(keyed: KeyedWrite): Promise<void>;
}

/** An `AnswerBook`'s mark of a key in flight under which an answer was put since its claim (a table's hashes are never negative). */
const ANSWERED = -1;

/** At least this long an answer is kept (the draft's advice; docs/conventions.md promises 24 hours). */
export const ANSWER_TTL_MS = 24 * 60 * 60 * 1000;
/** At most this many answers per store: past it, the oldest go first, even inside their 24 hours. */
export const MAX_ANSWERS = 100_000;
/** At most this many bytes of answers (bodies and headers) per store, likewise. */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export interface AnswerBookOptions {
  /** Milliseconds; injected by tests that expire answers. Default `Date.now`. */
  readonly now?: () => number;
  readonly ttlMs?: number;
  readonly maxAnswers?: number;
  readonly maxBytes?: number;
}

/** What an answer holds in memory, roughly: its body and headers (strings count one byte a character). */
export function sizeOf(r: Remembered): number {
  let bytes = r.answer.body.length + r.fingerprint.length + 64;
  for (const name in r.answer.headers) bytes += name.length + (r.answer.headers[name]?.length ?? 0);
  // A table of objects (the memory store's) keeps the headers' text with the answer: it counts too.
  return bytes + (r.answer.headersJson?.length ?? 0);
}

/**
 * Where an `AnswerBook` keeps its answers: a table in the order they were recorded (a key recorded
 * again moves to the end), bounded by its own rules, that lets go of its oldest first. `LruAnswers`
 * keeps them as objects; the JSON-lines store keeps them as bytes (log/answer-ring.ts).
 */
export interface AnswerTable {
  /** Answers held. */
  readonly size: number;
  /** Bytes they hold, by the table's own measure. */
  readonly weight: number;
  /**
   * Answers let go by the table's bounds, not by their time, since it was made: pushed out by newer
   * ones, or too large to keep. A retry with such a key inside its 24 hours is processed afresh.
   */
  readonly pushedOut: number;
  /**
   * The table's own hash of `key`, if it hashes keys: a caller that looks a key up and later puts
   * it hashes it once and passes the hash to both (`hash`, below).
   */
  hashOf?(key: string): number;
  /** The answer of `key`, expired or not (`hash`: `hashOf(key)`, if the caller has it). */
  peek(key: string, hash?: number): Remembered | undefined;
  /** Records `remembered` under `key` (`weight`: its `sizeOf`); `fresh`: the key is known to hold no answer; `hash`: as for `peek`. */
  put(key: string, remembered: Remembered, weight: number, fresh: boolean, hash?: number): void;
  delete(key: string): boolean;
  /** Lets go of the oldest answers while they were recorded at `cutoff` or before. */
  dropExpired(cutoff: number): void;
  /** The answers held, oldest first. */
  entries(): IterableIterator<[string, Remembered]>;
}

/** An `AnswerTable` of objects, in an `LruMap` read with `peek` only: an insertion-ordered map whose oldest entry is found in O(1). */
export class LruAnswers implements AnswerTable {
  readonly #map: LruMap<Remembered>;
  #pushedOut = 0;

  constructor(maxAnswers: number, maxBytes: number) {
    this.#map = new LruMap({ maxEntries: maxAnswers, maxWeight: maxBytes, maxEntryWeight: maxBytes });
  }

  get size(): number {
    return this.#map.size;
  }

  get weight(): number {
    return this.#map.weight;
  }

  get pushedOut(): number {
    return this.#pushedOut;
  }

  peek(key: string): Remembered | undefined {
    return this.#map.peek(key);
  }

  put(key: string, remembered: Remembered, weight: number, fresh: boolean): void {
    const map = this.#map;
    // What the map holds after, against what it would hold had it let none go (one too large to keep is let go too).
    const expected = map.size + (fresh || map.peek(key) === undefined ? 1 : 0);
    if (fresh) map.add(key, remembered, weight);
    else map.set(key, remembered, weight);
    this.#pushedOut += expected - map.size;
  }

  delete(key: string): boolean {
    return this.#map.delete(key);
  }

  dropExpired(cutoff: number): void {
    const map = this.#map;
    for (let oldest = map.oldestValue(); oldest !== undefined && oldest.at <= cutoff; oldest = map.oldestValue()) map.delete(map.oldestKey()!);
  }

  entries(): IterableIterator<[string, Remembered]> {
    return this.#map.entries();
  }
}

/**
 * The answers a local store remembers, in the order they were recorded (so the oldest expire
 * first), and the keys held by requests in flight in this process. Bounded: expired answers are
 * dropped as new ones come and whenever asked for, and past `maxAnswers` answers or `maxBytes`
 * bytes the oldest go (`AnswerTable`). Keys in flight are as many as requests in flight.
 *
 * The table's oldest answer is found in O(1), so recording an answer and dropping the oldest cost
 * O(1) however many are held: walking a `Map` from its start to find the oldest walks past every
 * entry deleted since the table was last rebuilt, which cost 106 µs per keyed write once 100,000
 * answers were held (`bench/answer-book.ts`).
 */
export class AnswerBook {
  readonly now: () => number;
  readonly ttlMs: number;
  /** The most answers held, and the most bytes of them. */
  readonly maxAnswers: number;
  readonly maxBytes: number;
  /** Undefined where `maxAnswers` is 0: the book holds keys in flight only. */
  readonly #answers: AnswerTable | undefined;
  /**
   * The keys claimed by requests in flight: each with the table's hash of it (`AnswerTable.hashOf`;
   * 0 for a table without) while no answer was put under it since its claim, and `ANSWERED` once one was.
   */
  readonly #inFlight = new Map<string, number>();

  /** `table`: where the answers are kept (given the bounds); default `LruAnswers`. */
  constructor(options: AnswerBookOptions = {}, table?: (maxAnswers: number, maxBytes: number) => AnswerTable) {
    this.now = options.now ?? Date.now;
    this.ttlMs = options.ttlMs ?? ANSWER_TTL_MS;
    const maxAnswers = (this.maxAnswers = Math.max(0, Math.floor(options.maxAnswers ?? MAX_ANSWERS)));
    const maxBytes = (this.maxBytes = options.maxBytes ?? MAX_ANSWER_BYTES);
    this.#answers = maxAnswers >= 1 ? (table ?? ((n, bytes) => new LruAnswers(n, bytes)))(maxAnswers, maxBytes) : undefined;
  }

  get size(): number {
    return this.#answers?.size ?? 0;
  }

  /** The bytes the answers held take, by the table's measure (which `maxBytes` bounds). */
  get weight(): number {
    return this.#answers?.weight ?? 0;
  }

  /** Answers let go inside their time to live because a bound was reached (`AnswerTable.pushedOut`). */
  get pushedOut(): number {
    return this.#answers?.pushedOut ?? 0;
  }

  /** The live answer of `key` (`hash`: the table's hash of it, if the caller has it). */
  get(key: string, hash?: number): Remembered | undefined {
    const answers = this.#answers;
    const found = answers?.peek(key, hash);
    if (found === undefined) return undefined;
    if (this.#expired(found)) {
      answers!.delete(key);
      return undefined;
    }
    return found;
  }

  /**
   * The live answer of `key` as the write order needs it (write-rules.ts): none, known without a
   * look in the table, while a claim of this process holds the key and no answer was put under it
   * since (the claim found none, and no other request with the key runs until it is released).
   * A table of 100,000 answers misses the processor's caches on every look: this saves one of
   * the three a keyed write makes.
   */
  latest(key: string): Remembered | undefined {
    const claimed = this.#inFlight.get(key);
    return claimed !== undefined && claimed !== ANSWERED ? undefined : this.get(key);
  }

  /** Records an answer (already durable, for a durable store); one larger than `maxBytes` is not kept. `weight`: its `sizeOf`, if the caller has it. */
  put(key: string, remembered: Remembered, weight = sizeOf(remembered)): void {
    const claimed = this.#inFlight.get(key);
    if (claimed !== undefined) this.#inFlight.set(key, ANSWERED);
    const answers = this.#answers;
    if (answers === undefined) return;
    // A key claimed here with no answer put since is not in the table (as `latest` knows): added
    // without looking for it, by the hash its claim made. A key recorded again moves to the end, as
    // if recorded for the first time.
    // Expired answers leave first, so that an answer the put lets go of was still inside its time
    // (`pushedOut`); and after, for one recorded already expired (read back at start-up).
    const cutoff = this.now() - this.ttlMs;
    answers.dropExpired(cutoff);
    if (claimed !== undefined && claimed !== ANSWERED) answers.put(key, remembered, weight, true, answers.hashOf === undefined ? undefined : claimed);
    else answers.put(key, remembered, weight, false);
    if (remembered.at <= cutoff) answers.dropExpired(cutoff);
  }

  /** The live answers, oldest first (rewriting a durable ledger). */
  *entries(): IterableIterator<[string, Remembered]> {
    if (this.#answers === undefined) return;
    for (const entry of this.#answers.entries()) if (!this.#expired(entry[1])) yield entry;
  }

  /** See `IdempotencyLedger.claim`. */
  claim(key: string, fingerprint: () => string, legacy?: () => string): Claim {
    if (this.#inFlight.has(key)) throw new KeyInFlightError('a request with this key is still being processed');
    const hash = this.#answers?.hashOf?.(key);
    const found = this.get(key, hash);
    if (found !== undefined) {
      if (!matchesRequest(found.fingerprint, fingerprint(), legacy)) throw new KeyReusedError('the key was used for another request');
      return { kind: 'replay', answer: found.answer };
    }
    this.#inFlight.set(key, hash ?? 0);
    let held = true;
    return {
      kind: 'fresh',
      release: () => {
        if (held) this.#inFlight.delete(key);
        held = false;
      },
    };
  }

  #expired(r: Remembered): boolean {
    return r.at + this.ttlMs <= this.now();
  }
}
