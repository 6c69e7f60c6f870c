/**
 * A throwaway PostgreSQL 15 cluster for tests and benchmarks: `initdb` into a temporary directory as
 * the `postgres` user (initdb and pg_ctl refuse root), a free port, the Unix socket in that
 * directory (and TCP on 127.0.0.1 unless `tcp: false`), `pg_ctl start`. `stop()` deletes it;
 * `pause()` / `resume()` stop and start the same cluster (a database outage in a test).
 *
 * Debian's binaries live in /usr/lib/postgresql/15/bin (`HALSERVE_PG_BIN` overrides); `.ci/run`
 * installs the `postgresql` package where they are missing, and `findPostgres` says why it cannot.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, existsSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const PG_BIN = process.env['HALSERVE_PG_BIN'] ?? process.env['BENCH_PG_BIN'] ?? '/usr/lib/postgresql/15/bin';

/** The PostgreSQL binaries' directory, or the reason there is none (tests then skip with it). */
export function findPostgres(): { bin: string } | { missing: string } {
  if (!existsSync(path.join(PG_BIN, 'initdb')) || !existsSync(path.join(PG_BIN, 'pg_ctl'))) {
    return { missing: `PostgreSQL binaries not found in ${PG_BIN} (apt-get install postgresql)` };
  }
  if (process.getuid?.() !== 0) return { missing: 'a throwaway PostgreSQL cluster needs root (to run initdb as the postgres user with runuser)' };
  return { bin: PG_BIN };
}

export interface ClusterOptions {
  /** `-c name=value` settings for the server. */
  readonly settings?: Readonly<Record<string, string>>;
  /** Runs the server under `taskset -c <cpu>` (benchmarks). */
  readonly cpu?: string;
  /** Listen on 127.0.0.1 too (default true): containers and some drivers need TCP. */
  readonly tcp?: boolean;
}

/** A running throwaway cluster. */
export interface PgCluster {
  readonly dir: string;
  readonly socketDir: string;
  readonly port: number;
  readonly version: string;
  /** `postgres://postgres@127.0.0.1:<port>/<database>` (trust authentication). */
  url(database?: string): string;
  /** Runs statements with `psql` (each its own transaction); `stdinFile` feeds a `COPY … FROM STDIN`. */
  psql(statements: readonly string[], stdinFile?: string, database?: string): Promise<string>;
  /** `CREATE DATABASE name`: one per test file keeps them apart on one cluster. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (`pg_ctl stop -m fast`), keeping its data: an outage. */
  pause(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port. */
  resume(): Promise<void>;
  /** Stops the server and deletes the directory. Safe to call twice. */
  stop(): Promise<void>;
  /** The same, synchronous and immediate: for signal handlers. */
  stopSync(): void;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function asPostgres(cpu: string | undefined, command: string, args: readonly string[]): [string, string[]] {
  const run = ['runuser', '-u', 'postgres', '--', command, ...args];
  return cpu === undefined ? [run[0]!, run.slice(1)] : ['taskset', ['-c', cpu, ...run]];
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

/** initdb + pg_ctl start, as the postgres user. */
export async function startCluster(bin: string, options: ClusterOptions = {}): Promise<PgCluster> {
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-pg-'));
  await fs.chown(dir, uid, gid);
  const data = path.join(dir, 'data');
  const port = await freePort();
  let running = false;
  let removed = false;
  const pgCtl = path.join(bin, 'pg_ctl');
  const settings = { listen_addresses: options.tcp === false ? "''" : '127.0.0.1', ...options.settings };
  const serverOptions = ['-k', dir, '-p', String(port), ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])].join(' ');
  const start = async (): Promise<void> => {
    const [c, a] = asPostgres(options.cpu, pgCtl, ['-D', data, '-l', path.join(dir, 'server.log'), '-w', '-t', '120', '-o', serverOptions, 'start']);
    running = true;
    await run(c, a);
  };
  const stopSync = (): void => {
    if (removed) return;
    removed = true;
    if (running) {
      try {
        execFileSync('runuser', ['-u', 'postgres', '--', pgCtl, '-D', data, '-m', 'immediate', '-w', 'stop'], { stdio: 'ignore', timeout: 30_000 });
      } catch {
        // Already gone.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [c, a] = asPostgres(undefined, path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--locale=C', '--encoding=UTF8', '--no-sync']);
    await run(c, a);
    await start();
  } catch (error) {
    stopSync();
    throw error;
  }
  const psqlBin = path.join(bin, 'psql');
  const psql = (statements: readonly string[], stdinFile?: string, database = 'postgres'): Promise<string> =>
    run(psqlBin, ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', dir, '-p', String(port), '-U', 'postgres', '-d', database, ...statements.flatMap((s) => ['-c', s])], stdinFile);
  const version = (await psql(['SHOW server_version'])).trim();
  const pause = async (mode: 'fast' | 'immediate' = 'fast'): Promise<void> => {
    const [c, a] = asPostgres(undefined, pgCtl, ['-D', data, '-m', mode, '-w', 'stop']);
    await run(c, a);
    running = false;
  };
  return {
    dir,
    socketDir: dir,
    port,
    version,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    psql,
    async createDatabase(name) {
      await psql([`CREATE DATABASE "${name.replaceAll('"', '""')}"`]);
      return name;
    },
    pause,
    resume: start,
    stopSync,
    async stop() {
      if (removed) return;
      try {
        if (running) await pause('fast');
      } catch {
        stopSync();
        return;
      }
      removed = true;
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}
