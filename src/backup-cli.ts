/**
 * `halserve backup --data DIR --to DEST` (docs/storage.md §4): a consistent copy of a running
 * server's data set, as of one cursor of its change feed, written to an empty or absent directory
 * in the JSON-lines layout, so that `halserve --data DEST` serves it. The running server takes the
 * snapshot and sends the bytes over its data directory's socket (store/log/backup-socket.ts); this
 * command writes them beside DEST and moves them into place only once all are on disk, so a copy
 * cut short never looks complete. On success the last line of stdout is the cursor alone; any
 * failure is one line on stderr, nothing on stdout, exit code 1, and nothing left at DEST.
 */
import { rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { resourceNameProblem } from './config.js';
import { onInterrupt } from './interrupt.js';
import { count } from './progress-line.js';
import { BACKUP_REQUEST, BACKUP_SOCKET, MAX_HEADER_BYTES, parseBackupReply, socketAddress, type BackupHeader } from './store/log/backup-protocol.js';
import { CHANGES_FILE, changesText, newDatasetName } from './store/log/changes-file.js';
import { BACKUP_PARTIAL_PREFIX, LOG_EXTENSION } from './store/log/data-dir.js';
import { lockHolder } from './store/log/dir-lock.js';
import { writeFully } from './store/log/store-fs.js';
import { copyDatabase } from './store/pg/backup.js';
import { describeUrl } from './store/pg/connection.js';
import { isPostgresUrl } from './store/pg/driver.js';
import { connectDatabase, hasLayout } from './store/pg/transfer-db.js';

/** A failure the user can act on: its message is the one line printed. */
class BackupError extends Error {}

export const BACKUP_HELP = `Usage: halserve backup --data <data-dir> --to <dest>
       halserve backup --from postgres://… --to <dest> [--data <dir of the schema files>]

Copies the data set of the server running on <data-dir> into <dest> (an empty or absent directory)
without stopping it: every resource as of one cursor of its change feed, in the JSON-lines layout,
with its schema file. The server's writes wait for the snapshot only, a fraction of a millisecond. The copy
is written beside <dest> and moved into place once complete. The last line printed is the cursor
the copy is at. Serve the copy with halserve --data <dest>: it starts a new change feed, and
answers a cursor of the original with 410 Gone (its clients list again).
--data defaults to HALSERVE_DATA. With --from, the copy is one snapshot of the database that is
one cursor of its change feed; nothing waits for it. With neither --data nor --from, the store is
the server's own: --from HALSERVE_STORE (then DATABASE_URL) when set, with the schema files of
HALSERVE_DATA; else --data HALSERVE_DATA.
`;

/** A schema file's suffix (docs/conventions.md §1). */
const SCHEMA_SUFFIX = '.schema.json';
/** A reply that stalls this long (no byte) fails the backup. */
const IDLE_TIMEOUT_MS = 60_000;

interface BackupArgs {
  /** The data directory: of the running server, or (with `url`) where the schema files are, if given. */
  readonly dir: string | undefined;
  /** A PostgreSQL store instead of a running server's directory. */
  readonly url: string | undefined;
  readonly to: string;
}

/** What a copy holds, for the summary. */
interface Copied {
  readonly cursor: string;
  readonly resources: readonly string[];
  /** How long the server's writes waited for the snapshot (files); none wait on PostgreSQL. */
  readonly heldMs: number | undefined;
  readonly from: string;
}

/** Tries of a PostgreSQL snapshot that is one cursor of the feed (store/pg/backup.ts). */
const DATABASE_TRIES = 50;

const say = (message: string): void => {
  process.stderr.write(`halserve: ${message}\n`);
};

/** Parses the subcommand's arguments; `undefined` when help was asked for. */
export function parseBackupArgs(args: readonly string[], env: NodeJS.ProcessEnv): BackupArgs | undefined {
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--help' || arg === '-h') return undefined;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (flag !== '--data' && flag !== '--to' && flag !== '--from') {
      throw new BackupError(`${arg.startsWith('-') ? 'unknown option' : 'unexpected argument'} ${JSON.stringify(arg)} for halserve backup (see halserve backup --help)`);
    }
    const value = inline ?? args[++i];
    if (value === undefined || value === '') throw new BackupError(`${flag} needs a value`);
    values.set(flag, value);
  }
  const from = values.get('--from');
  if (from !== undefined && !isPostgresUrl(from)) throw new BackupError(`--from takes a postgres:// URL, not ${JSON.stringify(describeUrl(from))}; a data directory is --data`);
  // Neither flag: the store the server itself takes from the environment (config.ts): its
  // database when HALSERVE_STORE or DATABASE_URL names one (schema files from HALSERVE_DATA, as
  // the server reads them), else its data directory.
  const fromEnv = from === undefined && !values.has('--data') ? [env['HALSERVE_STORE'], env['DATABASE_URL']].find((value) => value !== undefined && value !== '') : undefined;
  if (fromEnv !== undefined && !isPostgresUrl(fromEnv)) throw new BackupError(`HALSERVE_STORE / DATABASE_URL must be a postgres:// URL, not ${JSON.stringify(describeUrl(fromEnv))}`);
  const url = from ?? fromEnv;
  const dir = values.get('--data') ?? (from === undefined ? env['HALSERVE_DATA'] : undefined);
  const to = values.get('--to');
  if (url === undefined && (dir === undefined || dir === '')) throw new BackupError('halserve backup needs --data <data-dir> (or HALSERVE_DATA), or --from postgres://…');
  if (to === undefined) throw new BackupError('halserve backup needs --to <dest>');
  return { dir, url, to };
}

