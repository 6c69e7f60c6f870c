import { join } from 'node:path';
import { OPEN_READ, OPEN_TRUNCATE, syncDirectory, writeAll, type StoreFs } from './store-fs.js';

/**
 * `<data>/_changes`: what a data directory's change feed must remember beyond its logs —
 * the sequence number of the latest delete a compaction forgot (past `--changes-retention`). A
 * cursor below it cannot resume (410), and no sequence number at or below it is handed out again,
 * even when the forgotten delete was the latest change of the directory.
 * One line of JSON, `{"forgotten":<n>}`, replaced atomically (written, synced, renamed, directory synced).
 */
export const CHANGES_FILE = '_changes';

export class ChangesFile {
  readonly #path: string;
  readonly #dir: string;
  readonly #fs: StoreFs;
  /** Writes run one after another; a later one carries the larger value. */
  #writing: Promise<void> = Promise.resolve();

  constructor(dir: string, fsys: StoreFs) {
    this.#dir = dir;
    this.#path = join(dir, CHANGES_FILE);
    this.#fs = fsys;
  }

  get path(): string {
    return this.#path;
  }

  /** The forgotten horizon recorded, or 0 when there is no file yet. Throws on an unreadable or malformed one. */
  async read(): Promise<number> {
    let fd: number;
    try {
      fd = await this.#fs.open(this.#path, OPEN_READ);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw error;
    }
    try {
      const { size } = await this.#fs.fstat(fd);
      const buffer = Buffer.alloc(Math.min(size, 4096));
      const n = await this.#fs.read(fd, buffer, 0, buffer.length, 0);
      const value: unknown = JSON.parse(buffer.toString('utf8', 0, n));
      const forgotten = (value as { forgotten?: unknown } | null)?.forgotten;
      if (typeof forgotten !== 'number' || !Number.isSafeInteger(forgotten) || forgotten < 0) throw new Error('"forgotten" must be a non-negative integer');
      return forgotten;
    } catch (error) {
      throw new Error(`${this.#path}: ${(error as Error).message}`);
    } finally {
      await this.#fs.close(fd);
    }
  }

  /** Records `forgotten` durably before resolving. */
  write(forgotten: number): Promise<void> {
    const run = this.#writing.catch(() => {}).then(() => this.#write(forgotten));
    this.#writing = run;
    return run;
  }

  async #write(forgotten: number): Promise<void> {
    const tmp = `${this.#path}.tmp`;
    const fd = await this.#fs.open(tmp, OPEN_TRUNCATE, 0o644);
    try {
      await writeAll(this.#fs, fd, Buffer.from(`${JSON.stringify({ forgotten })}\n`), 0);
      await this.#fs.fdatasync(fd);
    } finally {
      await this.#fs.close(fd);
    }
    await this.#fs.rename(tmp, this.#path);
    await syncDirectory(this.#fs, this.#dir);
  }
}
