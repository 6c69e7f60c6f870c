import path from 'node:path';
import { OPEN_READ_WRITE, syncDirectory, writeAll, type StoreFs } from './store-fs.js';

/** The code of the error a log file removed or replaced under the server fails its writes with (POSIX: a stale file handle). */
const STALE = 'ESTALE';

const staleError = (message: string): Error => Object.assign(new Error(message), { code: STALE });

/** A file's acknowledged bytes at one moment, held open for reading (`JsonlFile.retain`). */
export interface FileView {
  /** The acknowledged bytes when the view was taken. */
  readonly size: number;
  /** Reads `length` bytes at `position` (below `size`) into `buffer`; resolves with the count read. */
  read(buffer: Buffer, length: number, position: number): Promise<number>;
  /** Lets go of the file; its descriptor is closed if the log has moved on from it. */
  release(): Promise<void>;
}

const NEWLINE = Buffer.from('\n');

/** What an append wrote and, once synced, counts. */
interface Written {
  readonly bytes: number;
  readonly lines: number;
}

/**
 * The log file of one resource: its descriptor, how many bytes and lines are acknowledged, and
 * durable appends (docs/storage.md §1). Bytes past `size` are the debris of a failed write: appends are
 * positional, so debris is overwritten or truncated, never built upon.
 */
export class JsonlFile {
  readonly file: string;
  readonly #dir: string;
  readonly #fs: StoreFs;
  readonly #sync: boolean;
  #fd: number | undefined;
  /** Bytes of acknowledged lines. */
  size = 0;
  /** Lines of the log. */
  lines = 0;
  /** The last line lacks its newline (a file written by hand). */
  needsNewline = false;
  /** Why the file is no longer the log (removed, moved, replaced, written by another program): no write goes to it again. */
  #staleReason: string | undefined;

  /** The file is no longer the log: writes are refused until restart (`/readyz` says so). */
  get stale(): boolean {
    return this.#staleReason !== undefined;
  }
  /** The inode of the descriptor written (`fstatNow`, once a descriptor): what the log's name must lead to. */
  #ino: number | undefined;
  /** The file may hold bytes past `size` that must go before the next append. */
  #dirtyTail = false;
  /** The directory entry of the file (created or renamed) is not yet known to be durable. */
  #dirSyncNeeded = false;
  /** The descriptor was opened with `StoreFs.syncedWrites`: a write is durable once it returns, no sync follows it. */
  #synced = false;
  /** Descriptors held by readers of a prefix (`retain`), with how many hold each. */
  readonly #retained = new Map<number, number>();
  /** Retained descriptors the file no longer uses: closed when their last reader lets go. */
  readonly #retired = new Set<number>();

  constructor(file: string, fsys: StoreFs, sync: boolean) {
    this.file = file;
    this.#dir = path.dirname(file);
    this.#fs = fsys;
    this.#sync = sync;
  }

  get fd(): number | undefined {
    return this.#fd;
  }

