import fs from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';

/**
 * The file-system calls the JSON-lines store makes, as a seam: tests replace single calls to
 * inject faults (a full disk on `write`, an I/O error on `fdatasync`) without touching the disk.
 * Every call works on file descriptors or paths, so a fault hits exactly one step.
 */
export interface StoreFs {
  open(path: string, flags: number, mode?: number): Promise<number>;
  close(fd: number): Promise<void>;
  fstat(fd: number): Promise<{ size: number }>;
  /**
   * The file's inode, without a trip to the thread pool (an inode in memory: under a microsecond).
   * The log compares it with what its name leads to before each batch (`statNow`), to find a file
   * removed, moved or replaced under it.
   */
  fstatNow?(fd: number): { ino: number };
  /** What the name `path` leads to now (its inode and size), or undefined when it leads nowhere; as cheap as `fstatNow`. */
  statNow?(path: string): { ino: number; size: number } | undefined;
  read(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  /** Writes at `position`; may write fewer bytes than asked (the store loops). */
  write(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  fdatasync(fd: number): Promise<void>;
  fsync(fd: number): Promise<void>;
  ftruncate(fd: number, length: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /**
   * Open flags that make every `write` to the file durable by the time it returns, as a `write`
   * and an `fdatasync` would (`O_DSYNC`). The log opens with them when it must be durable, so a
   * batch's commit is one trip to the thread pool instead of two with the event loop between them
   * (where the second waits behind whatever the loop is doing, such as the previous batch's
   * answers). Without them (a platform that lacks the flag) the log writes, then syncs.
   */
  readonly syncedWrites?: number;
}


/** The real file system. */
export const nodeFs: StoreFs = {
  open: promisify(fs.open) as (path: string, flags: number, mode?: number) => Promise<number>,
  close: promisify(fs.close),
  fstat: promisify(fs.fstat),
  fstatNow: (fd) => fs.fstatSync(fd),
  statNow: (path) => fs.statSync(path, { throwIfNoEntry: false }),
  read: (fd, buffer, offset, length, position) =>
    new Promise((resolve, reject) => {
      fs.read(fd, buffer, offset, length, position, (error, n) => (error ? reject(error) : resolve(n)));
    }),
  write: (fd, buffer, offset, length, position) =>
    new Promise((resolve, reject) => {
      fs.write(fd, buffer, offset, length, position, (error, n) => (error ? reject(error) : resolve(n)));
    }),
  fdatasync: promisify(fs.fdatasync),
  fsync: promisify(fs.fsync),
  ftruncate: promisify(fs.ftruncate) as (fd: number, length: number) => Promise<void>,
  rename: promisify(fs.rename),
  unlink: promisify(fs.unlink),
  ...(fs.constants.O_DSYNC === undefined ? {} : { syncedWrites: fs.constants.O_DSYNC }),
};

/** Flags for the store's own files: read and write at explicit positions, created when missing. */
export const OPEN_READ_WRITE = fs.constants.O_RDWR | fs.constants.O_CREAT;
export const OPEN_READ = fs.constants.O_RDONLY;
/** Flags for a fresh temporary file: anything left from an earlier attempt is dropped. */
export const OPEN_TRUNCATE = fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC;

/** Syncs a directory, so that a file created or renamed in it survives a crash. */
export async function syncDirectory(fsys: StoreFs, dir: string): Promise<void> {
  const fd = await fsys.open(dir, OPEN_READ);
  try {
    await fsys.fsync(fd);
  } finally {
    await fsys.close(fd);
  }
}

/** Writes all of `buffer` at `position`, looping over short writes. */
export async function writeAll(fsys: StoreFs, fd: number, buffer: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < buffer.length) {
    const n = await fsys.write(fd, buffer, done, buffer.length - done, position + done);
    if (n <= 0) throw new Error('write made no progress');
    done += n;
  }
}

/**
 * Writes all of `data` at the handle's current position, looping over short writes: a write(2)
 * that meets a full disk first writes what fits and reports the count, and only the next one fails
 * with ENOSPC. `FileHandle.write` resolves with that count, not an error, so a caller that ignores
 * it keeps a file cut short and says it is whole.
 */
export async function writeFully(handle: { write(buffer: Uint8Array, offset: number, length: number): Promise<{ bytesWritten: number }> }, data: Uint8Array): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done);
    if (bytesWritten <= 0) throw new Error('write made no progress');
    done += bytesWritten;
  }
}

/**
 * Appends `data` to the file at `path` (created when missing) and syncs it, and its directory
 * entry when the file is new, before resolving. A failed append is cut off again (best effort):
 * the part a full disk let through would otherwise be glued to the front of the next append.
 */
export async function appendDurably(fsys: StoreFs, path: string, data: Uint8Array): Promise<void> {
  const fd = await fsys.open(path, OPEN_READ_WRITE, 0o644);
  let created = false;
  try {
    const { size } = await fsys.fstat(fd);
    created = size === 0;
    try {
      await writeAll(fsys, fd, data, size);
      await fsys.fsync(fd);
    } catch (error) {
      await fsys.ftruncate(fd, size).catch(() => {});
      throw error;
    }
  } finally {
    await fsys.close(fd);
  }
  if (created) await syncDirectory(fsys, dirname(path));
}
