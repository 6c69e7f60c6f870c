/**
 * The `queries` workload (issue 8): filtered, sorted and searched pages over N generated products
 * (1,000,000; 50,000 with BENCH_QUICK=1), halserve over HTTP side by side with PostgreSQL 15 over a
 * persistent connection, on the same records, in interleaved rounds. Also: the first query on a
 * field with no index, GET latency while 8 clients send heavy queries, durable POST with and
 * without indexes, memory with 4 indexed fields and under churn, start-up.
 *
 * Both sides are timed alike from this process (pinned to the load core): one request at a time on
 * a kept-alive connection, from sending it to having read the whole answer. Every measured
 * halserve request differs from the ones before it (page, bound, word or limit), so none is served
 * from the page cache, which is keyed by the query string.
 */
import { Agent, request } from 'node:http';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { BenchConfig } from './config.js';
import type { BenchRequest } from './capture.js';
import { measure, type Sample } from './measure.js';
import { findPostgres, PG_SETTINGS, startCluster, type PgCluster } from './pg.js';
import { PgClient } from './pg-client.js';
import { cpuSeconds, memoryMiB as readMemory, runNanoseconds } from './proc.js';
import { generateProducts, NOUNS, PG_COLUMNS, PG_TABLE, PRODUCTS, prng, productFields, type Products } from './products.js';
import { LOAD_CPU, startHalserve, type Running } from './servers.js';
import { fmt, median } from './stats.js';

const LIMIT = 20;
/** Columns PostgreSQL sends back for a page: the whole entity, as halserve sends it. */
const SELECT = 'id, created_at, updated_at, status, category, price, stock, name, description, extra';
/** `q` words never searched before on the server (the first 70 nouns) and words searched before (the last 30). */
const Q_NEW = NOUNS.slice(0, 70);
const Q_SEEN = NOUNS.slice(70);

/** One query, as halserve's URL and as PostgreSQL's SQL (a count and the page, one round trip). */
export interface QuerySpec {
  readonly http: string;
  readonly sql: string;
}

/** One answer, timed from the client. */
interface Answer {
  readonly ms: number;
  /** HTTP status; 0 when the request failed (connection, timeout); for PostgreSQL 200 or 0. */
  readonly status: number;
  readonly total?: number;
  readonly ids?: readonly string[];
  readonly error?: string;
}

/** The figures of one query kind, both sides. */
export interface KindResult {
  readonly name: string;
  readonly title: string;
  readonly example: QuerySpec;
  /** Target on halserve's p50 (ms), if the issue sets one. */
  readonly p50Target?: number;
  /** Target on PostgreSQL p50 ÷ halserve p50, if the issue sets one. */
  readonly ratioTarget?: number;
  readonly total: number;
  /** Milliseconds per measured request, per round. */
  readonly halserve: readonly (readonly number[])[];
  readonly pg: readonly (readonly number[])[];
  /**
   * Server CPU (user + system) per measured request, per round, in ms: halserve's process, and the
   * PostgreSQL backend serving the connection. Steadier than wall time on a shared machine.
   */
  readonly halserveCpu: readonly number[];
  readonly pgCpu: readonly number[];
  /** Requests that were not a 200 (status and a piece of the body), in order. */
  readonly failures: readonly string[];
  /** Same queries answered by both: how many gave the same total and the same ids in the same order. */
  readonly compared: number;
  readonly agreed: number;
  readonly mismatch?: string;
  /** halserve's three slowest measured requests: one client, so each is about how long the server was busy with it. */
  readonly slowest: readonly { readonly ms: number; readonly http: string }[];
  /** Its status, and when a 200 came (from the first send) when it was not one. */
  readonly firstStatus: number;
  readonly firstReadyMs?: number;
  /** The unmeasured first request on the query server (where an index may be built) and PostgreSQL's. */
  readonly firstHalserveMs: number;
  readonly firstPgMs?: number;
}

export interface UnderLoadResult {
  readonly seconds: number;
  readonly gets: readonly number[];
  readonly getFailures: number;
  readonly heavyDone: number;
  readonly heavyMs: readonly number[];
  readonly heavyStatuses: Readonly<Record<string, number>>;
  /** The slowest heavy queries (with 8 in flight, their time includes waiting for the others). */
  readonly heavySlowest: readonly { readonly ms: number; readonly query: string }[];
}

/** The first query on a field: its time and status, and when a 200 came if it was not one. */
export interface FirstQuery {
  readonly ms: number;
  readonly status: number;
  readonly problem?: string;
  readonly readyMs?: number;
  readonly attempts: number;
}

export interface FreshServer {
  readonly startupMs: number;
  /** CPU the server used from spawn to listening. */
  readonly startupCpuMs: number;
  readonly rssStartMiB: number;
  /** First `stock[gte]=500` on the fresh server, whole request. */
  readonly firstStockMs: number;
  /** halserve's CPU time while it answered that first request. */
  readonly firstStockCpuMs: number;
  readonly firstStockStatus: number;
  /** The first query on each of the four fields, stock first. */
  readonly fields: Readonly<Record<string, FirstQuery>>;
  /** A second query on each of the four fields (page 2), a second later. */
  readonly secondMs: Readonly<Record<string, number>>;
  readonly rssIndexedMiB: number;
  readonly peakIndexedMiB: number;
}

export interface ChurnResult {
  readonly rssStartMiB: number;
  readonly rssAfterPatchesMiB: number;
  readonly rssAfterCyclesMiB: number;
  readonly peakMiB: number;
  readonly writes: number;
  readonly failures: readonly string[];
  readonly seconds: number;
  readonly blobKiB: number;
}

