/**
 * `halserve import` and `halserve export` (docs/storage.md §2): a data set moves between the file store
 * and PostgreSQL in one command. Progress goes to stderr on a terminal, the summary line to stdout;
 * any failure is one line on stderr and exit code 1.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { resourceNameProblem } from './config.js';
import { entityHref } from './conventions/hal.js';
import { linkFields } from './conventions/relations.js';
import { compileSchema, SchemaError } from './conventions/schema.js';
import { onInterrupt } from './interrupt.js';
import { count, counted, fraction, ProgressLine } from './progress-line.js';
import { discoverResources, LOG_EXTENSION } from './store/log/data-dir.js';
import { ChangesFile, newDatasetName } from './store/log/changes-file.js';
import { lockDirectory, type DirLock } from './store/log/dir-lock.js';
import { nodeFs } from './store/log/store-fs.js';
import { lastLineOf, readResource } from './store/log/read-resource.js';
import { DriverMissingError, isPostgresUrl, type Sql } from './store/pg/driver.js';
import { exportResources } from './store/pg/export.js';
import { DanglingLinksError, importResources, type ExistingPolicy, type ImportOutcome, type ImportResource } from './store/pg/import.js';
import type { DanglingLink, ImportLink } from './store/pg/import-links.js';
import { describeUrl, reason } from './store/pg/connection.js';
import { indexedSources } from './store/pg/link-layout.js';
import { holdsNul, unreadableEntity } from './store/pg/nul-text.js';
import { connectDatabase, ensureLayout, hasLayout, TransferError } from './store/pg/transfer-db.js';
import { StoreOpenError } from './store/store.js';

export type TransferCommand = 'import' | 'export';

/** A mistake on the command line. */
class UsageError extends Error {}

export const IMPORT_HELP = `Usage: halserve import --from <data-dir> --to postgres://… [--replace | --skip-existing]
                      [--data <schema-dir>] [--allow-dangling-links]

Copies every <name>.jsonl resource of a data directory into PostgreSQL, in one transaction:
the live entities (the last line per id; deleted ones left out) with their JSON text unchanged,
in creation order. A resource the database already holds entities of stops the import before
anything is written, unless:
  --replace          makes it what the file holds: ids in both replaced in place, ids only in the
                     database deleted, the others created (running servers see it as writes)
  --skip-existing    leaves it as it is and imports the others
Links (x-link in <name>.schema.json, read from --data, else from --from, as the servers read
them): an import that would leave a link dangling, among the imported entities and those the
database keeps, stops before anything is written, unless:
  --allow-dangling-links  imports anyway, and says how many links it left dangling
--to defaults to HALSERVE_STORE, then DATABASE_URL, when one is a postgres:// URL.
`;

export const EXPORT_HELP = `Usage: halserve export --from postgres://… --to <data-dir> [--replace]

Writes every resource held in PostgreSQL as <data-dir>/<name>.jsonl: one line per live entity in
creation order, as the file store writes a file after compaction, from one consistent snapshot.
Each file is written beside its place, synced, then renamed into it. A resource file that holds
something stops the export before anything is written, unless:
  --replace          overwrites it
The directory is created when missing. --from defaults to HALSERVE_STORE, then DATABASE_URL.
`;

interface TransferArgs {
  readonly dir: string;
  readonly url: string;
  readonly policy: ExistingPolicy;
  /** Import: where the schema files are (`--data`, else the directory imported). */
  readonly schemas: string;
  /** Import: links left dangling are accepted (`--allow-dangling-links`). */
  readonly allowDangling: boolean;
}

const say = (message: string): void => {
  process.stderr.write(`halserve: ${message}\n`);
};

/** The PostgreSQL URL the environment names, if any. */
function urlFromEnv(env: NodeJS.ProcessEnv): string | undefined {
  return [env['HALSERVE_STORE'], env['DATABASE_URL']].find((value) => value !== undefined && isPostgresUrl(value));
}

