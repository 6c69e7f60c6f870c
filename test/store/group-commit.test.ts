import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { gatherWrites, MAX_GATHER_TURNS } from '../../src/store/write-queue.js';
import { syncSeam, tempDir } from './helpers.js';

const record = (id: string) => ({ id, createdAt: 1, updatedAt: 1 });

/** A queue whose length grows by `adds[n]` at the n-th turn (then by nothing), counting the turns taken. */
function growing(adds: readonly number[]): { queue: { length: number }; turn: () => Promise<void>; turns: () => number } {
  const queue = { length: 1 };
  let turns = 0;
  return {
    queue,
    turn: async () => {
      queue.length += adds[turns] ?? 0;
      turns++;
    },
    turns: () => turns,
  };
}

describe('gatherWrites: a batch waits for the writes the next turns of the event loop bring', () => {
  test('a turn that adds no write -> taken after that one turn', async () => {
    const q = growing([]);
    await gatherWrites(q.queue, q.turn);
    assert.equal(q.turns(), 1);
    assert.equal(q.queue.length, 1);
  });

  test('writes added on two turns, then none -> taken after the third turn, with all of them', async () => {
    const q = growing([2, 5]);
    await gatherWrites(q.queue, q.turn);
    assert.equal(q.turns(), 3);
    assert.equal(q.queue.length, 8);
  });

  test(`writes added on every turn -> taken after ${MAX_GATHER_TURNS} turns all the same`, async () => {
    const q = growing(Array.from({ length: 100 }, () => 1));
    await gatherWrites(q.queue, q.turn);
    assert.equal(q.turns(), MAX_GATHER_TURNS);
    assert.equal(q.queue.length, 1 + MAX_GATHER_TURNS);
  });
});

describe('group commit over turns of the event loop', () => {
  for (const synced of [true, false]) {
    test(`writes arriving on the next two turns -> one append and one sync with the first${synced ? '' : ', without synced writes'}`, async () => {
      const dir = await tempDir();
      const file = path.join(dir, 'turns.jsonl');
      const { fs: seamFs, events } = syncSeam((name) => name === file);
      const { syncedWrites, ...unsynced } = seamFs;
      const store = await openJsonlStore({ file, fs: synced ? { ...unsynced, ...(syncedWrites === undefined ? {} : { syncedWrites }) } : unsynced });
      // Registered before the first write's gathering turn, so each runs before that turn ends: as
      // requests the poll phase has just read would.
      const later: Promise<unknown>[] = [];
      setImmediate(() => {
        later.push(store.create(record('b')));
        setImmediate(() => later.push(store.create(record('c'))));
      });
      const first = store.create(record('a'));
      await first;
      await Promise.all(later);
      assert.deepEqual(
        events.filter((e) => e.endsWith('turns.jsonl')),
        ['write turns.jsonl', 'sync turns.jsonl'],
        'the three creates went out in one append',
      );
      assert.deepEqual([...store.values()].map((e) => e.id).sort(), ['a', 'b', 'c']);
      await store.close();
    });
  }
});