export interface QueriesResult {
  readonly entities: number;
  readonly bytesPerEntity: number;
  readonly fileMiB: number;
  readonly rounds: number;
  readonly batch: { readonly maxRequests: number; readonly maxSeconds: number };
  readonly pg:
    | { readonly version: string; readonly settings: Readonly<Record<string, string>>; readonly loadSeconds: number; readonly indexSeconds: number; readonly analyzeSeconds: number; readonly sizeMiB: number }
    | { readonly skipped: string };
  readonly kinds: readonly KindResult[];
  readonly underLoad?: { readonly halserve: UnderLoadResult; readonly pg?: UnderLoadResult };
  readonly fresh: readonly FreshServer[];
  readonly post?: { readonly indexed: readonly Sample[]; readonly plain: readonly Sample[] };
  readonly churn?: ChurnResult;
  readonly queryServer?: { readonly startupMs: number; readonly rssStartMiB: number; readonly rssEndMiB: number };
  /** Odd things seen: non-2xx answers, disagreements with PostgreSQL, crashes, warnings on stderr. */
  readonly notes: readonly string[];
  readonly wallSeconds: number;
  /** Load average (1, 5, 15 min) before and after: how shared the machine was. */
  readonly load: { readonly before: readonly number[]; readonly after: readonly number[] };
}

/** Memory of a process, NaN once it has exited (a crash is reported, not thrown). */
function memoryMiB(pid: number): { rss: number; peak: number } {
  try {
    return readMemory(pid);
  } catch {
    return { rss: NaN, peak: NaN };
  }
}

// ---- clients ----

const ACCEPT = { accept: 'application/json' } as const;