/** Parses the subcommand's arguments; `undefined` when help was asked for. */
export function parseTransferArgs(command: TransferCommand, args: readonly string[], env: NodeJS.ProcessEnv): TransferArgs | undefined {
  const values = new Map<string, string>();
  const switches = new Set<string>();
  const flags = command === 'import' ? ['--replace', '--skip-existing', '--allow-dangling-links'] : ['--replace'];
  const options = command === 'import' ? ['--from', '--to', '--data'] : ['--from', '--to'];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--help' || arg === '-h') return undefined;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (options.includes(flag)) {
      const value = inline ?? args[++i];
      if (value === undefined || value === '') throw new UsageError(`${flag} needs a value`);
      values.set(flag, value);
    } else if (flags.includes(flag) && inline === undefined) {
      switches.add(flag);
    } else {
      throw new UsageError(`${arg.startsWith('-') ? 'unknown option' : 'unexpected argument'} ${JSON.stringify(arg)} for halserve ${command} (see halserve ${command} --help)`);
    }
  }
  if (switches.has('--replace') && switches.has('--skip-existing')) throw new UsageError('--replace and --skip-existing exclude each other');
  const [dirFlag, urlFlag] = command === 'import' ? ['--from', '--to'] : ['--to', '--from'];
  const dir = values.get(dirFlag);
  const url = values.get(urlFlag) ?? urlFromEnv(env);
  if (dir === undefined) throw new UsageError(`halserve ${command} needs ${dirFlag} <data-dir>`);
  if (url === undefined) throw new UsageError(`halserve ${command} needs ${urlFlag} postgres://… (or HALSERVE_STORE / DATABASE_URL)`);
  if (!isPostgresUrl(url)) throw new UsageError(`${urlFlag} must be a postgres:// URL, not ${JSON.stringify(describeUrl(url))}`);
  const policy: ExistingPolicy = switches.has('--replace') ? 'replace' : switches.has('--skip-existing') ? 'skip' : 'refuse';
  return { dir, url, policy, schemas: values.get('--data') ?? dir, allowDangling: switches.has('--allow-dangling-links') };
}

