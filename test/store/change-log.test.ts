import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CursorExpiredError, CursorMalformedError } from '../../src/store/changes/change-feed.js';
import { ascendingOrder, ChangeOrder } from '../../src/store/changes/change-order.js';
import { findStamp, readStamp, readStampSeq, stampedLine, tombstoneLine } from '../../src/store/changes/change-stamp.js';
import { HeldDelete, LocalChangeLog, parseCursor, type HeldChange } from '../../src/store/changes/local-feed.js';
import type { StoreChange } from '../../src/store/store.js';
import { manualClock } from './stamps.js';

const held = (id: string, seq: number): HeldChange => ({ id, seq, type: 'created', at: 1, entity: undefined });

describe('ChangeOrder', () => {
  test('adds, removals, re-packs -> after(s) gives the live changes above s, in order', () => {
    const order = new ChangeOrder<HeldChange>();
    for (let seq = 1; seq <= 1000; seq++) order.add(held(`e${seq}`, seq * 2));
    for (let seq = 1; seq <= 1000; seq++) if (seq % 3 !== 0) order.remove(seq * 2);
    assert.equal(order.size, 333);
    assert.deepEqual([...order.after(1990)].map((h) => h.seq), [1992, 1998]);
    assert.deepEqual([...order.after(0)].slice(0, 3).map((h) => h.seq), [6, 12, 18]);
    assert.equal(order.get(6)?.id, 'e3');
    assert.equal(order.get(8), undefined);
    assert.equal(order.last, 1998);
  });

  test('removals while iterating (a re-pack mid-way) -> every later change still given once', () => {
    const order = new ChangeOrder<HeldChange>();
    for (let seq = 1; seq <= 200; seq++) order.add(held(`e${seq}`, seq));
    const seen: number[] = [];
    for (const h of order.after(0)) {
      seen.push(h.seq);
      // Removes changes already passed: enough holes to re-pack.
      if (h.seq === 150) for (let s = 1; s < 150; s++) order.remove(s);
    }
    assert.deepEqual(seen, Array.from({ length: 200 }, (_, i) => i + 1));
  });

  test('a sequence number not above the last -> RangeError', () => {
    const order = new ChangeOrder<HeldChange>();
    order.add(held('a', 5));
    assert.throws(() => order.add(held('b', 5)), RangeError);
  });
});

describe('ascendingOrder', () => {
  test('numbers each above the one before -> undefined (nothing to sort); none or one -> undefined', () => {
    assert.equal(ascendingOrder([1, 2, 5, 9]), undefined);
    assert.equal(ascendingOrder([]), undefined);
    assert.equal(ascendingOrder([7]), undefined);
  });

  test('out of order, or a number twice -> the positions in ascending order, equal numbers in the order of their positions', () => {
    assert.deepEqual([...ascendingOrder([5, 3, 5, 1, 3])!], [3, 1, 4, 0, 2]);
    assert.deepEqual([...ascendingOrder([1, 1])!], [0, 1]);
    assert.deepEqual([...ascendingOrder([2 ** 40, 2 ** 33, 2 ** 52])!], [1, 0, 2]);
  });
});

