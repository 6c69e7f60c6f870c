/**
 * The workloads of issue 4. Every contender of a workload gets the same connections, duration,
 * warm-up and data; only the URL shape differs where json-server spells pagination its own way.
 */
import type { BenchRequest } from './capture.js';
import { LINKED, RESOURCE, postBody, type Dataset } from './dataset.js';
import type { RequestOrder } from './measure.js';
import { BENCH_AUTHORIZATION, BENCH_JWT_AUTHORIZATION, type ServerKind } from './servers.js';

/** The server without authentication sent the static token's request, which it does not check (issue 17's peer). */
export const SENT_TOKEN = 'halserve, no token checked, sent the static token (reference)';
/** The same, sent the JWT's request. */
export const SENT_JWT = 'halserve, no token checked, sent the JWT (reference)';

/** Rounds of GET entity at least: issue 17's targets ask for a 3–5% difference, which 3 rounds do not resolve. */
export const GET_ENTITY_ROUNDS = 7;
/** Rounds of the POST workload at least, for the keyed POST's ratio (issue 17). */
export const POST_ROUNDS = 11;

/** One column of a workload: a server and the requests sent to it. */
export interface Contender {
  readonly label: string;
  readonly server: ServerKind;
  readonly requests: readonly BenchRequest[];
  /** Default: each connection walks the requests from the start. */
  readonly order?: RequestOrder;
  /** The name of a header every request gets with a value of its own (bench/load.mjs). */
  readonly fresh?: string;
}

/** A workload: contenders measured in interleaved rounds. */
export interface Workload {
  readonly name: string;
  readonly title: string;
  /** `small`: the side-by-side data set; `large`: the largest start-up data set (halserve only). */
  readonly data: 'small' | 'large';
  readonly contenders: readonly Contender[];
  /** Rounds at least (BENCH_ROUNDS when more; a quick run keeps its one). */
  readonly minRounds?: number;
  /**
   * Every server is started afresh for each round (on the same data: for workloads that write
   * nothing). Two processes of one build on this VM can differ by ~10% for a whole run (where the
   * kernel placed them, not what they run: their CPU profiles match), so a figure of one process is
   * drawn once per round instead of once per run.
   */
  readonly restartEachRound?: boolean;
}

/** The seed's example Accept (docs/conventions.md §5), sent to every server alike. */
const ACCEPT = { accept: 'application/json' } as const;
/** POST, PUT and PATCH need it (contract 5, docs/conventions.md §7). */
const JSON_BODY = { accept: 'application/json', 'content-type': 'application/json' } as const;

const entity = (id: string): BenchRequest => ({ method: 'GET', path: `/${RESOURCE}/${id}`, headers: ACCEPT });
const patch = (id: string, n: number): BenchRequest => ({
  method: 'PATCH',
  path: `/${RESOURCE}/${id}`,
  headers: JSON_BODY,
  body: JSON.stringify({ stock: n }),
});

/** `count` page numbers spread evenly over `[1, pages]`. */
function spread(pages: number, count: number): number[] {
  const out = new Set<number>();
  for (let i = 0; i < count; i++) out.add(1 + Math.floor((i * (pages - 1)) / Math.max(1, count - 1)));
  return [...out];
}

function pageRequests(data: Dataset, limit: number, jsonServer: boolean): BenchRequest[] {
  const pages = Math.max(1, Math.ceil(data.size / limit));
  return spread(pages, 20).map((page) => ({
    method: 'GET',
    path: jsonServer ? `/${RESOURCE}?_page=${page}&_limit=${limit}` : `/${RESOURCE}?page=${page}&limit=${limit}`,
    headers: ACCEPT,
  }));
}

/** The same requests with the bearer token halserve is started with, as every deployment sends. */
export function withToken(requests: readonly BenchRequest[]): BenchRequest[] {
  return requests.map((r) => ({ ...r, headers: { ...r.headers, authorization: BENCH_AUTHORIZATION } }));
}

