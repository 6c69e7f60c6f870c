import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DATASET } from '../changes/local-feed.js';
import { OPEN_READ, OPEN_TRUNCATE, syncDirectory, writeAll, type StoreFs } from './store-fs.js';

/**
 * `<data>/_changes`: what a data directory's change feed must remember beyond its logs —
 * the sequence number of the latest delete a compaction forgot (past `--changes-retention`). A
 * cursor below it cannot resume (410), and no sequence number at or below it is handed out again,
 * even when the forgotten delete was the latest change of the directory.
 * And the data set's name, when it has one: a copy (`halserve backup`) gets a new one, so that its
 * cursors differ from its original's (docs/storage.md §4).
 * One line of JSON, `{"forgotten":<n>[,"dataset":"<name>"]}`, replaced atomically (written, synced,
 * renamed, directory synced).
 */
export const CHANGES_FILE = '_changes';

/** What `_changes` records. */
export interface ChangesState {
  readonly forgotten: number;
  readonly dataset?: string | undefined;
}

/** The file's text for `state`. */
export const changesText = (state: ChangesState): string =>
  `${JSON.stringify(state.dataset === undefined ? { forgotten: state.forgotten } : { forgotten: state.forgotten, dataset: state.dataset })}\n`;

/** The state a file's text records; throws saying what is wrong. */
export function parseChangesText(text: string): ChangesState {
  const value: unknown = JSON.parse(text);
  const { forgotten, dataset } = (value ?? {}) as { forgotten?: unknown; dataset?: unknown };
  if (typeof forgotten !== 'number' || !Number.isSafeInteger(forgotten) || forgotten < 0) throw new Error('"forgotten" must be a non-negative integer');
  if (dataset !== undefined && (typeof dataset !== 'string' || !DATASET.test(dataset))) throw new Error('"dataset" must be 4 to 40 lower-case letters and digits, a letter first');
  return { forgotten, dataset };
}

/** A `_changes` whose text is not what halserve writes (cut short, edited): `--repair` sets it aside. */
export class ChangesFileDamaged extends Error {}

export class ChangesFile {
  readonly #path: string;
  readonly #dir: string;
  readonly #fs: StoreFs;
  /** Writes run one after another; a later one carries the larger value. */
  #writing: Promise<void> = Promise.resolve();
  /** The data set's name, as read: every write keeps it. */
  #dataset: string | undefined;

  constructor(dir: string, fsys: StoreFs) {
    this.#dir = dir;
    this.#path = join(dir, CHANGES_FILE);
    this.#fs = fsys;
  }

  get path(): string {
    return this.#path;
  }

  /** What the file records, or `{ forgotten: 0 }` when there is no file yet. Throws on an unreadable or malformed one. */
  async read(): Promise<ChangesState> {
    let fd: number;
    try {
      fd = await this.#fs.open(this.#path, OPEN_READ);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { forgotten: 0 };
      throw error;
    }
    try {
      const { size } = await this.#fs.fstat(fd);
      const buffer = Buffer.alloc(Math.min(size, 4096));
      const n = await this.#fs.read(fd, buffer, 0, buffer.length, 0);
      let state: ChangesState;
      try {
        state = parseChangesText(buffer.toString('utf8', 0, n));
      } catch (error) {
        throw new ChangesFileDamaged(`${this.#path}: ${(error as Error).message}`);
      }
      this.#dataset = state.dataset;
      return state;
    } catch (error) {
      throw error instanceof ChangesFileDamaged ? error : new Error(`${this.#path}: ${(error as Error).message}`);
    } finally {
      await this.#fs.close(fd);
    }
  }

  /**
   * Starts a new data set over the directory (an export wrote its logs): named `dataset`, no delete
   * forgotten, so that no cursor its feed gave out before resumes on it (docs/changes.md §1).
   */
  renew(dataset: string): Promise<void> {
    this.#dataset = dataset;
    return this.write(0);
  }

  /**
   * Moves a damaged file out of the way (`_changes.rejected`, or `.rejected.<n>` beside an earlier
   * one) and starts a new data set in its place (`renew`); resolves to where the old one went.
   */
  async setAside(dataset: string): Promise<string> {
    let aside = `${this.#path}.rejected`;
    for (let n = 1; this.#fs.statNow?.(aside) !== undefined; n++) aside = `${this.#path}.rejected.${n}`;
    await this.#fs.rename(this.#path, aside);
    await this.renew(dataset);
    return aside;
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
      await writeAll(this.#fs, fd, Buffer.from(changesText({ forgotten, dataset: this.#dataset })), 0);
      await this.#fs.fdatasync(fd);
    } catch (error) {
      await this.#fs.close(fd).catch(() => {});
      // Nothing left behind that no one would read again (a full disk fails the write, not the open).
      await this.#fs.unlink(tmp).catch(() => {});
      throw error;
    }
    await this.#fs.close(fd);
    await this.#fs.rename(tmp, this.#path);
    await syncDirectory(this.#fs, this.#dir);
  }
}

/** A fresh data set's name (`DATASET` in local-feed.ts): a copy's, or an export's. */
export const newDatasetName = (): string => `b${randomBytes(8).toString('hex')}`;