describe('change stamps', () => {
  test('stamped line -> found from its end, the entity JSON is the line without it', () => {
    const json = '{"id":"a","text":"x,\\"_change\\":\\"1.c.2\\"","n":1}';
    const line = stampedLine(json, { seq: 42, type: 'updated', at: 1_700_000_000 });
    const bytes = Buffer.from(line);
    const at = findStamp(bytes, 0, bytes.length);
    assert.ok(at > 0);
    assert.equal(`${bytes.toString('utf8', 0, at)}}`, json);
    assert.deepEqual(readStamp(bytes, at, bytes.length), { seq: 42, type: 'updated', at: 1_700_000_000 });
  });

  test('lines without a stamp (a string value that looks like one, a nested member) -> none found', () => {
    for (const line of ['{"id":"a","v":"1.c.2"}', '{"id":"a","o":{"x":1,"_change":"1.c.2"}}', '{"id":"a","s":"x\\",\\"_change\\":\\"1.c.2"}', '{"id":"a"}']) {
      const bytes = Buffer.from(line);
      assert.equal(findStamp(bytes, 0, bytes.length), -1, line);
    }
  });

  /** A line whose stamp's value is `value`, its bytes, and where its stamp begins. */
  const stampOf = (value: string): { bytes: Buffer; at: number } => {
    const bytes = Buffer.from(`{"id":"a","_change":"${value}"}`);
    const at = findStamp(bytes, 0, bytes.length);
    assert.ok(at > 0, value);
    return { bytes, at };
  };

  test('tombstone line -> a delete with its stamp; malformed stamp values -> undefined', () => {
    const line = tombstoneLine('x"y', { seq: 7, type: 'deleted', at: 9 });
    assert.equal(line, '{"id":"x\\"y","_deleted":true,"_change":"7.d.9"}');
    const bytes = Buffer.from(line);
    assert.deepEqual(readStamp(bytes, findStamp(bytes, 0, bytes.length), bytes.length), { seq: 7, type: 'deleted', at: 9 });
    const malformed = ['0.c.1', '01.c.1', '1.x.1', '1.c.-1', '1.c', '1.c.', '.c.1', '1..1', '1.cc.1', '1.c.01', '1.c.1.', '1.c.1x', 'a.c.1', '1 .c.1', '99999999999999999.c.1', '1.c.99999999999999999', '9007199254740992.c.1', '1.c.9007199254740992', '9999999999999999.u.1'];
    for (const value of malformed) {
      const { bytes, at } = stampOf(value);
      assert.equal(readStamp(bytes, at, bytes.length), undefined, value);
      assert.equal(readStampSeq(bytes, at, bytes.length), 0, value);
    }
  });

  test('stamp values at the bounds -> read exactly, the number alone the same as the stamp', () => {
    const cases: [string, { seq: number; type: string; at: number }][] = [
      ['1.c.0', { seq: 1, type: 'created', at: 0 }],
      ['10.u.1700000000', { seq: 10, type: 'updated', at: 1_700_000_000 }],
      ['9007199254740991.d.9007199254740991', { seq: Number.MAX_SAFE_INTEGER, type: 'deleted', at: Number.MAX_SAFE_INTEGER }],
      ['1234567890123456.c.7', { seq: 1_234_567_890_123_456, type: 'created', at: 7 }],
    ];
    for (const [value, stamp] of cases) {
      const { bytes, at } = stampOf(value);
      assert.deepEqual(readStamp(bytes, at, bytes.length), stamp, value);
      assert.equal(readStampSeq(bytes, at, bytes.length), stamp.seq, value);
    }
  });
});

