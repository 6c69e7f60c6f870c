import type { JsonlFile } from './jsonl-file.js';
import { OPEN_TRUNCATE, writeAll, type StoreFs } from './store-fs.js';

/** Suffix of the file a compaction writes before renaming it over the log (docs/storage.md §1). */
export const TMP_SUFFIX = '.tmp';

const COMPACT_CHUNK_BYTES = 8 * 1024 * 1024;

/** The live entities, in creation order, and the file position they describe. */
export interface Snapshot {
  readonly lines: readonly { bytes(): Uint8Array }[];
  readonly size: number;
  readonly fileLines: number;
}

/**
 * Rewrites a log to one line per live entity while writes go on (docs/storage.md §1): the snapshot's
 * lines go to `<file>.tmp`, which is synced; then, between two write batches, the lines appended
 * meanwhile are copied over, the temporary file is synced and renamed over the log, and the
 * directory is synced.
 */
export class Compaction {
  readonly #file: JsonlFile;
  readonly #fs: StoreFs;
  /** Runs a step between write batches. */
  readonly #between: (run: () => Promise<void>) => Promise<void>;
  readonly #warn: (message: string) => void;
  #running: Promise<boolean> | undefined;
  #abort = false;

  constructor(file: JsonlFile, fsys: StoreFs, between: (run: () => Promise<void>) => Promise<void>, warn: (message: string) => void) {
    this.#file = file;
    this.#fs = fsys;
    this.#between = between;
    this.#warn = warn;
  }

  get running(): Promise<boolean> | undefined {
    return this.#running;
  }

  /** Stops a running compaction at its next step (the store is closing). */
  abort(): void {
    this.#abort = true;
  }

  /** Starts one; must be called between batches, so that the snapshot matches the file. */
  start(snapshot: Snapshot): Promise<boolean> {
    this.#abort = false;
    const running = this.#run(snapshot).finally(() => {
      this.#running = undefined;
    });
    this.#running = running;
    return running;
  }

  async #run(snapshot: Snapshot): Promise<boolean> {
    const tmp = this.#file.file + TMP_SUFFIX;
    // How long it took, on the monotonic clock: a step of the wall clock while it ran (NTP, a VM
    // resumed) read as a compaction of hours, and warned so.
    const started = performance.now();
    let tmpFd: number | undefined;
    try {
      tmpFd = await this.#fs.open(tmp, OPEN_TRUNCATE, 0o644);
      const written = await this.#write(tmpFd, snapshot);
      this.#checkAbort();
      await this.#fs.fdatasync(tmpFd);
      const fd = tmpFd;
      await this.#between(() => this.#swap(fd, written, snapshot));
      tmpFd = undefined;
      const ms = Math.round(performance.now() - started);
      if (ms > 10_000) this.#warn(`${this.#file.file}: compaction took ${ms} ms`);
      return true;
    } catch (error) {
      if (tmpFd !== undefined) {
        await this.#fs.close(tmpFd).catch(() => {});
        await this.#fs.unlink(tmp).catch(() => {});
      }
      if (!this.#abort) this.#warn(`${this.#file.file}: compaction failed: ${(error as Error).message}`);
      return false;
    }
  }

  #checkAbort(): void {
    if (this.#abort) throw new Error('aborted: the store is closing');
  }

  /** Writes the snapshot's lines to `fd` in large chunks; returns the bytes written. */
  async #write(fd: number, snapshot: Snapshot): Promise<number> {
    let chunk = Buffer.allocUnsafe(COMPACT_CHUNK_BYTES);
    let used = 0;
    let position = 0;
    for (const entity of snapshot.lines) {
      const bytes = entity.bytes();
      if (used + bytes.length + 1 > chunk.length) {
        if (used > 0) {
          await writeAll(this.#fs, fd, chunk.subarray(0, used), position);
          position += used;
          used = 0;
          this.#checkAbort();
        }
        if (bytes.length + 1 > chunk.length) chunk = Buffer.allocUnsafe(bytes.length + 1);
      }
      chunk.set(bytes, used);
      chunk[used + bytes.length] = 0x0a;
      used += bytes.length + 1;
    }
    if (used > 0) await writeAll(this.#fs, fd, chunk.subarray(0, used), position);
    return position + used;
  }

  /** Copies the lines appended since the snapshot, syncs, renames over the log, syncs the directory. */
  async #swap(tmpFd: number, written: number, snapshot: Snapshot): Promise<void> {
    const fsys = this.#fs;
    const file = this.#file;
    const tail = file.size - snapshot.size;
    const buffer = Buffer.allocUnsafe(Math.min(Math.max(tail, 1), COMPACT_CHUNK_BYTES));
    for (let copied = 0; copied < tail; ) {
      const n = await file.read(buffer, Math.min(buffer.length, tail - copied), snapshot.size + copied);
      if (n === 0) throw new Error('the log is shorter than expected');
      await writeAll(fsys, tmpFd, buffer.subarray(0, n), written + copied);
      copied += n;
    }
    await fsys.fdatasync(tmpFd);
    // A log removed or replaced under the server is not written over with what memory holds.
    file.checkStillTheLog();
    await fsys.rename(file.file + TMP_SUFFIX, file.file);
    // From here the new file is the log, whatever else fails.
    await file.replace(tmpFd, written + tail, snapshot.lines.length + (file.lines - snapshot.fileLines), this.#warn);
  }
}
