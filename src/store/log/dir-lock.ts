import { randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { StoreOpenError } from '../store.js';
import { BACKUP_SOCKET, socketAddress } from './backup-protocol.js';

/** The lock file that keeps a data directory to one process (docs/storage.md §1). */
export const LOCK_FILE = '.halserve.lock';

/** Lock files this process holds: a second open in the same process is refused too. */
const held = new Set<string>();

/** A held lock; `release` removes the file if it is still ours, `releaseNow` the same at once (on a signal, say). */
export interface DirLock {
  readonly file: string;
  release(): Promise<void>;
  releaseNow(): void;
}

/** How often the holder renews its lock (sets the file's mtime), and how long a lock of another PID namespace may go unrenewed before it is stale. */
export interface LockTiming {
  readonly renewEveryMs: number;
  readonly staleAfterMs: number;
}

export const LOCK_TIMING: LockTiming = { renewEveryMs: 1000, staleAfterMs: 5000 };

/**
 * Where a pid means something: this kernel's boot and this process's PID namespace (Linux), or ''
 * where that cannot be told. Two containers on one volume are two PID namespaces, each server pid 1
 * in its own: a pid alone says nothing about a process of another.
 */
export function pidNamespace(): string {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const ns = readlinkSync('/proc/self/ns/pid');
    return boot !== '' && ns !== '' ? `${boot} ${ns}` : '';
  } catch {
    return '';
  }
}

/** The lock file's text: the pid, then where that pid means something (absent where unknown: the text older halserves write). */
export function lockText(pid: number, place: string): string {
  return place === '' ? `${pid}\n` : `${pid}\n${place}\n`;
}

/**
 * Takes the lock of `dir` by creating `.halserve.lock` exclusively, holding this process's pid and
 * PID namespace, and renews it (its mtime) every `renewEveryMs` while held. A lock of this PID
 * namespace whose process is gone is stale; so is one of another namespace (another container, or a
 * boot before this one) that is not renewed for `staleAfterMs`, since its pid cannot be probed from
 * here. A stale lock is taken over, with a warning; a live one is refused.
 */
export async function lockDirectory(
  dir: string,
  warn: (message: string) => void,
  pid: number = process.pid,
  isAlive: (pid: number) => boolean = processIsAlive,
  timing: LockTiming = LOCK_TIMING,
  place: string = pidNamespace(),
): Promise<DirLock> {
  const key = path.resolve(dir, LOCK_FILE);
  const file = path.join(dir, LOCK_FILE);
  if (held.has(key)) throw new StoreOpenError(`data directory ${dir} is in use by this process (lock file ${file})`);
  held.add(key); // reserved before the first await, so that two opens in one process cannot race
  const text = lockText(pid, place);
  try {
    await acquire(dir, file, warn, { pid, place, text }, isAlive, timing);
  } catch (error) {
    held.delete(key);
    // A takeover that fails (a full disk) says so in the one line a user sees, as a first lock does.
    throw error instanceof StoreOpenError ? error : new StoreOpenError(`cannot lock data directory ${dir} (${file}): ${(error as Error).message}`);
  }
  const renewal = setInterval(() => {
    const now = new Date();
    fs.utimes(file, now, now).catch(() => {});
  }, timing.renewEveryMs);
  renewal.unref();
  const letGo = (): void => {
    clearInterval(renewal);
    held.delete(key);
  };
  return {
    file,
    release: async () => {
      letGo();
      await release(file, text);
    },
    releaseNow: () => {
      letGo();
      try {
        if (readFileSync(file, 'utf8') === text) rmSync(file, { force: true });
      } catch {
        // Gone already: nothing to let go.
      }
    },
  };
}

/** This process's lock: its pid, its PID namespace, and the text it writes. */
interface Own {
  readonly pid: number;
  readonly place: string;
  readonly text: string;
}

