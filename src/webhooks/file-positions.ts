import { join } from 'node:path';
import { nodeFs, OPEN_READ, OPEN_TRUNCATE, syncDirectory, writeAll, type StoreFs } from '../store/log/store-fs.js';
import type { Position, Positions } from './positions.js';

/**
 * `<data>/_webhooks`: each webhook URL's acknowledged position, beside the data directory's logs
 * (and, like `_changes`, not a resource: only `*.jsonl` files are). One JSON object
 * `{"<url>": {"cursor": "…", "at": <ms>}, …}`, replaced atomically: written to `_webhooks.tmp`,
 * synced, renamed over the file, the directory synced. A crash leaves the old file or the new one.
 * Only one process holds a data directory (dir-lock.ts), so only one writes this file.
 */
export const POSITIONS_FILE = '_webhooks';

export class FilePositions implements Positions {
  readonly #dir: string;
  readonly #path: string;
  readonly #fs: StoreFs;
  /** Everything stored: a save rewrites the whole file. */
  #stored = new Map<string, Position>();

  constructor(dir: string, fsys: StoreFs = nodeFs) {
    this.#dir = dir;
    this.#path = join(dir, POSITIONS_FILE);
    this.#fs = fsys;
  }

  get path(): string {
    return this.#path;
  }

  /** Throws on an unreadable or malformed file (start-up stops: a guessed position could skip events). */
  async load(): Promise<Map<string, Position>> {
    let fd: number;
    try {
      fd = await this.#fs.open(this.#path, OPEN_READ);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw error;
    }
    try {
      const { size } = await this.#fs.fstat(fd);
      const buffer = Buffer.alloc(size);
      let read = 0;
      while (read < size) {
        const n = await this.#fs.read(fd, buffer, read, size - read, read);
        if (n <= 0) break;
        read += n;
      }
      const value: unknown = JSON.parse(buffer.toString('utf8', 0, read));
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not a JSON object');
      const positions = new Map<string, Position>();
      for (const [url, entry] of Object.entries(value as Record<string, unknown>)) {
        const { cursor, at } = (entry ?? {}) as { cursor?: unknown; at?: unknown };
        if (typeof cursor !== 'string' || typeof at !== 'number') throw new Error(`the position of ${url} needs a string "cursor" and a number "at"`);
        positions.set(url, { cursor, at });
      }
      this.#stored = new Map(positions);
      return positions;
    } catch (error) {
      throw new Error(`${this.#path}: ${(error as Error).message}`);
    } finally {
      await this.#fs.close(fd);
    }
  }

  async save(positions: ReadonlyMap<string, Position>): Promise<void> {
    const next = new Map(this.#stored);
    for (const [url, position] of positions) next.set(url, position);
    // Atomic write: a temporary file, synced, renamed over the old one, the directory synced.
    const tmp = `${this.#path}.tmp`;
    // The URLs as configured may hold credentials (user-info, a token in the query): the server's
    // user alone reads them. A temporary file a crash left is removed first: reopened, it would
    // keep the mode it was made with.
    await this.#fs.unlink(tmp).catch(() => {});
    const fd = await this.#fs.open(tmp, OPEN_TRUNCATE, 0o600);
    try {
      await writeAll(this.#fs, fd, Buffer.from(`${JSON.stringify(Object.fromEntries(next))}\n`), 0);
      await this.#fs.fdatasync(fd);
    } finally {
      await this.#fs.close(fd);
    }
    await this.#fs.rename(tmp, this.#path);
    await syncDirectory(this.#fs, this.#dir);
    this.#stored = next;
  }
}