/** Runs `halserve import|export …`; sets the exit code, never throws. */
export async function runTransferCli(command: TransferCommand, args: readonly string[], env: NodeJS.ProcessEnv): Promise<void> {
  const progress = new ProgressLine(process.stderr);
  try {
    const parsed = parseTransferArgs(command, args, env);
    if (parsed === undefined) {
      process.stdout.write(command === 'import' ? IMPORT_HELP : EXPORT_HELP);
      return;
    }
    const started = performance.now();
    const summary = command === 'import' ? await runImport(parsed, progress) : await runExport(parsed, progress);
    progress.clear();
    process.stdout.write(`halserve: ${summary} in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  } catch (error) {
    progress.clear();
    const known = error instanceof UsageError || error instanceof TransferError || error instanceof StoreOpenError || error instanceof DriverMissingError;
    say(known ? (error as Error).message : `${command} failed, nothing ${command}ed: ${reason(error)}`);
    process.exitCode = 1;
  }
}

/** Runs `work` on an open connection, closed afterwards. */
async function withDatabase<T>(url: string, work: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = await connectDatabase(url);
  try {
    return await work(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * While `lock` is held: Ctrl-C or SIGTERM lets it go before the process ends (a lock left behind
 * makes the next start warn of a stale lock), and says in one line what the interrupted command
 * leaves (`leaves`). Returns the function that stops listening.
 */
function releaseOnInterrupt(lock: DirLock | undefined, command: TransferCommand, leaves: string): () => void {
  return onInterrupt((signal) => {
    // Only if it is still this process's (as `release` checks).
    lock?.releaseNow();
    return `${command} interrupted (${signal}): ${leaves}`;
  });
}

/**
 * Takes the data directory's lock, so that no server writes to it meanwhile (docs/storage.md §1). A
 * directory this user cannot write is read without it: no lock can be taken there.
 */
async function lockUnlessReadOnly(dir: string): Promise<DirLock | undefined> {
  try {
    await fs.access(dir, constants.W_OK);
  } catch {
    return undefined;
  }
  return lockDirectory(dir, say);
}

async function runImport({ dir, url, policy, schemas, allowDangling }: TransferArgs, progress: ProgressLine): Promise<string> {
  const names = await discoverResources(dir);
  for (const name of names) {
    const problem = resourceNameProblem(name);
    if (problem !== undefined) throw new TransferError(`${path.join(dir, name + LOG_EXTENSION)}: ${problem}`);
  }
  if (names.length === 0) throw new TransferError(`${dir} holds no <name>${LOG_EXTENSION} file: nothing to import`);
  // Read before anything is: a schema the servers would refuse stops the import too.
  const declared = await declaredLinks(schemas);
  const lock = await lockUnlessReadOnly(dir);
  // The import is one transaction: cut off, the database rolls it back, unless its commit had left.
  const listening = releaseOnInterrupt(lock, 'import', 'the database holds none of it (or all of it, if its last statement had been sent)');
  try {
    const resources: ImportResource[] = [];
    for (const name of names) {
      progress.update(`import: reading ${name}${LOG_EXTENSION}`, true);
      resources.push({ name, entities: await readResource(path.join(dir, name + LOG_EXTENSION), (message) => {
        progress.clear();
        say(message);
      }) });
    }
    await refuseNulIds(dir, resources);
    const total = resources.reduce((sum, r) => sum + r.entities.length, 0);
    const { outcomes, dangling } = await withDatabase(url, async (sql) => {
      await refuseUnreadableLinking(dir, resources, await indexedSources(sql));
      await ensureLayout(sql, url);
      try {
        return await importResources(sql, resources, policy, (sent) => progress.update(`import: ${fraction(sent, total)} entities`), { declared, allowDangling });
      } catch (error) {
        if (!(error instanceof DanglingLinksError)) throw error;
        throw new TransferError(
          `the import would leave ${danglingLinks(error.count, error.examples)}: nothing imported; import the entities they name with it, or --allow-dangling-links to import anyway`,
        );
      }
    });
    if (dangling.count > 0) {
      progress.clear();
      say(`--allow-dangling-links: the import left ${danglingLinks(dangling.count, dangling.examples)}; they lead to a 404 until the entities holding them are written again`);
    }
    const imported = outcomes.filter((o) => o.action !== 'skipped').reduce((sum, o) => sum + o.entities, 0);
    return `imported ${counted(imported, 'entity', 'entities')} from ${dir} into ${describeUrl(url)} (${outcomes.map(describeOutcome).join(', ')})`;
  } finally {
    listening();
    await lock?.release();
  }
}

/**
 * An id holding U+0000, which PostgreSQL's text cannot hold (src/store/pg/nul-text.ts), refused
 * before the database is reached, naming its line: sent, it would fail the import's statement with
 * PostgreSQL's reason alone ("invalid byte sequence for encoding UTF8: 0x00"), naming no entity.
 */
async function refuseNulIds(dir: string, resources: readonly ImportResource[]): Promise<void> {
  for (const { name, entities } of resources) {
    const found = entities.find((e) => holdsNul(e.id));
    if (found === undefined) continue;
    const file = await at(dir, name, found.id);
    throw new TransferError(`${file}: the id ${JSON.stringify(found.id)} holds U+0000, which PostgreSQL cannot store in an id: nothing imported; give the entity another id in the file`);
  }
}

/**
 * A body of a resource whose link fields the database indexes (a server with its schemas made the
 * indexes), holding what their `json` cannot read (U+0000, a lone surrogate), refused before
 * anything is written, naming its line: sent, it fails the publishing statement with PostgreSQL's
 * reason alone. A resource no index reads keeps such bodies as written (docs/storage.md §2).
 */
async function refuseUnreadableLinking(dir: string, resources: readonly ImportResource[], linking: ReadonlySet<string>): Promise<void> {
  for (const { name, entities } of resources) {
    if (!linking.has(name)) continue;
    const found = unreadableEntity(entities);
    if (found === undefined) continue;
    const file = await at(dir, name, found.id);
    throw new TransferError(
      `${file}: ${name} ${JSON.stringify(found.id)} holds ${found.what} at ${JSON.stringify(found.path)}, which PostgreSQL's json cannot read, ` +
        `and the database indexes the link fields of ${name}: nothing imported; remove it from the entity in the file`,
    );
  }
}

/** `<file>:<line>` of the live entity `id` of resource `name`, or the file alone when no line is found. */
async function at(dir: string, name: string, id: string): Promise<string> {
  const file = path.join(dir, name + LOG_EXTENSION);
  const line = await lastLineOf(file, id);
  return line === undefined ? file : `${file}:${line}`;
}

/**
 * The link fields the schema files of `dir` declare (docs/relations.md §1), as the servers read them:
 * `<name>.schema.json` of each resource name the servers accept. A schema a server would refuse
 * stops the import in one line: its links could not be checked, and no server would start on it.
 */
