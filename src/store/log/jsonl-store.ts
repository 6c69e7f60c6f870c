import path from 'node:path';
import { MaterialisedIndex } from '../index/materialised-index.js';
import { WrittenEntity, type LogEntity } from './jsonl-entity.js';
import { loadLog, type LoadResult } from './jsonl-load.js';
import { checkRecord } from '../memory-store.js';
import {
  appendDurably,
  nodeFs,
  OPEN_READ_WRITE,
  OPEN_TRUNCATE,
  syncDirectory,
  writeAll,
  type StoreFs,
} from './store-fs.js';
import {
  StoreConflictError,
  StoreOpenError,
  StoreWriteError,
  type Change,
  type DeleteCheck,
  type EntityRecord,
  type MaybePromise,
  type QueryResult,
  type LocalStore,
  type StoreQuery,
  type StoredEntity,
} from '../store.js';

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
}

/** Suffixes of the files a store keeps beside its log (contract section 8, issue 3). */
export const TMP_SUFFIX = '.tmp';
export const REJECTED_SUFFIX = '.rejected';

const COMPACT_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * Opens (loading and indexing) the log at `options.file`. Throws `StoreOpenError` when a line
 * other than the last is malformed (unless `repair`) or the file cannot be read.
 */
export async function openJsonlStore(options: JsonlStoreOptions): Promise<JsonlStore> {
  const store = new JsonlLogStore(options);
  await store.open();
  return store;
}

type Reject = (error: unknown) => void;
type WriteOp =
  | { kind: 'create'; record: EntityRecord; resolve: (entity: StoredEntity) => void; reject: Reject }
  | { kind: 'update'; id: string; change: Change; resolve: (entity: StoredEntity | undefined) => void; reject: Reject }
  | { kind: 'delete'; id: string; check: DeleteCheck | undefined; resolve: (deleted: boolean) => void; reject: Reject };
/** An exclusive step run between batches, while no write is in flight (compaction's swap). */
type TaskOp = { kind: 'task'; run: () => Promise<void> };
type Op = WriteOp | TaskOp;

class JsonlLogStore implements JsonlStore {
  readonly #file: string;
  readonly #dir: string;
  readonly #fs: StoreFs;
  readonly #sync: boolean;
  readonly #repair: boolean;
  readonly #warn: (message: string) => void;
  readonly #ratio: number;
  readonly #minBytes: number;
  readonly #autoCompact: boolean;
  readonly #loadChunkBytes: number | undefined;
  readonly #index = new MaterialisedIndex<LogEntity>();

  #fd: number | undefined;
  /** Bytes of acknowledged lines; anything beyond is the debris of a failed write. */
  #size = 0;
  #lines = 0;
  #needsNewline = false;
  /** The file may hold bytes past `#size` that must go before the next append. */
  #dirtyTail = false;
  /** The directory entry of the file (created or renamed) is not yet known to be durable. */
  #dirSyncNeeded = false;

  #queue: Op[] = [];
  #draining: Promise<void> | undefined;
  #compaction: Promise<boolean> | undefined;
  #abortCompaction = false;
  /** After a failed compaction, wait for the file to grow before trying again. */
  #compactAfterLines = 0;
  #open = false;
  #closing: Promise<void> | undefined;

