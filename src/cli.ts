#!/usr/bin/env -S node --min-semi-space-size=16
// The flag on the line above (also in package.json's `start` and docker/entrypoint.sh; a test
// keeps the three equal): after a few idle seconds V8 shrinks its young generation (to a fifth of
// its size under load, here) and grows it again only when objects survive, which a server's
// short-lived request garbage never does. A server that idled once then collected 5x as often,
// and with a large heap each collection walks every old-generation page: ~3 µs of CPU per request
// at 15,000 req/s after a bulk load of 100,000 entities (bench/NOTES.md, "2026-11-28"). 16 MiB is
// the size it grows to under load; the memory is 32 MiB (two semi-spaces) at all times.
import { readFile } from 'node:fs/promises';
import { Server as NetServer, type AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { ServedResource } from './http/app.js';
import { looksLikeUrl } from './conventions/credential-forms.js';
import { JwksError, readKeySetFile, remoteKeySet, type KeySet } from './http/jwks.js';
import type { JwtOptions } from './http/jwt-authenticator.js';
import { ServerMetrics } from './metrics/server-metrics.js';
import type { JsonSchema } from './representations/openapi.js';
import { createHalServer, trackConnections } from './http/server.js';
import { ConfigError, HELP, isLoopback, parseConfig, resourceNameProblem, type Config } from './config.js';
import type { PathCheck } from './conventions/query.js';
import { relationGraph, RelationError, type RelationGraph } from './conventions/relations.js';
import { compileSchema, declaredPaths, SchemaError, type Validator } from './conventions/schema.js';
import { serveBackups } from './store/log/backup-socket.js';
import { discoverResources, openDataDir, type DataSnapshot } from './store/log/data-dir.js';
import { openPostgres } from './store/pg/open.js';
import type { LinkIntegrity } from './store/integrity.js';
import { StoreOpenError, type Store, type StoreChange } from './store/store.js';
import type { ChangeFeed } from './store/changes/change-feed.js';
import type { Database } from './store/pg/connection.js';
import { WebhookMetrics } from './metrics/webhook-metrics.js';
import { FilePositions } from './webhooks/file-positions.js';
import { PgLease } from './webhooks/pg-lease.js';
import { PgPositions } from './webhooks/pg-positions.js';
import { realScheduler } from './webhooks/delivery.js';
import { Webhooks } from './webhooks/webhooks.js';
import { unknownVariableWarnings } from './unknown-variables.js';
import { randomUUID } from 'node:crypto';

/** A start-up failure: printed as one line, exit code 1. */
class StartupError extends Error {}

/**
 * How long a shutdown waits for requests in flight before it closes their connections: well inside
 * the 10 s a container runtime waits before SIGKILL, so the store is always closed cleanly.
 */
const SHUTDOWN_GRACE_MS = 5_000;


const warn = (message: string): void => {
  process.stderr.write(`halserve: ${message}\n`);
};

/** A resource's schema file: the schema itself (for OpenAPI and the browser), its validator and the paths it declares. */
interface LoadedSchema {
  readonly schema: JsonSchema;
  readonly validate: Validator;
  readonly declared: PathCheck;
}

/** Reads `<data>/<name>.schema.json` if there is one (docs/conventions.md §1). */
async function loadSchema(data: string, name: string): Promise<LoadedSchema | undefined> {
  const path = join(data, `${name}.schema.json`);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (error) {
    throw new StartupError(`${path}: not valid JSON: ${(error as Error).message}`);
  }
  return { schema: schema as JsonSchema, validate: compileSchema(schema, path), declared: declaredPaths(schema) };
}

/** The resources to serve: every `*.jsonl` file plus the declared ones, each name checked. */
async function resourceNames(config: Config): Promise<string[]> {
  const found = await discoverResources(config.data);
  const names = [...new Set([...found, ...config.resources])].sort();
  for (const name of names) {
    const problem = resourceNameProblem(name);
    if (problem) throw new StartupError(problem);
  }
  return names;
}

/** What is served: each resource's name, schema and open store. */
interface Opened {
  readonly names: string[];
  readonly schemas: Map<string, LoadedSchema | undefined>;
  /** The relations among them, read once here and handed to the handler (and to PostgreSQL's link checks). */
  readonly graph: RelationGraph;
  readonly stores: { stores: Map<string, Store>; changes: ChangeFeed; close(): Promise<void>; database?: Database };
  /** The data directory's snapshots, for `halserve backup` (files only). */
  readonly snapshot?: () => Promise<DataSnapshot>;
  /** What keeps links from dangling when the store supplies it (PostgreSQL: across processes); else the in-process guard. */
  readonly integrity?: LinkIntegrity;
}

/** Schema files of `names`, and the relations among them checked (docs/relations.md). */
async function loadSchemas(config: Config, names: readonly string[]): Promise<{ schemas: Map<string, LoadedSchema | undefined>; graph: RelationGraph }> {
  const schemas = new Map<string, LoadedSchema | undefined>();
  for (const name of names) schemas.set(name, await loadSchema(config.data, name));
  // A link to a resource that is not served stops start-up, with the file to mend, as a schema
  // that does not compile does: among a few hundred schemas, the resource's name alone is a search.
  try {
    return { schemas, graph: relationGraph(names.map((name) => ({ name, schema: schemas.get(name)?.schema }))) };
  } catch (error) {
    if (error instanceof RelationError && error.resource !== undefined) throw new StartupError(`${join(config.data, `${error.resource}.schema.json`)}: ${error.message}`);
    throw error;
  }
}

/** The configured store's resources, open: files in `--data`, or PostgreSQL with `--store` (docs/storage.md §2). */
async function openResources(config: Config, metrics: ServerMetrics): Promise<Opened> {
  if (config.store === undefined) {
    const names = await resourceNames(config);
    // Checked before anything is opened.
    const { schemas, graph } = await loadSchemas(config, names);
    const dataDir = await openDataDir({
      observer: (name) => metrics.storeObserver(name),
      dir: config.data,
      resources: names,
      durability: config.durability,
      repair: config.repair,
      retentionMs: config.changesRetentionMs,
      idempotency: { maxAnswers: config.idempotencyAnswers, maxBytes: config.idempotencyMemory },
      warn,
    });
    return { names, schemas, graph, stores: dataDir, snapshot: () => dataDir.snapshotAfterPending() };
  }
  for (const name of config.resources) {
    const problem = resourceNameProblem(name);
    if (problem) throw new StartupError(problem);
  }
  // The declared resources, and every resource the table holds a live row of: known once open.
  const pg = await openPostgres({ url: config.store, resources: [...new Set(config.resources)], nameProblem: resourceNameProblem, warn });
  const names = [...pg.stores.keys()].sort();
  try {
    const { schemas, graph } = await loadSchemas(config, names);
    // Links are checked in the database, so that they hold across every process on it (docs/relations.md).
    return { names, schemas, graph, stores: pg, integrity: await pg.keepLinks(graph) };
  } catch (error) {
    await pg.close();
    throw error;
  }
}

/** True when some credential is configured: static tokens or a key set for JWTs. */
const authenticated = (config: Config): boolean => config.tokens.length > 0 || config.jwks !== undefined;

/** Refuses to serve off loopback without credentials (README, "Authentication"), before anything is opened. */
function checkAuthentication(config: Config): void {
  if (authenticated(config) || isLoopback(config.host) || config.noAuth) return;
  throw new StartupError(
    `refusing to listen on ${config.host} without authentication: set HALSERVE_TOKENS (or --token) or HALSERVE_JWKS (--jwks), or HALSERVE_NO_AUTH=1 (--no-auth) to serve without it`,
  );
}

/**
 * The JWT options of `--jwks`: a file is read now (one that cannot be read or used stops start-up);
 * a URL is fetched in the background (one that cannot be fetched yet refuses JWTs until it can).
 */
async function jwtOptions(config: Config): Promise<JwtOptions | undefined> {
  const { jwks, jwtIssuer, jwtAudience } = config;
  if (jwks === undefined || jwtIssuer === undefined || jwtAudience === undefined) return undefined;
  let keys: KeySet;
  if (looksLikeUrl(jwks)) {
    const remote = remoteKeySet(jwks, { now: () => Math.floor(Date.now() / 1000), warn });
    void remote.refresh();
    keys = remote;
  } else keys = await readKeySetFile(jwks);
  return { keys, issuer: jwtIssuer, audience: jwtAudience };
}

/**
 * The webhooks of `--webhook` (docs/webhooks.md), not started yet: positions in the data directory
 * or the database, and on PostgreSQL a lease so that one process of the database delivers.
 * An unknown `--webhook-resource` or an unreadable positions file stops start-up.
 */
async function openWebhooks(config: Config, names: readonly string[], database: Database | undefined, metrics: ServerMetrics): Promise<Webhooks | undefined> {
  const { webhooks: urls, webhookSecret: secret } = config;
  if (urls.length === 0 || secret === undefined) return undefined;
  for (const name of config.webhookResources) {
    if (!names.includes(name)) throw new StartupError(`--webhook-resource: ${JSON.stringify(name)} is not a resource of this server (${names.join(', ') || 'none'})`);
  }
  // Without --webhook-resource, every resource this process serves: another process of the same
  // database may serve more, whose events this one could not render (docs/webhooks.md).
  const resources = config.webhookResources.length > 0 ? config.webhookResources : names;
  const common = { urls, secret, resources, metrics: new WebhookMetrics(metrics.registry), warn };
  if (database === undefined) {
    const positions = new FilePositions(config.data);
    try {
      await positions.load();
    } catch (error) {
      throw new StartupError(`cannot read the webhooks' positions: ${(error as Error).message}`);
    }
    return new Webhooks({ ...common, positions });
  }
  const holder = randomUUID();
  const sql = () => database.sql;
  return new Webhooks({
    ...common,
    positions: new PgPositions(sql, holder),
    lease: new PgLease({ sql, holder, ttlMs: config.webhookLeaseMs, scheduler: realScheduler, warn }),
  });
}

async function main(): Promise<void> {
  const config = parseConfig(process.argv.slice(2), process.env);
  if (config.help) {
    process.stdout.write(HELP);
    return;
  }
  checkAuthentication(config);
  const jwt = await jwtOptions(config);
  const metrics = new ServerMetrics();
  const { names, schemas, graph, stores, integrity, snapshot } = await openResources(config, metrics);
  let webhooks: Webhooks | undefined;
  try {
    webhooks = await openWebhooks(config, names, stores.database, metrics);
  } catch (error) {
    await stores.close();
    throw error;
  }
  let draining = false;
  const closing = new AbortController();
  const resources: ServedResource[] = names.map((name) => {
    const store = stores.stores.get(name);
    if (!store) throw new StartupError(`store ${name} did not open`);
    const found = schemas.get(name);
    return found ? { name, store, ...found } : { name, store };
  });
  const out = process.stdout;
  let logging = config.log === 'json';
  // A reader of stdout that goes away (a closed pipe) turns the access log off; it never ends the server.
  out.on('error', (error) => {
    if (!logging) return;
    logging = false;
    warn(`access log turned off: stdout failed (${error.message})`);
  });
  const server = createHalServer({
    resources,
    relations: graph,
    tokens: config.tokens,
    ...(jwt === undefined ? {} : { jwt }),
    basePath: config.basePath,
    maxBodyBytes: config.maxBody,
    queryBudgetMs: config.queryBudgetMs,
    maxBodyValues: config.maxBodyValues,
    maxBodyMembers: config.maxBodyMembers,
    ready: () => !draining,
    metrics,
    warn,
    errorLog: (error) => warn(`unexpected error: ${(error as Error)?.stack ?? String(error)}`),
    ...(config.rateLimit === undefined ? {} : { rateLimit: config.rateLimit }),
    ...(config.rateLimitBurst === undefined ? {} : { rateLimitBurst: config.rateLimitBurst }),
    ...(logging ? { accessLog: (entry) => logging && out.write(`${JSON.stringify(entry)}\n`) } : {}),
    ...(config.corsOrigin === undefined ? {} : { corsOrigin: config.corsOrigin }),
    ...(integrity === undefined ? {} : { linkIntegrity: () => integrity }),
    changes: stores.changes,
    ...(webhooks === undefined ? {} : { onFeed: (feed: ChangeFeed, json: (change: StoreChange) => string) => webhooks.start(feed, json) }),
    // SIGTERM ends every open stream (its last chunk sent), so that close() can finish.
    streams: { maxStreams: config.maxStreams, maxStreamsPerClient: config.maxStreamsPerClient, closing: closing.signal },
  });
  const connections = trackConnections(server);
  // `halserve backup --data` reaches the server through its data directory (docs/storage.md §4).
  // Opened before the port, so that nothing awaited comes between the port opening and the line
  // saying so: no request is served, and logged, before it.
  const backups = snapshot === undefined ? undefined : await serveBackups(config.data, snapshot, warn);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await webhooks?.stop(0);
    await backups?.close();
    await stores.close();
    throw new StartupError(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
  }
  const shutdown = (signal: string): void => {
    if (draining) return;
    draining = true;
    closing.abort();
    warn(`${signal}: finishing requests in flight, then closing the store`);
    const force = setTimeout(() => {
      // Said, so that an operator (and a test) can tell a clean drain from a forced one.
      warn(`${signal}: grace period of ${SHUTDOWN_GRACE_MS / 1000} s over, closing the connections still open`);
      server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    // Deliveries stop beside the drain: one in flight has up to 5 s for its answer (webhooks.ts).
    const delivering = webhooks?.stop() ?? Promise.resolve();
    // The answers still to come are the connections' last: Connection: close (RFC 9112 §9.6).
    server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
      res.shouldKeepAlive = false;
    });
    // net.Server's close, not http.Server's: that one also destroys every connection whose answer
    // has been ended, even while its bytes are still being sent to a slow reader, cutting the
    // answer short. `connections.closeIdle` below waits for those to be sent.
    NetServer.prototype.close.call(server, () => {
      // Every connection is closed: what follows (webhooks, the store) is no connection's grace.
      clearTimeout(force);
      delivering
        .then(() => backups?.close())
        .then(() => stores.close())
        .then(
          () => process.exit(0),
          (error: unknown) => {
            warn(`closing the store failed: ${(error as Error).message}`);
            process.exit(1);
          },
        );
    });
    // Open connections would hold close() open: end each one as soon as it has no request in flight,
    // including connections that never sent one.
    connections.closeIdle();
    setInterval(() => connections.closeIdle(), 50).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // Announced only once SIGTERM and SIGINT are handled: a supervisor (or a test) that signals as
  // soon as it reads the address must get a clean drain, not the default disposition (killed).
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  out.write(`halserve listening on http://${host}:${address.port}\n`);
  // Said once serving, so that a start-up failure stays the one line it is.
  if (names.length === 0) {
    warn(config.store === undefined ? `no resources: ${config.data} has no *.jsonl files and none was declared with --resource` : 'no resources: the database holds none and none was declared with --resource');
  }
  if (!authenticated(config)) warn(`WARNING: authentication is OFF — anyone who can reach ${config.host} may read and write`);
}

// Said first, before any start-up failure and for every command: a misspelled variable is often
// why what follows fails (HALSERVE_TOKEN set, yet "refusing to listen … without authentication"),
// or why a command reads another value than meant (DATABASE_URL, its HALSERVE_STORE misspelled).
// A warning, never a failure: another tool may share the prefix (src/unknown-variables.ts).
for (const message of unknownVariableWarnings(process.env)) warn(message);

const [subcommand] = process.argv.slice(2);
if (subcommand === 'import' || subcommand === 'export') {
  // `halserve import|export`: moving a data set between the stores (transfer-cli.ts).
  void import('./transfer-cli.js').then((cli) => cli.runTransferCli(subcommand, process.argv.slice(3), process.env));
} else if (subcommand === 'backup') {
  // `halserve backup`: a copy of a running server's data set (backup-cli.ts).
  void import('./backup-cli.js').then((cli) => cli.runBackupCli(process.argv.slice(3), process.env));
} else main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof StartupError || error instanceof SchemaError || error instanceof RelationError || error instanceof StoreOpenError || error instanceof JwksError) {
    warn(error.message);
  } else {
    warn(`failed to start: ${(error as Error)?.stack ?? String(error)}`);
  }
  process.exit(1);
});