  /**
   * The acknowledged bytes as they are now, readable for as long as the view is held: appends go
   * past `size`, a failed write truncates back to an acknowledged size (never below), and a
   * compaction renames a new file over this one without touching it, so the descriptor kept here
   * reads the same bytes until `release` (the old file's descriptor is closed then, not at the
   * swap). Undefined when the file does not exist yet (nothing is acknowledged). Synchronous, so
   * that a data directory can take every store's view in one turn of the event loop (backup.ts).
   */
  retain(): FileView | undefined {
    const fd = this.#fd;
    if (fd === undefined) return undefined;
    this.#retained.set(fd, (this.#retained.get(fd) ?? 0) + 1);
    let released = false;
    return {
      size: this.size,
      read: (buffer, length, position) => this.#fs.read(fd, buffer, 0, length, position),
      release: async () => {
        if (released) return;
        released = true;
        const holders = (this.#retained.get(fd) ?? 1) - 1;
        if (holders > 0) return void this.#retained.set(fd, holders);
        this.#retained.delete(fd);
        if (this.#retired.delete(fd)) await this.#fs.close(fd);
      },
    };
  }

  /** Closes `fd` now, or once the last view of it is released. */
  async #closeOrRetire(fd: number): Promise<void> {
    if (this.#retained.has(fd)) this.#retired.add(fd);
    else await this.#fs.close(fd);
  }

  /** How the log opens its file: with synced writes when it must be durable and the file system has them. */
  #openFlags(): number {
    const synced = this.#fs.syncedWrites;
    return this.#sync && synced !== undefined ? OPEN_READ_WRITE | synced : OPEN_READ_WRITE;
  }

  /** Opens an existing file for appending. */
  async open(): Promise<void> {
    const flags = this.#openFlags();
    this.#fd = await this.#fs.open(this.file, flags);
    this.#ino = undefined;
    this.#synced = flags !== OPEN_READ_WRITE;
  }

  /** Cuts the file back to `offset` durably (a torn final line). */
  async truncate(offset: number): Promise<void> {
    await this.#fs.ftruncate(this.#fd!, offset);
    await this.#fs.fsync(this.#fd!);
  }

  /**
   * Appends `count` whole lines given as bytes (each ending in a newline) and makes them durable
   * (fdatasync unless durability is off); on failure nothing counts.
   */
  async appendBytes(bytes: Buffer, count: number): Promise<void> {
    await this.#commit(await this.#write(this.needsNewline ? Buffer.concat([NEWLINE, bytes]) : bytes, count));
  }

  /** Writes bytes after the acknowledged ones, not yet synced nor counted; resolves with what it wrote. */
  async #write(bytes: Buffer, lines: number): Promise<Written> {
    const fsys = this.#fs;
    // Before anything is written: a file someone else wrote is left as they left it.
    if (this.#fd !== undefined) this.#checkStillTheLog(this.#dirtyTail ? undefined : this.size);
    else this.#ino = undefined;
    try {
      if (this.#fd === undefined) {
        const flags = this.#openFlags();
        this.#fd = await fsys.open(this.file, flags, 0o644);
        this.#synced = flags !== OPEN_READ_WRITE;
        this.#dirSyncNeeded = true; // the file is new: its name must reach the disk too
      }
      if (this.#dirtyTail) {
        await fsys.ftruncate(this.#fd, this.size);
        this.#dirtyTail = false;
      }
      this.#dirtyTail = true;
      await writeAll(fsys, this.#fd, bytes, this.size);
      return { bytes: bytes.length, lines };
    } catch (error) {
      await this.#dropTail();
      throw error;
    }
  }

  /** Syncs what `#write` wrote, then counts it; on failure the written bytes are cut off. */
  async #commit(written: Written): Promise<void> {
    const fsys = this.#fs;
    try {
      // Bytes written through a synced descriptor are on disk already (`StoreFs.syncedWrites`).
      if (this.#sync && !this.#synced) await fsys.fdatasync(this.#fd!);
      if (this.#dirSyncNeeded) {
        await syncDirectory(fsys, this.#dir);
        this.#dirSyncNeeded = false;
      }
      this.#dirtyTail = false;
      this.size += written.bytes;
      this.lines += written.lines;
      this.needsNewline = false;
    } catch (error) {
      await this.#dropTail();
      throw error;
    }
  }

  /**
   * Throws, before a batch is written, when the file is no longer the log: its name leads nowhere
   * (removed or moved away: what was appended would vanish with the process, or not be found by
   * the next start), to another file (one put in its place), or to this one at another size (cut,
   * copied over, appended to by another program: the next lines would land after a gap that
   * start-up takes for a torn tail). One look-up by name a batch (under a microsecond); a change
   * made while a batch is written is found by the next. The batch then fails as a disk error
   * would, with `ESTALE`, and so does every later one, without touching the file: the server must
   * be restarted on the files as they are. `expected` undefined: the size is not known (debris of
   * a failed write may follow it).
   */
  #checkStillTheLog(expected: number | undefined): void {
    if (this.#staleReason !== undefined) throw staleError(this.#staleReason);
    const named = this.#fs.statNow?.(this.file);
    const ino = (this.#ino ??= this.#fs.fstatNow?.(this.#fd!).ino);
    if (this.#fs.statNow === undefined || ino === undefined) return;
    const why =
      named === undefined
        ? 'was removed or moved away'
        : named.ino !== ino
          ? 'was replaced by another file'
          : expected !== undefined && named.size !== expected
            ? `was changed by another program (${named.size} bytes where this server wrote ${expected})`
            : undefined;
    if (why === undefined) return;
    this.#staleReason = `${this.file} ${why} while the server ran: writes are refused until it is restarted`;
    throw staleError(this.#staleReason);
  }

  /**
   * Throws ESTALE when the file is no longer the log (`#checkStillTheLog`), or was found not to be
   * before: a compaction renames nothing over a file that someone else put in the log's place.
   */
  checkStillTheLog(): void {
    if (this.#fd !== undefined) this.#checkStillTheLog(this.#dirtyTail ? undefined : this.size);
    else if (this.#staleReason !== undefined) throw staleError(this.#staleReason);
  }

  /**
   * After a failed write or sync: the bytes past `size` go (best effort now; the next write
   * retries), and the cut is synced before the batch is refused. Lines written through a synced
   * descriptor before the disk filled are on disk already; without the sync, a power loss before
   * the file system commits the cut could bring back writes that were answered 503.
   */
  async #dropTail(): Promise<void> {
    if (this.#fd !== undefined && this.#dirtyTail) {
      try {
        await this.#fs.ftruncate(this.#fd, this.size);
        if (this.#sync) await this.#fs.fdatasync(this.#fd);
        this.#dirtyTail = false;
      } catch {
        // The next append retries the truncation (#dirtyTail stays set) and fails if it cannot.
      }
    }
  }

  /** Reads acknowledged bytes (compaction copies the lines appended while it ran). */
  read(buffer: Buffer, length: number, position: number): Promise<number> {
    return this.#fs.read(this.#fd!, buffer, 0, length, position);
  }

  /**
   * Takes `fd`, already renamed over the log, as the log: `size` bytes in `lines` lines. The old
   * descriptor is closed and the directory synced (if that fails, the next append retries it).
   * The file is opened again by its name with synced writes when the log uses them (`fd` was
   * opened without, for the compaction's many writes); if that fails, `fd` serves, synced after
   * each write.
   */
  async replace(fd: number, size: number, lines: number, warn: (message: string) => void): Promise<void> {
    const old = this.#fd;
    const flags = this.#openFlags();
    let reopened: number | undefined;
    if (flags !== OPEN_READ_WRITE) reopened = await this.#fs.open(this.file, flags).catch(() => undefined);
    if (reopened !== undefined) await this.#fs.close(fd).catch(() => {});
    this.#fd = reopened ?? fd;
    this.#ino = undefined;
    this.#synced = reopened !== undefined;
    this.size = size;
    this.lines = lines;
    this.needsNewline = false;
    this.#dirtyTail = false;
    this.#dirSyncNeeded = true;
    if (old !== undefined) await this.#closeOrRetire(old).catch(() => {});
    try {
      await syncDirectory(this.#fs, this.#dir);
      this.#dirSyncNeeded = false;
    } catch (error) {
      warn(`${this.#dir}: directory sync after compaction failed: ${(error as Error).message}`);
    }
  }

  /** Syncs (even with durability off: a clean shutdown leaves the data on disk) and closes. */
  async close(warn: (message: string) => void): Promise<void> {
    if (this.#fd !== undefined) {
      await this.#fs.fdatasync(this.#fd).catch((error: unknown) => {
        warn(`${this.file}: final sync failed: ${(error as Error).message}`);
      });
    }
    await this.closeFd();
  }

  async closeFd(): Promise<void> {
    const fd = this.#fd;
    this.#fd = undefined;
    this.#ino = undefined;
    if (fd !== undefined) await this.#closeOrRetire(fd);
  }
}
