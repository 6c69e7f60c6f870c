import { createHash } from 'node:crypto';
import path from 'node:path';
import type { AnswerBook } from '../idempotency.js';
import { entryOf, rememberedOf, type AnswerEntry } from './answer-lines.js';
import { StoreOpenError } from '../store.js';
import { OPEN_READ, OPEN_TRUNCATE, syncDirectory, writeAll, type StoreFs } from './store-fs.js';

/**
 * The remembered answers of one resource's keyed writes (`Idempotency-Key`) that its log no
 * longer holds, kept beside it as `_idempotency.<name>` (the store's own state: a name that starts
 * with `_` and does not end in `.jsonl`, so it is never taken for a resource; docs/storage.md).
 *
 * A keyed write's answer is made durable in the log itself, in the same append and the same sync as
 * the write (answer-lines.ts). A compaction rewrites the log without those lines, so before it
 * replaces the log this file is rewritten with every live answer (`snapshot`: tmp, fdatasync,
 * rename, directory sync). Start-up reads this file, then the log's answers lines, which are newer.
 * Storage is bounded: the file holds at most the in-memory table's live answers (time to live,
 * count, bytes: idempotency.ts), and the log's answers lines go with each compaction.
 *
 * ## Files written before answers moved into the log
 *
 * Earlier versions wrote a batch's answers here first, each naming the byte range and hash its
 * write's line would take in the log, then appended the log and synced both together. Such a file
 * still opens: of its last batch, the one that can be in doubt, start-up keeps exactly the answers
 * whose lines are in the log byte for byte (a `{"done":…}` line settles a batch), and the file is
 * then rewritten without ranges.
 */

/** The prefix of the file name (docs/storage.md). */
export const ANSWER_FILE_PREFIX = '_idempotency.';

/** Where the line of a write was to go in the log (files of earlier versions): [from, to) bytes, and a hash of those bytes. */
type LineRange = readonly [from: number, to: number, hash: string];

/** An answer as one line of the file holds it (`r`: only in files of earlier versions). */
type FileEntry = AnswerEntry & { readonly r?: LineRange };

/** Answers (`done` set: settled by itself), or how the last batch ended (files of earlier versions). */
type FileLine = { readonly a: readonly FileEntry[]; readonly done?: 'ok' } | { readonly done: 'ok' | 'failed' };

/** The hash a range carries: of the line's bytes, without its newline. */
export function lineHash(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('base64url').slice(0, 22);
}

/** The file of the log `logFile` (`<dir>/<name>.jsonl` → `<dir>/_idempotency.<name>`). */
export function answerFileOf(logFile: string): string {
  const base = path.basename(logFile).replace(/\.jsonl$/, '');
  return path.join(path.dirname(logFile), ANSWER_FILE_PREFIX + base);
}

export class AnswerFile {
  readonly #path: string;
  readonly #fs: StoreFs;
  readonly #sync: boolean;
  readonly #book: AnswerBook;
  /** The book holds answers this file does not (new ones, or the log's read at start-up): `snapshot` has work to do. */
  #behind = false;

  constructor(file: string, fsys: StoreFs, sync: boolean, book: AnswerBook) {
    this.#path = file;
    this.#fs = fsys;
    this.#sync = sync;
    this.#book = book;
  }

  get book(): AnswerBook {
    return this.#book;
  }

  /** Answers were put in the book that only the log holds (a batch's, or the log's at start-up). */
  gained(): void {
    this.#behind = true;
  }

