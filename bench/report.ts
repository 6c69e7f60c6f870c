/** The Markdown report, `bench/RESULTS.md`, from the figures of one run. */
import type { BenchConfig } from './config.js';
import type { Sample } from './measure.js';
import type { ServerKind } from './servers.js';
import { GET_ENTITY_ROUNDS, POST_ROUNDS, SENT_JWT, SENT_TOKEN } from './workloads.js';
import { fmt, median, pairedRatio, percent } from './stats.js';
import type { QueriesResult } from './queries.js';
import { renderQueries } from './queries-report.js';
import { renderReplicas, type ReplicasResult } from './replicas.js';
import { renderDeployed, type DeployedResult } from './deployed.js';

/** Figures of one contender over all rounds. */
export interface ContenderResult {
  readonly label: string;
  readonly server: ServerKind;
  readonly samples: readonly Sample[];
}

export interface WorkloadResult {
  readonly name: string;
  readonly title: string;
  readonly contenders: readonly ContenderResult[];
  readonly notes: readonly string[];
}

export interface StartupResult {
  readonly size: number;
  readonly bytesPerEntity: number;
  readonly fileMiB: number;
  readonly runs: readonly { ms: number; rssMiB: number; peakMiB: number }[];
}

export interface RunResult {
  readonly date: string;
  readonly machine: {
    readonly cpuModel: string;
    readonly cores: number;
    readonly node: string;
    readonly os: string;
    readonly memoryGiB: number;
    readonly loadBefore: readonly number[];
    readonly loadAfter: readonly number[];
  };
  readonly config: BenchConfig;
  readonly entities: number;
  readonly bytesPerEntity: number;
  readonly workloads: readonly WorkloadResult[];
  readonly startup: readonly StartupResult[];
  readonly storeBench: readonly { file: string; output: string }[];
  /** `bench/auth.ts`: the cost of a cached token check and of a first JWT verification, when it ran. */
  readonly authBench?: { file: string; output: string };
  /** The `queries` workload (issue 8), when it ran. */
  readonly queries?: QueriesResult;
  /** The `replicas` workload (issue 9), when it ran. */
  readonly replicas?: ReplicasResult | { skipped: string };
  /** The `deployed` workloads (issue 21), when they ran. */
  readonly deployed?: DeployedResult;
  /** What `bench/lru-bench.ts` printed, when it ran. */
  readonly lru?: string;
  /** The `streams` section (issue 16): what `bench/streams.ts` and `bench/changes-resume.ts` printed. */
  readonly streams?: StreamsBench;
  readonly wallSeconds: number;
}

const pick = (c: ContenderResult | undefined, key: 'rps' | 'p50' | 'p99' | 'cpuUs'): number[] =>
  c ? c.samples.map((s) => (s.problem === undefined ? s[key] : NaN)) : [];

const find = (w: WorkloadResult | undefined, server: ServerKind): ContenderResult | undefined =>
  w?.contenders.find((c) => c.server === server);

/** One row of the targets table. */
interface Target {
  readonly workload: string;
  readonly what: string;
  readonly target: string;
  readonly measured: number;
  /** The same ratio from CPU per request (peer ÷ halserve): what the req/s ratio would be if both were CPU-bound. */
  readonly byCpu?: number;
  readonly met: boolean | undefined;
  readonly unit: string;
  /** The host's steal share over the rounds of the figures compared (`stealOf`): a reading taken under much of it is not a quiet host's. */
  readonly steal?: number;
}

