import { KeyReusedError, matchesRequest, ReplayedAnswer, type KeyedWrite, type Remembered, type WriteOutcome } from './idempotency.js';
import { StoreConflictError, type Change, type DeleteCheck, type EntityRecord, type StoredEntity } from './store.js';

/**
 * The rules of a write, in one place for every store (memory, JSON lines, PostgreSQL): given a
 * write of the port and the latest state of its id (the acknowledged state, or what earlier writes
 * of the same batch left), what the write does. Pure but for the caller's own `change` and
 * `check`, which may throw to refuse the write; every refusal is thrown, and the error reaches the
 * caller unchanged. A store decides *where* the latest state comes from and *how* the outcome is
 * made durable; it never decides again *whether* the write goes through.
 *
 * - create: the record must have a non-empty string id (`TypeError`) and its id must not exist
 *   (`StoreConflictError`);
 * - update: a missing id writes nothing and answers undefined; otherwise `change(current)` is the
 *   new record, which must be well formed and keep its id;
 * - delete: a missing id writes nothing and answers false; otherwise `check(current)` may refuse.
 *
 * A keyed write (`Idempotency-Key`, idempotency.ts) is decided here too, before all of the above:
 * when its key already has an answer it writes nothing and is refused with `ReplayedAnswer` (or
 * `KeyReusedError` for another request under the key). Otherwise its outcome's answer
 * (`answerOf`) is what the store records, in the same durable step as the write itself.
 */

/** A write of the port, as the stores queue it (the queue's own ops carry these fields and more). */
export type WriteRequest =
  | { readonly kind: 'create'; readonly record: EntityRecord; readonly keyed?: KeyedWrite | undefined }
  | { readonly kind: 'update'; readonly id: string; readonly change: Change; readonly keyed?: KeyedWrite | undefined }
  | { readonly kind: 'delete'; readonly id: string; readonly check?: DeleteCheck | undefined }
  /** A keyed request refused before the write order: only its answer (`keyed.answer`) is recorded. */
  | { readonly kind: 'answer'; readonly keyed: KeyedWrite };

/** What a write does: store a record (create, update), remove the entity, or nothing (its id is missing). */
export type WriteDecision =
  | { readonly kind: 'put'; readonly record: EntityRecord }
  | { readonly kind: 'remove' }
  | { readonly kind: 'missing' };

const MISSING: WriteDecision = Object.freeze({ kind: 'missing' });
const REMOVE: WriteDecision = Object.freeze({ kind: 'remove' });

/**
 * Decides `op` against `current`, the latest state of its id, and `remembered`, the answer its key
 * has (for a keyed write; pass the store's latest, answers of earlier writes of a batch included).
 * Throws to refuse it.
 */
export function decideWrite(op: WriteRequest, current: StoredEntity | undefined, remembered?: Remembered): WriteDecision {
  if (remembered !== undefined && op.kind !== 'delete' && op.keyed !== undefined) {
    if (!matchesRequest(remembered.fingerprint, op.keyed.fingerprint, op.keyed.legacyFingerprint)) throw new KeyReusedError('the key was used for another request');
    throw new ReplayedAnswer(remembered.answer);
  }
  if (op.kind === 'create') {
    checkRecord(op.record);
    if (current) throw new StoreConflictError(`id ${op.record.id} exists`);
    return { kind: 'put', record: op.record };
  }
  if (!current || op.kind === 'answer') return MISSING;
  if (op.kind === 'delete') {
    op.check?.(current);
    return REMOVE;
  }
  const record = op.change(current);
  checkRecord(record);
  if (record.id !== op.id) throw new Error(`change() returned id ${String(record.id)} for ${op.id}`);
  return { kind: 'put', record };
}

/**
 * Makes the digests of a batch's keyed writes (`KeyedWrite.fingerprint`, made when first read) one
 * after another, before the batch is decided. One at a time amid the rest of a request's work, a
 * SHA-256 of a 182-byte body cost 3.2 µs in the server, its own code and tables cold; right after
 * another, 1.0 µs (bench/NOTES.md, "answers as bytes outside the heap").
 */
export function digestBatch(batch: readonly WriteRequest[]): void {
  for (const op of batch) void keyOf(op)?.fingerprint;
}

/** The key of a keyed write, or undefined. */
export function keyOf(op: WriteRequest): KeyedWrite | undefined {
  return op.kind === 'delete' ? undefined : op.keyed;
}

/**
 * What a keyed write's store records for its outcome, at `at` (the ledger's clock), or undefined:
 * for an unkeyed write, an outcome the HTTP layer never remembers, and a refusal by the key itself
 * (a replay is not a new answer).
 */
export function answerOf(op: WriteRequest, outcome: WriteOutcome, at: number): Remembered | undefined {
  const keyed = keyOf(op);
  if (keyed === undefined) return undefined;
  if ('error' in outcome && (outcome.error instanceof ReplayedAnswer || outcome.error instanceof KeyReusedError)) return undefined;
  const answer = keyed.answer(outcome);
  return answer === undefined ? undefined : { fingerprint: keyed.fingerprint, at, answer };
}

/** The id a write concerns, or undefined for a record refused before any lookup (no string id). */
export function idOf(op: WriteRequest): string | undefined {
  if (op.kind === 'answer') return undefined;
  if (op.kind !== 'create') return op.id;
  return typeof op.record.id === 'string' ? op.record.id : undefined;
}

/** Guards the store against records that would not survive a round trip through a file. */
export function checkRecord(record: EntityRecord): void {
  if (typeof record.id !== 'string' || record.id.length === 0) {
    throw new TypeError('an entity needs a non-empty string id');
  }
}
