import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openJsonlStore, type JsonlStore } from '../../src/store/log/jsonl-store.js';
import type { Store } from '../../src/store/store.js';
import { storeSuite } from './store-suite.js';

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
