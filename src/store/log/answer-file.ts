import { createHash } from 'node:crypto';
import path from 'node:path';
import { sizeOf, type AnswerBook, type Remembered } from '../idempotency.js';
import { entryOf, entryText, HeldAnswer, rememberedOf, type AnswerEntry } from './answer-lines.js';
import { StoreOpenError } from '../store.js';
import { OPEN_READ, OPEN_READ_WRITE, OPEN_TRUNCATE, syncDirectory, writeAll, type StoreFs } from './store-fs.js';

/**
 * The remembered answers of one resource's keyed writes (`Idempotency-Key`) that its log no
 * longer holds, kept beside it as `_idempotency.<name>` (the store's own state: a name that starts
 * with `_` and does not end in `.jsonl`, so it is never taken for a resource; docs/storage.md).
 *
 * A keyed write's answer is made durable in the log itself, in the same append and the same sync as
 * the write (answer-lines.ts). A compaction rewrites the log without those lines, so before it
 * replaces the log the answers only the log holds are saved here (`save`), and synced. A save
 * appends them, one answer a line, in the order they were recorded; once the file holds more than
 * twice as many answers as the book (or more than four times the bytes the book counts for them:
 * escaped, an answer's line is larger than its estimate), it is rewritten instead with the live
 * answers alone (temporary file, fdatasync, rename, directory sync). So a compaction costs what the
 * answers recorded since the last one cost to write, not every answer held: rewriting all of them
 * (up to 100,000 answers, 64 MiB) at every compaction cost a keyed POST more than its own write
 * once the book was full. Start-up reads this file, then the log's answers lines, which are newer;
 * an answer recorded again (a later line of the same key) replaces the earlier one, as in the book.
 * Storage is bounded: the file holds at most twice the in-memory table's answers (time to live,
 * count, bytes: idempotency.ts), and the log's answers lines go with each compaction.
 *
 * The answers recorded since the last save wait for the next one in a list, bounded as the book is:
 * the book lets go of its oldest answers first (pushed out by newer ones, or expired), so while the
 * list holds more answers or bytes than the book, its front answer is looked up and let go if the
 * book no longer holds it: one lookup a put once the list spans more than the book, none before. A
 * save writes only live answers, and looks each up as it writes it, a chunk at a time, so that no
 * step holds the event loop for a walk of the whole list.
 *
 * A save runs beside the writes: the compaction starts it when it takes its snapshot of the log and
 * waits for it only before it swaps the files, so no batch waits for it. Saves run one at a time.
 * A save that fails puts its answers back for the next one, and the compaction does not swap; the
 * next save then rewrites the file whole (a failed append may have left a partial line).
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

/** Bytes of pending answers beyond twice the book's that `AnswerFile.put` lets wait before it drops those gone from the book. */
const PENDING_SLACK_BYTES = 1 << 20;

/** Answers stringified and written at a time: the event loop turns between chunks of a large save. */
const CHUNK = 1024;

/** An answer as one line of the file: `{"a":[<entry>]}` (the shape of files of earlier versions, without a range). */
function fileLine(key: string, remembered: Remembered): string {
  return `{"a":[${remembered instanceof HeldAnswer ? remembered.wholeText() : entryText(entryOf(key, remembered))}]}\n`;
}

/** The book's estimate of what an answer holds (`sizeOf`; a held one knows its own). */
function weightOf(remembered: Remembered): number {
  return remembered instanceof HeldAnswer ? remembered.weight : sizeOf(remembered);
}