/** The same requests with the bench identity provider's JWT (RS256). */
export function withJwt(requests: readonly BenchRequest[]): BenchRequest[] {
  return requests.map((r) => ({ ...r, headers: { ...r.headers, authorization: BENCH_JWT_AUTHORIZATION } }));
}

/**
 * halserve as deployed (token on), the same without a token for reference, the limit (the same
 * requests, halserve's answers replayed), for writes the durable limit too, and json-server (its own
 * URL shape, no token, as before).
 */
function trio(halserve: readonly BenchRequest[], jsonServer: readonly BenchRequest[] | undefined, writes = false): Contender[] {
  const token = withToken(halserve);
  const out: Contender[] = [
    { label: 'halserve (token)', server: 'halserve', requests: token },
    { label: 'halserve, no token (reference)', server: 'halserve-no-token', requests: halserve },
    { label: 'limit (bare node:http replay)', server: 'limit', requests: token },
  ];
  if (writes) out.push({ label: 'durable limit (replay; parse, append, fdatasync per batch)', server: 'durable-limit', requests: token });
  if (jsonServer) out.push({ label: 'json-server 0.17.4', server: 'json-server', requests: jsonServer });
  return out;
}

/**
 * Pages of 200 linked products (issue 11): spread over the collection, with or without
 * `embed=category`. `distinct` spells each request's `limit` differently (every value from 200 up
 * clamps to 200, so each answer is a page of 200), so that the page cache never answers.
 */
function productPages(data: Dataset, embed: boolean, distinct: number): BenchRequest[] {
  const pages = Math.max(1, Math.ceil(data.size / 200));
  const spread = (n: number): number => 1 + (n % pages);
  const path = (page: number, limit: number): string => `/${LINKED.source}?page=${page}&limit=${limit}${embed ? `&embed=${LINKED.field}` : ''}`;
  const count = distinct > 0 ? distinct : Math.min(20, pages);
  return withToken(Array.from({ length: count }, (_, n) => ({ method: 'GET', path: path(spread(n * 7), distinct > 0 ? 200 + n : 200), headers: ACCEPT })));
}

/** A page of 200 products with `embed=category` against the same page without (issue 11: ≥ 0.5×). */
function embedWorkloads(data: Dataset): Workload[] {
  /** More distinct requests than a run sends at the embed's rate, so none repeats. */
  const distinct = 20_000;
  return [
    {
      name: 'embed',
      title: 'A page of 200 products: embed=category against no embed (page cache answering, as for repeated pages)',
      data: 'small',
      contenders: [
        { label: 'halserve, no embed', server: 'halserve', requests: productPages(data, false, 0) },
        { label: 'halserve, embed=category', server: 'halserve', requests: productPages(data, true, 0) },
      ],
    },
    {
      name: 'embed-uncached',
      title: 'A page of 200 products: embed=category against no embed, every page built (no request repeats, so the page cache never answers)',
      data: 'small',
      contenders: [
        { label: 'halserve, no embed', server: 'halserve', requests: productPages(data, false, distinct), order: 'global' },
        { label: 'halserve, embed=category', server: 'halserve', requests: productPages(data, true, distinct), order: 'global' },
      ],
    },
  ];
}

