/**
 * A throwaway PostgreSQL 15 cluster for the `queries` workload: `initdb` into a temporary directory
 * as the `postgres` user, a free port, the Unix socket in that directory (no TCP), `pg_ctl start`;
 * stopped and deleted afterwards, also on failure and on SIGINT/SIGTERM (see `stopSync`).
 *
 * Debian's binaries live in /usr/lib/postgresql/15/bin; where they are missing, `findPostgres`
 * tries `apt-get install postgresql` once and otherwise says why, and the bench skips the column.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PG_BIN, startCluster as startThrowaway, type PgCluster } from '../test/helpers/pg-cluster.js';
import { SERVER_CPU } from './servers.js';

export { PG_BIN, type PgCluster };

/**
 * Settings of the cluster, the same in every run: shared buffers large enough to hold the table
 * and its indexes (halserve holds everything in memory too), JIT off (it adds tens of ms of
 * compilation to large scans in PG 15 and is usually turned off for OLTP), no parallel workers
 * (the cluster is pinned to one core, as halserve is: workers could only share it, and their CPU
 * would escape the per-backend CPU figure). initdb uses the C collation, so that text sorts by
 * code point as halserve's does. Everything else is PostgreSQL's default.
 */
export const PG_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: '1GB',
  jit: 'off',
  max_parallel_workers_per_gather: '0',
  listen_addresses: "''",
  max_connections: '40',
};

/** The PostgreSQL binaries' directory, or the reason there is none. */
export function findPostgres(log: (m: string) => void): { bin: string } | { missing: string } {
  const ok = (): boolean => existsSync(path.join(PG_BIN, 'initdb')) && existsSync(path.join(PG_BIN, 'pg_ctl'));
  if (ok()) return { bin: PG_BIN };
  if (process.env['BENCH_PG_INSTALL'] !== '0' && process.getuid?.() === 0) {
    log(`${PG_BIN} is missing: apt-get install -y postgresql`);
    try {
      execFileSync('apt-get', ['update'], { stdio: 'inherit' });
      execFileSync('apt-get', ['install', '-y', 'postgresql'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    } catch (error) {
      return { missing: `PostgreSQL binaries not found in ${PG_BIN} and apt-get install postgresql failed (${(error as Error).message.split('\n')[0]})` };
    }
    if (ok()) return { bin: PG_BIN };
  }
  return { missing: `PostgreSQL binaries not found in ${PG_BIN}` };
}

/**
 * initdb + pg_ctl start, as the postgres user, pinned to the server core when `pin`; on the Unix
 * socket only unless `tcp` (halserve's replicas connect over TCP).
 */
export async function startCluster(bin: string, pin: boolean, tcp = false): Promise<PgCluster> {
  if (process.getuid?.() !== 0) throw new Error('the PostgreSQL column needs root (to run initdb as the postgres user with runuser)');
  // The replicas workload (TCP) runs pgbench with 64 clients beside halserve's pools.
  const settings = tcp ? { ...PG_SETTINGS, listen_addresses: '127.0.0.1', max_connections: '150' } : PG_SETTINGS;
  return startThrowaway(bin, { settings, tcp, ...(pin ? { cpu: SERVER_CPU } : {}) });
}