function targets(result: RunResult): Target[] {
  const w = (name: string): WorkloadResult | undefined => result.workloads.find((x) => x.name === name);
  const out: Target[] = [];
  const peerName: Record<ServerKind, string> = {
    halserve: 'halserve',
    'halserve-keyed': 'halserve, keyed POSTs',
    'halserve-nonce': 'halserve, the same POSTs unkeyed (a fresh X-Request-Nonce)',
    'halserve-no-token': 'halserve without a token',
    'halserve-jwt': 'halserve with a JWT (cached)',
    'halserve-fresh': 'a freshly started halserve',
    limit: 'the limit',
    'durable-limit': 'the durable limit',
    'durable-limit-dsync': 'the durable limit with O_DSYNC',
    'json-server': 'json-server',
  };
  /** A contender by its server, or (where one server is sent several requests) by its label. */
  type Who = ServerKind | { readonly label: string; readonly name: string };
  const of = (workload: WorkloadResult, who: Who): ContenderResult | undefined =>
    typeof who === 'string' ? find(workload, who) : workload.contenders.find((c) => c.label === who.label);
  const nameOf = (who: Who): string => (typeof who === 'string' ? peerName[who] : who.name);
  /** halserve (token on, as deployed) against `peer`; `min` undefined for a reference row without a target. */
  const ratio = (name: string, title: string, peer: Who, min: number | undefined, subject: ServerKind = 'halserve'): void => {
    const workload = w(name);
    const [a, b] = workload ? [of(workload, subject), of(workload, peer)] : [];
    if (!a || !b) return;
    const value = pairedRatio(pick(a, 'rps'), pick(b, 'rps'));
    const byCpu = pairedRatio(pick(b, 'cpuUs'), pick(a, 'cpuUs'));
    out.push({
      byCpu,
      steal: median([...a.samples, ...b.samples].map(stealOf)),
      workload: title,
      what: `req/s, ${subject === 'halserve' ? 'halserve (token)' : peerName[subject]} ÷ ${nameOf(peer)}`,
      target: min === undefined ? 'reference' : `≥ ${min}×`,
      measured: value,
      met: min !== undefined && Number.isFinite(value) ? value >= min : undefined,
      unit: '×',
    });
  };
  // Issue 15: token on, GETs against the limit, writes against the durable limit.
  ratio('get-entity', 'GET entity', 'limit', 0.9);
  ratio('get-entity', 'GET entity', 'limit', undefined, 'halserve-no-token');
  ratio('get-entity', 'GET entity', 'json-server', 20);
  // Issue 17: authentication at no cost — the same server without authentication as the peer, sent the same request
  // (the credential it does not check), so that the ratio is the check's cost; and, for reference, sent no credential
  // at all, where node:http's own cost of receiving one more header (about 1 µs, bench/NOTES.md) is in the ratio too.
  const sentToken = { label: SENT_TOKEN, name: 'halserve without authentication, sent the same token' };
  const sentJwt = { label: SENT_JWT, name: 'halserve without authentication, sent the same JWT' };
  ratio('get-entity', 'GET entity, static token', sentToken, 0.97);
  ratio('get-entity', 'GET entity, JWT (RS256, cached)', sentJwt, 0.95, 'halserve-jwt');
  ratio('get-entity', 'GET entity, static token', 'halserve-no-token', undefined);
  ratio('get-entity', 'GET entity, JWT (RS256, cached)', 'halserve-no-token', undefined, 'halserve-jwt');
  ratio('page-20', 'GET page, limit 20', 'limit', 0.9);
  ratio('page-20', 'GET page, limit 20', 'limit', undefined, 'halserve-no-token');
  ratio('page-20', 'GET page, limit 20', 'json-server', 20);
  ratio('page-200', 'GET page, limit 200', 'limit', 0.8);
  ratio('page-200', 'GET page, limit 200', 'limit', undefined, 'halserve-no-token');
  ratio('post', 'POST, durable', 'durable-limit', 0.8);
  // The same durable limit with halserve's way to sync (one O_DSYNC write per batch): a reference.
  ratio('post', 'POST, durable', 'durable-limit-dsync', undefined);
  ratio('post', 'POST, durable', 'limit', undefined);
  ratio('post', 'POST, durable', 'json-server', 100);
  // Issue 17: a keyed POST against the same request unkeyed (the same bytes: a fresh header the server does not read, built
  // by the same code of the load generator), as deployed; and, for reference, against POSTs built once, without the header.
  ratio('post', 'POST, durable, Idempotency-Key', 'halserve-nonce', 0.9, 'halserve-keyed');
  ratio('post', 'POST, durable, Idempotency-Key', 'halserve', undefined, 'halserve-keyed');
  ratio('patch', 'PATCH, durable', 'durable-limit', 0.8);
  ratio('mix', '90/10 GET/PATCH', 'durable-limit', undefined);
  const lastFirst = w('last-vs-first');
  if (lastFirst) {
    const [first, last] = lastFirst.contenders;
    const value = pairedRatio(pick(last, 'cpuUs'), pick(first, 'cpuUs'));
    out.push({
      workload: 'last page vs first page',
      what: 'CPU per request, last ÷ first',
      target: '≤ 1.2×',
      measured: value,
      met: Number.isFinite(value) ? value <= 1.2 : undefined,
      unit: '×',
    });
  }
  // Issue 11: a page that embeds its links against the same page without, both halserve.
  for (const [name, title] of [
    ['embed', 'page of 200, embed=category (cached pages)'],
    ['embed-uncached', 'page of 200, embed=category (every page built)'],
  ] as const) {
    const [plain, embedded] = w(name)?.contenders ?? [];
    if (!plain || !embedded) continue;
    const value = pairedRatio(pick(embedded, 'rps'), pick(plain, 'rps'));
    out.push({
      byCpu: pairedRatio(pick(plain, 'cpuUs'), pick(embedded, 'cpuUs')),
      workload: title,
      what: 'req/s, embed ÷ no embed',
      target: '≥ 0.5×',
      measured: value,
      met: Number.isFinite(value) ? value >= 0.5 : undefined,
      unit: '×',
    });
  }
  for (const [name, title] of [
    ['get-entity', 'GET entity'],
    ['page-20', 'GET page, limit 20'],
    ['page-200', 'GET page, limit 200'],
  ] as const) {
    const workload = w(name);
    if (!workload) continue;
    const value = median(pick(find(workload, 'halserve'), 'p99')) - median(pick(find(workload, 'limit'), 'p99'));
    out.push({
      workload: title,
      what: `p99 at ${result.config.connections} connections, halserve − limit`,
      target: '≤ +2 ms',
      measured: value,
      met: Number.isFinite(value) ? value <= 2 : undefined,
      unit: ' ms',
    });
  }
  return out;
}

