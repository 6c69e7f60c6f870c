import { MaterialisedIndex } from '../index/materialised-index.js';
import {
  StoreOpenError,
  type Change,
  type DeleteCheck,
  type EntityRecord,
  type LocalStore,
  type MaybePromise,
  type QueryResult,
  type StoreQuery,
  type StoredEntity,
} from '../store.js';
import { WriteBatcher } from '../write-batcher.js';
import { AnswerBook, type AnswerBookOptions, type Claim, type IdempotencyLedger, type KeyedWrite } from '../idempotency.js';
import { AnswerFile, answerFileOf, lineHash, type LineRange, type Recorded } from './answer-file.js';
import { Compaction, TMP_SUFFIX } from './jsonl-compaction.js';
import { WrittenEntity, type LogEntity } from './jsonl-entity.js';
import { JsonlFile } from './jsonl-file.js';
import { loadLog, type LoadResult } from './jsonl-load.js';
import { appendDurably, nodeFs, type StoreFs } from './store-fs.js';

/** When to compact: the file holds more than `ratio` lines per live entity and is over `minBytes`. */
export interface CompactionPolicy {
  /** Default 2 (issue 3: "more than twice the lines it needs"). */
  ratio?: number;
  /** Default 1 MiB: small files are cheap to load whatever their waste. */
  minBytes?: number;
  /** Default true; false compacts only on `compact()`. */
  auto?: boolean;
}

export interface JsonlStoreOptions {
  /** The log file, `<dir>/<name>.jsonl`; created on the first write when missing. */
  file: string;
  /** `full` (default): acknowledge a write once fdatasync returns. `none`: never sync. */
  durability?: 'full' | 'none';
  /** Move malformed lines to `<file>.rejected` instead of refusing to open. */
  repair?: boolean;
  warn?: (message: string) => void;
  /** File-system seam for fault injection. */
  fs?: StoreFs;
  compaction?: CompactionPolicy;
  /** Read size at start-up (tests use small chunks to cross chunk boundaries). */
  loadChunkBytes?: number;
  /** Told of durable batches and compactions, for metrics; never awaited, never in the way. */
  observer?: StoreObserver;
  /** The remembered answers of `Idempotency-Key` writes: clock, time to live, bound (idempotency.ts). */
  idempotency?: AnswerBookOptions;
}

/** Hooks for metrics. */
export interface StoreObserver {
  /** A batch of `lines` lines reached the disk; `syncSeconds` is what its write and fdatasync took (0 without sync). */
  committed?(lines: number, syncSeconds: number): void;
  /** A compaction ended, rewritten or not. */
  compacted?(ok: boolean): void;
}

/** A `Store` kept in an append-only JSON-lines file (contract section 8). */
export interface JsonlStore extends LocalStore {
  /** Bytes of the log file. */
  readonly fileSize: number;
  /** Lines of the log file. */
  readonly lineCount: number;
  /** Rewrites the file to one line per live entity now; resolves false if it could not. */
  compact(): Promise<boolean>;
  /** Resolves once no write and no compaction is under way. */
  settled(): Promise<void>;
  /** Always kept: the answers of keyed writes, durable with them (answer-file.ts). */
  readonly idempotency: IdempotencyLedger;
}

/** Suffixes of the files a store keeps beside its log (contract section 8, issue 3). */
export { TMP_SUFFIX } from './jsonl-compaction.js';
export const REJECTED_SUFFIX = '.rejected';

/**
 * Opens (loading and indexing) the log at `options.file`. Throws `StoreOpenError` when a line
 * other than the last is malformed (unless `repair`) or the file cannot be read.
 */
export async function openJsonlStore(options: JsonlStoreOptions): Promise<JsonlStore> {
  const store = new JsonlLogStore(options);
  await store.open();
  return store;
}

/** The durable log (the file) feeding the materialised index, with group commit and compaction. */
class JsonlLogStore implements JsonlStore {
  readonly #path: string;
  readonly #fs: StoreFs;
  readonly #repair: boolean;
  readonly #warn: (message: string) => void;
  readonly #ratio: number;
  readonly #minBytes: number;
  readonly #autoCompact: boolean;
  readonly #loadChunkBytes: number | undefined;
  readonly #index = new MaterialisedIndex<LogEntity>();
  readonly #observer: StoreObserver | undefined;
  readonly #file: JsonlFile;
  readonly #writes: WriteBatcher<LogEntity>;
  readonly #compaction: Compaction;
  /** The answers of keyed writes, made durable with their writes (answer-file.ts). */
  readonly #answers: AnswerFile;
  /** After a failed compaction, wait for the file to grow before trying again. */
  #compactAfterLines = 0;
  #open = false;
  #closing: Promise<void> | undefined;