function http(agent: Agent, port: number, method: string, pathAndQuery: string, body?: string, headers: Record<string, string> = {}, timeoutMs = 120_000): Promise<{ status: number; body: string; ms: number; location?: string; error?: string }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = request({ host: '127.0.0.1', port, method, path: pathAndQuery, agent, headers: { ...ACCEPT, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const ms = performance.now() - started;
        const location = res.headers.location;
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), ms, ...(location ? { location } : {}) });
      });
      res.on('error', (error) => resolve({ status: 0, body: '', ms: performance.now() - started, error: error.message }));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`)));
    req.on('error', (error) => resolve({ status: 0, body: '', ms: performance.now() - started, error: error.message }));
    req.end(body);
  });
}

export async function halserveQuery(agent: Agent, port: number, spec: QuerySpec): Promise<Answer> {
  const r = await http(agent, port, 'GET', spec.http);
  if (r.status !== 200) return { ms: r.ms, status: r.status, error: r.error ?? r.body.slice(0, 1000) };
  try {
    const page = JSON.parse(r.body) as { total: number; _embedded?: Record<string, { id: string }[]> };
    return { ms: r.ms, status: 200, total: page.total, ids: (page._embedded?.[PRODUCTS] ?? []).map((e) => e.id) };
  } catch (error) {
    return { ms: r.ms, status: 200, error: `unparsable body: ${(error as Error).message}` };
  }
}

async function pgQuery(client: PgClient, spec: QuerySpec): Promise<Answer> {
  const started = performance.now();
  try {
    const results = await client.query(spec.sql);
    const ms = performance.now() - started;
    const [count, page] = results;
    return { ms, status: 200, total: Number(count?.rows[0]?.[0]), ids: (page?.rows ?? []).map((r) => r[0] ?? '') };
  } catch (error) {
    return { ms: performance.now() - started, status: 0, error: (error as Error).message };
  }
}

// ---- the query kinds ----

export interface Kind {
  readonly name: string;
  readonly title: string;
  readonly p50Target?: number;
  readonly ratioTarget?: number;
  /** The query measured first, unmeasured: gives the total (and so the pages) and builds indexes. */
  readonly base: QuerySpec;
  /** The i-th measured query, given the base query's total (i < 0: unmeasured warm-ups). */
  make(i: number, total: number, random: () => number): QuerySpec;
  /** Measured queries per round when fewer than the batch allows (a pool that must not repeat). */
  perRound?(rounds: number): number;
  /** Sent once, unmeasured, to both sides before the rounds. */
  readonly prime?: readonly QuerySpec[];
}

export const url = (params: string, page: number, limit = LIMIT): string => `/${PRODUCTS}?${params}${params ? '&' : ''}page=${page}&limit=${limit}`;
const sql = (where: string, order: string, offset: number, limit = LIMIT): string =>
  `SELECT count(*) FROM ${PRODUCTS}${where ? ` WHERE ${where}` : ''}; SELECT ${SELECT} FROM ${PRODUCTS}${where ? ` WHERE ${where}` : ''} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`;
const pagesOf = (total: number, limit = LIMIT): number => Math.max(1, Math.ceil(total / limit));

/** Distinct random pages in `[from, to]` (repeats only once the range is used up). */
function pagePicker(from: number, to: number, random: () => number): () => number {
  const seen = new Set<number>();
  return () => {
    for (let tries = 0; tries < 1000; tries++) {
      const page = from + Math.floor(random() * (to - from + 1));
      if (!seen.has(page) || seen.size >= to - from + 1) {
        seen.add(page);
        return page;
      }
    }
    return from + Math.floor(random() * (to - from + 1));
  };
}

export function kinds(): Kind[] {
  const randomPage = (params: string, where: string, order: string): ((i: number, total: number, random: () => number) => QuerySpec) => {
    let pick: (() => number) | undefined;
    return (_i, total, random) => {
      pick ??= pagePicker(1, pagesOf(total), random);
      const page = pick();
      return { http: url(params, page), sql: sql(where, order, (page - 1) * LIMIT) };
    };
  };
  const frs = (bound: string): { params: string; where: string } => ({
    params: `status=active&price[gte]=${bound}&price[lt]=500&sort=-price,name`,
    where: `status = 'active' AND price >= ${bound} AND price < 500`,
  });
  const FRS_ORDER = 'price DESC, name, seq';
  let deepPick: (() => number) | undefined;
  // Every string of the entity is searched (docs/queries.md): the id too, where short nouns do occur.
  const qSpec = (word: string, limit: number): QuerySpec => ({
    http: url(`q=${word}`, 1, limit),
    sql: sql(`(name ILIKE '%${word}%' OR description ILIKE '%${word}%' OR id ILIKE '%${word}%')`, 'seq', 0, limit),
  });
  // Facets: halserve's page with its `facets`; PostgreSQL's count, page and one GROUP BY per field.
  let facetPick: (() => number) | undefined;
  let wholePick: (() => number) | undefined;
  const facetSpec = (params: string, where: string, columns: readonly string[], page: number): QuerySpec => ({
    http: url(params, page),
    sql: [
      sql(where, 'seq', (page - 1) * LIMIT),
      ...columns.map((c) => `SELECT ${c}, count(*) FROM ${PRODUCTS}${where ? ` WHERE ${where}` : ''} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 50`),
    ].join('; '),
  });
  return [
    {
      name: 'eq',
      title: 'Equality filter `status=paused`, a random page, exact total',
      p50Target: 2,
      ratioTarget: 10,
      base: { http: url('status=paused', 1), sql: sql(`status = 'paused'`, 'seq', 0) },
      make: randomPage('status=paused', `status = 'paused'`, 'seq'),
    },
    {
      name: 'sort',
      title: 'Sort by one field `sort=-price`, a random page',
      p50Target: 5,
      base: { http: url('sort=-price', 1), sql: sql('', 'price DESC, seq', 0) },
      make: randomPage('sort=-price', '', 'price DESC, seq'),
    },
    {
      name: 'frs-first',
      title: 'Filter + range + sort of two keys, first page (`status=active&price[gte]=B&price[lt]=500&sort=-price,name`, B varied from 10.00 by cents)',
      p50Target: 10,
      base: { http: url(frs('10').params, 1), sql: sql(frs('10').where, FRS_ORDER, 0) },
      make: (i) => {
        const { params, where } = frs(String((1001 + i) / 100));
        return { http: url(params, 1), sql: sql(where, FRS_ORDER, 0) };
      },
    },
    {
      name: 'frs-deep',
      title: 'Filter + range + sort of two keys, a random page in the second half (`status=active&price[gte]=10&price[lt]=500&sort=-price,name`)',
      p50Target: 10,
      base: { http: url(frs('10').params, 2), sql: sql(frs('10').where, FRS_ORDER, LIMIT) },
      make: (_i, total, random) => {
        const pages = pagesOf(total);
        deepPick ??= pagePicker(Math.ceil(pages / 2), pages, random);
        const page = deepPick();
        return { http: url(frs('10').params, page), sql: sql(frs('10').where, FRS_ORDER, (page - 1) * LIMIT) };
      },
    },
    {
      name: 'q-new',
      title: '`q` text search, first page, a word not searched before (`q=<noun>`: each noun is in ~1% of names)',
      p50Target: 50,
      base: qSpec(Q_NEW[0]!, LIMIT),
      // Words 1 and 2 warm up; the rounds share the other 67, each searched once.
      make: (i) => qSpec(Q_NEW[i < 0 ? -i : 3 + (i % (Q_NEW.length - 3))]!, LIMIT),
      perRound: (rounds) => Math.floor((Q_NEW.length - 3) / rounds),
    },
    {
      name: 'q-seen',
      title: '`q` text search, first page, a word searched before (30 nouns, each searched once before the rounds; limit 11–19 varied)',
      p50Target: 50,
      base: qSpec(Q_SEEN[0]!, LIMIT - 1),
      make: (i) => qSpec(Q_SEEN[Math.abs(i) % Q_SEEN.length]!, i < 0 ? LIMIT - 1 : LIMIT - 1 - (Math.floor(i / Q_SEEN.length) % 9)),
      prime: Q_SEEN.map((w) => qSpec(w, LIMIT)),
    },
    {
      name: 'facets-filtered',
      title: 'Facets of a filtered set `status=paused&facets=category,brand` (exact counts of every value), a random page',
      p50Target: 20,
      base: facetSpec(`status=paused&facets=category,brand`, `status = 'paused'`, ['category', `extra->>'brand'`], 1),
      make: (_i, total, random) => {
        facetPick ??= pagePicker(1, pagesOf(total), random);
        return facetSpec(`status=paused&facets=category,brand`, `status = 'paused'`, ['category', `extra->>'brand'`], facetPick());
      },
    },
    {
      name: 'facets-whole',
      title: 'Facets of the whole collection `facets=status,category`, a random page',
      p50Target: 5,
      base: facetSpec('facets=status,category', '', ['status', 'category'], 1),
      make: (_i, total, random) => {
        wholePick ??= pagePicker(1, pagesOf(total), random);
        return facetSpec('facets=status,category', '', ['status', 'category'], wholePick());
      },
    },
    {
      name: 'path-array',
      title: 'Dotted path + array `dimensions.weight[lte]=2&tags=usb-c`, a random page (no target; PostgreSQL has no index on these)',
      base: { http: url('dimensions.weight[lte]=2&tags=usb-c', 1), sql: sql(`(extra->'dimensions'->>'weight')::float8 <= 2 AND extra->'tags' ? 'usb-c'`, 'seq', 0) },
      make: randomPage('dimensions.weight[lte]=2&tags=usb-c', `(extra->'dimensions'->>'weight')::float8 <= 2 AND extra->'tags' ? 'usb-c'`, 'seq'),
    },
  ];
}

// ---- the run ----

interface Context {
  readonly config: BenchConfig;
  readonly log: (m: string) => void;
  readonly notes: string[];
  /** Stops what was started, synchronously (signal handlers). */
  readonly cleanups: Set<() => void>;
}

function note(ctx: Context, message: string): void {
  ctx.log(`NOTE: ${message}`);
  // The same message again (three fresh servers, say) is counted, not repeated.
  const at = ctx.notes.findIndex((n) => n.replace(/ \(×\d+\)$/, '') === message);
  if (at >= 0) {
    const count = Number(/ \(×(\d+)\)$/.exec(ctx.notes[at]!)?.[1] ?? 1) + 1;
    ctx.notes[at] = `${message} (×${count})`;
  } else if (ctx.notes.length < 60) ctx.notes.push(message);
}

async function started(ctx: Context, root: string, dir: string, extra: readonly string[] = []): Promise<Running> {
  const server = await startHalserve(root, dir, ctx.config.pin, [], ['--durability', 'full', ...extra]);
  const cleanup = (): void => {
    try {
      process.kill(server.pid, 'SIGKILL');
    } catch {
      // gone
    }
  };
  ctx.cleanups.add(cleanup);
  const stop = server.stop;
  return {
    ...server,
    async stop() {
      const code = await stop();
      ctx.cleanups.delete(cleanup);
      const err = unexpected(server.stderr());
      if (err) note(ctx, `halserve stderr (${path.basename(dir)} server): ${err.slice(-600)}`);
      return code;
    },
  };
}

/** stderr without the lines every run prints (no tokens on loopback, the shutdown notice). */
function unexpected(stderr: string): string {
  return stderr
    .split('\n')
    .filter((line) => line.trim() !== '' && !/authentication is OFF|^halserve: SIG(TERM|INT): /.test(line))
    .join('\n')
    .trim();
}

function checkAlive(ctx: Context, server: Running, where: string): boolean {
  const exited = server.exited();
  if (exited === undefined) return true;
  note(ctx, `halserve exited (${exited}) during ${where}; stderr: ${unexpected(server.stderr()).slice(-600)}`);
  return false;
}

/** `503 "The query could not be answered within 5000 ms…"`: the status and the problem's detail (or the error). */
function describe(a: Answer): string {
  if (!a.error) return `${a.status}`;
  let text = a.error;
  try {
    const problem = JSON.parse(a.error) as { detail?: string; title?: string };
    text = problem.detail ?? problem.title ?? a.error;
  } catch {
    // Not a problem document (a cut one, or a connection error).
  }
  return `${a.status} "${text.replace(/\s+/g, ' ').slice(0, 160)}"`;
}

/** Runs at most `max` of `specs` (and at least one) within `seconds`. */
async function batch(specs: readonly QuerySpec[], seconds: number, ask: (s: QuerySpec) => Promise<Answer>): Promise<Answer[]> {
  const out: Answer[] = [];
  const end = performance.now() + seconds * 1000;
  for (const spec of specs) {
    out.push(await ask(spec));
    if (performance.now() > end) break;
  }
  return out;
}

async function setupPg(ctx: Context, products: Products): Promise<{ cluster: PgCluster; info: Exclude<QueriesResult['pg'], { skipped: string }> } | { skipped: string }> {
  const found = findPostgres(ctx.log);
  if ('missing' in found) {
    ctx.log(`${found.missing}: skipping the PostgreSQL column`);
    return { skipped: found.missing };
  }
  ctx.log('starting a throwaway PostgreSQL cluster');
  const cluster = await startCluster(found.bin, ctx.config.pin);
  ctx.cleanups.add(cluster.stopSync);
  try {
    let t = performance.now();
    await cluster.psql([PG_TABLE]);
    await cluster.psql([`COPY ${PRODUCTS} (${PG_COLUMNS}) FROM STDIN`], products.tsv);
    const loadSeconds = (performance.now() - t) / 1000;
    t = performance.now();
    await cluster.psql(['status', 'category', 'price', 'stock'].map((f) => `CREATE INDEX ON ${PRODUCTS} (${f})`));
    const indexSeconds = (performance.now() - t) / 1000;
    t = performance.now();
    await cluster.psql([`VACUUM ANALYZE ${PRODUCTS}`]);
    const analyzeSeconds = (performance.now() - t) / 1000;
    const size = Number((await cluster.psql([`SELECT pg_total_relation_size('${PRODUCTS}')`])).trim());
    ctx.log(`PostgreSQL ${cluster.version}: COPY ${fmt(loadSeconds, 1)} s, 4 indexes ${fmt(indexSeconds, 1)} s, VACUUM ANALYZE ${fmt(analyzeSeconds, 1)} s, ${fmt(size / 2 ** 20)} MiB`);
    return { cluster, info: { version: cluster.version, settings: PG_SETTINGS, loadSeconds, indexSeconds, analyzeSeconds, sizeMiB: size / 2 ** 20 } };
  } catch (error) {
    await cluster.stop();
    ctx.cleanups.delete(cluster.stopSync);
    throw error;
  }
}

export const FILTERS: readonly [string, string][] = [
  ['status', 'status=paused'],
  ['category', 'category=lighting'],
  ['price', 'price[gte]=10&price[lt]=500'],
];

/** A fresh server: start-up, the first `stock[gte]` query, the first query on three more fields, RSS. */
async function freshServer(ctx: Context, root: string, dir: string): Promise<{ server: Running; result: FreshServer }> {
  const server = await started(ctx, root, dir);
  let startupCpuMs = NaN;
  try {
    startupCpuMs = cpuSeconds(server.pid) * 1000;
  } catch {
    // exited already: reported by checkAlive below
  }
  const rssStart = memoryMiB(server.pid).rss;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const fields: Record<string, FirstQuery> = {};
  let stockCpuMs = NaN;
  for (const [field, params] of [['stock', 'stock[gte]=500'], ...FILTERS] as const) {
    const before = runNanoseconds(server.pid);
    const first = await untilOk(agent, server.port, params);
    if (field === 'stock') stockCpuMs = (runNanoseconds(server.pid) - before) / 1e6;
    fields[field] = first;
    if (first.status !== 200) {
      note(ctx, `fresh server: the first \`${params}\` answered ${first.problem}; a 200 came ${first.readyMs === undefined ? 'not within 60 s' : `${fmt(first.readyMs)} ms after it was sent (${first.attempts} tries)`}`);
    }
  }
  // Indexes may be finished in the background: give them a moment, then ask each field again
  // (another page, so not from the page cache) before reading the memory.
  await new Promise((r) => setTimeout(r, 1000));
  const second: Record<string, number> = {};
  for (const [field, params] of [['stock', 'stock[gte]=500'], ...FILTERS] as const) {
    const a = await halserveQuery(agent, server.port, { http: url(params, 2), sql: '' });
    if (a.status !== 200) note(ctx, `fresh server: a second \`${params}\` a second later answered ${describe(a)}`);
    second[field] = a.ms;
  }
  agent.destroy();
  const memory = memoryMiB(server.pid);
  checkAlive(ctx, server, 'the fresh-server queries');
  const stock = fields['stock']!;
  return {
    server,
    result: {
      startupMs: server.startupMs,
      startupCpuMs,
      rssStartMiB: rssStart,
      firstStockMs: stock.ms,
      firstStockCpuMs: stockCpuMs,
      firstStockStatus: stock.status,
      fields,
      secondMs: second,
      rssIndexedMiB: memory.rss,
      peakIndexedMiB: memory.peak,
    },
  };
}