async function declaredLinks(dir: string): Promise<ImportLink[]> {
  const SUFFIX = '.schema.json';
  let files: string[];
  try {
    files = (await fs.readdir(dir)).filter((f) => f.endsWith(SUFFIX)).sort();
  } catch (error) {
    throw new TransferError(`cannot read the schema files of ${dir}: ${(error as Error).message}`);
  }
  const links: ImportLink[] = [];
  for (const file of files) {
    const source = file.slice(0, -SUFFIX.length);
    if (resourceNameProblem(source) !== undefined) continue;
    const at = path.join(dir, file);
    let schema: unknown;
    try {
      schema = JSON.parse(await fs.readFile(at, 'utf8'));
      compileSchema(schema, at);
    } catch (error) {
      if (error instanceof SchemaError) throw new TransferError(`${error.message}: its links cannot be checked, nothing imported`);
      throw new TransferError(`${at}: ${error instanceof SyntaxError ? 'not valid JSON: ' : ''}${(error as Error).message}: its links cannot be checked, nothing imported`);
    }
    for (const { field, target, many } of linkFields(schema)) links.push({ source, field, target, many });
  }
  return links;
}

/** `3 links dangling (/products/p1 category -> /categories/audio, …)`: the count and the examples, as the URLs a client meets. */
function danglingLinks(total: number, examples: readonly DanglingLink[]): string {
  const shown = examples.map((l) => `${entityHref(`/${l.source}`, l.id)} ${l.field} -> ${entityHref(`/${l.target}`, l.targetId)}`);
  const more = total > examples.length ? ', …' : '';
  return `${counted(total, 'link', 'links')} dangling (${shown.join(', ')}${more})`;
}

function describeOutcome(o: ImportOutcome): string {
  if (o.action === 'skipped') return `${o.name}: skipped, the database holds ${count(o.before)}`;
  if (o.action === 'replaced') return `${o.name}: ${count(o.entities)}, replacing ${count(o.before)}`;
  return `${o.name}: ${count(o.entities)}`;
}

async function runExport({ dir, url, policy }: TransferArgs, progress: ProgressLine): Promise<string> {
  /** The first directory the export made (`dir` or a parent of it): taken away again if it fails. */
  let made: string | undefined;
  try {
    made = await fs.mkdir(dir, { recursive: true });
  } catch (error) {
    throw new TransferError(`cannot use ${dir} as the data directory: ${(error as Error).message}`);
  }
  let done = false;
  const lock = await lockDirectory(dir, say);
  // New files are written beside the old ones (`.tmp`, removed by the next start) and renamed in at the end.
  const listening = releaseOnInterrupt(lock, 'export', `the files of ${dir} are as they were unless the new ones had begun to take their place: export again`);
  try {
    let total = 0;
    const exported = await withDatabase(url, async (sql) => {
      if (!(await hasLayout(sql, url))) throw new TransferError(`${describeUrl(url)} holds no halserve data (no table halserve.entities): nothing to export`);
      return exportResources(sql, {
        dir,
        replace: policy === 'replace',
        nameProblem: resourceNameProblem,
        started: (found) => (total = found.reduce((sum, r) => sum + r.entities, 0)),
        progress: (written) => progress.update(`export: ${fraction(written, total)} entities`),
        // A new data set: the directory's feed starts anew, and a cursor it gave out before is a
        // 410. Named before any new file takes its place: a failure here (a full disk) leaves the
        // old files under their old name, and an export cut short after it leaves a new name over
        // old files (their clients list again), never new files under the old name, where a
        // cursor of before would resume on another data set.
        beforeRename: () => new ChangesFile(dir, nodeFs).renew(newDatasetName()),
      });
    });
    const entities = exported.reduce((sum, r) => sum + r.entities, 0);
    const list = exported.map((r) => `${r.name}: ${count(r.entities)}`).join(', ');
    done = true;
    return `exported ${counted(entities, 'entity', 'entities')} from ${describeUrl(url)} into ${dir} (${list || 'no resources'})`;
  } finally {
    listening();
    await lock.release();
    // A failed export leaves nothing it made: the directories it created, while they are empty
    // (rmdir takes none that is not), up to the first.
    if (!done && made !== undefined) await removeEmptyUpTo(path.resolve(dir), path.resolve(made));
  }
}

/** Removes `dir` and its parents up to `top` (`dir` or an ancestor), each only while empty. */
async function removeEmptyUpTo(dir: string, top: string): Promise<void> {
  for (let at = dir; ; at = path.dirname(at)) {
    try {
      await fs.rmdir(at);
    } catch {
      return;
    }
    if (at === top || path.dirname(at) === at) return;
  }
}
