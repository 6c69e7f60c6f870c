import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { tempDir } from '../helpers/process.js';

describe('JSON-lines store observer (metrics hooks)', () => {
  test('writes -> committed(lines, sync seconds) per batch; compact() -> compacted(true)', async () => {
    const dir = await tempDir();
    const committed: [number, number][] = [];
    const compacted: boolean[] = [];
    const store = await openJsonlStore({
      file: join(dir, 'items.jsonl'),
      compaction: { auto: false },
      observer: { committed: (lines, seconds) => committed.push([lines, seconds]), compacted: (ok) => compacted.push(ok) },
    });
    await store.create({ id: 'a', createdAt: 1, updatedAt: 1 });
    await Promise.all([store.create({ id: 'b', createdAt: 1, updatedAt: 1 }), store.create({ id: 'c', createdAt: 1, updatedAt: 1 }), store.delete('a')]);
    assert.equal(committed.reduce((n, [lines]) => n + lines, 0), 4);
    assert.ok(committed.every(([lines, seconds]) => lines >= 1 && seconds > 0));
    assert.equal(await store.compact(), true);
    assert.deepEqual(compacted, [true]);
    await store.close();
  });

  test('durability none -> committed with 0 sync seconds', async () => {
    const dir = await tempDir();
    const committed: [number, number][] = [];
    const store = await openJsonlStore({ file: join(dir, 'items.jsonl'), durability: 'none', observer: { committed: (lines, seconds) => committed.push([lines, seconds]) } });
    await store.create({ id: 'a', createdAt: 1, updatedAt: 1 });
    assert.deepEqual(committed, [[1, 0]]);
    await store.close();
  });
});