  constructor(options: JsonlStoreOptions) {
    this.#path = options.file;
    this.#fs = options.fs ?? nodeFs;
    this.#repair = options.repair ?? false;
    this.#warn = options.warn ?? (() => {});
    this.#ratio = options.compaction?.ratio ?? 2;
    this.#minBytes = options.compaction?.minBytes ?? 1024 * 1024;
    this.#autoCompact = options.compaction?.auto ?? true;
    this.#loadChunkBytes = options.loadChunkBytes;
    this.#file = new JsonlFile(this.#path, this.#fs, options.durability !== 'none');
    const file = this.#file;
    const index = this.#index;
    const observer = (this.#observer = options.observer);
    const durable = options.durability !== 'none';
    /** A rewrite of the answers file is queued or running: one at a time. */
    let rewriting = false;
    const answers = (this.#answers = new AnswerFile(answerFileOf(this.#path), this.#fs, durable, new AnswerBook(options.idempotency)));
    this.#writes = new WriteBatcher<LogEntity>(
      {
        get: (id) => index.get(id),
        entity: (record, n) => new WrittenEntity(record.id, JSON.stringify(record), file.lines + n),
        answers: answers.book,
        append: async (changes, keyed) => {
          const lines = changes.map((c) => ('deleted' in c ? `{"id":${JSON.stringify(c.deleted)},"_deleted":true}` : c.json));
          // The answers first, naming where their writes' lines go (answer-file.ts explains why).
          const starts = keyed.length === 0 ? [] : lineStarts(file, lines);
          const recorded = keyed.map((k): Recorded => ({ key: k.key, remembered: k.remembered, range: k.change === undefined ? undefined : rangeOf(lines[k.change]!, starts[k.change]!) }));
          await answers.before(recorded, lines.length > 0);
          let ok = false;
          try {
            if (lines.length > 0) {
              const started = performance.now();
              await file.append(lines);
              observer?.committed?.(changes.length, durable ? (performance.now() - started) / 1000 : 0);
            }
            ok = true;
          } finally {
            await answers.after(recorded, ok);
          }
        },
        apply: (change, record) => {
          if ('deleted' in change) index.remove(change.deleted);
          else index.put(change, undefined, record);
        },
        afterBatch: () => {
          this.#maybeCompact();
          if (!answers.wasteful || rewriting || this.#closing) return;
          rewriting = true;
          void this.#writes
            .task(() => answers.compact())
            .catch((error: unknown) => this.#warn(`${this.#path}: rewriting its idempotency answers failed: ${(error as Error).message}`))
            .finally(() => (rewriting = false));
        },
      },
      this.#path,
      this.#warn,
    );
    // The log's bytes move in the swap: no answer may still be waiting for them (answer-file.ts).
    this.#compaction = new Compaction(file, this.#fs, (run) => this.#writes.task(async () => {
      await answers.settle();
      await run();
    }), this.#warn);
  }

  // ---- reads: memory only ----

  get size(): number {
    return this.#index.size;
  }
  get revision(): string {
    return this.#index.revision;
  }
  get ready(): boolean {
    return this.#open;
  }
  get fileSize(): number {
    return this.#file.size;
  }
  get lineCount(): number {
    return this.#file.lines;
  }
  get(id: string): StoredEntity | undefined {
    return this.#index.get(id);
  }
  query(query: StoreQuery): MaybePromise<QueryResult> {
    return this.#index.query(query);
  }
  values(): IterableIterator<StoredEntity> {
    return this.#index.values();
  }

  // ---- opening ----

  async open(): Promise<void> {
    const fsys = this.#fs;
    // A temporary file is a compaction that did not finish: the log itself is still whole.
    try {
      await fsys.unlink(this.#path + TMP_SUFFIX);
      this.#warn(`${this.#path}${TMP_SUFFIX}: removed an unfinished compaction`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw openError(this.#path + TMP_SUFFIX, error);
    }
    let loaded: LoadResult;
    try {
      loaded = await loadLog(fsys, this.#path, this.#index, this.#repair, this.#loadChunkBytes);
    } catch (error) {
      throw error instanceof StoreOpenError ? error : openError(this.#path, error);
    }
    const file = this.#file;
    file.lines = loaded.lines;
    file.size = loaded.size;
    file.needsNewline = loaded.needsNewline;
    if (loaded.exists) {
      try {
        await file.open();
      } catch (error) {
        throw openError(this.#path, error);
      }
    }
    try {
      if (loaded.torn) await this.#dropTornTail(loaded.torn);
      if (loaded.rejected.length > 0) await this.#setAsideRejected(loaded.rejected);
      await this.#answers.open(this.#path, file.size);
    } catch (error) {
      await file.closeFd();
      throw error instanceof StoreOpenError ? error : openError(this.#path, error);
    }
    this.#open = true;
  }

  /** Truncates a torn final line away, keeping its bytes in the `.rejected` file. */
  async #dropTornTail(torn: NonNullable<LoadResult['torn']>): Promise<void> {
    const rejectedFile = this.#path + REJECTED_SUFFIX;
    await appendDurably(this.#fs, rejectedFile, Buffer.concat([torn.bytes, Buffer.from('\n')]));
    await this.#file.truncate(torn.offset);
    this.#warn(
      `${this.#path}: torn final line ${torn.line} at byte ${torn.offset} (${torn.bytes.length} bytes, ` +
        `an interrupted write) truncated; its bytes are kept in ${rejectedFile}`,
    );
  }

  /** `--repair`: moves malformed lines to `.rejected`, then rewrites the log without them. */
  async #setAsideRejected(rejected: LoadResult['rejected']): Promise<void> {
    const rejectedFile = this.#path + REJECTED_SUFFIX;
    await appendDurably(this.#fs, rejectedFile, Buffer.concat(rejected.flatMap((r) => [r.bytes, Buffer.from('\n')])));
    for (const r of rejected) this.#warn(`${this.#path}:${r.line}: ${r.reason} — moved to ${rejectedFile}`);
    // No write can be running yet: the snapshot matches the file.
    if (!(await this.#startCompaction())) {
      throw new StoreOpenError(`${this.#path}: could not rewrite the file without its malformed lines`);
    }
  }

  // ---- writes: serialised, group-committed ----

  create(record: EntityRecord, keyed?: KeyedWrite): Promise<StoredEntity> {
    return this.#writes.create(record, keyed);
  }

  update(id: string, change: Change, keyed?: KeyedWrite): Promise<StoredEntity | undefined> {
    return this.#writes.update(id, change, keyed);
  }

  readonly idempotency: IdempotencyLedger = {
    claim: (key: string, fingerprint: string): Claim => this.#answers.book.claim(key, fingerprint),
    remember: (keyed: KeyedWrite): Promise<void> => this.#writes.remember(keyed),
  };

  delete(id: string, check?: DeleteCheck): Promise<boolean> {
    return this.#writes.delete(id, check);
  }

  // ---- compaction ----

  #maybeCompact(): void {
    if (!this.#autoCompact || this.#compaction.running || this.#closing) return;
    const file = this.#file;
    if (file.size < this.#minBytes || file.lines <= this.#ratio * this.#index.size) return;
    if (file.lines < this.#compactAfterLines) return;
    void this.#startCompaction();
  }

  compact(): Promise<boolean> {
    if (!this.#open || this.#closing) return Promise.resolve(false);
    const running = this.#compaction.running;
    if (running) return running;
    // Start it between batches, so that the snapshot matches the file.
    return new Promise<boolean>((resolve) => {
      // Not awaited inside the task: the compaction's own swap step has to run on the same queue.
      void this.#writes.task(async () => {
        void (this.#compaction.running ?? this.#startCompaction()).then(resolve);
      });
    });
  }

  async settled(): Promise<void> {
    while (this.#writes.busy || this.#compaction.running) {
      await this.#writes.busy;
      await this.#compaction.running;
    }
  }

  /** Must be called between batches: the snapshot must describe exactly the acknowledged bytes. */
  async #startCompaction(): Promise<boolean> {
    const file = this.#file;
    const done = await this.#compaction.start({ lines: Array.from(this.#index.values()), size: file.size, fileLines: file.lines });
    this.#observer?.compacted?.(done);
    if (!done) this.#compactAfterLines = Math.ceil(file.lines * 1.5);
    // Writes went on during the compaction: if they alone took the file past the ratio again, the
    // next compaction starts now rather than after some later write (whenever that comes).
    else if (!this.#closing) void this.#writes.task(async () => this.#maybeCompact());
    return done;
  }

  // ---- closing ----

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#writes.close();
    this.#compaction.abort();
    await this.#compaction.running;
    while (this.#writes.busy) await this.#writes.busy;
    this.#open = false;
    await this.#answers.close(this.#warn);
    await this.#file.close(this.#warn);
  }
}

/** Where each of `lines` will start once appended to `file` (as `JsonlFile.append` lays them out). */
function lineStarts(file: JsonlFile, lines: readonly string[]): number[] {
  let at = file.size + (file.needsNewline ? 1 : 0);
  return lines.map((line) => {
    const start = at;
    at += Buffer.byteLength(line) + 1;
    return start;
  });
}

/** The range a line starting at `start` takes, with its hash. */
function rangeOf(line: string, start: number): LineRange {
  const bytes = Buffer.from(line);
  return [start, start + bytes.length, lineHash(bytes)];
}

function openError(file: string, error: unknown): StoreOpenError {
  return new StoreOpenError(`${file}: ${(error as Error).message}`);
}