/** Creates `file` exclusively holding `text`, synced. */
async function writeText(file: string, text: string): Promise<void> {
  const handle = await fs.open(file, 'wx', 0o644);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes a file of this process's own holding `own.text`, synced, hands it to `place`, and removes what is left of it. */
async function writeWhole(file: string, own: Own, place: (own: string) => Promise<void>): Promise<void> {
  const mine = `${file}.${own.pid}.${randomBytes(6).toString('hex')}`;
  try {
    // Inside the try: a full disk fails the write after the file was created, and a server
    // restarted in a loop on a full disk would leave one such file (an inode) at each start.
    await writeText(mine, own.text);
    await place(mine);
  } finally {
    await fs.rm(mine, { force: true });
  }
}

/**
 * Creates the lock file whole, already holding `pid`: written to a file of this process's own and
 * linked into place, which fails when a lock is there (a reader never sees a lock half written). A
 * file system without hard links gets the file created exclusively, then written.
 */
async function createLock(file: string, own: Own): Promise<void> {
  await writeWhole(file, own, async (mine) => {
    try {
      await fs.link(mine, file);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
      await writeText(file, own.text);
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
  own: Own,
  isAlive: (pid: number) => boolean,
  timing: LockTiming,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await createLock(file, own);
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
    let why = 'no longer running';
    if (holder !== undefined && isForeign(found.text, own.place)) {
      // Another container's (or another boot's) pid: not to be probed from here. Alive if renewed.
      const seconds = timing.staleAfterMs / 1000;
      warn(`${file}: held by process ${holder} of another container or PID namespace; waiting ${seconds} s to see whether its lock is renewed`);
      const seen = await watch(file, found, timing);
      if (seen === 'changed') continue; // released or taken over meanwhile: judge again
      if (seen === 'renewed') {
        throw new StoreOpenError(
          `data directory ${dir} is in use by process ${holder} of another container or PID namespace, which renews its lock (${file}); stop that server first (two servers on one data directory lose writes)`,
        );
      }
      why = `of another container or PID namespace, not renewed for ${seconds} s`;
    } else if (holder !== undefined && holder !== own.pid && isAlive(holder)) {
      // A pid alone (an earlier halserve's lock) may be another process's since a restart of the machine.
      const unless = namesPidAlone(found.text) ? `; if process ${holder} is not a halserve serving it (a lock an earlier halserve left before the machine restarted), remove the lock file` : '';
      throw new StoreOpenError(`data directory ${dir} is in use by process ${holder} (lock file ${file})${unless}`);
    } else if (holder !== undefined && namesPidAlone(found.text) && (await answersBackups(dir))) {
      // An earlier halserve's lock names its pid alone, which says nothing of a process in another
      // container (pid 1 there, as here) and is never renewed; a server since 2026-11-26 listens on
      // the directory's backup socket while it runs.
      throw new StoreOpenError(
        `data directory ${dir} is in use by process ${holder} of an earlier halserve, of another container or PID namespace: it answers on ${BACKUP_SOCKET} (lock file ${file}); stop that server first (two servers on one data directory lose writes)`,
      );
    }
    const takeover = `${file}${TAKEOVER_SUFFIX}`;
    if (!(await takeShortLock(takeover, own, isAlive, timing))) {
      // Another process is taking it over: its lock will be there in a moment.
      await new Promise((resolve) => setTimeout(resolve, 2 + Math.random() * 8));
      continue;
    }
    try {
      const now = await readLock(file);
      if (now !== undefined && now.ino === found.ino && now.text === found.text && now.mtimeMs === found.mtimeMs) {
        await writeWhole(file, own, (mine) => fs.rename(mine, file));
        warn(holder === undefined ? `${file}: unreadable lock file taken over` : `${file}: stale lock of process ${holder} (${why}) taken over`);
        return;
      }
    } finally {
      await fs.rm(takeover, { force: true });
    }
  }
}

/**
 * Whether a lock's pid belongs to another PID namespace than `place` (ours): then it cannot be
 * probed. A lock without one (an older halserve's), or a process that cannot tell its own, is
 * judged by its pid as before.
 */
function isForeign(text: string, place: string): boolean {
  const theirs = placeOf(text);
  return theirs !== '' && place !== '' && theirs !== place;
}

/** Whether a lock names its pid alone: an earlier halserve's, or one of a process that cannot tell its PID namespace. */
function namesPidAlone(text: string): boolean {
  return placeOf(text) === '';
}

/** Where a lock's pid means something (`lockText`'s second line), or '' for a lock without it. */
function placeOf(text: string): string {
  return text.split('\n')[1]?.trim() ?? '';
}

/** How long a connection to the backup socket may take before whoever listens there counts as running. */
const PROBE_MS = 1000;

/**
 * Whether a server listens on `dir`'s backup socket (backup-socket.ts): one that accepts a
 * connection, or leaves it waiting (a full backlog, a stopped process), is running. No socket, or
 * one a killed server left (refused), is not.
 */
function answersBackups(dir: string): Promise<boolean> {
  const address = socketAddress(dir, process.cwd());
  if (address === undefined) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = net.connect(address);
    const done = (running: boolean): void => {
      socket.destroy();
      resolve(running);
    };
    socket.setTimeout(PROBE_MS, () => done(true));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Watches the lock `found` for `staleAfterMs`: 'renewed' as soon as its holder sets its mtime
 * again, 'changed' if it is removed or replaced, 'stale' if it stays as it was. The watch is timed
 * on the monotonic clock: on the wall clock, a step forward while it watches (NTP, a VM resumed)
 * ended it at the next look, before the holder's next renewal, and a live lock was taken over.
 */
async function watch(file: string, found: LockSeen, timing: LockTiming): Promise<'renewed' | 'changed' | 'stale'> {
  const until = performance.now() + timing.staleAfterMs;
  const step = Math.max(1, Math.min(250, timing.renewEveryMs / 4));
  while (performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, step));
    const now = await readLock(file);
    if (now === undefined || now.ino !== found.ino || now.text !== found.text) return 'changed';
    if (now.mtimeMs !== found.mtimeMs) return 'renewed';
  }
  return 'stale';
}

/** Tries before a lock that keeps changing hands is reported as an error. */
const MAX_ATTEMPTS = 100;
/** The lock's own lock while a stale one is replaced. */
const TAKEOVER_SUFFIX = '.takeover';

/**
 * Takes the takeover lock, or says it is held. One left by a process that died while it held it
 * (a moment's window) is moved aside and checked to be that very file before it is removed.
 */
async function takeShortLock(file: string, own: Own, isAlive: (pid: number) => boolean, timing: LockTiming): Promise<boolean> {
  try {
    await createLock(file, own);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const found = await readLock(file);
  const holder = found === undefined ? undefined : pidOf(found.text);
  if (found === undefined) return false;
  // Another namespace's is never renewed: held while younger than a lock may go unrenewed.
  const alive = holder !== undefined && (isForeign(found.text, own.place) ? Date.now() - found.mtimeMs < timing.staleAfterMs : isAlive(holder));
  if (alive) return false;
  const aside = `${file}.${own.pid}.${randomBytes(6).toString('hex')}`;
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

/** What a look at a lock file saw. */
interface LockSeen {
  readonly text: string;
  readonly ino: number;
  readonly mtimeMs: number;
}

/** A lock file's text, inode and mtime, or undefined when there is none. */
async function readLock(file: string): Promise<LockSeen | undefined> {
  let handle;
  try {
    handle = await fs.open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const [text, stat] = await Promise.all([handle.readFile('utf8'), handle.stat()]);
    return { text, ino: stat.ino, mtimeMs: stat.mtimeMs };
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
 * or its process is gone (`halserve backup` asks a running server for its data). A holder of another
 * PID namespace counts as running while its lock is renewed.
 */
export async function lockHolder(
  dir: string,
  isAlive: (pid: number) => boolean = processIsAlive,
  timing: LockTiming = LOCK_TIMING,
  place: string = pidNamespace(),
): Promise<number | undefined> {
  const lock = await readLock(path.join(dir, LOCK_FILE));
  const pid = lock === undefined ? undefined : pidOf(lock.text);
  if (lock === undefined || pid === undefined) return undefined;
  const alive = isForeign(lock.text, place) ? Date.now() - lock.mtimeMs < timing.staleAfterMs : isAlive(pid);
  return alive ? pid : undefined;
}

async function release(file: string, text: string): Promise<void> {
  // Only remove the lock if it is still ours (another process may have taken a stale one over; one
  // of another container may hold the same pid).
  if ((await readLock(file))?.text === text) await fs.rm(file, { force: true });
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
