import fs from 'node:fs/promises';
import path from 'node:path';
import { lockDirectory } from './dir-lock.js';
import { LocalChangeLog } from '../changes/local-feed.js';
import { ChangesFile, ChangesFileDamaged, newDatasetName } from './changes-file.js';
import { openJsonlStore, type CompactionPolicy, type JsonlStore } from './jsonl-store.js';
import type { FileView } from './jsonl-file.js';
import { nodeFs, type StoreFs } from './store-fs.js';
import { StoreOpenError, type Store, type StoreObserver } from '../store.js';
import type { AnswerBookOptions } from '../idempotency.js';

/** The extension of a resource's log file (docs/conventions.md §1). */
export const LOG_EXTENSION = '.jsonl';

/**
 * What `halserve backup` into an existing directory writes its copy under until the copy is whole
 * (docs/storage.md §4): a directory that still holds it is an unfinished copy.
 */
export const BACKUP_PARTIAL_PREFIX = '.backup-partial-';

/**
 * Names of the resources stored in `dir`: every `<name>.jsonl` file (not `.jsonl.tmp` or
 * `.jsonl.rejected`), sorted. A missing directory is a `StoreOpenError`, and so is one that holds
 * an unfinished backup (`.backup-partial-…`): served or imported, it would be taken for a data set
 * (an empty one, or a part) when it is no whole copy of any.
 */
export async function discoverResources(dir: string): Promise<string[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new StoreOpenError(
      code === 'ENOENT' ? `data directory ${dir} does not exist` : `cannot read data directory ${dir}: ${(error as Error).message}`,
    );
  }
  const partial = entries.find((entry) => entry.name.startsWith(BACKUP_PARTIAL_PREFIX));
  if (partial !== undefined) {
    throw new StoreOpenError(
      `${dir} holds ${partial.name}: a halserve backup into it did not finish, so it is not a whole copy; take the backup again into an empty directory (remove ${partial.name} to use what ${dir} holds anyway)`,
    );
  }
  const names: string[] = [];
  for (const entry of entries) {
    if (!entry.name.endsWith(LOG_EXTENSION) || entry.name.length === LOG_EXTENSION.length) continue;
    // A symbolic link counts when it leads to a file (a dangling one is left for the user to see).
    const isFile = entry.isSymbolicLink()
      ? await fs.stat(path.join(dir, entry.name)).then((stat) => stat.isFile(), () => false)
      : entry.isFile();
    if (isFile) names.push(entry.name.slice(0, -LOG_EXTENSION.length));
  }
  return names.sort();
}

export interface DataDirOptions {
  /** The data directory (exists). */
  dir: string;
  /** Already-validated resource names; a missing file is created on first write. */
  resources: readonly string[];
  durability: 'full' | 'none';
  repair: boolean;
  /** Warnings for stderr: torn tail truncated, durability none, stale lock taken over… */
  warn: (message: string) => void;
  /** File-system seam for the stores (fault injection in tests). */
  fs?: StoreFs;
  compaction?: CompactionPolicy;
  /** Metrics hooks of each resource's store. */
  observer?: (resource: string) => StoreObserver;
  /** How long deletes are remembered in the change feed, in ms (default 7 days). */
  retentionMs?: number;
  /** Milliseconds since the epoch (tests inject a clock). */
  now?: () => number;
  /** Each store's bounds on the answers of keyed writes it keeps (`--idempotency-answers`, `--idempotency-memory`). */
  idempotency?: Pick<AnswerBookOptions, 'maxAnswers' | 'maxBytes'>;
}

/**
 * Every resource of a data directory as of one cursor of its change feed, readable until released
 * (`halserve backup`, backup-socket.ts): each log's acknowledged bytes held open as they were when
 * the snapshot was taken; the bytes through `seq` are `prefixThrough` of them (log-prefix.ts).
 */
export interface DataSnapshot {
  /** The cursor the snapshot is at: the latest published change. */
  readonly cursor: string;
  /** Its sequence number. */
  readonly seq: number;
  /** The forgotten horizon then (`_changes`). */
  readonly forgotten: number;
  readonly resources: readonly { readonly name: string; readonly view: FileView | undefined }[];
  /** How long taking it kept the event loop, and so every write, waiting: milliseconds. */
  readonly heldMs: number;
  /** Lets go of every file. */
  release(): Promise<void>;
}