/** Every workload, in the order they run. */
export function workloads(small: Dataset, large: Dataset | undefined): Workload[] {
  const ids = small.sampleIds;
  const gets = ids.map(entity);
  const post: BenchRequest = { method: 'POST', path: `/${RESOURCE}`, headers: JSON_BODY, body: postBody() };
  const patches = ids.map((id, n) => patch(id, n));
  // 90/10: nine reads of entities, then one merge-patch, over the sampled ids.
  const mix = ids.flatMap((id, n) => (n % 10 === 9 ? [patch(id, n)] : [entity(id)]));
  const list: Workload[] = [
    {
      name: 'get-entity',
      title: 'GET an entity',
      data: 'small',
      // Issue 17: a JWT's check, cached after its first verification, beside the static token and no authentication.
      // The server without authentication is also sent each credential (which it ignores): the same request bytes as the
      // server that checks it, so that the ratio is what the check costs, not what receiving one more header costs node:http.
      // Each pair runs back to back, and over more rounds than the others: the targets ask for a 3-5% difference.
      minRounds: GET_ENTITY_ROUNDS,
      restartEachRound: true,
      contenders: [
        ...trio(gets, gets).slice(0, 1),
        { label: SENT_TOKEN, server: 'halserve-no-token', requests: withToken(gets) },
        { label: 'halserve (JWT, RS256, cached)', server: 'halserve-jwt', requests: withJwt(gets) },
        { label: SENT_JWT, server: 'halserve-no-token', requests: withJwt(gets) },
        ...trio(gets, gets).slice(1),
      ],
    },
    { name: 'page-20', title: 'GET a page, limit=20', data: 'small', contenders: trio(pageRequests(small, 20, false), pageRequests(small, 20, true)) },
    { name: 'page-200', title: 'GET a page, limit=200', data: 'small', contenders: trio(pageRequests(small, 200, false), pageRequests(small, 200, true)) },
    {
      name: 'post',
      title: 'POST an entity (durable, group commit)',
      data: 'small',
      // Issue 17's keyed POST asks for a 10% difference, which rounds moving by ±20% on this VM do not resolve in 3, nor
      // reliably in 7 (the median of 7 moved 0.82–0.91 between runs of one build: bench/NOTES.md).
      minRounds: POST_ROUNDS,
      // Issue 17: a keyed POST (a fresh Idempotency-Key each, as a client that retries only on failure sends) beside the same
      // unkeyed POST sent a fresh header of the same length that halserve does not read (X-Request-Nonce), by a server of its own:
      // the same request bytes, built per request by the same code of the load generator, which costs it ~35 µs a request more
      // than a request built once (bench/NOTES.md, 2026-11-28). So the ratio is what the key costs the server, as the
      // authentication targets compare the same bytes. The durable limit also with O_DSYNC, as halserve's log syncs (a reference
      // beside the limit the target names).
      contenders: [
        ...trio([post], [post], true).slice(0, 1),
        { label: 'halserve (token, Idempotency-Key)', server: 'halserve-keyed', requests: withToken([post]), fresh: 'idempotency-key' },
        { label: 'halserve (token, X-Request-Nonce: the same bytes, no key)', server: 'halserve-nonce', requests: withToken([post]), fresh: 'x-request-nonce' },
        ...trio([post], [post], true).slice(1, 4),
        { label: 'durable limit, O_DSYNC (replay; parse, one synced write per batch)', server: 'durable-limit-dsync', requests: withToken([post]) },
        ...trio([post], [post], true).slice(4),
      ],
    },
    { name: 'patch', title: 'PATCH an entity (merge patch, durable)', data: 'small', contenders: trio(patches, patches, true) },
    { name: 'mix', title: '90/10 read/write mix (GET entity / PATCH)', data: 'small', contenders: trio(mix, mix, true) },
    ...embedWorkloads(small),
  ];
  if (large) {
    const last = Math.max(1, Math.ceil(large.size / 20));
    const page = (n: number): BenchRequest => ({ method: 'GET', path: `/${RESOURCE}?page=${n}&limit=20`, headers: { ...ACCEPT, authorization: BENCH_AUTHORIZATION } });
    list.push({
      name: 'last-vs-first',
      title: `Last page against first page, ${large.size.toLocaleString('en-US')} entities (limit=20)`,
      data: 'large',
      contenders: [
        { label: 'halserve, page 1', server: 'halserve', requests: [page(1)] },
        { label: `halserve, page ${last} (last)`, server: 'halserve', requests: [page(last)] },
      ],
    });
  }
  return list;
}
