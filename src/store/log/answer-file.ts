import { createHash } from 'node:crypto';
import path from 'node:path';
import { currentLedgerKey } from '../../conventions/idempotency-key.js';
import { AnswerBook, type AnswerBookOptions, type Remembered } from '../idempotency.js';
import { rememberedOf, type AnswerEntry, type HeldAnswer } from './answer-lines.js';
import { AnswerRing } from './answer-ring.js';
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
 * The answers recorded since the last save are the ring's from its save mark on (answer-ring.ts):
 * those the ring has let go of meanwhile (pushed out by newer ones, or expired) need no save. A
 * save writes only live answers, reading the ring a chunk at a time, so that no step holds the
 * event loop for a walk of all of them.
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

/** Answers stringified and written at a time: the event loop turns between chunks of a large save. */
const CHUNK = 1024;

/** An answer as one line of the file: `{"a":[<entry>]}` (the shape of files of earlier versions, without a range), its body whole. */
function fileLine(held: HeldAnswer): string {
  return `{"a":[${held.wholeText()}]}\n`;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether a parsed line has the shape `FileLine` (what `rememberedOf` and the batch in doubt read). */
function isFileLine(value: unknown): value is FileLine {
  if (!isObject(value)) return false;
  if (value.done !== undefined && value.done !== 'ok' && value.done !== 'failed') return false;
  if (value.a === undefined) return value.done !== undefined;
  return (
    Array.isArray(value.a) &&
    value.a.every(
      (e: unknown) =>
        isObject(e) &&
        typeof e.k === 'string' &&
        typeof e.f === 'string' &&
        typeof e.t === 'number' &&
        typeof e.s === 'number' &&
        isObject(e.h) &&
        (e.b === undefined || typeof e.b === 'string') &&
        (e.r === undefined || (Array.isArray(e.r) && e.r.length === 3 && typeof e.r[0] === 'number' && typeof e.r[1] === 'number' && typeof e.r[2] === 'string')),
    )
  );
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
  /** Where the book keeps its answers; undefined where it keeps none (`maxAnswers` 0). */
  readonly #ring: AnswerRing | undefined;
  /** Whether the file is as this process last wrote it, `#lines` answers in `#bytes` bytes: false before the first write and after a failed one. */
  #known = false;
  #lines = 0;
  #bytes = 0;
  /** The last save: saves run one after another. */
  #saving: Promise<void> = Promise.resolve();

  constructor(file: string, fsys: StoreFs, sync: boolean, options: AnswerBookOptions = {}) {
    this.#path = file;
    this.#fs = fsys;
    this.#sync = sync;
    let ring: AnswerRing | undefined;
    this.#book = new AnswerBook(options, (maxAnswers, maxBytes) => (ring = new AnswerRing({ maxAnswers, maxBytes })));
    this.#ring = ring;
  }

  /** The answers, kept in the ring. */
  get book(): AnswerBook {
    return this.#book;
  }

  /** Answers recorded since the last save that the next one writes, or that leave the ring first. */
  get waiting(): number {
    return this.#ring?.unsaved ?? 0;
  }

  /**
   * Bytes of the log's answers lines that hold answers still kept, about: the answers recorded
   * since the last save that the ring still holds. The rest of those lines' bytes is what a
   * compaction would free (jsonl-store.ts).
   */
  get liveLogBytes(): number {
    return this.#ring?.unsavedBytes ?? 0;
  }

  /** Records an answer in the book that only the log holds so far (a batch's, or the log's at start-up). */
  put(key: string, remembered: Remembered): void {
    // The ring measures an answer by its bytes: no estimate to make.
    this.#book.put(key, remembered, 0);
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
    // A key an earlier version made is held, and written back, under this version's name for it.
    const keep = (entries: readonly FileEntry[]): void => {
      for (const e of entries) this.put(currentLedgerKey(e.k), rememberedOf(e));
    };
    lines.forEach((line, i) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        // The last line torn by a crash (mid-rewrite of an earlier version, or its batch's first step).
        if (i === lines.length - 1) return;
        throw new StoreOpenError(`${this.#path}:${i + 1}: ${(error as Error).message}`);
      }
      // Valid JSON of another shape is no torn write: the file is damaged, and says where.
      if (!isFileLine(value)) throw new StoreOpenError(`${this.#path}:${i + 1}: not a line of remembered answers`);
      const parsed = value;
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
    await this.#rewrite(this.#ring?.takeUnsaved().to ?? 0);
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
    const ring = this.#ring;
    if (ring === undefined || (ring.unsaved === 0 && (this.#known || this.#book.size === 0))) return;
    const taken = ring.takeUnsaved();
    try {
      const book = this.#book;
      if (!this.#known || this.#lines + taken.count > 2 * book.size || this.#bytes > 4 * book.weight) await this.#rewrite(taken.to);
      else await this.#append(taken.from, taken.to);
    } catch (error) {
      ring.restoreUnsaved(taken.from);
      this.#known = false;
      throw error;
    }
  }

  /** The live answers recorded at positions [from, to) of the ring, appended where the file ends, synced. */
  async #append(from: number, to: number): Promise<void> {
    const fsys = this.#fs;
    const fd = await fsys.open(this.#path, OPEN_READ_WRITE, 0o644);
    try {
      const { bytes, lines } = await this.#write(fd, this.#bytes, from, to);
      if (this.#sync && lines > 0) await fsys.fdatasync(fd);
      this.#bytes += bytes;
      this.#lines += lines;
    } catch (error) {
      // What a full disk let through goes (best effort): held, it would keep the disk full.
      await fsys.ftruncate(fd, this.#bytes).catch(() => {});
      throw error;
    } finally {
      await fsys.close(fd);
    }
  }

  /** The file replaced by one of the live answers recorded before position `to`: temporary file, synced, renamed, directory synced. Rejects if any step fails. */
  async #rewrite(to: number): Promise<void> {
    const fsys = this.#fs;
    const tmp = `${this.#path}.tmp`;
    const fd = await fsys.open(tmp, OPEN_TRUNCATE, 0o644);
    let bytes: number;
    let lines: number;
    try {
      ({ bytes, lines } = await this.#write(fd, 0, this.#ring?.head ?? 0, to));
      if (this.#sync) await fsys.fdatasync(fd);
    } catch (error) {
      await fsys.close(fd).catch(() => {});
      // Nothing left that no one would read: a partial copy of the answers (megabytes) kept the
      // disk that had just filled full, and failed the log's writes that would have fitted.
      await fsys.unlink(tmp).catch(() => {});
      throw error;
    }
    await fsys.close(fd);
    await fsys.rename(tmp, this.#path);
    if (this.#sync) await syncDirectory(fsys, path.dirname(this.#path));
    this.#known = true;
    this.#lines = lines;
    this.#bytes = bytes;
  }

  /**
   * Writes the live answers at positions [from, to) of the ring, one a line, from `position` in
   * the file, `CHUNK` at a time (each read from the ring as it is written: what the ring lets go
   * of meanwhile is not written); resolves with the bytes and lines written.
   */
  async #write(fd: number, position: number, from: number, to: number): Promise<{ bytes: number; lines: number }> {
    const ring = this.#ring;
    let at = position;
    let lines = 0;
    for (let cursor = from; ring !== undefined && cursor < to; ) {
      let text = '';
      cursor = ring.collect(cursor, to, CHUNK, (held) => {
        text += fileLine(held);
        lines++;
      });
      if (text === '') continue;
      const bytes = Buffer.from(text);
      await writeAll(this.#fs, fd, bytes, at);
      at += bytes.length;
    }
    return { bytes: at - position, lines };
  }
}
