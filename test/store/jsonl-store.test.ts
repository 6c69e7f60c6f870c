import assert from 'node:assert/strict';
import { test } from 'node:test';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openJsonlStore, type JsonlStore } from '../../src/store/log/jsonl-store.js';
import { hashId } from '../../src/store/index/entity-index.js';
import type { Store } from '../../src/store/store.js';
import { storeSuite } from './store-suite.js';
import { tempDir } from '../helpers/process.js';

const dirs: string[] = [];
const files = new WeakMap<Store, string>();
const openAt = async (file: string): Promise<JsonlStore> => {
  const store = await openJsonlStore({ file });
  files.set(store, file);
  return store;
};

storeSuite('JSON-lines store', {
  async open() {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-jsonl-'));
    dirs.push(dir);
    return openAt(path.join(dir, 'items.jsonl'));
  },
  async reopen(store) {
    await store.close();
    return openAt(files.get(store)!);
  },
  async cleanup() {
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
  },
});

test('entities loaded from a file are found by exactly their ids: not by a prefix, a longer id, one byte off, or a non-ASCII look-alike', async () => {
  // Its own directory, removed by `tempDir`'s hook: the suite's cleanup above has run by now.
  const dir = await tempDir('halserve-jsonl-ids-');
  const file = path.join(dir, 'items.jsonl');
  // Plain ids are kept as bytes of the loaded block; the escaped and non-ASCII ones as strings.
  // Two ids of the same length and hash (found by search): a lookup of the one not in the file
  // reaches the other's entry, and only the comparison of its bytes turns it away.
  const seen = new Map<number, string>();
  let twin: [string, string] | undefined;
  for (let i = 1_000_000; twin === undefined; i++) {
    const id = `c${i}`;
    const other = seen.get(hashId(id));
    if (other === undefined) seen.set(hashId(id), id);
    else twin = [other, id];
  }
  const ids = ['abc', 'abd', 'ab', 'abcd', 'Zé', 'q\u00e9', 'x"y', twin[0], ...Array.from({ length: 500 }, (_, i) => `k${i.toString(36)}`)];
  await fs.writeFile(file, ids.map((id, n) => `${JSON.stringify({ id, n })}\n`).join(''));
  const store = await openJsonlStore({ file });
  try {
    ids.forEach((id, n) => assert.deepEqual(store.get(id)?.record, { id, n }, id));
    for (const absent of ['abe', 'a', 'abcde', 'Abc', 'Ze', 'q\u00c3\u00a9', 'xy', 'k', 'k0 ', ' k0', 'kdw', twin[1]]) assert.equal(store.get(absent), undefined, absent);
  } finally {
    await store.close();
  }
});
