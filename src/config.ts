import { isIP } from 'node:net';
import { keySetUrlProblem, looksLikeUrl, tokenProblem } from './conventions/credential-forms.js';
import { DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_BODY_MEMBERS, DEFAULT_MAX_BODY_VALUES, DEFAULT_QUERY_BUDGET_MS } from './conventions/limits.js';
import { isPostgresUrl } from './store/pg/driver.js';
import { MAX_ANSWER_BYTES, MAX_ANSWERS } from './store/idempotency.js';
import { secretProblem } from './conventions/webhook-signature.js';
import { webhookUrlProblem } from './conventions/webhook-url.js';

/** Everything the CLI is told, from flags and `HALSERVE_*` variables (docs/conventions.md §8). */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly data: string;
  /** A `postgres://` URL: every resource kept in PostgreSQL (docs/storage.md §2); undefined: files in `data`. */
  readonly store: string | undefined;
  readonly resources: readonly string[];
  readonly tokens: readonly string[];
  /** A JSON Web Key Set: an `https:` URL (`http:` on loopback) or a file path; undefined: no JWTs. */
  readonly jwks: string | undefined;
  /** The `iss` JWTs must carry; set exactly when `jwks` is. */
  readonly jwtIssuer: string | undefined;
  /** The audience JWTs' `aud` must name; set exactly when `jwks` is. */
  readonly jwtAudience: string | undefined;
  readonly noAuth: boolean;
  readonly log: 'json' | 'off';
  readonly durability: 'full' | 'none';
  readonly repair: boolean;
  readonly maxBody: number;
  /** docs/conventions.md §8: how long a query may run before it ends in a problem document. */
  readonly queryBudgetMs: number;
  readonly maxBodyValues: number;
  readonly maxBodyMembers: number;
  readonly basePath: string;
  readonly corsOrigin: string | undefined;
  /** Requests per second per client; undefined: no limit (docs/conventions.md §4.1). */
  readonly rateLimit: number | undefined;
  readonly rateLimitBurst: number | undefined;
  /** How long the change feed remembers deletes, in ms (default 7 days). */
  readonly changesRetentionMs: number;
  /** Event streams open at once; a stream request beyond is a 503 (default 10,000). */
  readonly maxStreams: number;
  /** Event streams one client (principal, or address without one) may hold open. */
  readonly maxStreamsPerClient: number;
  /** URLs every change is POSTed to, as written (docs/webhooks.md); empty: none. */
  readonly webhooks: readonly string[];
  /** The deliveries' signing secret; set exactly when `webhooks` is not empty. */
  readonly webhookSecret: string | undefined;
  /** The resources whose changes are delivered; empty: all (checked against the served ones at start-up). */
  readonly webhookResources: readonly string[];
  /** How long a PostgreSQL deliverer's lease lasts unless renewed, in ms (default 15 s). */
  readonly webhookLeaseMs: number;
  /** The file store's bounds on the Idempotency-Key answers it keeps per resource (docs/conventions.md §5). */
  readonly idempotencyAnswers: number;
  readonly idempotencyMemory: number;
  readonly help: boolean;
}

/** A configuration the server cannot start with; the message is what the user sees. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** docs/conventions.md §1: resource names, and the names the server keeps for itself. */
export const RESOURCE_NAME = /^[a-z][a-z0-9_-]{0,63}$/;
export const RESERVED_NAMES: ReadonlySet<string> = new Set(['v1', 'healthz', 'readyz', 'metrics', 'ping', 'me', 'changes']);