/** Runs `halserve backup …`; sets the exit code, never throws. */
export async function runBackupCli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  try {
    const parsed = parseBackupArgs(args, env);
    if (parsed === undefined) {
      process.stdout.write(BACKUP_HELP);
      return;
    }
    const started = performance.now();
    const copied = await backup(parsed);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const resources = copied.resources.length;
    const waited = copied.heldMs === undefined ? 'no write waited (one snapshot of the database)' : `the server's writes waited ${copied.heldMs.toFixed(3)} ms for the snapshot`;
    process.stdout.write(`halserve: backed up ${count(resources)} ${resources === 1 ? 'resource' : 'resources'} from ${copied.from} to ${parsed.to} in ${seconds} s; ${waited}\n${copied.cursor}\n`);
  } catch (error) {
    say(error instanceof BackupError ? error.message : `backup failed, nothing written: ${(error as Error)?.message ?? String(error)}`);
    process.exitCode = 1;
  }
}

/** The copy: checks, the snapshot written beside DEST, then moved into place. */
async function backup({ dir, url, to }: BackupArgs): Promise<Copied> {
  const destExists = await checkDestination(to);
  const source = url === undefined ? await askServer(dir!) : await openDatabase(url);
  // Beside DEST when it is absent (one rename ends it); inside it when it exists (it may be a mount point).
  const staging = await fs.mkdtemp(destExists ? path.join(to, BACKUP_PARTIAL_PREFIX) : path.join(path.dirname(to), `.${path.basename(to)}${BACKUP_PARTIAL_PREFIX}`)).catch(async (error: unknown) => {
    await source.abandon();
    throw new BackupError(`cannot write beside ${to}: ${(error as Error).message}`);
  });
  // Interrupted (Ctrl-C, a stop) while the copy is written: the partial copy goes with the process,
  // rather than stay as large as the whole beside DEST. Not once it is being moved into DEST: what
  // is left there then says it is not a whole copy (the `.backup-partial-…` it still holds).
  let moving = false;
  const listening = onInterrupt((signal) => {
    if (!moving) rmSync(staging, { recursive: true, force: true });
    return `backup interrupted (${signal}): ${moving ? `${to} is not a whole copy (it still holds ${path.basename(staging)})` : 'nothing written'}`;
  });
  try {
    const filled = await source.fill(staging);
    const { forgotten } = filled;
    let copied = filled.copied;
    if (dir !== undefined && url !== undefined) {
      // A database holds no trace of a resource with no rows: its schema file names it, and the
      // copy gets its empty file too (every resource, empty ones included).
      const empty = (await schemaResources(dir)).filter((name) => !copied.resources.includes(name));
      for (const name of empty) await writeDurably(path.join(staging, name + LOG_EXTENSION), '');
      copied = { ...copied, resources: [...copied.resources, ...empty].sort() };
    }
    if (dir !== undefined) for (const name of copied.resources) await copySchema(dir, staging, name);
    await writeDurably(path.join(staging, CHANGES_FILE), changesText({ forgotten, dataset: newDatasetName() }));
    await syncDir(staging);
    moving = true;
    if (destExists) await moveInto(staging, to);
    else {
      await fs.rename(staging, to);
      await syncDir(path.dirname(to));
    }
    return copied;
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    throw error;
  } finally {
    listening();
    await source.abandon();
  }
}

/** Where a copy comes from: it fills a directory with the logs, or is given up. */
interface Source {
  fill(staging: string): Promise<{ copied: Copied; forgotten: number }>;
  abandon(): Promise<void>;
}

