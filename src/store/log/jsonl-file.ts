import path from 'node:path';
import { OPEN_READ_WRITE, syncDirectory, writeAll, type StoreFs } from './store-fs.js';

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
  /** The file may hold bytes past `size` that must go before the next append. */
  #dirtyTail = false;
  /** The directory entry of the file (created or renamed) is not yet known to be durable. */
  #dirSyncNeeded = false;

  constructor(file: string, fsys: StoreFs, sync: boolean) {
    this.file = file;
    this.#dir = path.dirname(file);
    this.#fs = fsys;
    this.#sync = sync;
  }

  get fd(): number | undefined {
    return this.#fd;
  }

  /** Opens an existing file for appending. */
  async open(): Promise<void> {
    this.#fd = await this.#fs.open(this.file, OPEN_READ_WRITE);
  }

  /** Cuts the file back to `offset` durably (a torn final line). */
  async truncate(offset: number): Promise<void> {
    await this.#fs.ftruncate(this.#fd!, offset);
    await this.#fs.fsync(this.#fd!);
  }

  /** Appends lines and makes them durable (fdatasync unless durability is off); on failure nothing counts. */
  async append(lines: readonly string[]): Promise<void> {
    const bytes = Buffer.from((this.needsNewline ? '\n' : '') + lines.join('\n') + '\n');
    await this.#append(bytes);
    this.lines += lines.length;
    this.needsNewline = false;
  }

  /** Appends `count` whole lines given as bytes (each ending in a newline), durably, as `append` does. */
  async appendBytes(bytes: Buffer, count: number): Promise<void> {
    await this.#append(this.needsNewline ? Buffer.concat([Buffer.from('\n'), bytes]) : bytes);
    this.lines += count;
    this.needsNewline = false;
  }

  async #append(bytes: Buffer): Promise<void> {
    const fsys = this.#fs;
    try {
      if (this.#fd === undefined) {
        this.#fd = await fsys.open(this.file, OPEN_READ_WRITE, 0o644);
        this.#dirSyncNeeded = true; // the file is new: its name must reach the disk too
      }
      if (this.#dirtyTail) {
        await fsys.ftruncate(this.#fd, this.size);
        this.#dirtyTail = false;
      }
      this.#dirtyTail = true;
      await writeAll(fsys, this.#fd, bytes, this.size);
      if (this.#sync) await fsys.fdatasync(this.#fd);
      if (this.#dirSyncNeeded) {
        await syncDirectory(fsys, this.#dir);
        this.#dirSyncNeeded = false;
      }
      this.#dirtyTail = false;
      this.size += bytes.length;
    } catch (error) {
      if (this.#fd !== undefined && this.#dirtyTail) {
        // Best effort now; if this fails too, the next append truncates first.
        try {
          await fsys.ftruncate(this.#fd, this.size);
          this.#dirtyTail = false;
        } catch {
          // The next append retries the truncation (#dirtyTail stays set) and fails if it cannot.
        }
      }
      throw error;
    }
  }

  /** Reads acknowledged bytes (compaction copies the lines appended while it ran). */
  read(buffer: Buffer, length: number, position: number): Promise<number> {
    return this.#fs.read(this.#fd!, buffer, 0, length, position);
  }

  /**
   * Takes `fd`, already renamed over the log, as the log: `size` bytes in `lines` lines. The old
   * descriptor is closed and the directory synced (if that fails, the next append retries it).
   */
  async replace(fd: number, size: number, lines: number, warn: (message: string) => void): Promise<void> {
    const old = this.#fd;
    this.#fd = fd;
    this.size = size;
    this.lines = lines;
    this.needsNewline = false;
    this.#dirtyTail = false;
    this.#dirSyncNeeded = true;
    if (old !== undefined) await this.#fs.close(old).catch(() => {});
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
    if (fd !== undefined) await this.#fs.close(fd);
  }
}