/** A path prefix that can stand in a header and a link as it is: `''`, `/`, `/api`, `/a/b/`. */
const BASE_PATH = /^(?:\/?|(?:\/[A-Za-z0-9\-._~!$&'()*+,;=:@%]+)+\/?)$/;

/** Why `basePath` cannot prefix every link, or undefined when it can. */
export function basePathProblem(basePath: string): string | undefined {
  if (BASE_PATH.test(basePath)) return undefined;
  return `base path ${JSON.stringify(basePath)} is not a URL path such as /api (letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = : @ %)`;
}

/**
 * Why `origin` cannot be the one origin CORS allows, or undefined when it can: `*`, or an origin as
 * a browser sends it in `Origin` (RFC 6454 §6.2: scheme, host and port, lower case, no path, no
 * trailing slash). Anything else would match no request, and the browser would refuse them all.
 */
export function corsOriginProblem(origin: string): string | undefined {
  if (origin === '*') return undefined;
  let serialised: string | undefined;
  try {
    const url = new URL(origin);
    if (url.protocol === 'http:' || url.protocol === 'https:') serialised = url.origin;
  } catch {
    // Not a URL: said below.
  }
  if (serialised === origin) return undefined;
  const hint = serialised === undefined ? '' : `; did you mean ${JSON.stringify(serialised)}?`;
  return `must be * or an origin as a browser sends it, such as https://app.example.com (scheme, host and port only: no path, no trailing slash), not ${JSON.stringify(origin)}${hint}`;
}

/** Why `name` cannot name a resource, or undefined when it can. */
export function resourceNameProblem(name: string): string | undefined {
  if (!RESOURCE_NAME.test(name)) {
    return `invalid resource name ${JSON.stringify(name)}: names are 1 to 64 characters of a-z, 0-9, _ and -, starting with a letter`;
  }
  if (RESERVED_NAMES.has(name)) return `resource name ${JSON.stringify(name)} is reserved`;
  return undefined;
}

/** True for addresses only this machine can reach: no token is needed there (docs/conventions.md §6). */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost') return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  return bare === '::1' || bare.startsWith('::ffff:127.');
}

interface Option {
  readonly flag: string;
  readonly env: readonly string[];
  readonly kind: 'string' | 'list' | 'boolean';
  readonly help: string;
}

/** Every flag, its variables and its help line; `--help` is printed from this table. */
export const OPTIONS: readonly Option[] = [
  { flag: 'port', env: ['HALSERVE_PORT', 'PORT'], kind: 'string', help: 'port to listen on; 0 picks a free one (default 8080)' },
  { flag: 'host', env: ['HALSERVE_HOST', 'HOST'], kind: 'string', help: 'address to listen on (default 127.0.0.1)' },
  { flag: 'data', env: ['HALSERVE_DATA'], kind: 'string', help: 'data directory of <name>.jsonl files (default ./data)' },
  { flag: 'store', env: ['HALSERVE_STORE', 'DATABASE_URL'], kind: 'string', help: 'postgres://… keeps every resource in PostgreSQL (schema files still read from --data)' },
  { flag: 'resource', env: ['HALSERVE_RESOURCES'], kind: 'list', help: 'declare a resource whose file may not exist yet (repeatable)' },
  { flag: 'token', env: ['HALSERVE_TOKENS'], kind: 'list', help: 'accepted bearer token, read:TOKEN for read-only (repeatable)' },
  { flag: 'jwks', env: ['HALSERVE_JWKS'], kind: 'string', help: 'accept JWTs signed by this key set: an https:// URL (http:// on loopback) or a file' },
  { flag: 'jwt-issuer', env: ['HALSERVE_JWT_ISSUER'], kind: 'string', help: 'the iss every JWT must carry (required with --jwks)' },
  { flag: 'jwt-audience', env: ['HALSERVE_JWT_AUDIENCE'], kind: 'string', help: 'the audience every JWT\'s aud must name (required with --jwks)' },
  { flag: 'no-auth', env: ['HALSERVE_NO_AUTH'], kind: 'boolean', help: 'serve without tokens even off loopback' },
  { flag: 'log', env: ['HALSERVE_LOG'], kind: 'string', help: 'access log: json (default) or off' },
  { flag: 'durability', env: ['HALSERVE_DURABILITY'], kind: 'string', help: 'full (fdatasync before 2xx, default) or none' },
  { flag: 'repair', env: ['HALSERVE_REPAIR'], kind: 'boolean', help: 'move malformed lines to <name>.jsonl.rejected (a damaged _changes to _changes.rejected, beginning a new change feed) and start' },
  { flag: 'max-body', env: ['HALSERVE_MAX_BODY'], kind: 'string', help: `largest request body in bytes (default ${DEFAULT_MAX_BODY_BYTES})` },
  { flag: 'query-budget', env: ['HALSERVE_QUERY_BUDGET'], kind: 'string', help: `milliseconds a query may take before it ends in a 503 problem (default ${DEFAULT_QUERY_BUDGET_MS})` },
  { flag: 'max-body-values', env: ['HALSERVE_MAX_BODY_VALUES'], kind: 'string', help: `most JSON values in a request body (default ${DEFAULT_MAX_BODY_VALUES})` },
  { flag: 'max-body-members', env: ['HALSERVE_MAX_BODY_MEMBERS'], kind: 'string', help: `most members of one object in a request body (default ${DEFAULT_MAX_BODY_MEMBERS})` },
  { flag: 'base-path', env: ['HALSERVE_BASE_PATH'], kind: 'string', help: 'path prefix put in front of every link (default none)' },
  { flag: 'cors-origin', env: ['HALSERVE_CORS_ORIGIN'], kind: 'string', help: 'allow cross-origin requests from this origin' },
  { flag: 'rate-limit', env: ['HALSERVE_RATE_LIMIT'], kind: 'string', help: 'requests per second per token (or per address without one); 429 beyond (default off)' },
  { flag: 'rate-limit-burst', env: ['HALSERVE_RATE_LIMIT_BURST'], kind: 'string', help: 'requests allowed at once under --rate-limit (default one second\'s worth)' },
  { flag: 'changes-retention', env: ['HALSERVE_CHANGES_RETENTION'], kind: 'string', help: 'how long /changes remembers deletes: a whole number and s, m, h or d (default 7d)' },
  { flag: 'max-streams', env: ['HALSERVE_MAX_STREAMS'], kind: 'string', help: 'event streams open at once; 503 beyond (default 10000)' },
  { flag: 'max-streams-per-client', env: ['HALSERVE_MAX_STREAMS_PER_CLIENT'], kind: 'string', help: 'event streams one token (or address without one) may hold open; 429 beyond (default 1000)' },
  { flag: 'webhook', env: ['HALSERVE_WEBHOOKS'], kind: 'list', help: 'POST every change, signed, to this http(s):// URL (repeatable)' },
  { flag: 'webhook-secret', env: ['HALSERVE_WEBHOOK_SECRET'], kind: 'string', help: 'signing secret of --webhook: whsec_ and base64 of 24+ bytes, or 24+ characters' },
  { flag: 'webhook-resource', env: ['HALSERVE_WEBHOOK_RESOURCES'], kind: 'list', help: 'deliver only this resource\'s changes (repeatable; default all)' },
  { flag: 'webhook-lease', env: ['HALSERVE_WEBHOOK_LEASE'], kind: 'string', help: 'PostgreSQL: how long the delivering process\'s lease lasts unrenewed, 1s to 20s (default 15s)' },
  { flag: 'idempotency-answers', env: ['HALSERVE_IDEMPOTENCY_ANSWERS'], kind: 'string', help: `files: most Idempotency-Key answers kept per resource; past it the oldest go before their 24 h (default ${MAX_ANSWERS})` },
  { flag: 'idempotency-memory', env: ['HALSERVE_IDEMPOTENCY_MEMORY'], kind: 'string', help: `files: most memory those answers take per resource, e.g. 256MiB, 1GiB (default ${MAX_ANSWER_BYTES / 1024 / 1024}MiB)` },
  { flag: 'help', env: [], kind: 'boolean', help: 'print this help and exit' },
];

export const HELP = [
  'Usage: halserve [options]',
  '       halserve import --from <data-dir> --to postgres://…   (halserve import --help)',
  '       halserve export --from postgres://… --to <data-dir>   (halserve export --help)',
  '       halserve backup --data <data-dir> --to <dest>          (halserve backup --help)',
  '',
  'Serves every <name>.jsonl file of the data directory as a HAL+JSON collection.',
  '',
  'Options (each also read from the environment variable named beside it):',
  // A name longer than the column still gets a space before its help.
  ...OPTIONS.map((o) => `${`  --${o.kind === 'boolean' ? o.flag : `${o.flag} ${o.kind === 'list' ? 'VALUE' : o.flag.toUpperCase()}`}`.padEnd(29)} ${o.help}${o.env.length ? ` [${o.env.join(', ')}]` : ''}`),
  '',
].join('\n');

const TRUE_WORDS: ReadonlySet<string> = new Set(['1', 'true', 'yes', 'on']);
const FALSE_WORDS: ReadonlySet<string> = new Set(['', '0', 'false', 'no', 'off']);

function parseBoolean(name: string, value: string): boolean {
  const word = value.trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return true;
  if (FALSE_WORDS.has(word)) return false;
  throw new ConfigError(`${name} must be 1 or 0 (true or false), not ${JSON.stringify(value)}`);
}

function parseWholeNumber(name: string, value: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, not ${JSON.stringify(value)}`);
  }
  return Number(value);
}

/** A rate: a positive decimal such as `50` or `0.5`, at most a million. */
function parsePositive(name: string, value: string): number {
  const n = Number(value);
  if (!/^[0-9]+(\.[0-9]+)?$/.test(value) || !(n > 0) || n > 1_000_000) {
    throw new ConfigError(`${name} must be a number of requests per second greater than 0 (e.g. 50 or 0.5), not ${JSON.stringify(value)}`);
  }
  return n;
}

const DURATION = /^([1-9][0-9]{0,9})([smhd])$/;
const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration such as `10m`, `24h` or `7d`, in milliseconds: a positive whole number and a unit. */
export function parseDuration(name: string, value: string): number {
  const m = DURATION.exec(value);
  const ms = m ? Number(m[1]) * UNIT_MS[m[2]!]! : NaN;
  if (!Number.isSafeInteger(ms)) {
    throw new ConfigError(`${name} must be a whole number followed by s, m, h or d (e.g. 10m, 24h, 7d), not ${JSON.stringify(value)}`);
  }
  return ms;
}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  const found = allowed.find((a) => a === value);
  if (found === undefined) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, not ${JSON.stringify(value)}`);
  return found;
}

const splitList = (value: string): string[] =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');

/**
 * Reads flags (`--port 8080`, `--port=8080`) and environment variables. A flag wins over its
 * variable; a repeated flag adds to its list. Unknown flags and bad values throw `ConfigError`.
 */
export function parseConfig(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Config {
  const values = new Map<string, string>();
  const lists = new Map<string, string[]>();
  const booleans = new Map<string, boolean>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument ${JSON.stringify(arg)} (see --help)`);
    const eq = arg.indexOf('=');
    const flag = arg.slice(2, eq === -1 ? undefined : eq);
    const option = OPTIONS.find((o) => o.flag === flag);
    if (!option) throw new ConfigError(`unknown option --${flag} (see --help)`);
    if (option.kind === 'boolean') {
      booleans.set(flag, eq === -1 ? true : parseBoolean(`--${flag}`, arg.slice(eq + 1)));
      continue;
    }
    let value: string | undefined = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new ConfigError(`--${flag} needs a value`);
    if (option.kind === 'list') lists.set(flag, [...(lists.get(flag) ?? []), ...splitList(value)]);
    else values.set(flag, value);
  }
  const fromEnv = (flag: string): { name: string; value: string } | undefined => {
    const option = OPTIONS.find((o) => o.flag === flag);
    for (const name of option?.env ?? []) {
      const value = env[name];
      if (value !== undefined) return { name, value };
    }
    return undefined;
  };
  const text = (flag: string, fallback: string): { name: string; value: string } => {
    const fromFlag = values.get(flag);
    return fromFlag !== undefined ? { name: `--${flag}`, value: fromFlag } : (fromEnv(flag) ?? { name: `--${flag}`, value: fallback });
  };
  const list = (flag: string): string[] => lists.get(flag) ?? splitList(fromEnv(flag)?.value ?? '');
  const boolean = (flag: string): boolean => {
    const fromFlag = booleans.get(flag);
    if (fromFlag !== undefined) return fromFlag;
    const variable = fromEnv(flag);
    return variable === undefined ? false : parseBoolean(variable.name, variable.value);
  };

  const tokens = list('token');
  tokens.forEach((token, i) => {
    const problem = tokenProblem(token, i + 1);
    if (problem) throw new ConfigError(problem);
  });
  const { jwks, jwtIssuer, jwtAudience } = jwtConfig(text('jwks', ''), text('jwt-issuer', ''), text('jwt-audience', ''));
  const basePath = text('base-path', '');
  if (!BASE_PATH.test(basePath.value)) {
    throw new ConfigError(`${basePath.name} must be a URL path such as /api (letters, digits and - . _ ~ ! $ & ' ( ) * + , ; = : @ %)`);
  }
  const port = text('port', '8080');
  const maxBody = text('max-body', String(DEFAULT_MAX_BODY_BYTES));
  const queryBudget = text('query-budget', String(DEFAULT_QUERY_BUDGET_MS));
  const maxBodyValues = text('max-body-values', String(DEFAULT_MAX_BODY_VALUES));
  const maxBodyMembers = text('max-body-members', String(DEFAULT_MAX_BODY_MEMBERS));
  const log = text('log', 'json');
  const durability = text('durability', 'full');
  const cors = text('cors-origin', '');
  const corsProblem = cors.value === '' ? undefined : corsOriginProblem(cors.value);
  if (corsProblem !== undefined) throw new ConfigError(`${cors.name} ${corsProblem}`);
  const rate = text('rate-limit', '');
  const burst = text('rate-limit-burst', '');
  const retention = text('changes-retention', '7d');
  const maxStreams = text('max-streams', '10000');
  const maxStreamsPerClient = text('max-streams-per-client', '1000');
  const store = text('store', '');
  if (store.value !== '' && !isPostgresUrl(store.value)) {
    throw new ConfigError(`${store.name} must be a postgres:// (or postgresql://) URL; without it resources are kept in files under --data`);
  }
  const rateLimit = rate.value === '' ? undefined : parsePositive(rate.name, rate.value);
  const rateLimitBurst = burst.value === '' ? undefined : parseWholeNumber(burst.name, burst.value, 1, 1_000_000);
  if (rateLimitBurst !== undefined && rateLimit === undefined) throw new ConfigError(`${burst.name} needs --rate-limit`);
  return {
    port: parseWholeNumber(port.name, port.value, 0, 65535),
    host: text('host', '127.0.0.1').value,
    data: text('data', './data').value,
    store: store.value === '' ? undefined : store.value,
    resources: list('resource'),
    tokens,
    jwks,
    jwtIssuer,
    jwtAudience,
    noAuth: boolean('no-auth'),
    log: oneOf(log.name, log.value, ['json', 'off'] as const),
    durability: oneOf(durability.name, durability.value, ['full', 'none'] as const),
    repair: boolean('repair'),
    maxBody: parseWholeNumber(maxBody.name, maxBody.value, 1, 1024 * 1024 * 1024),
    queryBudgetMs: parseWholeNumber(queryBudget.name, queryBudget.value, 1, 3_600_000),
    maxBodyValues: parseWholeNumber(maxBodyValues.name, maxBodyValues.value, 1, 1_000_000_000),
    maxBodyMembers: parseWholeNumber(maxBodyMembers.name, maxBodyMembers.value, 1, 1_000_000_000),
    basePath: basePath.value,
    corsOrigin: cors.value === '' ? undefined : cors.value,
    rateLimit,
    rateLimitBurst,
    changesRetentionMs: parseDuration(retention.name, retention.value),
    maxStreams: parseWholeNumber(maxStreams.name, maxStreams.value, 1, 1_000_000),
    maxStreamsPerClient: parseWholeNumber(maxStreamsPerClient.name, maxStreamsPerClient.value, 1, 1_000_000),
    ...webhookConfig(list('webhook'), text('webhook-secret', ''), list('webhook-resource'), text('webhook-lease', ''), store.value !== ''),
    ...idempotencyConfig(text('idempotency-answers', ''), text('idempotency-memory', ''), store.value !== ''),
    help: boolean('help'),
  };
}

type Named = { readonly name: string; readonly value: string };

/** The most answers `--idempotency-answers` allows (its hash table takes 32 bytes an answer). */
const MAX_IDEMPOTENCY_ANSWERS = 10_000_000;
const MIB = 1024 * 1024;
const SIZE = /^([1-9][0-9]{0,12})(KiB|MiB|GiB)?$/;
const SIZE_UNITS: Readonly<Record<string, number>> = { KiB: 1024, MiB: MIB, GiB: 1024 * MIB };

/** A size such as `64MiB` or `1GiB` (or bytes), from 1 MiB to 1 GiB: the largest buffer the file store's table of answers takes (log/answer-ring.ts). */
export function parseSize(name: string, value: string): number {
  const m = SIZE.exec(value);
  const bytes = m ? Number(m[1]) * (m[2] === undefined ? 1 : SIZE_UNITS[m[2]]!) : NaN;
  if (!(bytes >= MIB && bytes <= 1024 * MIB)) {
    throw new ConfigError(`${name} must be a size from 1MiB to 1GiB: a whole number followed by KiB, MiB or GiB (e.g. 256MiB), or bytes, not ${JSON.stringify(value)}`);
  }
  return bytes;
}

/**
 * The file store's bounds on remembered answers (docs/conventions.md §5). On PostgreSQL answers
 * are rows, kept 24 hours whatever their number: a bound given there would mean nothing, and is
 * refused rather than ignored, as `--webhook-lease` is with files.
 */
function idempotencyConfig(answers: Named, memory: Named, postgres: boolean): Pick<Config, 'idempotencyAnswers' | 'idempotencyMemory'> {
  for (const given of [answers, memory]) {
    if (postgres && given.value !== '') throw new ConfigError(`${given.name} bounds the answers the file store keeps in memory; on PostgreSQL they are rows of the database, kept 24 hours`);
  }
  return {
    idempotencyAnswers: answers.value === '' ? MAX_ANSWERS : parseWholeNumber(answers.name, answers.value, 1, MAX_IDEMPOTENCY_ANSWERS),
    idempotencyMemory: memory.value === '' ? MAX_ANSWER_BYTES : parseSize(memory.name, memory.value),
  };
}

/** The longest `--webhook-lease`: another process takes over within 4/3 of it, which must stay within 30 s. */
const MAX_WEBHOOK_LEASE_MS = 20_000;

/** The lease of the delivering process when `--webhook-lease` is not given. */
const DEFAULT_WEBHOOK_LEASE = '15s';

/**
 * `--webhook` URLs with their secret (required), resources and lease (docs/webhooks.md). A lease
 * given where it means nothing (no `--webhook`, or files, where the one process serving them
 * delivers without a lease) is refused, as the secret without URLs is, rather than ignored: the
 * operator who set it expects it to act.
 */
function webhookConfig(urls: readonly string[], secret: Named, resources: readonly string[], lease: Named, postgres: boolean): Pick<Config, 'webhooks' | 'webhookSecret' | 'webhookResources' | 'webhookLeaseMs'> {
  const leaseText = lease.value === '' ? DEFAULT_WEBHOOK_LEASE : lease.value;
  const leaseMs = parseDuration(lease.name, leaseText);
  if (leaseMs > MAX_WEBHOOK_LEASE_MS) throw new ConfigError(`${lease.name} must be at most ${MAX_WEBHOOK_LEASE_MS / 1000}s, not ${JSON.stringify(leaseText)}`);
  if (lease.value !== '' && !postgres) throw new ConfigError(`${lease.name} needs --store postgres://… (HALSERVE_STORE): only processes sharing a database take turns delivering`);
  if (urls.length === 0) {
    if (secret.value !== '') throw new ConfigError(`${secret.name} needs --webhook (HALSERVE_WEBHOOKS): the URLs to deliver to`);
    if (resources.length > 0) throw new ConfigError('--webhook-resource needs --webhook (HALSERVE_WEBHOOKS): the URLs to deliver to');
    if (lease.value !== '') throw new ConfigError(`${lease.name} needs --webhook (HALSERVE_WEBHOOKS): the URLs to deliver to`);
    return { webhooks: [], webhookSecret: undefined, webhookResources: [], webhookLeaseMs: leaseMs };
  }
  for (const url of urls) {
    const problem = webhookUrlProblem(url);
    if (problem !== undefined) throw new ConfigError(`--webhook: ${problem}`);
  }
  if (secret.value === '') throw new ConfigError('--webhook needs --webhook-secret (HALSERVE_WEBHOOK_SECRET): the key its deliveries are signed with');
  const problem = secretProblem(secret.value);
  if (problem !== undefined) throw new ConfigError(`${secret.name}: ${problem}`);
  for (const name of resources) {
    const nameProblem = resourceNameProblem(name);
    if (nameProblem !== undefined) throw new ConfigError(`--webhook-resource: ${nameProblem}`);
  }
  return { webhooks: [...new Set(urls)], webhookSecret: secret.value, webhookResources: [...new Set(resources)], webhookLeaseMs: leaseMs };
}

/** `--jwks` with its issuer and audience: all three or none; a URL must be https (or http on loopback). */
function jwtConfig(jwks: Named, issuer: Named, audience: Named): Pick<Config, 'jwks' | 'jwtIssuer' | 'jwtAudience'> {
  if (jwks.value === '') {
    for (const other of [issuer, audience]) if (other.value !== '') throw new ConfigError(`${other.name} needs --jwks`);
    return { jwks: undefined, jwtIssuer: undefined, jwtAudience: undefined };
  }
  if (issuer.value === '') throw new ConfigError(`${jwks.name} needs --jwt-issuer (HALSERVE_JWT_ISSUER): the iss its tokens carry`);
  if (audience.value === '') throw new ConfigError(`${jwks.name} needs --jwt-audience (HALSERVE_JWT_AUDIENCE): the audience its tokens name in aud`);
  if (looksLikeUrl(jwks.value)) {
    const problem = keySetUrlProblem(jwks.value);
    if (problem !== undefined) throw new ConfigError(`${jwks.name}: ${problem}`);
  }
  return { jwks: jwks.value, jwtIssuer: issuer.value, jwtAudience: audience.value };
}