/** Bytes an answer takes in the log's answers line, about (its weight, for one loaded at start-up: more, if anything). */
function logSizeOf(remembered: Remembered): number {
  return remembered instanceof HeldAnswer ? remembered.text.length + 1 : weightOf(remembered);
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
  /** Answers put in the book that only the log holds, oldest first from `#head`: what the next save writes. */
  #pending: ([string, Remembered] | undefined)[] = [];
  /** Where the list begins: the slots before it are answers let go. */
  #head = 0;
  /** Their bytes, by the book's estimate (`sizeOf`). */
  #pendingBytes = 0;
  /** Their bytes in the log's answers lines, about (`logSizeOf`). */
  #pendingLogBytes = 0;
  /** Whether the file is as this process last wrote it, `#lines` answers in `#bytes` bytes: false before the first write and after a failed one. */
  #known = false;
  #lines = 0;
  #bytes = 0;
  /** The last save: saves run one after another. */
  #saving: Promise<void> = Promise.resolve();

  constructor(file: string, fsys: StoreFs, sync: boolean, book: AnswerBook) {
    this.#path = file;
    this.#fs = fsys;
    this.#sync = sync;
    this.#book = book;
  }

  get book(): AnswerBook {
    return this.#book;
  }

  /** Answers recorded since the last save that the next one writes, or lets go if they have left the book by then. */
  get waiting(): number {
    return this.#pending.length - this.#head;
  }

  /**
   * Bytes of the log's answers lines that hold answers still kept, about: the answers recorded
   * since the last save that the book still holds. The rest of those lines' bytes is what a
   * compaction would free (jsonl-store.ts).
   */
  get liveLogBytes(): number {
    return this.#pendingLogBytes;
  }

  /** Records an answer in the book that only the log holds so far (a batch's, or the log's at start-up). */
  put(key: string, remembered: Remembered): void {
    const book = this.#book;
    const size = weightOf(remembered);
    book.put(key, remembered, size);
    if (book.maxAnswers === 0) return;
    const pending = this.#pending;
    pending.push([key, remembered]);
    this.#pendingBytes += size;
    this.#pendingLogBytes += logSizeOf(remembered);
    // Past what the book holds, the front answers it has let go of go too (they need no save).
    while (this.#head < pending.length && (pending.length - this.#head > book.size || this.#pendingBytes > book.weight)) {
      const [frontKey, front] = pending[this.#head]!;
      if (book.get(frontKey) === front) break;
      pending[this.#head++] = undefined;
      this.#pendingBytes -= weightOf(front);
      this.#pendingLogBytes -= logSizeOf(front);
    }
    if (this.#head > 1024 && this.#head * 2 > pending.length) {
      pending.splice(0, this.#head);
      this.#head = 0;
    }
    // A front answer still held with gone ones behind it: only an answer recorded again under its
    // key leaves one behind, which does not happen in one process's write order. Should it, past
    // twice the book's answers or bytes (and some slack) every one is looked up.
    if (pending.length - this.#head > 2 * book.size + 1024 || this.#pendingBytes > 2 * book.weight + PENDING_SLACK_BYTES) this.#dropGone();
  }

  /** Keeps of the pending answers those the book still holds. */
  #dropGone(): void {
    const book = this.#book;
    this.#pending = this.#taken().filter(([key, remembered]) => book.get(key) === remembered);
    this.#head = 0;
    this.#pendingBytes = 0;
    this.#pendingLogBytes = 0;
    for (const entry of this.#pending) {
      this.#pendingBytes += weightOf(entry![1]);
      this.#pendingLogBytes += logSizeOf(entry![1]);
    }
  }

  /** The pending answers, oldest first. */
  #taken(): [string, Remembered][] {
    return this.#pending.slice(this.#head) as [string, Remembered][];
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
   * Makes every answer the log holds so far durable here (before a compaction replaces the log,
   * which then drops its answers lines). Rejects when it cannot, and the compaction must then not
   * replace the log.
   */
  save(): Promise<void> {
    const run = this.#saving.then(() => this.#save());
    this.#saving = run.catch(() => {});
    return run;
  }

  async #save(): Promise<void> {
    const taken = this.#taken();
    if (taken.length === 0 && (this.#known || this.#book.size === 0)) return;
    const takenBytes = this.#pendingBytes;
    const takenLogBytes = this.#pendingLogBytes;
    this.#pending = [];
    this.#head = 0;
    this.#pendingBytes = 0;
    this.#pendingLogBytes = 0;
    try {
      const book = this.#book;
      if (!this.#known || this.#lines + taken.length > 2 * book.size || this.#bytes > 4 * book.weight) await this.#rewrite();
      else await this.#append(taken);
    } catch (error) {
      this.#pending = [...taken, ...this.#taken()];
      this.#head = 0;
      this.#pendingBytes += takenBytes;
      this.#pendingLogBytes += takenLogBytes;
      this.#known = false;
      throw error;
    }
  }

  /** Those of `entries` the book still holds, appended where the file ends, synced. */
  async #append(entries: readonly [string, Remembered][]): Promise<void> {
    if (entries.length === 0) return;
    const fsys = this.#fs;
    const fd = await fsys.open(this.#path, OPEN_READ_WRITE, 0o644);
    try {
      const { bytes, lines } = await this.#write(fd, this.#bytes, entries, true);
      if (this.#sync && lines > 0) await fsys.fdatasync(fd);
      this.#bytes += bytes;
      this.#lines += lines;
    } finally {
      await fsys.close(fd);
    }
  }

  /** The file replaced by one of the live answers: temporary file, synced, renamed, directory synced. Rejects if any step fails. */
  async #rewrite(): Promise<void> {
    const entries = [...this.#book.entries()];
    const fsys = this.#fs;
    const tmp = `${this.#path}.tmp`;
    const fd = await fsys.open(tmp, OPEN_TRUNCATE, 0o644);
    let bytes: number;
    try {
      ({ bytes } = await this.#write(fd, 0, entries, false));
      if (this.#sync) await fsys.fdatasync(fd);
    } finally {
      await fsys.close(fd);
    }
    await fsys.rename(tmp, this.#path);
    if (this.#sync) await syncDirectory(fsys, path.dirname(this.#path));
    this.#known = true;
    this.#lines = entries.length;
    this.#bytes = bytes;
  }

  /**
   * Writes `entries` (with `onlyLive`, those the book still holds, looked up as they are written),
   * one a line, from `position`, `CHUNK` at a time; resolves with the bytes and lines written.
   */
  async #write(fd: number, position: number, entries: readonly [string, Remembered][], onlyLive: boolean): Promise<{ bytes: number; lines: number }> {
    const book = this.#book;
    let at = position;
    let lines = 0;
    for (let i = 0; i < entries.length; i += CHUNK) {
      let text = '';
      for (let j = i; j < Math.min(i + CHUNK, entries.length); j++) {
        const [key, remembered] = entries[j]!;
        if (onlyLive && book.get(key) !== remembered) continue;
        text += fileLine(key, remembered);
        lines++;
      }
      if (text === '') continue;
      const bytes = Buffer.from(text);
      await writeAll(this.#fs, fd, bytes, at);
      at += bytes.length;
    }
    return { bytes: at - position, lines };
  }
}
