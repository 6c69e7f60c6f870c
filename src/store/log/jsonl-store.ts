import { isSerialised, recordJson } from '../../conventions/entity.js';
import { currentLedgerKey } from '../../conventions/idempotency-key.js';
import { basename, dirname } from 'node:path';
import { tombstoneLine, type ChangeStamp } from '../changes/change-stamp.js';
import { ascendingOrder } from '../changes/change-order.js';
import { HeldDelete, LocalChangeLog, type HeldChange, type Published, type ResourceChanges } from '../changes/local-feed.js';
import { MaterialisedIndex } from '../index/materialised-index.js';
import {
  StoreOpenError,
  type Change,
  type ChangeListener,
  type DeleteCheck,
  type EntityRecord,
  type LocalStore,
  type MaybePromise,
  type QueryResult,
  type StoreQuery,
  type StoredEntity,
  type StoreObserver,
} from '../store.js';
import { WriteBatcher, type BatchAnswer } from '../write-batcher.js';
import { ChangesFile } from './changes-file.js';
import { AnswerBook, type AnswerBookOptions, type Claim, type IdempotencyLedger, type KeyedWrite } from '../idempotency.js';
import { AnswerFile, answerFileOf } from './answer-file.js';
import { AnswerLines, entryOf, HeldAnswer, heldLine, locateAnswers, rememberedOf } from './answer-lines.js';
import { Compaction, TMP_SUFFIX } from './jsonl-compaction.js';
import { RestampedEntity, WrittenEntity, writeLine, type LoadedEntity, type LogEntity } from './jsonl-entity.js';
import { JsonlFile, type FileView } from './jsonl-file.js';
import { loadLog, type LoadResult } from './jsonl-load.js';
import { appendDurably, nodeFs, type StoreFs } from './store-fs.js';
import { RecentRecords } from './recent-records.js';

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
  /** The resource's name in its data set's changes (default: the file's name without `.jsonl`). */
  resource?: string;
  /**
   * The change log of the data directory, shared by its stores, with the file that records what
   * it forgot. Default: the store's own, recorded in the file's directory (a store used alone).
   */
  changes?: { log: LocalChangeLog; file: ChangesFile };
  /** Milliseconds since the epoch, for the changes' times and retention (default `Date.now`; used only without `changes`). */
  now?: () => number;
  /** How long deletes are remembered, in ms (used only without `changes`). */
  retentionMs?: number;
  /** The remembered answers of `Idempotency-Key` writes: clock, time to live, bound (idempotency.ts). */
  idempotency?: AnswerBookOptions;
}

export type { StoreObserver } from '../store.js';

/** A `Store` kept in an append-only JSON-lines file (docs/storage.md §1). */
export interface JsonlStore extends LocalStore {
  /** Bytes of the log file. */
  readonly fileSize: number;
  /** Lines of the log file. */
  readonly lineCount: number;
  /** Rewrites the file to one line per live entity now; resolves false if it could not. */
  compact(): Promise<boolean>;
  /** Resolves once no write and no compaction is under way. */
  settled(): Promise<void>;
  /** The change log this store reports to (its data directory's). */
  readonly changes: LocalChangeLog;
  /** Numbers the lines loaded without a change number (the data directory calls it once all its logs are read). */
  stampUnstamped(): Promise<void>;
  /**
   * Start-up, before `stampUnstamped`: the changes loaded with these numbers are numbered again by
   * it, as lines without a stamp are (another log of the data directory holds the same numbers).
   */
  renumber(seqs: ReadonlySet<number>): void;
  /** Always kept: the answers of keyed writes, durable with them (answer-file.ts). */
  readonly idempotency: IdempotencyLedger;
  /** The log's acknowledged bytes as they are now, held readable until released (`JsonlFile.retain`); undefined while there is no file. */
  retainLog(): FileView | undefined;
}

/**
 * Entities updated last that keep the record they were written from (`#holdRecord`); their JSON's
 * bytes bound what the records weigh.
 */
const RECENT_RECORDS = 1024;
const RECENT_RECORD_BYTES = 1024 * 1024;
/** Stamped copies of unstamped lines are appended this many bytes at a time (`stampUnstamped`). */
const STAMP_CHUNK_BYTES = 4 * 1024 * 1024;
const NEWLINE = Buffer.from('\n');
/** At most one warning an hour that answers left before their time (`#reportPushedOut`). */
const PUSHED_OUT_WARNING_MS = 60 * 60 * 1000;