/** The first query with `params`; if it is not a 200, the same query (other pages) every 250 ms until one is, for at most 60 s. */
async function untilOk(agent: Agent, port: number, params: string): Promise<FirstQuery> {
  return untilOkSpec(agent, port, (attempt) => ({ http: url(params, attempt), sql: '' }));
}

export async function untilOkSpec(agent: Agent, port: number, spec: (attempt: number) => QuerySpec): Promise<FirstQuery & { answer: Answer }> {
  const sent = performance.now();
  const first = await halserveQuery(agent, port, spec(1));
  if (first.status === 200) return { ms: first.ms, status: 200, readyMs: first.ms, attempts: 1, answer: first };
  let attempts = 1;
  while (performance.now() - sent < 60_000) {
    await new Promise((r) => setTimeout(r, 250));
    attempts++;
    const again = await halserveQuery(agent, port, spec(attempts));
    if (again.status === 200) return { ms: first.ms, status: first.status, problem: describe(first), readyMs: performance.now() - sent, attempts, answer: again };
  }
  return { ms: first.ms, status: first.status, problem: describe(first), attempts, answer: first };
}

export async function underLoadHalserve(server: Running, seconds: number, heavy: () => QuerySpec, ids: readonly string[], random: () => number): Promise<UnderLoadResult> {
  const end = performance.now() + seconds * 1000;
  const heavyMs: number[] = [];
  const statuses: Record<string, number> = {};
  let slowest: { ms: number; query: string }[] = [];
  const heavyLoop = async (): Promise<void> => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    while (performance.now() < end) {
      const spec = heavy();
      const a = await halserveQuery(agent, server.port, spec);
      heavyMs.push(a.ms);
      if (slowest.length < 5 || a.ms > slowest[4]!.ms) slowest = [...slowest, { ms: a.ms, query: spec.http }].sort((x, y) => y.ms - x.ms).slice(0, 5);
      const key = a.status === 200 ? '200' : describe(a).slice(0, 120);
      statuses[key] = (statuses[key] ?? 0) + 1;
    }
    agent.destroy();
  };
  const gets: number[] = [];
  let getFailures = 0;
  const getLoop = async (): Promise<void> => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    // Let the heavy clients get going first.
    await new Promise((r) => setTimeout(r, 50));
    while (performance.now() < end) {
      const id = ids[Math.floor(random() * ids.length)]!;
      const r = await http(agent, server.port, 'GET', `/${PRODUCTS}/${id}`);
      if (r.status === 200) gets.push(r.ms);
      else getFailures++;
    }
    agent.destroy();
  };
  await Promise.all([...Array.from({ length: 8 }, heavyLoop), getLoop()]);
  return { seconds, gets, getFailures, heavyDone: heavyMs.length, heavyMs, heavyStatuses: statuses, heavySlowest: slowest };
}

