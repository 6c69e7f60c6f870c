/**
 * Shared set-up of the PostgreSQL tests: one throwaway cluster per test file (started on first use,
 * stopped after the file), a fresh database per store, and the stores opened on it.
 */
import { after } from 'node:test';
import { openPostgres, type PostgresOptions, type PostgresStores } from '../../src/store/pg/open.js';
import { findPostgres, startCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { eventually } from '../helpers/process.js';
import { StoreConflictError, StoreUnavailableError } from '../../src/store/store.js';

const found = findPostgres();
/** Why the PostgreSQL tests cannot run here, or false: `test(name, { skip: pgMissing }, …)`. */
export const pgMissing: string | false = 'missing' in found ? found.missing : false;

let cluster: Promise<PgCluster> | undefined;
let databases = 0;
// Registered when the test file imports this module: a hook of the file, not of the test that starts the cluster.
after(async () => (await cluster)?.stop());
process.once('exit', () => void cluster?.then((c) => c.stopSync(), () => {}));

/** The file's cluster, started on first use and stopped after the file. */
export function pgCluster(): Promise<PgCluster> {
  if (!('bin' in found)) throw new Error(found.missing);
  if (!cluster) {
    cluster = startCluster(found.bin);
  }
  return cluster;
}

/** A new, empty database on the file's cluster; its URL. */
export async function freshDatabase(): Promise<string> {
  const c = await pgCluster();
  const name = `t${process.pid}_${++databases}`;
  await c.createDatabase(name);
  return c.url(name);
}

/** Warnings a test's stores printed. */
export interface Opened extends PostgresStores {
  readonly warnings: string[];
}

/** Opens the stores of `url` (closed after the test that opens them); warnings are kept, not printed. */
export async function openStores(url: string, resources: readonly string[] = ['items'], extra: Partial<PostgresOptions> = {}): Promise<Opened> {
  const warnings: string[] = [];
  const stores = await openPostgres({ url, resources, warn: (m) => warnings.push(m), pollMs: 200, ...extra });
  after(() => stores.close());
  return Object.assign(stores, { warnings });
}

/** Waits until `condition` holds (polling), or fails after `ms` with `what`. */
export const until = eventually;

/**
 * Tries a write until it is in, for tests that give the store a short deadline on purpose: on a
 * loaded machine a try may pass it (StoreUnavailableError) and is tried again; a try cut off after
 * its commit makes the next one a conflict, which means it is in. Any other error fails the test.
 */
export function untilWritten(write: () => Promise<unknown>, what: string): Promise<void> {
  return until(
    () =>
      write().then(
        () => true,
        (error: unknown) => {
          if (error instanceof StoreConflictError) return true;
          if (error instanceof StoreUnavailableError) return false;
          throw error;
        },
      ),
    what,
  );
}
