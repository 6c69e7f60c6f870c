import fs from 'node:fs/promises';
import path from 'node:path';
import { StoreOpenError } from '../store.js';

/** The lock file that keeps a data directory to one process (docs/storage.md §1). */
export const LOCK_FILE = '.halserve.lock';

/** Lock files this process holds: a second open in the same process is refused too. */
const held = new Set<string>();

/** A held lock; `release` removes the file if it is still ours. */
export interface DirLock {
  readonly file: string;
  release(): Promise<void>;
}

/**
 * Takes the lock of `dir` by creating `.halserve.lock` exclusively, holding this process's pid.
 * A lock whose process is gone (or that names this very pid, as after a container restart where
 * the server is pid 1 again) is stale: it is taken over, with a warning.
 */
export async function lockDirectory(
  dir: string,
  warn: (message: string) => void,
  pid: number = process.pid,
  isAlive: (pid: number) => boolean = processIsAlive,
): Promise<DirLock> {
  const key = path.resolve(dir, LOCK_FILE);
  const file = path.join(dir, LOCK_FILE);
  if (held.has(key)) throw new StoreOpenError(`data directory ${dir} is in use by this process (lock file ${file})`);
  held.add(key); // reserved before the first await, so that two opens in one process cannot race
  try {
    await acquire(dir, file, warn, pid, isAlive);
  } catch (error) {
    held.delete(key);
    throw error;
  }
  return {
    file,
    release: async () => {
      held.delete(key);
      await release(file, pid);
    },
  };
}

async function acquire(
  dir: string,
  file: string,
  warn: (message: string) => void,
  pid: number,
  isAlive: (pid: number) => boolean,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await fs.open(file, 'wx', 0o644);
      try {
        await handle.writeFile(`${pid}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) {
        throw new StoreOpenError(`cannot lock data directory ${dir} (${file}): ${(error as Error).message}`);
      }
    }
    const holder = await readPid(file);
    if (holder === undefined && attempt === 0) {
      // Perhaps created a moment ago and not yet written: look again before judging it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    if (holder !== undefined && holder !== pid && isAlive(holder)) {
      throw new StoreOpenError(`data directory ${dir} is in use by process ${holder} (lock file ${file})`);
    }
    warn(
      holder === undefined
        ? `${file}: unreadable lock file taken over`
        : `${file}: stale lock of process ${holder} (no longer running) taken over`,
    );
    await fs.rm(file, { force: true });
  }
}

/**
 * The pid of the running process that holds `dir`'s lock, or undefined when no lock file is there
 * or its process is gone (`halserve backup` asks a running server for its data).
 */
export async function lockHolder(dir: string, isAlive: (pid: number) => boolean = processIsAlive): Promise<number | undefined> {
  const pid = await readPid(path.join(dir, LOCK_FILE));
  return pid !== undefined && isAlive(pid) ? pid : undefined;
}

async function readPid(file: string): Promise<number | undefined> {
  try {
    const text = await fs.readFile(file, 'utf8');
    const pid = Number.parseInt(text.trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

async function release(file: string, pid: number): Promise<void> {
  // Only remove the lock if it is still ours (another process may have taken a stale one over).
  if ((await readPid(file)) === pid) await fs.rm(file, { force: true });
}

/** Signal 0 probes a process: ESRCH means gone; EPERM means it exists under another user. */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