async function underLoadPg(cluster: PgCluster, seconds: number, heavy: () => QuerySpec, ids: readonly string[], random: () => number): Promise<UnderLoadResult> {
  const end = performance.now() + seconds * 1000;
  const heavyMs: number[] = [];
  const statuses: Record<string, number> = {};
  const clients = await Promise.all(Array.from({ length: 9 }, () => PgClient.connect(cluster.socketDir, cluster.port)));
  const heavyLoop = async (client: PgClient): Promise<void> => {
    while (performance.now() < end) {
      const a = await pgQuery(client, heavy());
      heavyMs.push(a.ms);
      const key = a.status === 200 ? '200' : describe(a).slice(0, 120);
      statuses[key] = (statuses[key] ?? 0) + 1;
    }
  };
  const gets: number[] = [];
  let getFailures = 0;
  const getLoop = async (client: PgClient): Promise<void> => {
    await new Promise((r) => setTimeout(r, 50));
    while (performance.now() < end) {
      const id = ids[Math.floor(random() * ids.length)]!;
      const t = performance.now();
      try {
        const [r] = await client.query(`SELECT ${SELECT} FROM ${PRODUCTS} WHERE id = '${id}'`);
        if (r?.rows.length === 1) gets.push(performance.now() - t);
        else getFailures++;
      } catch {
        getFailures++;
      }
    }
  };
  try {
    await Promise.all([...clients.slice(0, 8).map(heavyLoop), getLoop(clients[8]!)]);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  return { seconds, gets, getFailures, heavyDone: heavyMs.length, heavyMs, heavyStatuses: statuses, heavySlowest: [] };
}

/** PATCHes of one large entity, then create+delete cycles, on a fresh server with an empty resource without schema. */
async function churn(ctx: Context, root: string, dir: string, cycles: number): Promise<ChurnResult> {
  await fs.mkdir(dir, { recursive: true });
  const server = await started(ctx, root, dir, ['--resource', 'blobs']);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const failures: string[] = [];
  const blobKiB = 400;
  const filler = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(Math.ceil((blobKiB * 1024) / 36)).slice(0, blobKiB * 1024 - 40);
  const body = (i: number): string => JSON.stringify({ n: i, data: `${i}:${filler}` });
  const json = { 'content-type': 'application/json' };
  const t0 = performance.now();
  let writes = 0;
  const check = (what: string, r: { status: number; body: string; error?: string }, want: number): boolean => {
    if (r.status === want) return true;
    if (failures.length < 10) failures.push(`${what}: ${r.status} ${(r.error ?? r.body).slice(0, 200)}`);
    return false;
  };
  try {
    await http(agent, server.port, 'GET', '/blobs');
    await new Promise((r) => setTimeout(r, 500));
    const rssStart = memoryMiB(server.pid).rss;
    const created = await http(agent, server.port, 'POST', '/blobs', body(0), json);
    writes++;
    if (!check('POST', created, 201) || !created.location) throw new Error(`churn: the first POST answered ${created.status} ${created.body.slice(0, 200)}`);
    const location = created.location.replace(/^https?:\/\/[^/]+/, '');
    for (let i = 1; i <= cycles; i++) {
      const r = await http(agent, server.port, 'PATCH', location, body(i), { 'content-type': 'application/merge-patch+json' });
      writes++;
      check('PATCH', r, 200);
    }
    await new Promise((r) => setTimeout(r, 1500));
    const rssAfterPatches = memoryMiB(server.pid).rss;
    for (let i = 1; i <= cycles; i++) {
      const c = await http(agent, server.port, 'POST', '/blobs', body(i), json);
      writes++;
      if (!check('POST', c, 201) || !c.location) continue;
      const d = await http(agent, server.port, 'DELETE', c.location.replace(/^https?:\/\/[^/]+/, ''));
      writes++;
      check('DELETE', d, 204);
    }
    await new Promise((r) => setTimeout(r, 1500));
    const after = memoryMiB(server.pid);
    checkAlive(ctx, server, 'the churn');
    return { rssStartMiB: rssStart, rssAfterPatchesMiB: rssAfterPatches, rssAfterCyclesMiB: after.rss, peakMiB: after.peak, writes, failures, seconds: (performance.now() - t0) / 1000, blobKiB };
  } finally {
    agent.destroy();
    await server.stop();
  }
}

/** This process's CPU list (`taskset -c -p`), to restore after pinning. */
function currentAffinity(): string | undefined {
  try {
    return /list:\s*(\S+)/.exec(execFileSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8' }))?.[1];
  } catch {
    return undefined;
  }
}

/** Pins this process (the client side of every measure) to the load core; undone at the end. */
function pinSelf(pin: boolean, cpus: string): void {
  if (!pin) return;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cpus, String(process.pid)], { stdio: 'ignore' });
  } catch {
    // Not fatal: the figures are only noisier.
  }
}