describe('LocalChangeLog', () => {
  const collect = (log: LocalChangeLog): StoreChange[] => {
    const told: StoreChange[] = [];
    log.follow((change) => told.push(change));
    return told;
  };

  test('two resources synced out of order -> published in sequence order, a failed batch skipped', () => {
    const log = new LocalChangeLog();
    const a = log.resource('a');
    const b = log.resource('b');
    const told = collect(log);
    const first = log.reserve(2); // a's batch: 1, 2
    const failed = log.reserve(1); // b's batch: 3, fails
    const third = log.reserve(1); // b's next batch: 4
    log.settle(third, [{ resource: b, held: held('b1', 4), previous: 0 }]);
    assert.equal(told.length, 0, 'held back behind the batch in flight');
    assert.equal(log.latest, '0');
    assert.deepEqual(log.read(undefined, 10).changes, []);
    log.settle(failed, null);
    log.settle(first, [
      { resource: a, held: held('a1', first), previous: 0 },
      { resource: a, held: held('a2', first + 1), previous: 0 },
    ]);
    assert.deepEqual(told.map((c) => `${c.resource}/${c.id}@${c.cursor}`), ['a/a1@1', 'a/a2@2', 'b/b1@4']);
    assert.equal(log.latest, '4');
    assert.deepEqual(log.read('1', 10).changes.map((c) => c.cursor), ['2', '4']);
    assert.deepEqual(log.read('0', 10, new Set(['b'])).changes.map((c) => c.id), ['b1']);
  });

  test('through(s) -> resolves once every reservation up to s is settled', async () => {
    const log = new LocalChangeLog();
    const r = log.resource('r');
    const first = log.reserve(1);
    const second = log.reserve(1);
    let done = false;
    const waited = log.through(second).then(() => {
      done = true;
    });
    log.settle(second, [{ resource: r, held: held('y', second), previous: 0 }]);
    await Promise.resolve();
    assert.equal(done, false);
    log.settle(first, [{ resource: r, held: held('x', first), previous: 0 }]);
    await waited;
    assert.equal(done, true);
  });

  test('an entity written again -> only its latest change is read; its earlier one is coalesced away', () => {
    const log = new LocalChangeLog();
    const r = log.resource('r');
    for (const [id, previous] of [['x', 0], ['y', 0], ['x', 1]] as const) {
      const seq = log.reserve(1);
      log.settle(seq, [{ resource: r, held: held(id, seq), previous }]);
    }
    assert.deepEqual(log.read(undefined, 10).changes.map((c) => `${c.id}@${c.cursor}`), ['y@2', 'x@3']);
    assert.deepEqual(log.read('2', 10).changes.map((c) => `${c.id}@${c.cursor}`), ['x@3']);
  });

  test('read with limit -> pages whose cursor is the last change; an empty page keeps since, or the latest without it', () => {
    const log = new LocalChangeLog();
    const r = log.resource('r');
    for (let i = 0; i < 5; i++) {
      const seq = log.reserve(1);
      log.settle(seq, [{ resource: r, held: held(`e${i}`, seq), previous: 0 }]);
    }
    const page = log.read(undefined, 2);
    assert.deepEqual([page.changes.length, page.cursor], [2, '2']);
    assert.equal(log.read('5', 2).cursor, '5');
    assert.deepEqual(log.read('5', 2).changes, []);
    assert.equal(new LocalChangeLog().read(undefined, 2).cursor, '0');
  });

  test('malformed and future cursors -> CursorMalformedError; older than a forgotten delete -> CursorExpiredError', () => {
    const clock = manualClock();
    const log = new LocalChangeLog({ now: clock.now, retentionMs: 3600_000 });
    const r = log.resource('r');
    for (const id of ['a', 'b', 'c']) {
      const seq = log.reserve(1);
      log.settle(seq, [{ resource: r, held: id === 'b' ? new HeldDelete(id, seq, log.nowSeconds()) : held(id, seq), previous: 0 }]);
    }
    for (const bad of ['', 'now', '-1', '01', '1.5', 'abc', ' 1', '4', '99999999999999999999']) assert.throws(() => log.check(bad), CursorMalformedError, bad);
    assert.deepEqual(log.expired('r'), [], 'within retention');
    clock.advance(3601_000);
    const expired = log.expired('r');
    assert.deepEqual(expired.map((d) => d.id), ['b']);
    log.forgot(2);
    r.forget(expired);
    assert.throws(() => log.read('1', 10), CursorExpiredError);
    assert.deepEqual(log.read('2', 10).changes.map((c) => c.id), ['c']);
    assert.deepEqual(log.read(undefined, 10).changes.map((c) => c.id), ['a', 'c']);
  });

  test('a listing from the start past a forgotten delete -> every cursor it hands out resumes (it names that delete), until a newer delete is forgotten', () => {
    const log = new LocalChangeLog();
    const r = log.resource('r');
    const write = (change: HeldChange, previous = 0): void => log.settle(log.reserve(1), [{ resource: r, held: change, previous }]);
    for (let i = 1; i <= 5; i++) write(held(`e${i}`, i));
    write(held('x', 6));
    const gone = new HeldDelete('x', 7, 1);
    write(gone, 6);
    write(held('e8', 8));
    log.forgot(7);
    r.forget([gone]);
    // Five live entities older than the forgotten delete, read two at a time from the start.
    const ids: string[] = [];
    const cursors: string[] = [];
    for (let since: string | undefined, page; (page = log.read(since, 2)).changes.length > 0; since = page.cursor) {
      ids.push(...page.changes.map((c) => c.id));
      cursors.push(...page.changes.map((c) => c.cursor));
    }
    assert.deepEqual(ids, ['e1', 'e2', 'e3', 'e4', 'e5', 'e8']);
    assert.deepEqual(cursors, ['1_7', '2_7', '3_7', '4_7', '5_7', '8']);
    assert.deepEqual(log.read('4_7', 10).changes.map((c) => c.id), ['e5', 'e8']);
    assert.equal(log.compare('4_7', '5'), -1);
    // A bare number below the delete may be a client's that saw x: it cannot resume.
    assert.throws(() => log.check('4'), CursorExpiredError);
    // No cursor names a horizon at or below its own change, or one not forgotten.
    for (const forged of ['4_4', '4_3', '4_8', '4_07', '4_', '_7']) assert.throws(() => log.check(forged), CursorMalformedError, forged);
    // A newer delete forgotten: the listing's cursors no longer resume (its client may have seen y).
    write(held('y', 9));
    const alsoGone = new HeldDelete('y', 10, 1);
    write(alsoGone, 9);
    log.forgot(10);
    r.forget([alsoGone]);
    assert.throws(() => log.check('4_7'), CursorExpiredError);
    assert.throws(() => log.check('8'), CursorExpiredError);
    assert.deepEqual(log.read(undefined, 10).changes.map((c) => c.cursor), ['1_10', '2_10', '3_10', '4_10', '5_10', '8_10']);
  });

  test('cursor strings -> decimal sequence numbers only', () => {
    assert.equal(parseCursor('0'), 0);
    assert.equal(parseCursor('123'), 123);
    assert.equal(parseCursor('9007199254740993'), undefined);
    assert.equal(parseCursor('now'), undefined);
  });
});
