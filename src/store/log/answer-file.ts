import { createHash } from 'node:crypto';
import path from 'node:path';
import type { AnswerBook, Remembered, StoredAnswer } from '../idempotency.js';
import { StoreOpenError } from '../store.js';
import { JsonlFile } from './jsonl-file.js';
import { OPEN_READ, OPEN_TRUNCATE, writeAll, type StoreFs } from './store-fs.js';

/**
 * The remembered answers of one resource's keyed writes (`Idempotency-Key`), kept beside its log as
 * `_idempotency.<name>` (the store's own state: a name that starts with `_` and does not end in
 * `.jsonl`, so it is never taken for a resource; docs/storage.md).
 *
 * ## Why a replayed answer is never separated from its write, and no key writes twice
 *
 * A batch of the write order that holds keyed writes is made durable in one step of two files,
 * whose writes are ordered and whose syncs run together:
 *
 * 1. one line written here holding every answer of the batch; each answer of a write that changes
 *    the log names the byte range its line will take in the log and a hash of that line;
 * 2. the batch's lines written to the log, once step 1's write has returned;
 * 3. fdatasync of both files at the same time (jsonl-file.ts `append` with `durable` beside it). Only
 *    when both succeed is any write of the batch acknowledged, or its answer put in the in-memory
 *    table that replays read; if either fails, the log's lines are cut off again and the batch fails.
 *
 * A process that dies (`kill -9`) loses nothing that was written: the page cache keeps it. Since
 * the answer's bytes are written before the log's, a process crash leaves the answer with its
 * write, the answer alone, or neither — never the write alone. So an answer found here describes a
 * write that is in the log, or one that may not have reached it: a step 2 cut off by a crash, or
 * one that failed. A failure is written here (`{"done":"failed"}`) before the log is appended to
 * again, so at any time only the *last* batch line can be in doubt — every earlier one was followed
 * by a later line, written only after its log append had succeeded or its failure had been
 * recorded. On start-up the batch in doubt keeps exactly the answers whose lines are in the log,
 * byte for byte: a write that was made replays, one that was not is processed afresh (never both,
 * never neither). The log's compaction renumbers bytes, so before it replaces the log the batch in
 * doubt is settled here (`{"done":"ok"}`) first.
 *
 * An acknowledged write's answer is on disk (step 3 finished for both files), so it replays after
 * any crash, of the process or of the machine. A key cannot write twice: a retry is decided in the
 * write order against every answer already recorded (write-rules.ts), and while a request holds its
 * key no other with that key runs (`AnswerBook.claim`); after a process crash, start-up has
 * recovered every answer of a made write. The one case the shared sync leaves open is a machine
 * crash (power loss) during step 3 that keeps the log's new lines but not this file's: a write
 * never acknowledged is then made without its answer, and a retry of it is processed afresh.
 * (Syncing this file before writing the log closes that case too, at the price of a second
 * fdatasync in series on every keyed batch: a keyed POST at 0.53–0.77× an unkeyed one, bench/NOTES.md.)
 *
 * Storage is bounded: the file is rewritten with only the live answers (tmp, fdatasync, rename,
 * directory sync) at start-up and whenever it holds more than twice their lines.
 */

/** The prefix of the file name (docs/storage.md). */
export const ANSWER_FILE_PREFIX = '_idempotency.';

/** Where the line of a write is in the log: [from, to) bytes, and a hash of those bytes. */
export type LineRange = readonly [from: number, to: number, hash: string];

/** An answer to record with a batch, and where its write's line goes (none: it wrote nothing). */
export interface Recorded {
  readonly key: string;
  readonly remembered: Remembered;
  readonly range: LineRange | undefined;
}

/** An answer as one line of the file holds it. */
interface AnswerEntry {
  readonly k: string;
  readonly f: string;
  readonly t: number;
  readonly s: number;
  readonly h: Readonly<Record<string, string>>;
  readonly b: string;
  readonly r?: LineRange;
}

/** A batch's answers (`done` set: it appended nothing to the log, so it is settled by itself), or how the last batch ended. */
type FileLine = { readonly a: readonly AnswerEntry[]; readonly done?: 'ok' } | { readonly done: 'ok' | 'failed' };