/** The whole workload. `tmp` is the run's temporary directory; nothing is written elsewhere. */
export async function runQueries(config: BenchConfig, tmp: string, log: (m: string) => void): Promise<QueriesResult> {
  const t0 = performance.now();
  const loadBefore = os.loadavg();
  const ctx: Context = { config, log: (m) => log(`queries: ${m}`), notes: [], cleanups: new Set() };
  const dir = path.join(tmp, 'queries');
  const onSignal = (signal: NodeJS.Signals): void => {
    // The run ends here: its whole temporary directory goes (main's `finally` will not run).
    log(`queries: ${signal}: stopping PostgreSQL and the servers, deleting ${tmp}`);
    for (const cleanup of [...ctx.cleanups].reverse()) cleanup();
    rmSync(tmp, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const entities = config.queryEntities;
  const rounds = config.rounds;
  const maxRequests = config.quick ? 20 : 60;
  const maxSeconds = config.quick ? 1 : 3;
  const underLoadSeconds = config.quick ? 3 : 10;
  const churnCycles = config.quick ? 100 : 400;
  const affinity = currentAffinity();
  pinSelf(config.pin, LOAD_CPU);
  let cluster: PgCluster | undefined;
  try {
    ctx.log(`generating ${fmt(entities)} products`);
    const products = await generateProducts(path.join(dir, 'gen'), entities);
    const fileMiB = products.fileBytes / 2 ** 20;
    const copy = async (name: string): Promise<string> => {
      const target = path.join(dir, name);
      await fs.mkdir(target, { recursive: true });
      await fs.copyFile(products.jsonl, path.join(target, `${PRODUCTS}.jsonl`));
      return target;
    };

    const pgSetup = await setupPg(ctx, products);
    let pgInfo: QueriesResult['pg'];
    if ('skipped' in pgSetup) pgInfo = pgSetup;
    else {
      cluster = pgSetup.cluster;
      pgInfo = pgSetup.info;
    }

    // Only some kinds (BENCH_QUERY_KINDS): their rounds alone.
    const subset = config.queryKinds.length > 0;
    const fresh: FreshServer[] = [];
    let post: QueriesResult['post'];
    if (!subset) ({ post } = await freshAndPost(ctx, config, copy, fresh, rounds));

    // 3. The query kinds, halserve and PostgreSQL in interleaved rounds on the same queries.
    const queryDir = await copy('query');
    const server = await started(ctx, config.root, queryDir);
    const rssStart = memoryMiB(server.pid).rss;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const pg = cluster ? await PgClient.connect(cluster.socketDir, cluster.port) : undefined;
    const pgPid = pg ? Number((await pg.query('SELECT pg_backend_pid()'))[0]?.rows[0]?.[0]) : NaN;
    const random = prng(8);
    const list = kinds().filter((kind) => config.queryKinds.length === 0 || config.queryKinds.includes(kind.name));
    const state = list.map((kind) => ({
      kind,
      total: 0,
      specs: [] as QuerySpec[],
      h: [] as number[][],
      p: [] as number[][],
      hCpu: [] as number[],
      pCpu: [] as number[],
      failures: [] as string[],
      compared: 0,
      agreed: 0,
      mismatch: undefined as string | undefined,
      firstH: NaN,
      firstP: undefined as number | undefined,
      firstStatus: 0,
      firstReadyMs: undefined as number | undefined,
      perRound: maxRequests,
      slowest: [] as { ms: number; http: string }[],
    }));
    let alive = true;
    for (const s of state) {
      // The first query of a kind (maybe an index built on first use): until a 200, for at most 60 s.
      const ready = await untilOkSpec(agent, server.port, () => s.kind.base);
      const first = ready.answer;
      s.firstH = ready.ms;
      s.firstStatus = ready.status;
      s.firstReadyMs = ready.readyMs;
      if (ready.status !== 200) {
        note(
          ctx,
          `query server: the first \`${s.kind.base.http}\` answered ${ready.problem}; a 200 came ${ready.readyMs === undefined ? 'not within 60 s' : `${fmt(ready.readyMs)} ms after it was sent (${ready.attempts} tries)`}`,
        );
      }
      let total = first.total;
      if (pg) {
        const p = await pgQuery(pg, s.kind.base);
        s.firstP = p.ms;
        if (p.status !== 200) note(ctx, `${s.kind.name}: PostgreSQL failed on ${s.kind.base.sql}: ${p.error}`);
        total ??= p.total;
        if (first.total !== undefined && p.total !== undefined && first.total !== p.total) note(ctx, `${s.kind.name}: totals differ on ${s.kind.base.http}: halserve ${first.total}, PostgreSQL ${p.total}`);
      }
      s.total = total ?? 0;
      // Two more unmeasured requests on each side (JIT, buffers), and the kind's priming ones.
      for (const w of [s.kind.make(-1, s.total, random), s.kind.make(-2, s.total, random), ...(s.kind.prime ?? [])]) {
        await halserveQuery(agent, server.port, w);
        if (pg) await pgQuery(pg, w);
      }
      s.perRound = Math.min(maxRequests, s.kind.perRound?.(rounds) ?? maxRequests);
      s.specs = Array.from({ length: s.perRound * rounds }, (_, i) => s.kind.make(i, s.total, random));
      ctx.log(`${s.kind.name}: total ${fmt(s.total)}, first request halserve ${fmt(s.firstH, 1)} ms${s.firstP !== undefined ? `, PostgreSQL ${fmt(s.firstP, 1)} ms` : ''}`);
      alive = checkAlive(ctx, server, `the first ${s.kind.name} query`);
      if (!alive) break;
    }
    const rssIndexedAll = alive ? memoryMiB(server.pid).rss : NaN;
    for (let round = 1; round <= rounds && alive; round++) {
      for (const s of state) {
        const specs = s.specs.slice((round - 1) * s.perRound, round * s.perRound);
        const hBefore = runNanoseconds(server.pid);
        const h = await batch(specs, maxSeconds, (spec) => halserveQuery(agent, server.port, spec));
        s.hCpu.push((runNanoseconds(server.pid) - hBefore) / 1e6 / h.length);
        const pBefore = pg ? runNanoseconds(pgPid) : 0;
        const p = pg ? await batch(specs, maxSeconds, (spec) => pgQuery(pg, spec)) : [];
        if (pg) s.pCpu.push((runNanoseconds(pgPid) - pBefore) / 1e6 / p.length);
        s.h.push(h.filter((a) => a.status === 200).map((a) => a.ms));
        for (const [i, a] of h.entries()) s.slowest.push({ ms: a.ms, http: specs[i]!.http });
        s.slowest = s.slowest.sort((a, b) => b.ms - a.ms).slice(0, 3);
        s.p.push(p.filter((a) => a.status === 200).map((a) => a.ms));
        for (const [i, a] of h.entries()) {
          if (a.status !== 200 && s.failures.length < 20) s.failures.push(`${specs[i]!.http}: ${describe(a)}`);
          const b = p[i];
          if (!b || a.status !== 200 || b.status !== 200 || a.ids === undefined) continue;
          s.compared++;
          if (a.total === b.total && a.ids.join() === b.ids?.join()) s.agreed++;
          else
            s.mismatch ??= `${specs[i]!.http}: halserve total ${a.total}, ids ${a.ids.slice(0, 3).join(',')}…; PostgreSQL total ${b.total}, ids ${b.ids?.slice(0, 3).join(',')}…`;
        }
        for (const b of p) if (b.status !== 200) note(ctx, `${s.kind.name}: PostgreSQL error ${b.error}`);
        ctx.log(
          `${s.kind.name} round ${round}/${rounds}: halserve p50 ${fmt(median(s.h.at(-1)!), 2)} ms (${h.length} req${h.length - s.h.at(-1)!.length ? `, ${h.length - s.h.at(-1)!.length} not 200` : ''})${pg ? `, PostgreSQL p50 ${fmt(median(s.p.at(-1)!), 2)} ms (${p.length} req)` : ''}`,
        );
        alive = checkAlive(ctx, server, `${s.kind.name} round ${round}`);
        if (!alive) break;
      }
    }
    const kindResults: KindResult[] = state.map((s) => {
      if (s.failures.length > 0) note(ctx, `${s.kind.name}: ${s.failures.length} measured halserve answers were not a 200, e.g. ${s.failures[0]}`);
      if (s.mismatch) note(ctx, `${s.kind.name}: halserve and PostgreSQL disagree (${s.compared - s.agreed} of ${s.compared}), e.g. ${s.mismatch}`);
      return {
        name: s.kind.name,
        title: s.kind.title,
        example: s.specs[0] ?? s.kind.base,
        ...(s.kind.p50Target !== undefined ? { p50Target: s.kind.p50Target } : {}),
        ...(s.kind.ratioTarget !== undefined ? { ratioTarget: s.kind.ratioTarget } : {}),
        total: s.total,
        halserve: s.h,
        pg: s.p,
        halserveCpu: s.hCpu,
        pgCpu: s.pCpu,
        failures: s.failures,
        compared: s.compared,
        agreed: s.agreed,
        ...(s.mismatch ? { mismatch: s.mismatch } : {}),
        firstHalserveMs: s.firstH,
        firstStatus: s.firstStatus,
        ...(s.firstReadyMs !== undefined ? { firstReadyMs: s.firstReadyMs } : {}),
        slowest: s.slowest,
        ...(s.firstP !== undefined ? { firstPgMs: s.firstP } : {}),
      };
    });

    // 4. GET an entity while 8 clients send heavy queries, uncached (random pages, words, limits).
    let underLoad: QueriesResult['underLoad'];
    if (alive && !subset) {
      const heavy = (): QuerySpec => {
        const s = state[Math.floor(random() * state.length)]!;
        // i below 4,000: bounds stay within 10.01–50 (frs-first), every word and limit comes up (q).
        return s.kind.make(Math.floor(random() * 4000), s.total, random);
      };
      ctx.log(`GET /${PRODUCTS}/<id> while 8 clients send heavy queries, ${underLoadSeconds} s each side`);
      const h = await underLoadHalserve(server, underLoadSeconds, heavy, products.sampleIds, random);
      ctx.log(`under load, halserve: GET p50 ${fmt(median(h.gets), 2)} ms, p99 ${fmt(percentile(h.gets, 99), 2)} ms, max ${fmt(Math.max(...h.gets), 1)} ms (${h.gets.length} GETs, ${h.heavyDone} heavy)`);
      for (const [status, n] of Object.entries(h.heavyStatuses)) if (status !== '200') note(ctx, `under load: ${n} heavy queries answered ${status}`);
      if (h.getFailures > 0) note(ctx, `under load: ${h.getFailures} GETs of an entity failed`);
      alive = checkAlive(ctx, server, 'the GET-under-load run');
      const p = cluster ? await underLoadPg(cluster, underLoadSeconds, heavy, products.sampleIds, random) : undefined;
      if (p) ctx.log(`under load, PostgreSQL: GET p50 ${fmt(median(p.gets), 2)} ms, p99 ${fmt(percentile(p.gets, 99), 2)} ms (${p.gets.length} GETs, ${p.heavyDone} heavy)`);
      underLoad = { halserve: h, ...(p ? { pg: p } : {}) };
    }
    const rssEnd = alive ? memoryMiB(server.pid).rss : NaN;
    agent.destroy();
    await pg?.close();
    await server.stop();
    await fs.rm(queryDir, { recursive: true, force: true });
    ctx.log(`query server: RSS ${fmt(rssStart)} MiB at start, ${fmt(rssIndexedAll)} MiB after the first query of every kind, ${fmt(rssEnd)} MiB at the end`);

    // 5. Memory under churn.
    let churnResult: ChurnResult | undefined;
    try {
      if (!subset) churnResult = await churn(ctx, config.root, path.join(dir, 'churn'), churnCycles);
      if (churnResult) ctx.log(`churn: RSS ${fmt(churnResult.rssStartMiB)} MiB at start, ${fmt(churnResult.rssAfterPatchesMiB)} after ${churnCycles} PATCHes, ${fmt(churnResult.rssAfterCyclesMiB)} after ${churnCycles} create+delete (peak ${fmt(churnResult.peakMiB)})`);
      for (const f of churnResult?.failures ?? []) note(ctx, `churn: ${f}`);
    } catch (error) {
      note(ctx, `churn failed: ${(error as Error).message}`);
    }

    return {
      entities,
      bytesPerEntity: products.bytesPerEntity,
      fileMiB,
      rounds,
      batch: { maxRequests, maxSeconds },
      pg: pgInfo,
      kinds: kindResults,
      ...(underLoad ? { underLoad } : {}),
      fresh,
      ...(post ? { post } : {}),
      ...(churnResult ? { churn: churnResult } : {}),
      queryServer: { startupMs: server.startupMs, rssStartMiB: rssStart, rssEndMiB: rssEnd },
      notes: ctx.notes,
      wallSeconds: (performance.now() - t0) / 1000,
      load: { before: loadBefore, after: os.loadavg() },
    };
  } finally {
    if (cluster) {
      await cluster.stop();
      ctx.cleanups.delete(cluster.stopSync);
    }
    for (const cleanup of [...ctx.cleanups].reverse()) cleanup();
    await fs.rm(dir, { recursive: true, force: true });
    if (affinity) pinSelf(config.pin, affinity);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/** Sections 1 and 2 of the workload: fresh servers (start-up, first query, RSS), then durable POST with and without indexes. */
async function freshAndPost(ctx: Context, config: BenchConfig, copy: (name: string) => Promise<string>, fresh: FreshServer[], rounds: number): Promise<{ post: QueriesResult['post'] }> {
  let post: QueriesResult['post'];
  // 1. Fresh servers: start-up, first query on a field with no index, RSS with 4 fields indexed.
  const indexedDir = await copy('indexed');
  let indexed: Running | undefined;
  for (let round = 1; round <= rounds; round++) {
    const { server, result } = await freshServer(ctx, config.root, indexedDir);
    fresh.push(result);
    ctx.log(
      `fresh server ${round}/${rounds}: start-up ${fmt(result.startupMs)} ms (${fmt(result.startupCpuMs)} ms CPU), first query ${Object.entries(result.fields)
        .map(([f, q]) => `${f} ${fmt(q.ms)} ms${q.status === 200 ? '' : ` (${q.status}; 200 after ${fmt(q.readyMs ?? NaN)} ms)`}`)
        .join(', ')}; RSS ${fmt(result.rssStartMiB)} → ${fmt(result.rssIndexedMiB)} MiB`,
    );
    if (round < rounds) await server.stop();
    else indexed = server;
  }

  // 2. Durable POST with 4 indexed fields against a fresh server that never saw a filter.
  const plainDir = await copy('plain');
  const plain = await started(ctx, config.root, plainDir);
  try {
    if (!indexed) throw new Error('no indexed server');
    const body: BenchRequest = { method: 'POST', path: `/${PRODUCTS}`, headers: { accept: 'application/json', 'content-type': 'application/json' }, body: JSON.stringify(productFields(prng(7))) };
    const samples = { indexed: [] as Sample[], plain: [] as Sample[] };
    for (let round = 1; round <= rounds; round++) {
      const order: ['indexed' | 'plain', Running][] = [['indexed', indexed], ['plain', plain]];
      if (round % 2 === 0) order.reverse();
      for (const [label, server] of order) {
        const s = await measure(config, server, [body], `POST ${label}`);
        samples[label].push(s);
        ctx.log(`POST round ${round}/${rounds} ${label}: ${fmt(s.rps)} req/s, p99 ${s.p99} ms${s.problem ? ` INVALID: ${s.problem}` : ''}`);
        if (s.problem) note(ctx, `durable POST (${label} server) round ${round}: ${s.problem}`);
      }
    }
    post = samples;
  } catch (error) {
    note(ctx, `durable POST comparison failed: ${(error as Error).message}`);
  } finally {
    await indexed?.stop();
    await plain.stop();
    await fs.rm(indexedDir, { recursive: true, force: true });
    await fs.rm(plainDir, { recursive: true, force: true });
  }
  return { post };
}

/** The p-th percentile (nearest rank) of the finite values. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * The heavy queries of the fairness runs (ab-queries.ts, fairness.ts): waits until each kind's base
 * query answers, primes it, and returns a generator of random heavy queries (seeded: every build
 * gets the same sequence).
 */
export async function heavyQueries(agent: Agent, port: number, seed = 8): Promise<() => QuerySpec> {
  const random = prng(seed);
  const list = kinds();
  const totals: number[] = [];
  for (const kind of list) {
    const ready = await untilOkSpec(agent, port, () => kind.base);
    totals.push(ready.answer.total ?? 0);
    for (const spec of kind.prime ?? []) await halserveQuery(agent, port, spec);
  }
  return () => {
    const k = Math.floor(random() * list.length);
    return list[k]!.make(Math.floor(random() * 4000), totals[k]!, random);
  };
}
