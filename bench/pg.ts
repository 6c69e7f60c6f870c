/**
 * A throwaway PostgreSQL 15 cluster for the `queries` workload: `initdb` into a temporary directory
 * as the `postgres` user, a free port, the Unix socket in that directory (no TCP), `pg_ctl start`;
 * stopped and deleted afterwards, also on failure and on SIGINT/SIGTERM (see `stopSync`).
 *
 * Debian's binaries live in /usr/lib/postgresql/15/bin; where they are missing, `findPostgres`
 * tries `apt-get install postgresql` once and otherwise says why, and the bench skips the column.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, existsSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, SERVER_CPU } from './servers.js';

export const PG_BIN = process.env['BENCH_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';

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

/** A running throwaway cluster. */
export interface PgCluster {
  readonly dir: string;
  readonly socketDir: string;
  readonly port: number;
  readonly version: string;
  /** Runs statements with `psql` (each its own transaction); `stdinFile` feeds a `COPY … FROM STDIN`. */
  psql(statements: readonly string[], stdinFile?: string): Promise<string>;
  /** `pg_ctl stop -m fast`, then deletes the directory. Safe to call twice. */
  stop(): Promise<void>;
  /** The same, synchronous and immediate: for signal handlers. */
  stopSync(): void;
}

function asPostgres(pin: boolean, command: string, args: readonly string[]): [string, string[]] {
  const run = ['runuser', '-u', 'postgres', '--', command, ...args];
  return pin ? ['taskset', ['-c', SERVER_CPU, ...run]] : [run[0]!, run.slice(1)];
}

function run(command: string, args: readonly string[], stdinFile?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: [stdinFile ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout?.setEncoding('utf8').on('data', (c: string) => (out += c));
    child.stderr?.setEncoding('utf8').on('data', (c: string) => (err = (err + c).slice(-4000)));
    if (stdinFile && child.stdin) {
      const input = createReadStream(stdinFile);
      input.on('error', reject);
      child.stdin.on('error', () => undefined);
      input.pipe(child.stdin);
    }
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${path.basename(command)} ${args.slice(0, 4).join(' ')} … exited with ${code}: ${err.trim()}`))));
  });
}

/** initdb + pg_ctl start, as the postgres user, pinned to the server core when `pin`. */
export async function startCluster(bin: string, pin: boolean): Promise<PgCluster> {
  if (process.getuid?.() !== 0) throw new Error('the PostgreSQL column needs root (to run initdb as the postgres user with runuser)');
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-bench-pg-'));
  await fs.chown(dir, uid, gid);
  const data = path.join(dir, 'data');
  const port = await freePort();
  let started = false;
  let stopped = false;
  const pgCtl = path.join(bin, 'pg_ctl');
  const stopSync = (): void => {
    if (stopped) return;
    stopped = true;
    if (started) {
      try {
        execFileSync('runuser', ['-u', 'postgres', '--', pgCtl, '-D', data, '-m', 'immediate', '-w', 'stop'], { stdio: 'ignore', timeout: 30_000 });
      } catch {
        // Already gone.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [c1, a1] = asPostgres(false, path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--locale=C', '--encoding=UTF8', '--no-sync']);
    await run(c1, a1);
    const options = ['-k', dir, '-p', String(port), ...Object.entries(PG_SETTINGS).flatMap(([k, v]) => ['-c', `${k}=${v}`])].join(' ');
    const [c2, a2] = asPostgres(pin, pgCtl, ['-D', data, '-l', path.join(dir, 'server.log'), '-w', '-t', '120', '-o', options, 'start']);
    started = true;
    await run(c2, a2);
  } catch (error) {
    stopSync();
    throw error;
  }
  const psqlBin = path.join(bin, 'psql');
  const psql = (statements: readonly string[], stdinFile?: string): Promise<string> =>
    run(psqlBin, ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', dir, '-p', String(port), '-U', 'postgres', '-d', 'postgres', ...statements.flatMap((s) => ['-c', s])], stdinFile);
  const version = (await psql(['SHOW server_version'])).trim();
  return {
    dir,
    socketDir: dir,
    port,
    version,
    psql,
    stopSync,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        const [c, a] = asPostgres(false, pgCtl, ['-D', data, '-m', 'fast', '-w', 'stop']);
        await run(c, a);
      } catch {
        stopped = false;
        stopSync();
        return;
      }
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
