import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RowEntity } from '../../src/store/pg/pg-entity.js';
import { ReaderClock, Replica, type RowState } from '../../src/store/pg/replica.js';

/*
 * The rules by which rows from the change feed and from this process's writes (duplicated, late,
 * out of order) become the index: pure, no database.
 */

const live = (id: string, pos: number, rev: number, fields: Record<string, unknown> = {}): RowEntity =>
  new RowEntity(id, JSON.stringify({ id, createdAt: 1, updatedAt: 1, ...fields }), pos, rev);
const gone = (id: string, pos: number, rev: number): RowState => ({ id, pos, rev, deleted: true });
const order = (replica: Replica): string[] => [...replica.index.values()].map((e) => `${e.id}@${e.pos}`);

describe('Replica: rows into the index', () => {
  test('creates arriving out of pos order, one by one and in batches -> the index in pos order', () => {
    const replica = new Replica(new ReaderClock());
    replica.apply([live('c', 30, 1)]);
    replica.apply([live('e', 50, 1), live('a', 10, 1)]);
    replica.apply([live('d', 40, 1)]);
    replica.apply([live('b', 20, 1), live('f', 60, 1)]);
    assert.deepEqual(order(replica), ['a@10', 'b@20', 'c@30', 'd@40', 'e@50', 'f@60']);
  });

  test('a row again, or an older one -> skipped; a newer rev -> replaces in place', () => {
    const replica = new Replica(new ReaderClock());
    replica.apply([live('a', 1, 1), live('b', 2, 1)]);
    const newer = live('a', 1, 3, { n: 3 });
    replica.apply([newer]);
    replica.apply([live('a', 1, 2, { n: 2 })]);
    replica.apply([live('a', 1, 3, { n: 'same rev' })]);
    assert.equal(replica.index.get('a'), newer);
    assert.deepEqual(order(replica), ['a@1', 'b@2']);
    assert.equal(replica.revOf('a'), 3);
    assert.equal(replica.revOf('nope'), 0);
  });

  test('a re-create whose delete was never seen (new pos) -> moved to its new place', () => {
    const replica = new Replica(new ReaderClock());
    replica.apply([live('a', 1, 1), live('b', 2, 1), live('c', 3, 1)]);
    replica.apply([live('a', 9, 3)]);
    assert.deepEqual(order(replica), ['b@2', 'c@3', 'a@9']);
  });

  test('a delete, then the live state read by a reader that started before it -> stays deleted', () => {
    const readers = new ReaderClock();
    const replica = new Replica(readers);
    replica.apply([live('a', 1, 1), live('b', 2, 1)]);
    const feed = readers.begin();
    replica.apply([gone('a', 1, 2)]);
    assert.equal(replica.index.get('a'), undefined);
    replica.apply([live('a', 1, 1)]);
    assert.equal(replica.index.get('a'), undefined, 'the stale live row is skipped');
    assert.equal(replica.revOf('a'), 2);
    readers.end(feed);
    // No reader older than the delete is left: it is forgotten; a later state (any rev) is taken.
    replica.apply([live('b', 2, 2)]);
    assert.equal(replica.revOf('a'), 0);
    replica.apply([live('a', 7, 1)]);
    assert.deepEqual(order(replica), ['b@2', 'a@7']);
  });

  test("this process's own versions reported by the feed after its delete was applied and forgotten -> reported, not applied", () => {
    const readers = new ReaderClock();
    const replica = new Replica(readers, 'items');
    const heard: string[] = [];
    replica.followers.add((change) => heard.push(`${change.type} ${change.id}`));
    // The writer applies each batch when it commits: a create, then (next batch) its delete.
    const created = live('a', 1, 1);
    replica.apply([created, live('b', 2, 1)]);
    replica.apply([gone('a', 1, 2)]);
    // A later write batch applies: no reader is under way, so the delete is forgotten.
    replica.apply([live('b', 2, 2)]);
    assert.equal(replica.revOf('a'), 0);
    // The feed now reports the versions this process wrote, in cursor order.
    replica.fromFeed(
      [
        { state: created, tx: '10', at: 1, type: 'created' },
        { state: gone('a', 1, 2), tx: '11', at: 1, type: 'deleted' },
      ],
      true,
    );
    assert.equal(replica.index.get('a'), undefined, 'the create reported late does not bring the entity back');
    assert.deepEqual(order(replica), ['b@2']);
    assert.deepEqual(heard, ['created a', 'deleted a']);
  });

  test('types of rows another process wrote: rev 1 created; a later rev never held (its create coalesced away) updated; a new pos, or a row after a delete seen, created', () => {
    const readers = new ReaderClock();
    const replica = new Replica(readers, 'items');
    const heard: string[] = [];
    replica.followers.add((change) => heard.push(`${change.type} ${change.id}`));
    const feed = (...states: RowState[]): void => replica.fromFeed(states.map((state, i) => ({ state, tx: String(20 + i), at: 1 })), true);
    feed(live('a', 1, 1));
    feed(live('b', 2, 2, { put: true }));
    feed(live('a', 1, 2, { patched: true }));
    feed(live('a', 5, 4));
    const reader = readers.begin();
    feed(gone('b', 2, 3));
    feed(live('b', 6, 4));
    readers.end(reader);
    assert.deepEqual(heard, ['created a', 'updated b', 'updated a', 'created a', 'deleted b', 'created b']);
  });

  test('a tombstone for an id never held -> nothing removed, the rev remembered while readers run', () => {
    const readers = new ReaderClock();
    const replica = new Replica(readers);
    const reader = readers.begin();
    replica.apply([gone('x', 5, 2)]);
    assert.equal(replica.index.size, 0);
    replica.apply([live('x', 5, 1)]);
    assert.equal(replica.index.size, 0);
    replica.apply([live('x', 8, 3)]);
    assert.deepEqual(order(replica), ['x@8']);
    readers.end(reader);
    assert.equal(readers.oldest, Infinity);
  });
});