  constructor(options: JsonlStoreOptions) {
    this.#file = options.file;
    this.#dir = path.dirname(options.file);
    this.#fs = options.fs ?? nodeFs;
    this.#sync = options.durability !== 'none';
    this.#repair = options.repair ?? false;
    this.#warn = options.warn ?? (() => {});
    this.#ratio = options.compaction?.ratio ?? 2;
    this.#minBytes = options.compaction?.minBytes ?? 1024 * 1024;
    this.#autoCompact = options.compaction?.auto ?? true;
    this.#loadChunkBytes = options.loadChunkBytes;
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
    return this.#size;
  }
  get lineCount(): number {
    return this.#lines;
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
      await fsys.unlink(this.#file + TMP_SUFFIX);
      this.#warn(`${this.#file}${TMP_SUFFIX}: removed an unfinished compaction`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw openError(this.#file + TMP_SUFFIX, error);
    }
    let loaded: LoadResult;
    try {
      loaded = await loadLog(fsys, this.#file, this.#index, this.#repair, this.#loadChunkBytes);
    } catch (error) {
      throw error instanceof StoreOpenError ? error : openError(this.#file, error);
    }
    this.#lines = loaded.lines;
    this.#size = loaded.size;
    this.#needsNewline = loaded.needsNewline;
    if (loaded.exists) {
      try {
        this.#fd = await fsys.open(this.#file, OPEN_READ_WRITE);
      } catch (error) {
        throw openError(this.#file, error);
      }
    }
    try {
      if (loaded.torn) await this.#dropTornTail(loaded.torn);
      if (loaded.rejected.length > 0) await this.#setAsideRejected(loaded.rejected);
    } catch (error) {
      await this.#closeFd();
      throw error instanceof StoreOpenError ? error : openError(this.#file, error);
    }
    this.#open = true;
  }

  /** Truncates a torn final line away, keeping its bytes in the `.rejected` file. */
  async #dropTornTail(torn: NonNullable<LoadResult['torn']>): Promise<void> {
    const rejectedFile = this.#file + REJECTED_SUFFIX;
    await appendDurably(this.#fs, rejectedFile, Buffer.concat([torn.bytes, Buffer.from('\n')]));
    await this.#fs.ftruncate(this.#fd!, torn.offset);
    await this.#fs.fsync(this.#fd!);
    this.#warn(
      `${this.#file}: torn final line ${torn.line} at byte ${torn.offset} (${torn.bytes.length} bytes, ` +
        `an interrupted write) truncated; its bytes are kept in ${rejectedFile}`,
    );
  }

  /** `--repair`: moves malformed lines to `.rejected`, then rewrites the log without them. */
  async #setAsideRejected(rejected: LoadResult['rejected']): Promise<void> {
    const rejectedFile = this.#file + REJECTED_SUFFIX;
    await appendDurably(this.#fs, rejectedFile, Buffer.concat(rejected.flatMap((r) => [r.bytes, Buffer.from('\n')])));
    for (const r of rejected) this.#warn(`${this.#file}:${r.line}: ${r.reason} — moved to ${rejectedFile}`);
    if (!(await this.#compactNow())) {
      throw new StoreOpenError(`${this.#file}: could not rewrite the file without its malformed lines`);
    }
  }

  // ---- writes: serialised, group-committed ----

  create(record: EntityRecord): Promise<StoredEntity> {
    return this.#enqueue<StoredEntity>((resolve, reject) => ({ kind: 'create', record, resolve, reject }));
  }

  update(id: string, change: Change): Promise<StoredEntity | undefined> {
    return this.#enqueue<StoredEntity | undefined>((resolve, reject) => ({ kind: 'update', id, change, resolve, reject }));
  }

  delete(id: string, check?: DeleteCheck): Promise<boolean> {
    return this.#enqueue<boolean>((resolve, reject) => ({ kind: 'delete', id, check, resolve, reject }));
  }

  #enqueue<T>(make: (resolve: (value: T) => void, reject: Reject) => WriteOp): Promise<T> {
    if (!this.#open || this.#closing) return Promise.reject(new StoreWriteError(`${this.#file}: the store is closed`));
    return new Promise<T>((resolve, reject) => {
      this.#queue.push(make(resolve, reject));
      this.#kick();
    });
  }

  #kick(): void {
    this.#draining ??= this.#drain()
      .catch((error: unknown) => this.#warn(`${this.#file}: internal error: ${(error as Error).stack ?? String(error)}`))
      .finally(() => {
        this.#draining = undefined;
        if (this.#queue.length > 0) this.#kick();
      });
  }

  /** Runs batches while work is queued: everything queued during one sync shares the next. */
  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const first = this.#queue[0]!;
      if (first.kind === 'task') {
        this.#queue.shift();
        await first.run();
        continue;
      }
      let n = 1;
      while (n < this.#queue.length && this.#queue[n]!.kind !== 'task') n++;
      const batch = this.#queue.splice(0, n) as WriteOp[];
      await this.#commit(batch);
      this.#maybeCompact();
    }
  }

  /**
   * Computes each op against the latest state (earlier ops of the batch included), appends their
   * lines in one write, syncs once, then applies them to the index and settles the callers. If the
   * write or sync fails, nothing is applied and every op of the batch rejects with `StoreWriteError`.
   */
  async #commit(batch: WriteOp[]): Promise<void> {
    const pending = new Map<string, LogEntity | null>();
    const latest = (id: string): LogEntity | undefined => {
      const p = pending.get(id);
      return p === undefined ? this.#index.get(id) : (p ?? undefined);
    };
    const effects: [string, LogEntity | null][] = [];
    const outcomes: (() => void)[] = [];
    const lines: string[] = [];
    let line = this.#lines;
    for (const op of batch) {
      try {
        if (op.kind === 'create') {
          checkRecord(op.record);
          if (latest(op.record.id)) throw new StoreConflictError(`id ${op.record.id} exists`);
          const entity = new WrittenEntity(op.record.id, JSON.stringify(op.record), ++line);
          lines.push(entity.json);
          pending.set(entity.id, entity);
          effects.push([entity.id, entity]);
          outcomes.push(() => op.resolve(entity));
        } else if (op.kind === 'update') {
          const current = latest(op.id);
          if (!current) {
            outcomes.push(() => op.resolve(undefined));
            continue;
          }
          const next = op.change(current);
          checkRecord(next);
          if (next.id !== op.id) throw new Error(`change() returned id ${next.id} for ${op.id}`);
          const entity = new WrittenEntity(op.id, JSON.stringify(next), ++line);
          lines.push(entity.json);
          pending.set(op.id, entity);
          effects.push([op.id, entity]);
          outcomes.push(() => op.resolve(entity));
        } else {
          const current = latest(op.id);
          if (!current) {
            outcomes.push(() => op.resolve(false));
            continue;
          }
          op.check?.(current);
          lines.push(`{"id":${JSON.stringify(op.id)},"_deleted":true}`);
          ++line;
          pending.set(op.id, null);
          effects.push([op.id, null]);
          outcomes.push(() => op.resolve(true));
        }
      } catch (error) {
        outcomes.push(() => op.reject(error));
      }
    }
    if (lines.length > 0) {
      const text = (this.#needsNewline ? '\n' : '') + lines.join('\n') + '\n';
      try {
        await this.#append(Buffer.from(text));
      } catch (error) {
        const failure = new StoreWriteError(`${this.#file}: write failed: ${(error as Error).message}`);
        // Every op of the batch fails, even one that wrote nothing (a 404, a refused change): its
        // answer was computed against writes of the batch that did not happen.
        for (const op of batch) op.reject(failure);
        return;
      }
      this.#lines = line;
      this.#needsNewline = false;
      for (const [id, entity] of effects) {
        if (entity) this.#index.put(entity);
        else this.#index.remove(id);
      }
    }
    for (const settle of outcomes) settle();
  }

  /** Appends bytes at `#size` and makes them durable; on failure `#size` stays where it was. */
  async #append(bytes: Buffer): Promise<void> {
    const fsys = this.#fs;
    try {
      if (this.#fd === undefined) {
        this.#fd = await fsys.open(this.#file, OPEN_READ_WRITE, 0o644);
        this.#dirSyncNeeded = true; // the file is new: its name must reach the disk too
      }
      if (this.#dirtyTail) {
        await fsys.ftruncate(this.#fd, this.#size);
        this.#dirtyTail = false;
      }
      // Positional writes: a failed write's debris is overwritten or truncated, never built upon.
      this.#dirtyTail = true;
      await writeAll(fsys, this.#fd, bytes, this.#size);
      if (this.#sync) await fsys.fdatasync(this.#fd);
      if (this.#dirSyncNeeded) {
        await syncDirectory(fsys, this.#dir);
        this.#dirSyncNeeded = false;
      }
      this.#dirtyTail = false;
      this.#size += bytes.length;
    } catch (error) {
      if (this.#fd !== undefined && this.#dirtyTail) {
        // Best effort now; if this fails too, the next append truncates first.
        try {
          await fsys.ftruncate(this.#fd, this.#size);
          this.#dirtyTail = false;
        } catch {
          // The next append retries the truncation (#dirtyTail stays set) and fails if it cannot.
        }
      }
      throw error;
    }
  }

  // ---- compaction ----

  #maybeCompact(): void {
    if (!this.#autoCompact || this.#compaction || this.#closing) return;
    if (this.#size < this.#minBytes || this.#lines <= this.#ratio * this.#index.size) return;
    if (this.#lines < this.#compactAfterLines) return;
    this.#startCompaction();
  }

  compact(): Promise<boolean> {
    if (!this.#open || this.#closing) return Promise.resolve(false);
    if (this.#compaction) return this.#compaction;
    // Start it between batches, so that the snapshot matches the file.
    return new Promise<boolean>((resolve) => {
      this.#queue.push({
        kind: 'task',
        run: async () => {
          // Not awaited: the compaction's own swap step has to run on this queue.
          const compaction = this.#compaction ?? this.#startCompaction();
          void compaction.then(resolve);
        },
      });
      this.#kick();
    });
  }

  async settled(): Promise<void> {
    while (this.#draining || this.#compaction) {
      await this.#draining;
      await this.#compaction;
    }
  }

  /** The live entities, in creation order, and the file position they describe. */
  #snapshot(): Snapshot {
    return { entities: Array.from(this.#index.values()), size: this.#size, lines: this.#lines };
  }

  /** Must be called between batches: the snapshot must describe exactly the first `#size` bytes. */
  #startCompaction(): Promise<boolean> {
    const snapshot = this.#snapshot();
    this.#abortCompaction = false;
    const compaction = this.#compactInBackground(snapshot).finally(() => {
      this.#compaction = undefined;
    });
    this.#compaction = compaction;
    return compaction;
  }

  async #compactInBackground(snapshot: Snapshot): Promise<boolean> {
    const tmp = this.#file + TMP_SUFFIX;
    const started = Date.now();
    let tmpFd: number | undefined;
    try {
      tmpFd = await this.#fs.open(tmp, OPEN_TRUNCATE, 0o644);
      const written = await this.#writeSnapshot(tmpFd, snapshot);
      if (this.#abortCompaction) throw new Error('aborted: the store is closing');
      await this.#fs.fdatasync(tmpFd);
      // The swap runs between batches: appends made meanwhile are copied over, then the rename.
      const fd = tmpFd;
      await new Promise<void>((resolve, reject) => {
        this.#queue.push({
          kind: 'task',
          run: () => this.#swap(fd, written, snapshot).then(resolve, reject),
        });
        this.#kick();
      });
      tmpFd = undefined;
      this.#warnIfSlow(started);
      return true;
    } catch (error) {
      this.#compactAfterLines = Math.ceil(this.#lines * 1.5);
      if (tmpFd !== undefined) {
        await this.#fs.close(tmpFd).catch(() => {});
        await this.#fs.unlink(tmp).catch(() => {});
        if (!this.#abortCompaction) this.#warn(`${this.#file}: compaction failed: ${(error as Error).message}`);
      } else if (!this.#abortCompaction) {
        this.#warn(`${this.#file}: compaction failed: ${(error as Error).message}`);
      }
      return false;
    }
  }

  #warnIfSlow(started: number): void {
    const ms = Date.now() - started;
    if (ms > 10_000) this.#warn(`${this.#file}: compaction took ${ms} ms`);
  }

  /** Writes the snapshot's lines to `fd` in large chunks; returns the bytes written. */
  async #writeSnapshot(fd: number, snapshot: Snapshot): Promise<number> {
    let chunk = Buffer.allocUnsafe(COMPACT_CHUNK_BYTES);
    let used = 0;
    let position = 0;
    for (const entity of snapshot.entities) {
      const bytes = entity.bytes();
      if (used + bytes.length + 1 > chunk.length) {
        if (used > 0) {
          await writeAll(this.#fs, fd, chunk.subarray(0, used), position);
          position += used;
          used = 0;
          if (this.#abortCompaction) throw new Error('aborted: the store is closing');
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
    const tail = this.#size - snapshot.size;
    const buffer = Buffer.allocUnsafe(Math.min(Math.max(tail, 1), COMPACT_CHUNK_BYTES));
    for (let copied = 0; copied < tail; ) {
      const n = await fsys.read(this.#fd!, buffer, 0, Math.min(buffer.length, tail - copied), snapshot.size + copied);
      if (n === 0) throw new Error('the log is shorter than expected');
      await writeAll(fsys, tmpFd, buffer.subarray(0, n), written + copied);
      copied += n;
    }
    await fsys.fdatasync(tmpFd);
    await fsys.rename(this.#file + TMP_SUFFIX, this.#file);
    // From here the new file is the log, whatever else fails.
    const old = this.#fd;
    this.#fd = tmpFd;
    this.#size = written + tail;
    this.#lines = snapshot.entities.length + (this.#lines - snapshot.lines);
    this.#needsNewline = false;
    this.#dirtyTail = false;
    this.#dirSyncNeeded = true;
    if (old !== undefined) await fsys.close(old).catch(() => {});
    try {
      await syncDirectory(fsys, this.#dir);
      this.#dirSyncNeeded = false;
    } catch (error) {
      // The next append retries the directory sync before it acknowledges anything.
      this.#warn(`${this.#dir}: directory sync after compaction failed: ${(error as Error).message}`);
    }
  }

  /** A compaction at open (`--repair`): no writes can be running yet. */
  #compactNow(): Promise<boolean> {
    return this.#startCompaction();
  }

  // ---- closing ----

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#abortCompaction = true;
    await this.#compaction;
    while (this.#draining) await this.#draining;
    this.#open = false;
    // Synced even with durability none: a clean shutdown should leave the data on disk.
    if (this.#fd !== undefined) {
      await this.#fs.fdatasync(this.#fd).catch((error: unknown) => {
        this.#warn(`${this.#file}: final sync failed: ${(error as Error).message}`);
      });
    }
    await this.#closeFd();
  }

  async #closeFd(): Promise<void> {
    const fd = this.#fd;
    this.#fd = undefined;
    if (fd !== undefined) await this.#fs.close(fd);
  }
}

interface Snapshot {
  entities: LogEntity[];
  size: number;
  lines: number;
}

function openError(file: string, error: unknown): StoreOpenError {
  return new StoreOpenError(`${file}: ${(error as Error).message}`);
}