/** The open stores of a data directory and the lock that keeps it to this process. */
export interface DataDir {
  stores: Map<string, Store>;
  /** The directory's change feed: one sequence over every resource. */
  changes: LocalChangeLog;
  /**
   * Every resource as of the latest published change, taken in one turn of the event loop: no
   * write is held but for that turn (microseconds). Why it is consistent: every change numbered
   * at or below the cursor is published, so its line is durable and within its log's acknowledged
   * bytes (local-feed.ts), and no line in them is ever rewritten while the view is held
   * (`JsonlFile.retain`).
   */
  snapshot(): DataSnapshot;
  /**
   * The snapshot, once every batch numbered before the call is published: a batch durable when it
   * was asked for, but waiting to be published behind an earlier batch of another resource
   * (local-feed.ts), is in it too, as is every write acknowledged before (a write is acknowledged
   * once published). Writes go on meanwhile; none waits for it but for the turn `snapshot` takes.
   */
  snapshotAfterPending(): Promise<DataSnapshot>;
  /** Finishes pending writes, syncs, closes the files and releases the lock. */
  close(): Promise<void>;
}

/**
 * Takes the directory lock and opens every store. Throws `StoreOpenError`, whose message is the
 * one line a user sees, on any start-up failure; nothing stays open or locked after it.
 */