/** Suffixes of the files a store keeps beside its log (docs/storage.md §1). */
export { TMP_SUFFIX } from './jsonl-compaction.js';
export const REJECTED_SUFFIX = '.rejected';

/**
 * Opens (loading and indexing) the log at `options.file`. Throws `StoreOpenError` when a line
 * other than the last is malformed (unless `repair`) or the file cannot be read.
 */
export async function openJsonlStore(options: JsonlStoreOptions): Promise<JsonlStore> {
  const own = options.changes === undefined;
  const store = new JsonlLogStore(options);
  if (own) {
    try {
      const state = await store.changesFile.read();
      store.changes.forgot(state.forgotten);
      store.changes.named(state.dataset);
    } catch (error) {
      throw openError(options.file, error);
    }
  }
  await store.open();
  // A store alone numbers its own lines without a stamp; in a data directory that waits for every
  // store to be loaded (`openDataDir`), so that new numbers lie above all the directory's.
  if (own) await store.stampUnstamped();
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
  /** The records of the entities updated last, read by their next writes without a parse (`#holdRecord`). */
  readonly #recent = new RecentRecords(RECENT_RECORDS, RECENT_RECORD_BYTES);
  /** Entities the last batch created, holding their records until the next batch is applied (`#holdRecord`); and a spare list. */
  #fresh: WrittenEntity[] = [];
  #lastFresh: WrittenEntity[] = [];
  readonly #observer: StoreObserver | undefined;
  readonly #file: JsonlFile;
  readonly #writes: WriteBatcher<LogEntity>;
  readonly #compaction: Compaction;
  readonly #log: LocalChangeLog;
  readonly changesFile: ChangesFile;
  readonly #changes: ResourceChanges;
  /** The batch being applied: its first sequence number, its stamps, the changes applied so far. */
  #batch: { first: number; stamps: ChangeStamp[]; items: Published[] } | undefined;
  /** The last sequence number this store reserved: compaction waits until it is published. */
  #lastReserved = 0;
  /** Loaded entities and deletes that had no stamp: numbered by `stampUnstamped`. */
  #unstamped: { live: LogEntity[]; deletes: string[] } = { live: [], deletes: [] };
  /** The answers of keyed writes the log no longer holds (answer-file.ts); the book of all of them. */
  readonly #answers: AnswerFile;
  /** The answers' clock, time to live and bounds (idempotency.ts). */
  readonly #idempotency: AnswerBookOptions | undefined;
  /** The book's `pushedOut` when last reported (or at start-up); the answers let go inside their time since; when the last warning was (the book's clock). */
  #pushedOutSeen = 0;
  #pushedOutTotal = 0;
  #pushedOutWarned = -Infinity;
  /** Bytes of the log's answers lines (answer-lines.ts): the compaction policy counts them as waste. */
  #answerBytes = 0;
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
    const shared = options.changes;
    const log = (this.#log = shared?.log ?? new LocalChangeLog({ ...(options.now ? { now: options.now } : {}), ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }), warn: this.#warn }));
    this.changesFile = shared?.file ?? new ChangesFile(dirname(this.#path), this.#fs);
    const changes = (this.#changes = log.resource(options.resource ?? basename(this.#path).replace(/\.jsonl$/, '')));
    this.#idempotency = options.idempotency;
    const answers = (this.#answers = new AnswerFile(answerFileOf(this.#path), this.#fs, durable, options.idempotency));
    this.#writes = new WriteBatcher<LogEntity>(
      {
        get: (id) => index.get(id),
        // The entity holds its record until it is applied, and then as `#holdRecord` says.
        entity: (record) => new WrittenEntity(record.id, recordJson(record), undefined, record, isSerialised(record)),
        answers: answers.book,
        append: async (batch, types, keyed, answering) => {
          const started = performance.now();
          // Numbered here, in the order batches reach the disk's queue; published in that order
          // once durable (LocalChangeLog), whichever store's sync returns first. A batch of answers
          // alone (refusals remembered) has no change to number.
          const first = batch.length === 0 ? 0 : log.reserve(batch.length);
          if (batch.length > 0) this.#lastReserved = first + batch.length - 1;
          const at = log.nowSeconds();
          const stamps = batch.map((_, i): ChangeStamp => ({ seq: first + i, type: types[i]!, at }));
          const lines = batch.map((c, i) => {
            if ('deleted' in c) return tombstoneLine(c.deleted, stamps[i]!);
            // A batch's entities are the ones `entity` made above.
            const written = c as WrittenEntity;
            written.stamp(stamps[i]!);
            return written.line();
          });
          // The answers first, in the same append and the same sync (answer-lines.ts explains why
          // that is safe). Written whenever `entity` counted it, so that the lines are where it said.
          let answerBytes = 0;
          let held: HeldAnswer[] = [];
          if (answering && (lines.length > 0 || keyed.length > 0)) {
            // Held as the line has them (HeldAnswer): a body by reference keeps the entity that wrote the line.
            held = keyed.map((k) => (k.change === undefined ? new HeldAnswer(entryOf(k.key, k.remembered), undefined, k.keyJson, k.remembered.answer.headersJson) : heldOf(k, first + k.change, batch[k.change]!, lines[k.change]!)));
            lines.unshift(heldLine(held, batch.length === 0 ? 0 : first + batch.length - 1));
          }
          if (lines.length === 0) return;
          const bytes = Buffer.from(`${lines.join('\n')}\n`);
          if (held.length > 0) {
            // The table of answers copies each answer's bytes from the append's (answer-lines.ts).
            const ascii = locateAnswers(held, lines, bytes, (i) => (keyed[i]!.change === undefined ? undefined : keyed[i]!.change! + 1));
            answerBytes = (ascii ? lines[0]!.length : Buffer.byteLength(lines[0]!)) + 1;
          }
          try {
            await file.appendBytes(bytes, lines.length);
          } catch (error) {
            // Numbers reserved for lines that never reached the log are given back in order.
            if (batch.length > 0) log.settle(first, null);
            throw error;
          }
          if (batch.length > 0) {
            this.#batch = { first, stamps, items: [] };
            observer?.committed?.(batch.length, durable ? (performance.now() - started) / 1000 : 0);
          }
          if (answering) {
            this.#answerBytes += answerBytes;
            for (let i = 0; i < held.length; i++) answers.put(keyed[i]!.key, held[i]!);
            if (answers.book.pushedOut !== this.#pushedOutSeen) this.#reportPushedOut();
          }
        },
        apply: (change, record) => {
          const batch = this.#batch!;
          const stamp = batch.stamps[batch.items.length]!;
          if ('deleted' in change) {
            const previous = index.get(change.deleted)?.seq ?? 0;
            index.remove(change.deleted);
            batch.items.push({ resource: changes, held: new HeldDelete(change.deleted, stamp.seq, stamp.at), previous });
          } else {
            const before = index.get(change.id);
            index.put(change, undefined, record);
            batch.items.push({ resource: changes, held: change, previous: before?.seq ?? 0 });
            this.#holdRecord(change as WrittenEntity, before !== undefined);
          }
        },
        applied: () => {
          this.#releaseEarlierFresh();
          const batch = this.#batch;
          // A batch of answers alone wrote no change.
          if (batch === undefined) return;
          this.#batch = undefined;
          log.settle(batch.first, batch.items);
        },
        // This batch's changes, and a 404 or 412 decided against an earlier batch's, wait for
        // the batches numbered before them (another store's still syncing) to be published.
        published: () => (log.published >= this.#lastReserved ? undefined : log.through(this.#lastReserved)),
        afterBatch: () => this.#maybeCompact(),
      },
      this.#path,
      this.#warn,
    );
    // The swap drops the log's answers lines: the answers they hold are made durable beside it
    // first (answer-file.ts), by the save the compaction started with its snapshot.
    this.#compaction = new Compaction(file, this.#fs, (run) => this.#writes.task(async () => {
      await this.#answersSaved;
      await run();
    }), this.#warn);
  }

  /**
   * How long an applied entity keeps the record it was written from (recent-records.ts). An
   * updated one stays among the recent records: an entity updated is the likeliest to be updated
   * again soon (a stock level, a counter), and its next write then merges into that record instead
   * of a parse. A created one keeps it only until the next batch is applied, long enough for its
   * answer's links: held any longer, the records of a bulk load would outlive the young generation
   * and cost the collector more than the parses they save. (Released on a timer instead, at the end
   * of the turn, each batch cost a POST 2 µs more: the pending immediate turns the event loop once
   * more per batch.)
   */
  #holdRecord(entity: WrittenEntity, updated: boolean): void {
    if (updated) this.#recent.hold(entity, entity.json.length);
    else this.#fresh.push(entity);
  }

  /** Called as a batch is applied: the entities the batch before it created let go of their records. */
  #releaseEarlierFresh(): void {
    const fresh = this.#lastFresh;
    for (let i = 0; i < fresh.length; i++) fresh[i]!.releaseRecord();
    fresh.length = 0;
    this.#lastFresh = this.#fresh;
    this.#fresh = fresh;
  }

  // ---- reads: memory only ----

  get size(): number {
    return this.#index.size;
  }
  get revision(): string {
    return this.#index.revision;
  }
  /** Not once its file is no longer the log (removed or replaced under it): /readyz says so. */
  get ready(): boolean {
    return this.#open && !this.#file.stale;
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
  follow(listener: ChangeListener): () => void {
    return this.#changes.follow(listener);
  }
  get changes(): LocalChangeLog {
    return this.#log;
  }
  retainLog(): FileView | undefined {
    return this.#file.retain();
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
    /** The latest stamp of each deleted id, or null for a delete without one; dropped if the id comes back. */
    const deletes = new Map<string, ChangeStamp | null>();
    // The log's answers, newer than the answers file's (written at the last compaction), which is
    // read later: held meanwhile in a book of the same bounds, so that no more of them are held.
    const fromLog = new AnswerBook(this.#idempotency);
    try {
      // Lines whose answers all expired are not even parsed. A key an earlier version made is held
      // under this version's name for it (`currentLedgerKey`): its retry, after the upgrade, replays.
      const answerLines = new AnswerLines((e) => fromLog.put(currentLedgerKey(e.k), rememberedOf(e)), fromLog.now() - fromLog.ttlMs);
      loaded = await loadLog(fsys, this.#path, this.#index, this.#repair, this.#loadChunkBytes, (id, stamp) => deletes.set(id, stamp ?? null), answerLines);
      this.#loadChanges(deletes, loaded.behind);
      // A number held only by a superseded line (an older line of its id copied after it) may have
      // been handed out: the next one reserved is above it too, so that no cursor names two changes.
      this.#log.seen(loaded.maxSeq);
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
      for (const [key, remembered] of fromLog.entries()) this.#answers.put(key, remembered);
      this.#answerBytes = loaded.answerBytes;
      // What start-up lets go is not reported: the log still holds answers an earlier process let
      // go (and reported), which cannot be told from the rest; the count starts with the serving.
      this.#pushedOutSeen = this.#answers.book.pushedOut;
    } catch (error) {
      await file.closeFd();
      throw error instanceof StoreOpenError ? error : openError(this.#path, error);
    }
    this.#open = true;
  }

  /**
   * Puts each entity's latest change, and each delete, in the change order. Lines without a stamp
   * (and a stamp met twice, a copied line) wait for `stampUnstamped`.
   */
  #loadChanges(deletes: Map<string, ChangeStamp | null>, behindLines: readonly LogEntity[]): void {
    const live: LogEntity[] = [];
    const unstampedDeletes: string[] = [];
    // An entity whose last line is numbered below an earlier line of its id (a delete's included):
    // a reader past that number never saw this state, so it is numbered anew, as a copied line is.
    const behind = new Set<LogEntity>();
    for (const entity of behindLines) if (this.#index.get(entity.id) === entity) behind.add(entity);
    for (const [id, stamp] of deletes) {
      const entity = stamp === null ? undefined : this.#index.get(id);
      if (entity !== undefined && entity.seq !== 0 && entity.seq < stamp!.seq) behind.add(entity);
    }
    // Each number read once (a loaded entity reads it from its line's bytes), and a number met
    // twice found next to itself once they are in order: a `Set` of a million numbers was a
    // seventh of a start-up.
    const candidates: HeldChange[] = [];
    const seqs: number[] = [];
    for (const entity of this.#index.values()) {
      const seq = entity.seq;
      if (seq === 0) live.push(entity);
      else if (behind.size > 0 && behind.has(entity)) continue;
      else {
        candidates.push(entity);
        seqs.push(seq);
      }
    }
    const entities = candidates.length;
    for (const [id, stamp] of deletes) {
      if (this.#index.get(id) !== undefined) continue;
      if (stamp === null) unstampedDeletes.push(id);
      else {
        candidates.push(new HeldDelete(id, stamp.seq, stamp.at));
        seqs.push(stamp.seq);
      }
    }
    // In order of their numbers, ties in the order met (entities first): the first change met with
    // a number keeps it, and a later one with the same number (a copied line) waits for `stampUnstamped`.
    const order = ascendingOrder(seqs);
    // Each above the one before, as a log written by halserve is: no number twice, nothing to sort.
    const held: HeldChange[] = order === undefined ? candidates : [];
    const heldSeqs: number[] = order === undefined ? seqs : [];
    const copies = new Set<HeldChange>();
    let last = order === undefined ? (seqs.at(-1) ?? 0) : 0;
    if (order !== undefined) {
      for (const i of order) {
        const seq = seqs[i]!;
        if (seq !== last) {
          held.push(candidates[i]!);
          heldSeqs.push(seq);
          last = seq;
        } else if (i < entities) copies.add(candidates[i]!);
        else unstampedDeletes.push(candidates[i]!.id);
      }
    }
    this.#changes.load(held, heldSeqs);
    this.#log.seen(last);
    // Stamped afresh in the order the index holds them, with the lines that had no stamp.
    if (copies.size > 0 || behind.size > 0) {
      live.length = 0;
      for (const entity of this.#index.values()) if (copies.has(entity) || behind.has(entity) || entity.seq === 0) live.push(entity);
    }
    this.#unstamped = { live, deletes: unstampedDeletes };
  }

  renumber(seqs: ReadonlySet<number>): void {
    const changes = this.#changes;
    const moved = new Set<HeldChange>();
    for (const seq of seqs) {
      const held = changes.order.get(seq);
      if (held === undefined) continue;
      if (held instanceof HeldDelete) {
        changes.forget([held]);
        this.#unstamped.deletes.push(held.id);
      } else {
        changes.order.remove(seq);
        moved.add(held);
      }
    }
    if (moved.size === 0) return;
    // Numbered in the order the index holds them, with the lines that had no stamp.
    const unstamped = new Set<HeldChange>(this.#unstamped.live);
    const live: LogEntity[] = [];
    for (const entity of this.#index.values()) if (moved.has(entity) || unstamped.has(entity)) live.push(entity);
    this.#unstamped = { live, deletes: this.#unstamped.deletes };
  }

  /**
   * Numbers the lines loaded without a stamp (written before stamps existed, by hand, or by an
   * import) above every number of the data set, as creates (and deletes) applied now, and appends
   * a stamped copy of each (the last line of an id wins; its place in the creation order stays)
   * before the store serves anything: cut short, it runs again on the next start, and no number
   * it gave was handed out. Throws `StoreOpenError` when the append fails.
   */
  async stampUnstamped(): Promise<void> {
    const { live, deletes } = this.#unstamped;
    this.#unstamped = { live: [], deletes: [] };
    if (live.length === 0 && deletes.length === 0) {
      // A log at the ratio or above it when it opens: a first start stamped its lines (below) and
      // stopped before its compaction was done, and the log holds each line twice, for good (the
      // policy compacts only above the ratio, and only after a write): every start read both,
      // and the store held both in memory. Compacted now, in the background.
      const file = this.#file;
      if (this.#autoCompact && file.size >= this.#minBytes && file.lines > 0 && file.lines >= this.#ratio * this.#index.size) void this.compact();
      return;
    }
    const log = this.#log;
    const at = log.nowSeconds();
    const held: HeldChange[] = [];
    const stamped: RestampedEntity[] = [];
    // Appended a few megabytes at a time, each line written into one reused buffer from its bytes:
    // a million lines joined into one string and one buffer held three copies of the file at
    // once, and a buffer per line left as many small allocations, garbage that stayed in the
    // process's memory long after.
    const chunk = Buffer.allocUnsafeSlow(STAMP_CHUNK_BYTES);
    let used = 0;
    let count = 0;
    const flush = async (): Promise<void> => {
      if (count === 0) return;
      const bytes = chunk.subarray(0, used);
      const lines = count;
      used = 0;
      count = 0;
      await this.#file.appendBytes(bytes, lines);
    };
    /** One line into the chunk by `write` (which answers the new end, or -1 when it does not fit); false if it did not. */
    const put = (write: (target: Buffer, at: number) => number): boolean => {
      const end = write(chunk, used);
      if (end < 0) return false;
      used = end;
      count++;
      return true;
    };
    /** A line that did not fit: after the chunk, in the next one, or on its own when longer than a chunk. */
    const overflow = async (write: (target: Buffer, at: number) => number, whole: () => Uint8Array): Promise<void> => {
      await flush();
      if (!put(write)) await this.#file.appendBytes(Buffer.concat([whole(), NEWLINE]), 1);
    };
    try {
      for (const entity of live) {
        const restamped = new RestampedEntity(entity as WrittenEntity | LoadedEntity, log.take(), at);
        stamped.push(restamped);
        held.push(restamped);
        const write = (target: Buffer, from: number): number => restamped.writeLine(target, from);
        if (!put(write)) await overflow(write, () => restamped.bytes());
      }
      for (const id of deletes) {
        const seq = log.take();
        held.push(new HeldDelete(id, seq, at));
        const line = tombstoneLine(id, { seq, type: 'deleted', at });
        const write = (target: Buffer, from: number): number => writeLine(target, from, line);
        if (!put(write)) await overflow(write, () => Buffer.from(line));
      }
      await flush();
    } catch (error) {
      throw new StoreOpenError(`${this.#path}: could not append the change numbers of its ${held.length} unnumbered lines: ${(error as Error).message}`);
    }
    for (const entity of stamped) this.#index.put(entity);
    this.#changes.load(held);
    // The file now holds each of these lines twice, unstamped and stamped: without a compaction
    // every later start would read both (a file of only unstamped lines sits exactly at the ratio
    // the policy compacts above, so no number of reads would ever trigger one).
    if (this.#autoCompact && this.#file.size >= this.#minBytes) void this.compact();
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
    claim: (key: string, fingerprint: () => string, legacy?: () => string): Claim => this.#answers.book.claim(key, fingerprint, legacy),
    remember: (keyed: KeyedWrite): Promise<void> => this.#writes.remember(keyed),
  };

  delete(id: string, check?: DeleteCheck): Promise<boolean> {
    return this.#writes.delete(id, check);
  }

  /**
   * Answers of keyed writes let go before their time because the book's bounds were reached
   * (--idempotency-answers, --idempotency-memory): counted in the metrics, and said on stderr at
   * the first and then at most once an hour, since a retry with such a key would write again.
   */
  #reportPushedOut(): void {
    const book = this.#answers.book;
    const count = book.pushedOut - this.#pushedOutSeen;
    this.#pushedOutSeen = book.pushedOut;
    const total = (this.#pushedOutTotal += count);
    this.#observer?.answersPushedOut?.(count);
    const now = book.now();
    if (now - this.#pushedOutWarned < PUSHED_OUT_WARNING_MS) return;
    this.#pushedOutWarned = now;
    this.#warn(
      `${this.#path}: ${total} Idempotency-Key answer${total === 1 ? ' was' : 's were'} let go before their ${Math.round(book.ttlMs / 3_600_000)} hours, ` +
        `the oldest first, to keep within ${book.maxAnswers} answers and ${book.maxBytes} bytes (--idempotency-answers, --idempotency-memory); a retry with such a key is processed as new`,
    );
  }

  // ---- compaction ----

  #maybeCompact(): void {
    if (!this.#autoCompact || this.#compacting || this.#closing) return;
    const file = this.#file;
    if (file.size < this.#minBytes) return;
    // More lines than the ratio allows per live entity, or answers lines whose answers are no longer
    // kept (expired, or past the book's bounds) for more than half the file's bytes: a log of keyed
    // creates alone has few lines to spare. Lines of answers still kept are not counted: a compaction
    // would only move them to the answers file, so one per batch of them rewrote every entity to free nothing.
    if (file.lines <= this.#ratio * this.#index.size && (this.#answerBytes - this.#answers.liveLogBytes) * 2 <= file.size) return;
    if (file.lines < this.#compactAfterLines) return;
    // This store's last changes may still wait for another store's sync to be published (and its
    // deletes to be in the order the snapshot copies): then a later batch tries again.
    if (this.#log.published < this.#lastReserved) return;
    void this.#startCompaction();
  }

  compact(): Promise<boolean> {
    if (!this.#open || this.#closing) return Promise.resolve(false);
    const running = this.#compacting;
    if (running) return running;
    // Start it between batches, so that the snapshot matches the file.
    return new Promise<boolean>((resolve) => {
      void this.#writes.task(async () => {
        // Closing began after the call: no compaction starts on a store being closed.
        if (this.#closing) return resolve(false);
        // Holding the queue: no batch of this store runs while earlier ones are published.
        await this.#log.through(this.#lastReserved);
        // Not awaited inside the task: the compaction's own swap step has to run on the same queue.
        void (this.#compacting ?? this.#startCompaction()).then(resolve);
      });
    });
  }

  async settled(): Promise<void> {
    while (this.#writes.busy || this.#compacting) {
      await this.#writes.busy;
      await this.#compacting;
    }
  }

  /** The compaction under way, from its snapshot to its end. */
  #compacting: Promise<boolean> | undefined;
  /** The save of answers the compaction under way started (answer-file.ts); its swap waits for it. */
  #answersSaved: Promise<void> = Promise.resolve();

  /**
   * Must be called between batches, with this store's changes all published: the snapshot must
   * describe exactly the acknowledged bytes. The compacted file keeps one line per live entity and
   * one per delete still remembered (first: a remembered delete's id is not live). Deletes past
   * retention are left out, and the forgotten horizon is recorded before the file is rewritten.
   */
  #startCompaction(): Promise<boolean> {
    const file = this.#file;
    const log = this.#log;
    const changes = this.#changes;
    const expired = log.expired(changes.name);
    const dropped = new Set<HeldChange>(expired);
    const lines: { bytes(): Uint8Array }[] = [];
    for (const d of changes.deletes()) {
      if (!dropped.has(d)) lines.push({ bytes: () => Buffer.from(tombstoneLine(d.id, { seq: d.seq, type: 'deleted', at: d.at })) });
    }
    for (const entity of this.#index.values()) lines.push(entity);
    const snapshot = { lines, size: file.size, fileLines: file.lines };
    /** The answers lines the swap drops; those the log gains meanwhile come with its tail and stay. */
    const droppedAnswerBytes = this.#answerBytes;
    // The answers of the lines the swap drops, saved while the compaction copies (awaited before the swap).
    const saved = (this.#answersSaved = this.#answers.save());
    saved.catch(() => {});
    const run = (async (): Promise<boolean> => {
      if (expired.length > 0) {
        const horizon = Math.max(...expired.map((d) => d.seq));
        try {
          if (horizon > log.forgotten) await this.changesFile.write(horizon);
        } catch (error) {
          this.#warn(`${this.changesFile.path}: ${(error as Error).message}; deletes past retention are kept for now`);
          return false;
        }
        log.forgot(horizon);
        changes.forget(expired);
      }
      return this.#compaction.start(snapshot);
    })().then((done) => {
      this.#compacting = undefined;
      this.#observer?.compacted?.(done);
      // Answers lines the log gained during the compaction came with its tail: still counted, so
      // that many keyed writes during a slow compaction start the next one (below).
      if (done) this.#answerBytes -= droppedAnswerBytes;
      if (!done) this.#compactAfterLines = Math.ceil(file.lines * 1.5);
      // Writes went on during the compaction: if they alone took the file past the ratio again, the
      // next compaction starts now rather than after some later write (whenever that comes).
      else if (!this.#closing) void this.#writes.task(async () => this.#maybeCompact());
      return done;
    });
    this.#compacting = run;
    return run;
  }

  // ---- closing ----

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#writes.close();
    this.#compaction.abort();
    await this.#compacting;
    while (this.#writes.busy) await this.#writes.busy;
    // A compaction aborted before its swap may leave its save of answers running: it ends first.
    await this.#answersSaved.catch(() => {});
    this.#open = false;
    await this.#file.close(this.#warn);
  }
}

/**
 * The answer of a keyed write whose change (sequence number `n`) a batch wrote as `line`, held by
 * reference to that line where its body begins as the line does. The entity written gives the line
 * again (its JSON and the stamp it was given then) and is held by the index anyway while current;
 * its JSON, one flat string, is what the body is compared with (`sharedWithLine`).
 */
function heldOf(answer: BatchAnswer, n: number, change: LogEntity | { readonly deleted: string }, line: string): HeldAnswer {
  const written = change instanceof WrittenEntity ? change : undefined;
  return new HeldAnswer(entryOf(answer.key, answer.remembered, n, line, written?.json), written ?? line, answer.keyJson, answer.remembered.answer.headersJson);
}

function openError(file: string, error: unknown): StoreOpenError {
  return new StoreOpenError(`${file}: ${(error as Error).message}`);
}