const DONE_OK = JSON.stringify({ done: 'ok' });
const DONE_FAILED = JSON.stringify({ done: 'failed' });

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
  readonly #file: JsonlFile;
  /** The last line on disk is a batch whose log append succeeded, with no `done` after it. */
  #unsettled = false;
  /** A batch's log append failed and that is not yet on disk here: nothing may be appended to the log before it is. */
  #failurePending = false;

  constructor(file: string, fsys: StoreFs, sync: boolean, book: AnswerBook) {
    this.#path = file;
    this.#fs = fsys;
    this.#sync = sync;
    this.#book = book;
    this.#file = new JsonlFile(file, fsys, sync);
  }

  get book(): AnswerBook {
    return this.#book;
  }

  /**
   * Loads the answers, keeping of the batch in doubt only those whose lines are in the log
   * `logFile` (as loaded: `logSize` bytes), then rewrites the file with the live answers alone.
   */
  async open(logFile: string, logSize: number): Promise<void> {
    const lines = await this.#read();
    if (lines === undefined) return; // no file: no key was ever used
    let doubt: readonly AnswerEntry[] = [];
    const keep = (entries: readonly AnswerEntry[]): void => {
      for (const e of entries) this.#book.put(e.k, { fingerprint: e.f, at: e.t, answer: { status: e.s, headers: e.h, body: e.b } });
    };
    lines.forEach((line, i) => {
      let parsed: FileLine;
      try {
        parsed = JSON.parse(line) as FileLine;
      } catch (error) {
        // The last line torn by a crash: its batch's log append never began.
        if (i === lines.length - 1) return;
        throw new StoreOpenError(`${this.#path}:${i + 1}: ${(error as Error).message}`);
      }
      if ('a' in parsed) {
        keep(doubt);
        doubt = parsed.a;
        if (parsed.done === 'ok') {
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
  async #made(doubt: readonly AnswerEntry[], logFile: string, logSize: number): Promise<AnswerEntry[]> {
    const ranged = doubt.filter((e) => e.r !== undefined && e.r[1] <= logSize);
    if (ranged.length === 0) return [];
    const fd = await this.#fs.open(logFile, OPEN_READ);
    try {
      const made: AnswerEntry[] = [];
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
   * Step 1 of a batch: writes its answers here (a batch that `appendsToLog` nothing is settled by
   * this line alone, and synced now). Rejects, and the batch must then fail, when it cannot. Writes
   * a pending failure first: every batch calls it, so no log append precedes that. A batch that
   * appends to the log leaves the line unsynced: the log's append runs `durable` beside its own sync.
   */
  async before(recorded: readonly Recorded[], appendsToLog: boolean): Promise<void> {
    const lines: string[] = [];
    if (this.#failurePending) lines.push(DONE_FAILED);
    if (recorded.length > 0) lines.push(JSON.stringify(appendsToLog ? { a: recorded.map(entryOf) } : { a: recorded.map(entryOf), done: 'ok' }));
    if (lines.length === 0) return;
    if (appendsToLog) {
      await this.#file.write(lines);
      return;
    }
    await this.#file.append(lines);
    this.#failurePending = false;
    this.#unsettled = false;
  }

  /**
   * Makes durable what `before` wrote for a batch that appends to the log; the log runs it beside
   * its own fdatasync (jsonl-file.ts `append`), and counts its lines only if both succeed.
   */
  readonly durable = async (): Promise<void> => {
    if (!this.#file.written) return;
    // On failure the answers line stays until the log has cut its lines off (a process that dies
    // in between must not find the write without its answer); `after` then writes over it.
    await this.#file.commit(undefined, true);
    this.#failurePending = false;
    this.#unsettled = false;
  };

  /** After step 3: the answers go live, or the failure is recorded before the log is appended to again. */
  async after(recorded: readonly Recorded[], ok: boolean): Promise<void> {
    if (ok) {
      for (const r of recorded) this.#book.put(r.key, r.remembered);
      if (recorded.some((r) => r.range !== undefined)) this.#unsettled = true;
      return;
    }
    if (recorded.length === 0) return;
    this.#failurePending = true;
    // Best effort now; `before` (any batch's) writes it first otherwise.
    await this.before([], false).catch(() => {});
  }

  /** Before the log's bytes move (its compaction) or the store closes: no batch left in doubt here. */
  async settle(): Promise<void> {
    if (this.#failurePending) await this.before([], false);
    if (!this.#unsettled) return;
    await this.#file.append([DONE_OK]);
    this.#unsettled = false;
  }

  /** True when the file holds more than twice the lines its live answers need. */
  get wasteful(): boolean {
    return this.#file.lines > 64 && this.#file.lines > 2 * this.#book.size;
  }

  /** Rewrites the file with the live answers alone (between batches: nothing is in doubt). */
  async compact(): Promise<void> {
    await this.settle();
    await this.#rewrite();
  }

  async #rewrite(): Promise<void> {
    const entries = [...this.#book.entries()];
    const fsys = this.#fs;
    const tmp = `${this.#path}.tmp`;
    // One answer a line, no ranges: every answer kept is of a write known to be made.
    const text = entries.map(([k, r]) => JSON.stringify({ a: [entryOf({ key: k, remembered: r, range: undefined })] }) + '\n').join('');
    const bytes = Buffer.from(text);
    const fd = await fsys.open(tmp, OPEN_TRUNCATE, 0o644);
    try {
      await writeAll(fsys, fd, bytes, 0);
      if (this.#sync) await fsys.fdatasync(fd);
      await fsys.rename(tmp, this.#path);
    } catch (error) {
      await fsys.close(fd).catch(() => {});
      throw error;
    }
    // It syncs the directory, so the rename is durable (or the next append retries that).
    await this.#file.replace(fd, bytes.length, entries.length, () => {});
    this.#unsettled = false;
  }

  async close(warn: (message: string) => void): Promise<void> {
    await this.settle().catch((error: unknown) => warn(`${this.#path}: ${(error as Error).message}`));
    await this.#file.close(warn);
  }
}

function entryOf(r: Recorded): AnswerEntry {
  const { answer }: { answer: StoredAnswer } = r.remembered;
  const entry = { k: r.key, f: r.remembered.fingerprint, t: r.remembered.at, s: answer.status, h: answer.headers, b: answer.body };
  return r.range === undefined ? entry : { ...entry, r: r.range };
}
