/**
 * `halserve export`: every resource of the table (layout.ts) written as `<dir>/<name>.jsonl`, one
 * line per live entity in creation order, as the file store writes a file after compaction.
 *
 * Every resource is read by one statement (one snapshot, so the files are one consistent moment
 * of the database, and no transaction: postgres 3.4.9 crashes the process that writes a ROLLBACK
 * to a lost connection), streamed in resource and creation order. Each file is written to
 * `<name>.jsonl.tmp` and synced; only once every file is written (and `beforeRename` has run) are
 * they renamed into place and the directory synced. A temporary file left by a crash is what the file store removes at
 * start-up as an unfinished compaction.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { eachBatch, type Sql } from './driver.js';
import { SCHEMA } from './layout.js';
import { TransferError } from './transfer-db.js';
import { LOG_EXTENSION } from '../log/data-dir.js';
import { TMP_SUFFIX } from '../log/jsonl-compaction.js';
import { nodeFs, syncDirectory, writeFully } from '../log/store-fs.js';

export interface ExportedResource {
  readonly name: string;
  readonly file: string;
  readonly entities: number;
}

export interface ExportOptions {
  /** The data directory (exists). */
  readonly dir: string;
  /** Overwrite a resource file that holds something; without it such a file stops the export before anything is written. */
  readonly replace: boolean;
  /** Refuses a resource name that cannot be a file store resource: the reason, or undefined. */
  readonly nameProblem: (name: string) => string | undefined;
  /** Told the resources and their live entity counts once known, then the entities written so far. */
  readonly started?: (resources: readonly ExportedResource[]) => void;
  readonly progress?: (written: number) => void;
  /**
   * Run once every file is written and synced, before the first is renamed into place: what must
   * hold before any new file does (the directory's new data set name), so that a failure there
   * leaves the old files as they were.
   */
  readonly beforeRename?: () => Promise<void>;
}

const NEWLINE_BYTE = Buffer.from([0x0a]);
/** Rows fetched, and written to the file, at a time. */
const CURSOR_ROWS = 10_000;

/** Writes every resource of the database into `options.dir`; resolves with what was written. */
export async function exportResources(sql: Sql, options: ExportOptions): Promise<ExportedResource[]> {
  const { dir } = options;
  const files = new Map<string, ResourceFile>();
  try {
    // The resources and their sizes first (for the checks and the progress line); the rows then
    // come from the statement below, and the files hold what it read.
    const rows = await sql<{ resource: string; live: string }[]>`
      SELECT resource, count(body) AS live FROM ${sql(SCHEMA)}.entities GROUP BY resource ORDER BY resource`;
    const listed = rows.map((row) => ({ name: row.resource, file: path.join(dir, row.resource + LOG_EXTENSION), entities: Number(row.live) }));
    await checkTargets(listed, options);
    options.started?.(listed);
    for (const resource of listed) files.set(resource.name, await ResourceFile.open(resource.file));
    let written = 0;
    let current: ResourceFile | undefined;
    let currentName = '';
    // Each body as the bytes PostgreSQL sent, never decoded into a string and back.
    await eachBatch(sql, `SELECT resource, body FROM ${SCHEMA}.entities WHERE body IS NOT NULL ORDER BY resource, pos`, CURSOR_ROWS, async (batch) => {
      for (const [resourceBytes, body] of batch) {
        const name = (resourceBytes as Buffer).toString('utf8');
        if (name !== currentName || current === undefined) {
          await current?.flush();
          currentName = name;
          current = files.get(name);
          if (current === undefined) {
            // A resource created after the first look.
            const resource = { name, file: path.join(dir, name + LOG_EXTENSION), entities: 0 };
            await checkTargets([resource], options);
            files.set(name, (current = await ResourceFile.open(resource.file)));
          }
        }
        current.add(body as Buffer);
      }
      await current?.flush();
      written += batch.length;
      options.progress?.(written);
    });
    for (const file of files.values()) await file.close();
    await options.beforeRename?.();
    // Every file is whole: now they take their places.
    for (const file of files.values()) await fs.rename(file.tmp, file.target);
    const exported = [...files].map(([name, file]) => ({ name, file: file.target, entities: file.entities })).sort((a, b) => (a.name < b.name ? -1 : 1));
    files.clear();
    await syncDirectory(nodeFs, dir);
    return exported;
  } finally {
    await Promise.all([...files.values()].map((file) => file.discard()));
  }
}

/** A resource's file being written: `<file>.tmp`, renamed over `<file>` once every resource is written. */
class ResourceFile {
  readonly target: string;
  readonly tmp: string;
  readonly #handle: fs.FileHandle;
  #parts: Uint8Array[] = [];
  #closed = false;
  entities = 0;

  private constructor(target: string, handle: fs.FileHandle) {
    this.target = target;
    this.tmp = target + TMP_SUFFIX;
    this.#handle = handle;
  }

  static async open(target: string): Promise<ResourceFile> {
    return new ResourceFile(target, await fs.open(target + TMP_SUFFIX, 'w', 0o644));
  }

  add(body: Buffer): void {
    this.#parts.push(body, NEWLINE_BYTE);
    this.entities++;
  }

  async flush(): Promise<void> {
    if (this.#parts.length === 0) return;
    const chunk = Buffer.concat(this.#parts);
    this.#parts = [];
    await writeFully(this.#handle, chunk);
  }

  /** Flushed, synced and closed. */
  async close(): Promise<void> {
    await this.flush();
    await this.#handle.sync();
    this.#closed = true;
    await this.#handle.close();
  }

  /** Closed (if still open) and removed: the export did not finish. */
  async discard(): Promise<void> {
    if (!this.#closed) await this.#handle.close().catch(() => {});
    await fs.rm(this.tmp, { force: true });
  }
}

/** Refuses bad names, and files that hold something unless `replace`, before anything is written. */
async function checkTargets(resources: readonly ExportedResource[], options: ExportOptions): Promise<void> {
  for (const { name } of resources) {
    const problem = options.nameProblem(name);
    if (problem !== undefined) throw new TransferError(`the database holds a resource that cannot be a file: ${problem}`);
  }
  const taken: string[] = [];
  for (const { file } of resources) {
    const stat = await fs.stat(file).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (stat === undefined) continue;
    if (!stat.isFile()) throw new TransferError(`${file} is not a regular file`);
    if (stat.size > 0 && !options.replace) taken.push(file);
  }
  if (taken.length > 0) {
    throw new TransferError(`${taken.join(', ')} already ${taken.length === 1 ? 'holds' : 'hold'} data: nothing exported; --replace overwrites`);
  }
}
