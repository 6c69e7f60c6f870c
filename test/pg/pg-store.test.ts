import { describe } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { storeSuite } from '../store/store-suite.js';
import { freshDatabase, openStores, pgMissing, type Opened } from './helpers.js';

if (pgMissing) {
  describe('PostgreSQL store: Store behaviour', { skip: pgMissing }, () => {});
} else {
  const owners = new Map<Store, { opened: Opened; url: string }>();
  const open = async (url: string): Promise<Store> => {
    const opened = await openStores(url);
    const store = opened.stores.get('items')!;
    owners.set(store, { opened, url });
    return store;
  };
  storeSuite('PostgreSQL store', {
    open: async () => open(await freshDatabase()),
    reopen: async (store) => {
      const { opened, url } = owners.get(store)!;
      await opened.close();
      return open(url);
    },
    // Changes are reported as the change feed reads them back, this process's own writes too.
    caughtUp: async (store) => owners.get(store)!.opened.sync(),
  });
}
