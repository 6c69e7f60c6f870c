/**
 * `halserve export`: every resource of the table (layout.ts) written as `<dir>/<name>.jsonl`, one
 * line per live entity in creation order, as the file store writes a file after compaction.
 *
 * All resources are read in one REPEATABLE READ transaction, so the files are one consistent
 * moment of the database. Each file is written to `<name>.jsonl.tmp` and synced; only once every
 * file is written are they renamed into place and the directory synced. A temporary file left by
 * a crash is what the file store removes at start-up as an unfinished compaction.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { TransactionSql } from 'postgres';
import type { Sql } from './driver.js';
import { SCHEMA } from './layout.js';
import { TransferError } from './transfer-db.js';
import { LOG_EXTENSION } from '../log/data-dir.js';
import { TMP_SUFFIX } from '../log/jsonl-compaction.js';
import { nodeFs, syncDirectory } from '../log/store-fs.js';

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
}

const NEWLINE = 0x0a;
/** Rows fetched, and written to the file, at a time. */
const CURSOR_ROWS = 10_000;

/** Writes every resource of the database into `options.dir`; resolves with what was written. */
export async function exportResources(sql: Sql, options: ExportOptions): Promise<ExportedResource[]> {
  const { dir } = options;
  const tmpFiles: string[] = [];
  try {
    const resources = await sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
      const rows = await tx<{ resource: string; live: string }[]>`
        SELECT resource, count(body) AS live FROM ${tx(SCHEMA)}.entities GROUP BY resource ORDER BY resource`;
      const found = rows.map((row) => ({ name: row.resource, file: path.join(dir, row.resource + LOG_EXTENSION), entities: Number(row.live) }));
      await checkTargets(found, options);
      options.started?.(found);
      let written = 0;
      for (const resource of found) {
        const tmp = resource.file + TMP_SUFFIX;
        tmpFiles.push(tmp);
        written = await writeResource(tx, resource, tmp, written, options.progress);
      }
      return found;
    });
    // Every file is whole: now they take their places.
    for (const resource of resources) await fs.rename(resource.file + TMP_SUFFIX, resource.file);
    tmpFiles.length = 0;
    await syncDirectory(nodeFs, dir);
    return resources;
  } finally {
    await Promise.all(tmpFiles.map((file) => fs.rm(file, { force: true })));
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

/** Streams one resource's live bodies, in creation order, into `tmp`; synced before it resolves. */
async function writeResource(
  tx: TransactionSql,
  resource: ExportedResource,
  tmp: string,
  writtenBefore: number,
  progress: ((written: number) => void) | undefined,
): Promise<number> {
  const file = await fs.open(tmp, 'w', 0o644);
  let written = writtenBefore;
  const newline = Buffer.from([NEWLINE]);
  try {
    // raw(): each body as the bytes PostgreSQL sent, never decoded into a string and back.
    await tx
      .unsafe(`SELECT body FROM ${SCHEMA}.entities WHERE resource = $1 AND body IS NOT NULL ORDER BY pos`, [resource.name])
      .raw()
      .cursor(CURSOR_ROWS, async (rows) => {
        const parts: Uint8Array[] = [];
        for (const [body] of rows) parts.push(body as Buffer, newline);
        await file.write(Buffer.concat(parts));
        written += rows.length;
        progress?.(written);
      });
    await file.sync();
  } finally {
    await file.close();
  }
  return written;
}
