import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StoreConflictError, type EntityRecord, type StoredEntity } from '../../src/store/store.js';
import { KeyReusedError, ReplayedAnswer, type WriteOutcome } from '../../src/store/idempotency.js';
import { answerOf, checkRecord, decideWrite, idOf } from '../../src/store/write-rules.js';

const record = (id: string, fields: Record<string, unknown> = {}): EntityRecord => ({ id, createdAt: 1, updatedAt: 1, ...fields });
const entity = (r: EntityRecord): StoredEntity => ({ id: r.id, record: r, json: JSON.stringify(r), version: '1' });

test('create of a new id -> put of its record', () => {
  const r = record('a');
  assert.deepEqual(decideWrite({ kind: 'create', record: r }, undefined), { kind: 'put', record: r });
});

test('create of an existing id -> StoreConflictError naming the id', () => {
  assert.throws(() => decideWrite({ kind: 'create', record: record('a') }, entity(record('a'))), (e: unknown) => e instanceof StoreConflictError && e.message === 'id a exists');
});

test('create without a string id -> TypeError, before any lookup', () => {
  const bad = { createdAt: 1, updatedAt: 1 } as unknown as EntityRecord;
  assert.equal(idOf({ kind: 'create', record: bad }), undefined);
  assert.throws(() => decideWrite({ kind: 'create', record: bad }, undefined), { name: 'TypeError', message: 'an entity needs a non-empty string id' });
  assert.throws(() => checkRecord(record('')), TypeError);
});

test('update of a missing id -> missing, change never called', () => {
  let called = false;
  const change = (): EntityRecord => {
    called = true;
    return record('a');
  };
  assert.deepEqual(decideWrite({ kind: 'update', id: 'a', change }, undefined), { kind: 'missing' });
  assert.equal(called, false);
});

test('update of an existing id -> put of change(current)', () => {
  const current = entity(record('a', { n: 1 }));
  const decision = decideWrite({ kind: 'update', id: 'a', change: (c) => ({ ...c.record, n: 2 }) }, current);
  assert.deepEqual(decision, { kind: 'put', record: record('a', { n: 2 }) });
});

test('update whose change refuses -> its error unchanged', () => {
  const refusal = new Error('412');
  assert.throws(() => decideWrite({ kind: 'update', id: 'a', change: () => { throw refusal; } }, entity(record('a'))), (e: unknown) => e === refusal);
});

test('update whose change moves the id -> error naming both ids', () => {
  assert.throws(() => decideWrite({ kind: 'update', id: 'a', change: () => record('b') }, entity(record('a'))), { message: 'change() returned id b for a' });
});

test('update whose change drops the id -> TypeError', () => {
  assert.throws(() => decideWrite({ kind: 'update', id: 'a', change: () => record('') }, entity(record('a'))), TypeError);
});

test('delete of a missing id -> missing, check never called', () => {
  let called = false;
  assert.deepEqual(decideWrite({ kind: 'delete', id: 'a', check: () => { called = true; } }, undefined), { kind: 'missing' });
  assert.equal(called, false);
});

test('delete of an existing id -> remove after check; a refusing check -> its error', () => {
  const current = entity(record('a'));
  let seen: StoredEntity | undefined;
  assert.deepEqual(decideWrite({ kind: 'delete', id: 'a', check: (c) => { seen = c; } }, current), { kind: 'remove' });
  assert.equal(seen, current);
  assert.deepEqual(decideWrite({ kind: 'delete', id: 'a', check: undefined }, current), { kind: 'remove' });
  const refusal = new Error('still linked');
  assert.throws(() => decideWrite({ kind: 'delete', id: 'a', check: () => { throw refusal; } }, current), (e: unknown) => e === refusal);
});

test('keyed write whose key has its answer -> ReplayedAnswer, before any other rule; another fingerprint -> KeyReusedError', () => {
  const answer = { status: 201, headers: {}, body: 'first' };
  const keyed = { key: 'k', fingerprint: 'f', answer: () => answer };
  const remembered = { fingerprint: 'f', at: 0, answer };
  // The id exists: unkeyed, this create would be a conflict; keyed with an answer, it is a replay.
  assert.throws(() => decideWrite({ kind: 'create', record: record('a'), keyed }, entity(record('a')), remembered), (e: unknown) => e instanceof ReplayedAnswer && e.answer === answer);
  assert.throws(() => decideWrite({ kind: 'update', id: 'a', change: () => record('a'), keyed }, undefined, { ...remembered, fingerprint: 'g' }), KeyReusedError);
  assert.deepEqual(decideWrite({ kind: 'create', record: record('a'), keyed }, undefined, undefined), { kind: 'put', record: record('a') });
});

test('answerOf -> the key\'s answer for its outcome; none for an unkeyed write or a refusal by the key itself', () => {
  const keyed = { key: 'k', fingerprint: 'f', answer: (o: WriteOutcome) => ('error' in o ? undefined : { status: o.entity ? 201 : 404, headers: {}, body: '' }) };
  assert.deepEqual(answerOf({ kind: 'create', record: record('a'), keyed }, { entity: entity(record('a')) }, 7), { fingerprint: 'f', at: 7, answer: { status: 201, headers: {}, body: '' } });
  assert.equal(answerOf({ kind: 'update', id: 'a', change: () => record('a'), keyed }, { entity: undefined }, 7)?.answer.status, 404);
  assert.equal(answerOf({ kind: 'create', record: record('a') }, { entity: entity(record('a')) }, 7), undefined);
  assert.equal(answerOf({ kind: 'create', record: record('a'), keyed }, { error: new ReplayedAnswer({ status: 201, headers: {}, body: '' }) }, 7), undefined);
  assert.equal(answerOf({ kind: 'create', record: record('a'), keyed }, { error: new KeyReusedError('x') }, 7), undefined);
});