/** The server running on `dir`, reached through its socket (store/log/backup-socket.ts). */
async function askServer(dir: string): Promise<Source> {
  await checkDataDir(dir);
  const pid = await lockHolder(dir);
  if (pid === undefined) throw new BackupError(`no running server holds ${dir}: halserve backup copies a running server's data (a directory no server holds can be copied as it is)`);
  const address = socketAddress(dir, process.cwd());
  const socketFile = path.join(dir, BACKUP_SOCKET);
  if (address === undefined) throw new BackupError(`${socketFile}: the path is too long for a Unix socket; run halserve backup from a directory nearer to ${dir}`);
  const socket = await connect(address).catch((error: unknown) => {
    throw new BackupError(`the server holding ${dir} (process ${pid}) does not answer at ${socketFile} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  });
  return {
    fill: async (staging) => {
      const header = await receive(socket, staging, dir);
      return { copied: { cursor: header.cursor, resources: header.resources.map((r) => r.name), heldMs: header.heldMs, from: dir }, forgotten: header.forgotten };
    },
    abandon: async () => void socket.destroy(),
  };
}

/** A PostgreSQL store: one snapshot that is a cut of its feed (store/pg/backup.ts). */
async function openDatabase(url: string): Promise<Source> {
  const sql = await connectDatabase(url).catch((error: unknown) => {
    throw new BackupError((error as Error).message);
  });
  let ended = false;
  const end = async (): Promise<void> => {
    if (ended) return;
    ended = true;
    await sql.end({ timeout: 5 }).catch(() => {});
  };
  try {
    if (!(await hasLayout(sql, url))) throw new BackupError(`${describeUrl(url)} holds no halserve data (no table halserve.entities): nothing to back up`);
  } catch (error) {
    await end();
    throw error instanceof BackupError ? error : new BackupError((error as Error).message);
  }
  return {
    fill: async (staging) => {
      for (let attempt = 1; attempt <= DATABASE_TRIES; attempt++) {
        const copy = await copyDatabase(sql, staging, resourceNameProblem);
        if (copy !== undefined) return { copied: { cursor: copy.cursor, resources: copy.resources.map((r) => r.name), heldMs: undefined, from: describeUrl(url) }, forgotten: 0 };
        await new Promise((resolve) => setTimeout(resolve, 10 * attempt));
      }
      throw new BackupError(`${describeUrl(url)}: no snapshot of ${DATABASE_TRIES} was one cursor of the change feed (a long transaction that writes is running); try again once it has ended`);
    },
    abandon: end,
  };
}

/** DEST must be an empty directory or absent with its parent present; resolves whether it exists. */
async function checkDestination(to: string): Promise<boolean> {
  try {
    const stat = await fs.stat(to);
    if (!stat.isDirectory()) throw new BackupError(`${to} is not a directory`);
    if ((await fs.readdir(to)).length > 0) throw new BackupError(`${to} is not empty: a backup goes into an empty or absent directory`);
    return true;
  } catch (error) {
    if (error instanceof BackupError) throw error;
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new BackupError(`cannot use ${to}: ${(error as Error).message}`);
  }
  const parent = path.dirname(path.resolve(to));
  const stat = await fs.stat(parent).catch(() => undefined);
  if (!stat?.isDirectory()) throw new BackupError(`${to}: its parent directory ${parent} does not exist`);
  return false;
}

async function checkDataDir(dir: string): Promise<void> {
  const stat = await fs.stat(dir).catch((error: NodeJS.ErrnoException) => {
    throw new BackupError(error.code === 'ENOENT' ? `data directory ${dir} does not exist` : `cannot use data directory ${dir}: ${error.message}`);
  });
  if (!stat.isDirectory()) throw new BackupError(`data directory ${dir} is not a directory`);
}

function connect(address: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(address);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/**
 * Sends the request and writes the reply's logs into `staging`, each synced: the header, then
 * exactly the bytes it announces, then the end of the stream.
 */
async function receive(socket: net.Socket, staging: string, dir: string): Promise<BackupHeader> {
  socket.setTimeout(IDLE_TIMEOUT_MS, () => socket.destroy(new Error(`no byte from the server for ${IDLE_TIMEOUT_MS / 1000} s`)));
  socket.write(BACKUP_REQUEST);
  let header: BackupHeader | undefined;
  let pending = Buffer.alloc(0);
  /** The resource being received: its file, and the bytes still to come. */
  let index = -1;
  let file: fs.FileHandle | undefined;
  let left = 0;
  // A file of the copy that cannot be written (a full disk, a file size limit) is this side's
  // failure, not the server's: said as such.
  const local = <T>(operation: Promise<T>): Promise<T> =>
    operation.catch((error: unknown) => {
      throw new BackupError(`cannot write the copy into ${path.dirname(staging)}: ${(error as Error).message}; nothing written`);
    });
  const next = async (): Promise<void> => {
    // Every resource gets its file, an empty one included.
    while (header !== undefined && left === 0 && index < header.resources.length) {
      if (file !== undefined) {
        await local(file.sync());
        await local(file.close());
        file = undefined;
      }
      index++;
      const resource = header.resources[index];
      if (resource === undefined) return;
      file = await local(fs.open(path.join(staging, resource.name + LOG_EXTENSION), 'wx', 0o644));
      left = resource.bytes;
    }
  };
  try {
    for await (const chunk of socket as AsyncIterable<Buffer>) {
      let data = chunk;
      if (header === undefined) {
        pending = Buffer.concat([pending, data]);
        const newline = pending.indexOf(0x0a);
        if (newline < 0) {
          if (pending.length > MAX_HEADER_BYTES) throw new BackupError(`the server holding ${dir} sent no header`);
          continue;
        }
        header = checkedHeader(pending.toString('utf8', 0, newline), dir);
        data = pending.subarray(newline + 1);
        await next();
      }
      while (data.length > 0) {
        if (file === undefined) throw new BackupError(`the server holding ${dir} sent more bytes than it announced`);
        const n = Math.min(left, data.length);
        await local(writeFully(file, data.subarray(0, n)));
        data = data.subarray(n);
        left -= n;
        await next();
      }
    }
  } catch (error) {
    await file?.close().catch(() => {});
    if (error instanceof BackupError) throw error;
    throw new BackupError(`the server holding ${dir} stopped sending: ${(error as Error).message}; nothing written`);
  }
  if (header === undefined || file !== undefined || index < header.resources.length) {
    await file?.close().catch(() => {});
    throw new BackupError(`the server holding ${dir} stopped sending before the copy was whole; nothing written`);
  }
  return header;
}

/** The reply's header, its names checked (each becomes a file name); a refusal is the server's reason. */
function checkedHeader(line: string, dir: string): BackupHeader {
  let reply: ReturnType<typeof parseBackupReply>;
  try {
    reply = parseBackupReply(line);
  } catch (error) {
    throw new BackupError(`the server holding ${dir} answered what is not a backup: ${(error as Error).message}`);
  }
  if ('error' in reply) throw new BackupError(`the server holding ${dir} refused the backup: ${reply.error}`);
  for (const { name } of reply.resources) {
    const problem = resourceNameProblem(name);
    if (problem !== undefined) throw new BackupError(`the server holding ${dir} named a resource that cannot be a file: ${problem}`);
  }
  return reply;
}

/** The resources the schema files of `dir` name. */
async function schemaResources(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (error) {
    throw new BackupError(`cannot read the schema files of ${dir}: ${(error as Error).message}`);
  }
  return names
    .filter((file) => file.endsWith(SCHEMA_SUFFIX))
    .map((file) => file.slice(0, -SCHEMA_SUFFIX.length))
    .filter((name) => resourceNameProblem(name) === undefined);
}

/** Copies `<name>.schema.json` when the data directory has one. */
async function copySchema(dir: string, staging: string, name: string): Promise<void> {
  let text: Buffer;
  try {
    text = await fs.readFile(path.join(dir, name + SCHEMA_SUFFIX));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  await writeDurably(path.join(staging, name + SCHEMA_SUFFIX), text);
}

async function writeDurably(file: string, data: string | Buffer): Promise<void> {
  const handle = await fs.open(file, 'wx', 0o644);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Moves the staged copy into an existing DEST: the logs and schemas, then `_changes`, then the
 * staging directory goes. A DEST that still holds `.backup-partial-…` is not a whole copy.
 */
async function moveInto(staging: string, to: string): Promise<void> {
  const entries = (await fs.readdir(staging)).sort((a, b) => Number(a === CHANGES_FILE) - Number(b === CHANGES_FILE));
  const others = (await fs.readdir(to)).filter((name) => name !== path.basename(staging));
  if (others.length > 0) throw new BackupError(`${to} is not empty any more (${others[0]} appeared during the backup)`);
  for (const entry of entries) await fs.rename(path.join(staging, entry), path.join(to, entry));
  await syncDir(to);
  await fs.rmdir(staging);
  await syncDir(to);
}

/** A copy's data set name (local-feed.ts `DATASET`): its cursors carry it. */