/** A sample's host steal share (results written before it was measured have none: NaN). */
function stealOf(s: Sample): number {
  return s.steal ?? NaN;
}

export function workloadTable(w: WorkloadResult): string {
  const limit = find(w, 'limit');
  const reference = limit ?? w.contenders[0];
  const lines = [
    `### ${w.title}`,
    '',
    `| Server | req/s | p50 ms | p99 ms | CPU µs/req | req/s ÷ ${limit ? 'limit' : 'first row'} | CPU/req ÷ ${limit ? 'limit' : 'first row'} | load-gen core busy | host steal |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of w.contenders) {
    const rps = pairedRatio(pick(c, 'rps'), pick(reference, 'rps'));
    const cpu = pairedRatio(pick(c, 'cpuUs'), pick(reference, 'cpuUs'));
    lines.push(
      `| ${c.label} | ${fmt(median(pick(c, 'rps')))} | ${fmt(median(pick(c, 'p50')), 0)} | ${fmt(median(pick(c, 'p99')), 0)} | ${fmt(median(pick(c, 'cpuUs')), 1)} | ${fmt(rps, 2)}× | ${fmt(cpu, 2)}× | ${fmt(median(c.samples.map((s) => s.loadCpu * 100)))}% | ${percent(median(c.samples.map(stealOf)))} |`,
    );
  }
  const rounds = w.contenders.map(
    (c) => `- ${c.label}: ${c.samples.map((s) => (s.problem ? `invalid (${s.problem})` : `${fmt(s.rps)} req/s, ${fmt(s.cpuUs, 1)} µs${Number.isFinite(stealOf(s)) ? `, steal ${percent(stealOf(s))}` : ''}`)).join(' · ')}`,
  );
  return [...lines, '', ...w.notes.map((n) => `_${n}_`), '', '<details><summary>Rounds</summary>', '', ...rounds, '', '</details>', ''].join('\n');
}

/** Renders the whole report. */
export function renderReport(result: RunResult): string {
  const { config, machine } = result;
  const out: string[] = [
    '# halserve benchmark results',
    '',
    `Written by \`npm run bench\`${config.quick ? ' (BENCH_QUICK=1: a smoke run, not for quoting)' : ''} on ${result.date}, in ${fmt(result.wallSeconds)} s.`,
    '',
    '## Machine and method',
    '',
    `- CPU: ${machine.cpuModel}, ${machine.cores} cores available; ${fmt(machine.memoryGiB, 1)} GiB memory; ${machine.os}; Node ${machine.node}.`,
    `- Load average (1, 5, 15 min) before: ${machine.loadBefore.map((x) => fmt(x, 2)).join(', ')}; after: ${machine.loadAfter.map((x) => fmt(x, 2)).join(', ')}. Other work on the machine makes every figure noisier; CPU per request is the steadier one.`,
    `- ${config.pin ? 'Server pinned to core 0 and load generator (autocannon 8, its own process) to core 1 with `taskset`.' : 'No pinning (fewer than 2 cores, or BENCH_NO_PIN=1): server and load generator share the cores.'}`,
    `- Every contender: ${config.connections} connections, no pipelining, ${config.warmup} s warm-up then ${config.duration} s measured, ${config.rounds} interleaved round${config.rounds === 1 ? '' : 's'} (A B C, B C A, C A B, …: each starts one contender later; GET entity ${config.quick ? config.rounds : Math.max(config.rounds, GET_ENTITY_ROUNDS)}, its servers started afresh for each, for the 3–5% that issue 17's targets ask, and POST ${config.quick ? config.rounds : Math.max(config.rounds, POST_ROUNDS)}, for the keyed POST's 10%); medians quoted. Ratios are medians of per-round ratios (the two figures of a round were taken under the same background load).`,
    `- Data: ${fmt(result.entities)} entities of ~${result.bytesPerEntity} bytes (one JSON line each), the same records for halserve (\`items.jsonl\`) and json-server (\`db.json\`); every workload starts from a fresh copy.`,
    '- halserve: built output, `node <flags> dist/cli.js --port 0 --data <tmp> --log off --token <token>`, the flags those of the CLI\'s first line as the `halserve` command runs it (`--min-semi-space-size=16`; the limit and json-server run with node\'s defaults) (durability full; without `--token` for the no-token reference, which for GET entity is also sent the token and the JWT it does not check: the targets of issue 17 compare the same request bytes, so that they measure the check and not node:http receiving one more header). The durable limit: the same replay, plus each write body parsed, appended as a line and fdatasync\'d once per batch of concurrent requests (halserve syncs its log with O_DSYNC writes instead, so POST also runs that durable limit with O_DSYNC, one synced write per batch, as a reference). The limit: `bench/limit-server.mjs`, a bare `node:http` server replaying the status, headers and body halserve sent for the same method and URL, captured just before each workload (GET answers checked byte for byte, Date masked). json-server 0.17.4 with its defaults and `--quiet`.',
    '- CPU µs/req: user + system time of the server process (all threads, from `/proc/<pid>/stat`) over the measured run, divided by the requests completed. Latency resolution is 1 ms (autocannon).',
    "- Host steal: the share of the machine's busy CPU time that the hypervisor gave to other guests during each measured run (`/proc/stat`), the median of a contender's rounds. Neighbours do not slow each part of a request alike, so a ratio measured under much steal can differ from a quiet host's by more than the rounds' spread shows (bench/NOTES.md, 2026-12-03): quote a ratio with the steal it was measured under. Steal does not show every neighbour (a shared cache or memory bus slows a core without taking it): the limit's CPU per request, which does the same work in every run, is the other reading of how fast the host was (22 µs for the bare POST replay on a quiet host on 2026-12-03, 42 µs in a run whose rounds showed 1–68% steal).",
    '',
    '## Targets (issues 4, 15, 21)',
    '',
    'halserve runs as deployed: started with `--token`, and every request to it (and to the limits, which replay its answers) sends `Authorization: Bearer …`. "reference" rows show the same build without a token, and POST against the limit that never syncs, for comparison with earlier runs.',
    '',
    'The targets are stated in requests per second. On a shared 2-core machine that figure also moves with the',
    'load generator and with other work, so the last column gives the same ratio from CPU time per request',
    '(peer ÷ halserve): the ratio of requests per second each server would reach with its core to itself.',
    '',
    '| Workload | Measure | Target | Measured | Met | Same ratio by CPU/req | Host steal |',
    '|---|---|---|---:|:---:|---:|---:|',
  ];
  for (const t of targets(result)) {
    const measured = t.unit === '×' ? `${fmt(t.measured, 2)}×` : `${t.measured >= 0 ? '+' : ''}${fmt(t.measured, 0)}${t.unit}`;
    const byCpu = t.byCpu === undefined ? '' : `${fmt(t.byCpu, 2)}×`;
    const steal = t.steal === undefined ? '' : percent(t.steal);
    out.push(`| ${t.workload} | ${t.what} | ${t.target} | ${measured} | ${t.met === undefined ? 'n/a' : t.met ? 'yes' : '**no**'} | ${byCpu} | ${steal} |`);
  }
  out.push('', "A target read with more than a few percent of host steal (see Machine and method) is not a quiet host's reading: on 2026-12-03 the keyed POST row read 1.01× (\"yes\") at 34–45% steal and 0.81× at 0.05% (bench/NOTES.md).");
  out.push('', 'Where a target is missed, `bench/NOTES.md` gives the profile that explains it and what was tried.');
  out.push('', '## Workloads', '');
  for (const w of result.workloads) out.push(workloadTable(w));
  if (result.deployed) out.push(renderDeployed(result.deployed, workloadTable));
  if (result.lru !== undefined) out.push('## The recency structure alone (`bench/lru-bench.ts`, issue 21)', '', result.lru.trim(), '');
  if (result.startup.length > 0) {
    out.push(
      '## Start-up and memory (halserve, whole server)',
      '',
      'From spawn to the `listening` line, and resident memory right after it (peak in brackets). The first start is on the generated file, whose lines have no change stamp: it appends a stamped copy of each before it listens, and compacts in the background. Each round lets a compaction under way end before it stops the server, so the later rounds restart on the log as a running server leaves it (the file column); their medians.',
      '',
      '| Entities | File | First start | Restart | RSS at a restart (peak) |',
      '|---:|---:|---:|---:|---:|',
    );
    for (const s of result.startup) {
      const restarts = s.runs.length > 1 ? s.runs.slice(1) : s.runs;
      out.push(
        `| ${fmt(s.size)} | ${fmt(s.fileMiB)} MiB | ${s.runs.length > 0 ? `${fmt(s.runs[0]!.ms)} ms` : ''} | ${fmt(median(restarts.map((r) => r.ms)))} ms | ${fmt(median(restarts.map((r) => r.rssMiB)))} MiB (${fmt(median(restarts.map((r) => r.peakMiB)))} MiB) |`,
      );
    }
    out.push('');
  }
  if (result.queries) out.push(renderQueries(result.queries, config, result.date, result.workloads));
  if (result.replicas) out.push(renderReplicas(result.replicas, config, result.date));
  out.push('## Store-level figures (`bench/store-*.ts`)', '');
  if (result.storeBench.length === 0) out.push('_No `bench/store-*.ts` present in this run._', '');
  for (const s of result.storeBench) {
    out.push(`### ${s.file}`, '');
    out.push(s.output.includes('|') ? s.output.trim() : ['```text', s.output.trim(), '```'].join('\n'), '');
  }
  if (result.streams) out.push(renderStreams(result.streams, result.date));
  if (result.authBench) {
    out.push('## Authentication (`bench/auth.ts`)', '', 'In one process, no HTTP: a cached check is what a request with a token seen before pays; a first verification what a new JWT pays once.', '');
    out.push(['```text', result.authBench.output.trim(), '```'].join('\n'), '');
  }
  out.push(
    '## Reproduce',
    '',
    '```sh',
    'npm ci && npm run bench          # full run, ~30 min, writes bench/RESULTS.md',
    'BENCH_QUICK=1 npm run bench      # smoke run, a few minutes, writes .bench/RESULTS.quick.md',
    'npm run bench:queries            # only the queries workload (issue 8); replaces its section here',
    'npm run bench:replicas           # only the replicas workload (issue 9, PostgreSQL); replaces its section here',
    'npm run bench:streams            # only the change feed\'s streams and resumes (issue 16); replaces its section here',
    '```',
    '',
    'Knobs: `BENCH_ROUNDS`, `BENCH_DURATION`, `BENCH_WARMUP` (seconds), `BENCH_CONNECTIONS`, `BENCH_ENTITIES`, `BENCH_LARGE=100000,1000000`, `BENCH_ONLY=get-entity,post,deployed,lru,startup,store,auth,queries,replicas,streams`, `BENCH_DEPLOYED=10000,100000` (entities loaded through the API), `BENCH_QUERY_ENTITIES` (1,000,000), `BENCH_PG_BIN` (/usr/lib/postgresql/15/bin), `BENCH_SERVERS=halserve,limit`, `BENCH_NO_PIN=1`, `BENCH_HALSERVE=<entry>` (measure another build), `BENCH_RATE=<req/s>` (CPU per request at equal load), `BENCH_OUT=<file>`.',
    '',
  );
  return out.join('\n');
}

/** What the `streams` section's scripts printed. */
export interface StreamsBench {
  readonly streams: string;
  readonly resume: string;
}

export const STREAMS_BEGIN = '<!-- streams:begin -->';
export const STREAMS_END = '<!-- streams:end -->';

/** The `streams` section of the report (issue 16's targets), between its markers. */
export function renderStreams(result: StreamsBench, date: string): string {
  return [
    STREAMS_BEGIN,
    '## The change feed: streams and resumes (`bench/streams.ts`, `bench/changes-resume.ts`)',
    '',
    `Run ${date}. Every server is a halserve process (\`dist/cli.js\`, \`ulimit -n 65536\`); the clients are this process and, for the many streams, a forked process of their own (\`bench/stream-clients.ts\`), on the same cores: on a machine of 2 cores the clients' reading competes with the server. How each figure is taken is at the top of \`bench/streams.ts\`; bench/NOTES.md ("The change feed's streams") says what was changed to get there.`,
    '',
    result.streams.trim(),
    '',
    '### Resume from a cursor far back',
    '',
    result.resume.trim(),
    STREAMS_END,
    '',
  ].join('\n');
}