  /**
   * Loads the answers into the book, keeping of a batch in doubt (files of earlier versions) only
   * those whose lines are in the log `logFile` (as loaded: `logSize` bytes), then rewrites the
   * file with the live answers alone.
   */
  async open(logFile: string, logSize: number): Promise<void> {
    const lines = await this.#read();
    if (lines === undefined) return; // no file: no key was ever used
    let doubt: readonly FileEntry[] = [];
    const keep = (entries: readonly FileEntry[]): void => {
      for (const e of entries) this.#book.put(e.k, rememberedOf(e));
    };
    lines.forEach((line, i) => {
      let parsed: FileLine;
      try {
        parsed = JSON.parse(line) as FileLine;
      } catch (error) {
        // The last line torn by a crash (mid-rewrite of an earlier version, or its batch's first step).
        if (i === lines.length - 1) return;
        throw new StoreOpenError(`${this.#path}:${i + 1}: ${(error as Error).message}`);
      }
      if ('a' in parsed) {
        keep(doubt);
        doubt = parsed.a;
        if (parsed.done === 'ok' || !parsed.a.some((e) => e.r !== undefined)) {
          keep(doubt);
          doubt = [];
        }
      } else if (parsed.done === 'ok') {
        keep(doubt);
        doubt = [];
      } else {
        doubt = [];
      }
    });
    keep(await this.#made(doubt, logFile, logSize));
    await this.#rewrite();
  }

  /**
   * Of the batch in doubt, the answers of writes whose lines are in the log. Its answers of writes
   * that wrote nothing (a 404, a 412) are dropped: whether the batch ended cannot be told, and a
   * retry processed afresh is what an answer never sent allows.
   */
  async #made(doubt: readonly FileEntry[], logFile: string, logSize: number): Promise<FileEntry[]> {
    const ranged = doubt.filter((e) => e.r !== undefined && e.r[1] <= logSize);
    if (ranged.length === 0) return [];
    const fd = await this.#fs.open(logFile, OPEN_READ);
    try {
      const made: FileEntry[] = [];
      for (const e of ranged) {
        const [from, to, hash] = e.r!;
        const buffer = Buffer.alloc(to - from);
        const n = await this.#fs.read(fd, buffer, 0, buffer.length, from);
        if (n === buffer.length && lineHash(buffer) === hash) made.push(e);
      }
      return made;
    } finally {
      await this.#fs.close(fd);
    }
  }

  async #read(): Promise<string[] | undefined> {
    let fd: number;
    try {
      fd = await this.#fs.open(this.#path, OPEN_READ);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new StoreOpenError(`${this.#path}: ${(error as Error).message}`);
    }
    try {
      const { size } = await this.#fs.fstat(fd);
      const buffer = Buffer.alloc(size);
      let done = 0;
      while (done < size) {
        const n = await this.#fs.read(fd, buffer, done, size - done, done);
        if (n <= 0) break;
        done += n;
      }
      const text = buffer.toString('utf8', 0, done);
      const lines = text.split('\n');
      if (lines[lines.length - 1] === '') lines.pop();
      return lines;
    } finally {
      await this.#fs.close(fd);
    }
  }

  /**
   * Before a compaction replaces the log (which then drops its answers lines): writes every live
   * answer here, durably. Rejects when it cannot, and the compaction must then not replace the log.
   */
  async snapshot(): Promise<void> {
    if (this.#behind) await this.#rewrite();
  }

  /** The file replaced by one of the live answers: temporary file, synced, renamed, directory synced. Rejects if any step fails. */
  async #rewrite(): Promise<void> {
    const entries = [...this.#book.entries()];
    const fsys = this.#fs;
    const tmp = `${this.#path}.tmp`;
    // One answer a line, no ranges: every answer kept is of a write known to be made.
    const bytes = Buffer.from(entries.map(([k, r]) => JSON.stringify({ a: [entryOf(k, r)] }) + '\n').join(''));
    const fd = await fsys.open(tmp, OPEN_TRUNCATE, 0o644);
    try {
      await writeAll(fsys, fd, bytes, 0);
      if (this.#sync) await fsys.fdatasync(fd);
    } finally {
      await fsys.close(fd);
    }
    await fsys.rename(tmp, this.#path);
    if (this.#sync) await syncDirectory(fsys, path.dirname(this.#path));
    this.#behind = false;
  }
}