export async function openDataDir(options: DataDirOptions): Promise<DataDir> {
  const { dir, warn } = options;
  try {
    const stat = await fs.stat(dir);
    if (!stat.isDirectory()) throw new StoreOpenError(`data directory ${dir} is not a directory`);
  } catch (error) {
    if (error instanceof StoreOpenError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new StoreOpenError(
      code === 'ENOENT' ? `data directory ${dir} does not exist` : `cannot use data directory ${dir}: ${(error as Error).message}`,
    );
  }
  const lock = await lockDirectory(dir, warn);
  if (options.durability === 'none') {
    warn('durability none: writes are not synced to disk; a crash can lose acknowledged writes');
  }
  const stores = new Map<string, JsonlStore>();
  const closeAll = async (): Promise<void> => {
    const results = await Promise.allSettled([...stores.values()].map((store) => store.close()));
    await lock.release();
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  };
  const log = new LocalChangeLog({
    warn,
    ...(options.now ? { now: options.now } : {}),
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
  });
  const changesFile = new ChangesFile(dir, options.fs ?? nodeFs);
  try {
    try {
      const state = await changesFile.read();
      log.forgot(state.forgotten);
      log.named(state.dataset);
    } catch (error) {
      if (!(error instanceof ChangesFileDamaged)) throw new StoreOpenError((error as Error).message);
      // What it held (the deletes the feed forgot, the data set's name) cannot be known again: a
      // cursor handed out before could resume past a forgotten delete. A new data set is safe:
      // every earlier cursor answers 410, and its client lists again (docs/storage.md).
      if (!options.repair) throw new StoreOpenError(`${error.message}. This file records which deletes the change feed has forgotten; restore it from a backup, or start once with --repair to set it aside and begin a new change feed (every cursor handed out before then answers 410)`);
      const dataset = newDatasetName();
      const aside = await changesFile.setAside(dataset);
      log.named(dataset);
      warn(`${error.message}: set aside as ${aside}; a new change feed begins (data set ${dataset}): every cursor handed out before answers 410`);
    }
    const opened = new Map<string, string>();
    for (const name of options.resources) {
      const file = path.join(dir, name + LOG_EXTENSION);
      await checkLogFile(file, name, opened);
      const store = await openJsonlStore({
        file,
        durability: options.durability,
        repair: options.repair,
        warn,
        ...(options.fs ? { fs: options.fs } : {}),
        ...(options.compaction ? { compaction: options.compaction } : {}),
        ...(options.observer ? { observer: options.observer(name) } : {}),
        ...(options.idempotency ? { idempotency: options.idempotency } : {}),
        resource: name,
        changes: { log, file: changesFile },
      });
      stores.set(name, store);
    }
    // A change number found in two logs (a file brought from another data directory, a line copied
    // from one log to another) would be two changes under one cursor, and a reader resuming from it
    // would skip the second: the first log keeps it, the others' changes are numbered anew below.
    const twice = stores.size < 2 ? [] : numbersMetTwice([...stores.keys()].map((name) => log.resource(name).order.numbers()));
    [...stores.entries()].forEach(([name, store], i) => {
      const seqs = twice[i];
      if (seqs === undefined || seqs.size === 0) return;
      // The set is filled in ascending order: its first is its least. Not Math.min(...seqs),
      // whose arguments overflow the stack past ~120,000 (a whole log brought from elsewhere).
      warn(`${path.join(dir, name + LOG_EXTENSION)}: ${seqs.size} change number${seqs.size === 1 ? '' : 's'} (the first ${seqs.values().next().value}) also found in another resource's log: numbered anew`);
      store.renumber(seqs);
    });
    // Lines without a change number get theirs once every log is read: above all the directory's.
    for (const store of stores.values()) await store.stampUnstamped();
  } catch (error) {
    await closeAll().catch(() => {});
    throw error instanceof StoreOpenError ? error : new StoreOpenError(String((error as Error).message));
  }
  let closing: Promise<void> | undefined;
  const snapshot = (): DataSnapshot => {
    const started = performance.now();
    const resources = [...stores].map(([name, store]) => ({ name, view: store.retainLog() }));
    const taken = { cursor: log.latest, seq: log.published, forgotten: log.forgotten, resources };
    const heldMs = performance.now() - started;
    return { ...taken, heldMs, release: async () => void (await Promise.all(resources.map((r) => r.view?.release()))) };
  };
  return {
    stores: stores as Map<string, Store>,
    changes: log,
    snapshot,
    snapshotAfterPending: async () => {
      await log.through(log.reserved);
      return snapshot();
    },
    close: () => (closing ??= closeAll()),
  };
}

/**
 * Refuses a resource file that two stores would share (one a symbolic link to the other: each
 * store would append to the same file and lose the other's writes at the next start) and one that
 * is not a regular file (a FIFO would block start-up for ever). A missing file is created later.
 */
/**
 * For each of the resources' change numbers (each ascending), those an earlier resource holds too
 * (each set filled in ascending order). One pass over every number with a bit per number up to the
 * largest: the cost does not grow with the number of resources (~10 ms a million numbers, a
 * transient eighth of a byte per number below the largest). Numbers past `BITSET_LIMIT` (no data
 * set's counter gets there) go the slower way, a merge of the sorted lists.
 */
export function numbersMetTwice(orders: readonly Float64Array[]): Set<number>[] {
  const twice = orders.map(() => new Set<number>());
  let largest = 0;
  for (const order of orders) if (order.length > 0 && order[order.length - 1]! > largest) largest = order[order.length - 1]!;
  if (largest > BITSET_LIMIT) return mergeMetTwice(orders, twice);
  const seen = new Uint32Array(Math.floor(largest / 32) + 1);
  orders.forEach((order, i) => {
    const met = twice[i]!;
    for (let k = 0; k < order.length; k++) {
      const seq = order[k]!;
      const word = Math.floor(seq / 32);
      const bit = 1 << seq % 32;
      if ((seen[word]! & bit) !== 0) met.add(seq);
      else seen[word] = seen[word]! | bit;
    }
  });
  return twice;
}

/** The largest change number `numbersMetTwice` takes a bit for (128 MiB of bits). */
const BITSET_LIMIT = 2 ** 30;

/** `numbersMetTwice` by a merge: each step looks at the head of every list. */
function mergeMetTwice(orders: readonly Float64Array[], twice: Set<number>[]): Set<number>[] {
  const at = orders.map(() => 0);
  for (;;) {
    let least = Infinity;
    for (let i = 0; i < orders.length; i++) {
      const order = orders[i]!;
      const k = at[i]!;
      if (k < order.length && order[k]! < least) least = order[k]!;
    }
    if (least === Infinity) return twice;
    let first = true;
    for (let i = 0; i < orders.length; i++) {
      const order = orders[i]!;
      const k = at[i]!;
      if (k >= order.length || order[k] !== least) continue;
      if (first) first = false;
      else twice[i]!.add(least);
      at[i] = k + 1;
    }
  }
}

async function checkLogFile(file: string, name: string, opened: Map<string, string>): Promise<void> {
  let real: string;
  try {
    const stat = await fs.stat(file);
    if (!stat.isFile()) throw new StoreOpenError(`${file} is not a regular file`);
    real = await fs.realpath(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const other = opened.get(real);
  if (other !== undefined) throw new StoreOpenError(`${file} is the same file as the one of resource ${other} (${real}): each resource needs its own file`);
  opened.set(real, name);
}
