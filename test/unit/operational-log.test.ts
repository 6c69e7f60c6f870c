import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createOperationalLog, failureCause } from '../../src/http/operational-log.js';
import { StoreWriteError } from '../../src/store/store.js';

describe('createOperationalLog', () => {
  test('136 failures in 10 s -> one line, then one line saying how many were held back', () => {
    const lines: string[] = [];
    let now = 0;
    const log = createOperationalLog((m) => lines.push(m), 10_000, () => now);
    for (let i = 0; i < 136; i++) {
      log('items ENOSPC', 'write to items failed: ENOSPC');
      now += 50;
    }
    assert.deepEqual(lines, ['write to items failed: ENOSPC']);
    now += 10_000;
    log('items ENOSPC', 'write to items failed: ENOSPC');
    assert.deepEqual(lines, ['write to items failed: ENOSPC', 'write to items failed: ENOSPC (135 more like it since the last report)']);
  });

  test('kinds are limited separately', () => {
    const lines: string[] = [];
    const log = createOperationalLog((m) => lines.push(m), 10_000, () => 0);
    log('a', 'A');
    log('b', 'B');
    log('a', 'A');
    assert.deepEqual(lines, ['A', 'B']);
  });
});

describe('failureCause', () => {
  for (const [error, cause] of [
    [Object.assign(new Error('x'), { code: 'EIO' }), 'EIO'],
    [new Error('/d/items.jsonl: write failed: ENOSPC: no space left on device, write'), 'ENOSPC'],
    [new Error('something else'), 'unknown'],
    ['EDQUOT quota', 'EDQUOT'],
    // A failing disk's write (three letters), as the store words it, and as the store's error carries it.
    [new Error('/d/items.jsonl: write failed: EIO: i/o error, write'), 'EIO'],
    [new StoreWriteError('items: write failed: something', 'EIO'), 'EIO'],
  ] as const) {
    test(`${String(error)} -> ${cause}`, () => assert.equal(failureCause(error), cause));
  }
});
