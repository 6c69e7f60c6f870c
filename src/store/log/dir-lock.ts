import { randomBytes } from 'node:crypto';
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

/** Creates `file` exclusively holding `pid`, synced. */
async function writePid(file: string, pid: number): Promise<void> {
  const handle = await fs.open(file, 'wx', 0o644);
  try {
    await handle.writeFile(`${pid}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes a file of this process's own holding `pid`, synced, hands it to `place`, and removes what is left of it. */
async function writeWhole(file: string, pid: number, place: (own: string) => Promise<void>): Promise<void> {
  const own = `${file}.${pid}.${randomBytes(6).toString('hex')}`;
  await writePid(own, pid);
  try {
    await place(own);
  } finally {
    await fs.rm(own, { force: true });
  }
}

/**
 * Creates the lock file whole, already holding `pid`: written to a file of this process's own and
 * linked into place, which fails when a lock is there (a reader never sees a lock half written). A
 * file system without hard links gets the file created exclusively, then written.
 */
async function createLock(file: string, pid: number): Promise<void> {
  await writeWhole(file, pid, async (own) => {
    try {
      await fs.link(own, file);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
      await writePid(file, pid);
    }
  });
}

/**
 * Takes the lock, or says who holds it. A stale lock is replaced, never removed: a process that
 * judged it stale takes a second, short-lived lock (`.halserve.lock.takeover`, made the same way),
 * checks that the lock is still the very file it judged (its inode and its text), and renames its
 * own over it, which leaves no instant without a lock for another process to take. Without that,
 * two processes taking over one stale lock at once could each remove it — the second removing the
 * lock the first had just made — and both run, each losing writes to the other.
 */
async function acquire(
  dir: string,
  file: string,
  warn: (message: string) => void,
  pid: number,
  isAlive: (pid: number) => boolean,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await createLock(file, pid);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= MAX_ATTEMPTS) {
        throw new StoreOpenError(`cannot lock data directory ${dir} (${file}): ${(error as Error).message}`);
      }
    }
    const found = await readLock(file);
    if (found === undefined) continue; // gone meanwhile: try again
    const holder = pidOf(found.text);
    if (holder === undefined && attempt === 0) {
      // Written by an older halserve a moment ago, and not yet whole: look again before judging it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    if (holder !== undefined && holder !== pid && isAlive(holder)) {
      throw new StoreOpenError(`data directory ${dir} is in use by process ${holder} (lock file ${file})`);
    }
    const takeover = `${file}${TAKEOVER_SUFFIX}`;
    if (!(await takeShortLock(takeover, pid, isAlive))) {
      // Another process is taking it over: its lock will be there in a moment.
      await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 8));
      continue;
    }
    try {
      const now = await readLock(file);
      if (now !== undefined && now.ino === found.ino && now.text === found.text) {
        await writeWhole(file, pid, (own) => fs.rename(own, file));
        warn(holder === undefined ? `${file}: unreadable lock file taken over` : `${file}: stale lock of process ${holder} (no longer running) taken over`);
        return;
      }
    } finally {
      await fs.rm(takeover, { force: true });
    }
  }
}

/** Tries before a lock that keeps changing hands is reported as an error. */
const MAX_ATTEMPTS = 100;
/** The lock's own lock while a stale one is replaced. */
const TAKEOVER_SUFFIX = '.takeover';

/**
 * Takes the takeover lock, or says it is held. One left by a process that died while it held it
 * (a moment's window) is moved aside and checked to be that very file before it is removed.
 */
async function takeShortLock(file: string, pid: number, isAlive: (pid: number) => boolean): Promise<boolean> {
  try {
    await createLock(file, pid);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const found = await readLock(file);
  const holder = found === undefined ? undefined : pidOf(found.text);
  if (found === undefined || (holder !== undefined && isAlive(holder))) return false;
  const aside = `${file}.${pid}.${randomBytes(6).toString('hex')}`;
  try {
    await fs.rename(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  const moved = await readLock(aside);
  if (moved === undefined || moved.ino !== found.ino || moved.text !== found.text) {
    await fs.link(aside, file).catch(() => {});
  }
  await fs.rm(aside, { force: true });
  return false;
}

/** A lock file's text and inode, or undefined when there is none. */
async function readLock(file: string): Promise<{ text: string; ino: number } | undefined> {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const [text, stat] = await Promise.all([handle.readFile('utf8'), handle.stat()]);
    return { text, ino: stat.ino };
  } finally {
    await handle.close();
  }
}

function pidOf(text: string): number | undefined {
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
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
  const lock = await readLock(file);
  return lock === undefined ? undefined : pidOf(lock.text);
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
