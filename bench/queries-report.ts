/** The `queries` section of `bench/RESULTS.md`: issue 8's targets table and the figures behind it. */
import type { BenchConfig } from './config.js';
import type { FirstQuery, KindResult, QueriesResult, UnderLoadResult } from './queries.js';
import { percentile } from './queries.js';
import type { WorkloadResult } from './report.js';
import { fmt, median, pairedRatio } from './stats.js';

/** The section sits between these markers, so that `BENCH_ONLY=queries` can replace it alone. */
export const BEGIN = '<!-- queries:begin -->';
export const END = '<!-- queries:end -->';

const MB = 1e6 / 2 ** 20; // 1 MB in MiB

const all = (rounds: readonly (readonly number[])[]): number[] => rounds.flat();
const ms = (value: number): string => (Number.isFinite(value) ? (value < 10 ? fmt(value, 2) : value < 100 ? fmt(value, 1) : fmt(value)) : '–');
const times = (ratio: number): string => `${fmt(ratio, ratio < 1 ? 2 : 1)}×`;
const met = (ok: boolean | undefined): string => (ok === undefined ? 'n/a' : ok ? 'yes' : '**no**');

/** PostgreSQL p50 ÷ halserve p50, the median of the per-round ratios (a round's two figures were taken back to back). */
function pgRatio(kind: KindResult): number {
  return pairedRatio(kind.pg.map(median), kind.halserve.map(median));
}

/** The same ratio from server CPU per request (PostgreSQL backend ÷ halserve process), per round. */
function cpuRatio(kind: KindResult): number {
  return pairedRatio(kind.pgCpu, kind.halserveCpu);
}

interface Row {
  readonly measure: string;
  readonly target: string;
  readonly halserve: string;
  readonly pg: string;
  readonly ratio: string;
  readonly met: boolean | undefined;
  readonly byCpu?: string;
}

function targetRows(r: QueriesResult): Row[] {
  const rows: Row[] = [];
  const hasPg = !('skipped' in r.pg);
  for (const k of r.kinds) {
    if (k.p50Target === undefined) continue;
    const h = median(all(k.halserve));
    const p = median(all(k.pg));
    const ratio = pgRatio(k);
    let ok: boolean | undefined = Number.isFinite(h) ? h <= k.p50Target : undefined;
    let target = `p50 ≤ ${k.p50Target} ms`;
    if (k.ratioTarget !== undefined) {
      target += ` and ≥ ${k.ratioTarget}× faster than PostgreSQL`;
      if (ok !== undefined && hasPg) ok = ok && Number.isFinite(ratio) && ratio >= k.ratioTarget;
    }
    rows.push({
      measure: k.title.replace(/ \(.*\)$/, ''),
      target,
      halserve: `${ms(h)} ms (p99 ${ms(percentile(all(k.halserve), 99))})`,
      pg: hasPg ? `${ms(p)} ms (p99 ${ms(percentile(all(k.pg), 99))})` : '–',
      ratio: hasPg ? times(ratio) : '',
      met: ok,
      byCpu: `${ms(median(k.halserveCpu))}${hasPg ? ` / ${ms(median(k.pgCpu))} ms = ${times(cpuRatio(k))}` : ' ms'}`,
    });
  }
  if (r.fresh.length > 0) {
    const first = r.fresh.map((f) => f.firstStockMs);
    const failed = r.fresh.filter((f) => f.firstStockStatus !== 200);
    const ready = failed.map((f) => f.fields['stock']?.readyMs ?? NaN);
    rows.push({
      measure: 'First query on a field with no index yet (`stock[gte]=500`, fresh server, whole request)',
      target: '≤ 1.5 s in all',
      halserve: `${fmt(median(first))} ms (max ${fmt(Math.max(...first))})${failed.length > 0 ? `; **${failed.length} of ${r.fresh.length} not a 200** (${failed[0]!.fields['stock']?.problem ?? failed[0]!.firstStockStatus}), a 200 ${failed.length > 1 ? 'a median ' : ''}${fmt(median(ready))} ms after it was sent` : ''}`,
      pg: '',
      ratio: '',
      byCpu: `${fmt(median(r.fresh.map((f) => f.firstStockCpuMs)))} ms`,
      // Judged on the median of the fresh servers, as every other time here; the max is shown.
      met: failed.length === 0 ? median(first) <= 1500 : false,
    });
  }
  if (r.underLoad) {
    const h = r.underLoad.halserve.gets;
    const p = r.underLoad.pg?.gets ?? [];
    rows.push({
      measure: `\`GET /products/<id>\` while 8 clients send uncached heavy queries (${r.underLoad.halserve.seconds} s)`,
      target: 'p99 ≤ 10 ms',
      halserve: `p99 ${ms(percentile(h, 99))} ms (p50 ${ms(median(h))}, max ${ms(Math.max(...h))}; ${fmt(h.length)} GETs)`,
      pg: r.underLoad.pg ? `p99 ${ms(percentile(p, 99))} ms (p50 ${ms(median(p))}; ${fmt(p.length)})` : '–',
      ratio: '',
      met: h.length === 0 ? false : percentile(h, 99) <= 10 && r.underLoad.halserve.getFailures === 0,
    });
  }
  if (r.post) {
    const valid = (s: { rps: number; problem?: string }): number => (s.problem === undefined ? s.rps : NaN);
    const ratio = pairedRatio(r.post.indexed.map(valid), r.post.plain.map(valid));
    rows.push({
      measure: 'Durable POST, 50 connections: 4 indexed fields ÷ no index',
      target: '≥ 0.85×',
      halserve: `${fmt(median(r.post.indexed.map(valid)))} ÷ ${fmt(median(r.post.plain.map(valid)))} req/s = ${fmt(ratio, 2)}×`,
      pg: '',
      ratio: '',
      // The same ratio from CPU per request (no index ÷ indexed): what req/s would be with a core each.
      byCpu: `${fmt(median(r.post.indexed.map((s) => s.cpuUs)), 1)} / ${fmt(median(r.post.plain.map((s) => s.cpuUs)), 1)} µs: ${fmt(pairedRatio(r.post.plain.map((s) => s.cpuUs), r.post.indexed.map((s) => s.cpuUs)), 2)}× (indexed / no index)`,
      met: Number.isFinite(ratio) ? ratio >= 0.85 : undefined,
    });
  }
  if (r.fresh.length > 0) {
    const rss = median(r.fresh.map((f) => f.rssIndexedMiB));
    const limit = 2 * r.fileMiB + 100 * MB;
    rows.push({
      measure: `RSS with 4 fields indexed (file ${fmt(r.fileMiB)} MiB)`,
      target: `≤ 2 × file + 100 MB = ${fmt(limit)} MiB`,
      halserve: `${fmt(rss)} MiB (peak ${fmt(median(r.fresh.map((f) => f.peakIndexedMiB)))})`,
      pg: 'sizeMiB' in r.pg ? `table + indexes ${fmt(r.pg.sizeMiB)} MiB on disk` : '',
      ratio: '',
      met: Number.isFinite(rss) ? rss <= limit : undefined,
    });
  }
  if (r.churn) {
    const c = r.churn;
    const n = (c.writes - 1) / 3;
    for (const [what, after] of [
      [`${fmt(n)} PATCHes of one ${c.blobKiB} KB entity`, c.rssAfterPatchesMiB],
      [`${fmt(n)} create+delete cycles of a ${c.blobKiB} KB entity`, c.rssAfterCyclesMiB],
    ] as const) {
      const growth = after - c.rssStartMiB;
      rows.push({
        measure: `RSS after ${what} (no schema)`,
        target: '≤ 100 MB above start',
        halserve: `+${fmt(growth)} MiB (${fmt(c.rssStartMiB)} → ${fmt(after)} MiB)`,
        pg: '',
        ratio: '',
        met: c.failures.length === 0 ? growth <= 100 * MB : false,
      });
    }
  }
  const startups = r.fresh.map((f) => f.startupMs);
  if (r.queryServer) startups.push(r.queryServer.startupMs);
  if (startups.length > 0) {
    rows.push({
      measure: `Start-up at ${fmt(r.entities)} entities (spawn to listening)`,
      target: '≤ 2 s',
      halserve: `${fmt(median(startups))} ms (max ${fmt(Math.max(...startups))})`,
      pg: '',
      ratio: '',
      byCpu: `${fmt(median(r.fresh.map((f) => f.startupCpuMs)))} ms`,
      met: median(startups) <= 2000,
    });
  }
  return rows;
}

function underLoadRow(side: string, u: UnderLoadResult): string {
  const statuses = Object.entries(u.heavyStatuses)
    .map(([s, n]) => `${n}× ${s}`)
    .join(', ');
  return `| ${side} | ${fmt(u.gets.length)} | ${ms(median(u.gets))} | ${ms(percentile(u.gets, 99))} | ${ms(Math.max(...u.gets))} | ${fmt(u.heavyDone)} | ${ms(median(u.heavyMs))} | ${statuses || '–'} |`;
}

/** halserve ÷ the limit for the three GET workloads when this run measured them (a full `npm run bench`). */
function limitRatios(workloads: readonly WorkloadResult[]): string {
  const values = ['get-entity', 'page-20', 'page-200'].map((name) => {
    const w = workloads.find((x) => x.name === name);
    const h = w?.contenders.find((c) => c.server === 'halserve');
    const l = w?.contenders.find((c) => c.server === 'limit');
    if (!h || !l) return undefined;
    const ok = (key: 'rps' | 'cpuUs') => (c: typeof h): number[] => c.samples.map((x) => (x.problem === undefined ? x[key] : NaN));
    return { rps: pairedRatio(ok('rps')(h), ok('rps')(l)), cpu: pairedRatio(ok('cpuUs')(l), ok('cpuUs')(h)) };
  });
  if (values.some((v) => v === undefined)) return 'not measured in this run (a full `npm run bench` measures them in the same run)';
  const x = (n: number): string => `${fmt(n, 2)}×`;
  return `req/s ${values.map((v) => x(v!.rps)).join(' / ')}; by CPU ${values.map((v) => x(v!.cpu)).join(' / ')} (this run, above)`;
}

/** The section, markers included. */
export function renderQueries(r: QueriesResult, config: BenchConfig, date: string, others: readonly WorkloadResult[] = []): string {
  const hasPg = !('skipped' in r.pg);
  const out: string[] = [
    BEGIN,
    `## Queries at ${fmt(r.entities)} entities, side by side with PostgreSQL (issue 8)`,
    '',
    `Written by \`npm run bench\` (workload \`queries\`)${config.quick ? ' with BENCH_QUICK=1: a smoke run, not for quoting' : ''} on ${date}, in ${fmt(r.wallSeconds)} s.`,
    '',
    `Load average (1, 5, 15 min) before: ${r.load.before.map((x) => fmt(x, 2)).join(', ')}; after: ${r.load.after.map((x) => fmt(x, 2)).join(', ')} (2 cores). Wall times move with other work on the machine; the last column gives server CPU per request (halserve's process; the PostgreSQL backend of the connection), which moves much less.`,
    '',
    '| Measure | Target | halserve | PostgreSQL 15 | PG ÷ halserve (p50) | Met | Server CPU per request: halserve / PG |',
    '|---|---|---:|---:|---:|:---:|---:|',
  ];
  for (const row of targetRows(r)) out.push(`| ${row.measure} | ${row.target} | ${row.halserve} | ${row.pg} | ${row.ratio} | ${met(row.met)} | ${row.byCpu ?? ''} |`);
  out.push(`| GET entity / page-20 / page-200 ratios to the limit | no regression from issue 4's run (req/s 0.74× / 0.72× / 1.05×; by CPU 0.73× / 0.72× / 0.96×) | ${limitRatios(others)} | | | n/a | |`, '');
  out.push(
    '### Method',
    '',
    `- Data: ${fmt(r.entities)} seeded products of ~${r.bytesPerEntity} bytes (\`bench/products.ts\`; file ${fmt(r.fileMiB)} MiB): \`status\` (3 values), \`category\` (20), \`price\` (0–1000, cents), \`stock\` (0–999), \`name\`/\`description\` (each of 100 nouns in ~1% of names; \`description\` absent from 10%), \`dimensions.weight\`, \`tags\` (10 values, 0–10 per product), \`brand\` (40 values, the i-th about 1/i as frequent as the first; in PostgreSQL's \`extra\`). The same records go to halserve (\`products.jsonl\`) and to PostgreSQL (COPY).`,
    '- halserve: `node dist/cli.js --data <tmp> --log off --durability full`, no schema (every field filterable), pinned to core 0. Measured over HTTP/1.1 with one kept-alive connection, one request at a time, `Accept: application/json`, from sending the request to the last byte of the answer.',
    hasPg && 'version' in r.pg
      ? `- PostgreSQL ${r.pg.version}: a throwaway cluster (\`initdb --locale=C\` as \`postgres\` in a temporary directory, Unix socket only), pinned to core 0 like halserve, settings ${Object.entries(r.pg.settings)
          .map(([k, v]) => `\`${k}=${v}\``)
          .join(', ')}, the rest default. Table \`products(seq, id primary key, created_at, updated_at, status, category, price float8, stock int, name, description, extra jsonb)\` (\`seq\` = creation order), B-tree indexes on \`status\`, \`category\`, \`price\`, \`stock\`, then \`VACUUM ANALYZE\`: COPY ${fmt(r.pg.loadSeconds, 1)} s, indexes ${fmt(r.pg.indexSeconds, 1)} s, VACUUM ANALYZE ${fmt(r.pg.analyzeSeconds, 1)} s, ${fmt(r.pg.sizeMiB)} MiB with indexes. Queried over one persistent connection (\`bench/pg-client.ts\`: Postgres.js, the simple query protocol), timed the same way: a page is \`SELECT count(*) … WHERE …; SELECT <all columns> … WHERE … ORDER BY <keys>, seq LIMIT 20 OFFSET k\` sent as one message (one round trip), as halserve's page carries its exact \`total\`. No text index (\`q\` is \`name ILIKE '%w%' OR description ILIKE '%w%'\`).`
      : `- PostgreSQL: skipped (${'skipped' in r.pg ? r.pg.skipped : ''}).`,
    `- The client (this process) is pinned to core 1. ${r.rounds} interleaved round${r.rounds === 1 ? '' : 's'}: in each, every query kind runs on halserve then on PostgreSQL, the same queries in the same order, at most ${r.batch.maxRequests} requests or ${r.batch.maxSeconds} s per side. Every halserve request differs from all before it (page, bound, word or limit), so none comes from the page cache; three unmeasured requests per kind come first (the first one is where an index on first use is built; its time is listed), and for the words searched before, each word once. p50 and p99 are over all measured requests of all rounds; the ratio is the median of per-round ratios of p50s.`,
    `- "Same answers": for each query run on both sides, the same \`total\` and the same 20 ids in the same order.`,
    '',
    '### Query kinds',
    '',
    `| Query | Matches | halserve p50 ms | p99 | n | PostgreSQL p50 ms | p99 | n | PG ÷ halserve | CPU ms/req halserve / PG | Same answers | First request: halserve / PG |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const k of r.kinds) {
    const h = all(k.halserve);
    const p = all(k.pg);
    out.push(
      `| ${k.title} | ${fmt(k.total)} | ${ms(median(h))} | ${ms(percentile(h, 99))} | ${h.length} | ${hasPg ? ms(median(p)) : '–'} | ${hasPg ? ms(percentile(p, 99)) : '–'} | ${p.length} | ${hasPg ? times(pgRatio(k)) : '–'} | ${ms(median(k.halserveCpu))} / ${hasPg ? ms(median(k.pgCpu)) : '–'} | ${hasPg ? `${k.agreed}/${k.compared}` : '–'} | ${ms(k.firstHalserveMs)} ms${k.firstStatus === 200 ? '' : ` **${k.firstStatus}**, 200 after ${k.firstReadyMs === undefined ? '> 60 s' : `${fmt(k.firstReadyMs)} ms`}`} / ${k.firstPgMs === undefined ? '–' : `${ms(k.firstPgMs)} ms`} |`,
    );
  }
  out.push('', '<details><summary>Example requests and per-round p50s</summary>', '');
  for (const k of r.kinds) {
    out.push(`- **${k.name}**: \`GET ${k.example.http}\` — \`${k.example.sql}\``);
    out.push(`  - halserve p50 per round: ${k.halserve.map((x) => `${ms(median(x))} ms (n ${x.length})`).join(' · ')}; PostgreSQL: ${k.pg.map((x) => `${ms(median(x))} ms (n ${x.length})`).join(' · ') || '–'}`);
    if (k.slowest.length > 0) out.push(`  - halserve's slowest: ${k.slowest.map((x) => `${ms(x.ms)} ms \`${x.http}\``).join(', ')}`);
    if (k.failures.length > 0) out.push(`  - not 200: ${k.failures.slice(0, 3).join('; ')}`);
    if (k.mismatch) out.push(`  - first disagreement: ${k.mismatch}`);
  }
  out.push('', '</details>', '');
  if (r.fresh.length > 0) {
    out.push(
      '### Fresh servers: start-up, first query on unindexed fields, memory',
      '',
      'Each a new process on a copy of the file. The first `stock[gte]=500` is sent right after the listening line, then the first query on each other field, in this order; where one is not a 200, the same query is sent again every 250 ms until it is (\"200 after\": from the first send). A second later each field once more (another page: not cached), then the memory is read.',
      '',
      '| Round | Start-up (server CPU) | First `stock[gte]=500` (server CPU until the 200) | First `status=paused` | First `category=lighting` | First `price[gte]=10&price[lt]=500` | The four again | RSS at start | RSS, 4 fields indexed (peak) |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    const first = (q: FirstQuery | undefined): string =>
      q === undefined ? '–' : q.status === 200 ? `${fmt(q.ms)} ms` : `${fmt(q.ms)} ms **${q.status}**, 200 after ${q.readyMs === undefined ? '> 60 s' : `${fmt(q.readyMs)} ms`}`;
    for (const [i, f] of r.fresh.entries()) {
      const again = ['stock', 'status', 'category', 'price'].map((k) => ms(f.secondMs[k] ?? NaN)).join(' / ');
      out.push(
        `| ${i + 1} | ${fmt(f.startupMs)} ms (${fmt(f.startupCpuMs)}) | ${first(f.fields['stock'])} (${fmt(f.firstStockCpuMs)} ms) | ${first(f.fields['status'])} | ${first(f.fields['category'])} | ${first(f.fields['price'])} | ${again} ms | ${fmt(f.rssStartMiB)} MiB | ${fmt(f.rssIndexedMiB)} MiB (${fmt(f.peakIndexedMiB)}) |`,
      );
    }
    if (r.queryServer) out.push('', `The query server: start-up ${fmt(r.queryServer.startupMs)} ms, RSS ${fmt(r.queryServer.rssStartMiB)} MiB at start, ${fmt(r.queryServer.rssEndMiB)} MiB after every query kind and the load run.`);
    out.push('');
  }
  if (r.underLoad) {
    out.push(
      '### GET an entity while 8 clients send heavy queries',
      '',
      `8 clients loop over uncached heavy queries (the kinds above at random pages, words and bounds) while one client GETs random entities by id, one at a time, for ${r.underLoad.halserve.seconds} s; PostgreSQL: the same with 9 connections and \`SELECT … WHERE id = …\`.`,
      '',
      '| Server | GETs | GET p50 ms | GET p99 ms | GET max ms | heavy queries done | heavy p50 ms | heavy answers |',
      '|---|---:|---:|---:|---:|---:|---:|---|',
      underLoadRow('halserve', r.underLoad.halserve),
    );
    if (r.underLoad.pg) out.push(underLoadRow('PostgreSQL', r.underLoad.pg));
    const slow = r.underLoad.halserve.heavySlowest;
    if (slow.length > 0) out.push('', `halserve's slowest heavy queries (8 in flight: each time includes waiting for the others): ${slow.map((x) => `${ms(x.ms)} ms \`${x.query}\``).join(', ')}.`);
    out.push('');
  }
  if (r.post) {
    out.push(
      '### Durable POST with and without indexes',
      '',
      `Two fresh servers on the same file: one after the first query on \`stock\`, \`status\`, \`category\` and \`price\` (so those are indexed), one that never saw a filter. autocannon, ${config.connections} connections, ${config.warmup} s warm-up, ${config.duration} s measured, rounds alternating which goes first.`,
      '',
      '| Server | req/s per round | p99 ms | CPU µs/req |',
      '|---|---|---:|---:|',
    );
    for (const [label, samples] of [
      ['4 fields indexed', r.post.indexed],
      ['no index', r.post.plain],
    ] as const) {
      out.push(`| ${label} | ${samples.map((s) => (s.problem ? `invalid (${s.problem})` : fmt(s.rps))).join(' · ')} | ${fmt(median(samples.map((s) => s.p99)))} | ${fmt(median(samples.map((s) => s.cpuUs)), 1)} |`);
    }
    out.push('');
  }
  if (r.churn) {
    const c = r.churn;
    out.push(
      '### Memory under churn',
      '',
      `A fresh server with one resource without schema (\`--resource blobs\`, empty). RSS after one GET, after ${fmt((c.writes - 1) / 3)} sequential PATCHes (merge patch, durable) of one ${c.blobKiB} KB entity, then after as many POST + DELETE cycles of a ${c.blobKiB} KB entity, each read 1.5 s after the last write; ${fmt(c.writes)} writes in ${fmt(c.seconds, 1)} s.`,
      '',
      '| RSS at start | after the PATCHes | after create+delete | peak | failed writes |',
      '|---:|---:|---:|---:|---|',
      `| ${fmt(c.rssStartMiB)} MiB | ${fmt(c.rssAfterPatchesMiB)} MiB | ${fmt(c.rssAfterCyclesMiB)} MiB | ${fmt(c.peakMiB)} MiB | ${c.failures.length === 0 ? 'none' : c.failures.join('; ')} |`,
      '',
    );
  }
  out.push('### Seen during the run', '');
  if (r.notes.length === 0) out.push('Nothing odd: every answer was a 200 (or the expected 201/204), both sides gave the same answers, no warning on stderr.');
  for (const n of r.notes) out.push(`- ${n.replace(/\|/g, '\\|').replace(/\n/g, ' ')}`);
  out.push('', END, '');
  return out.join('\n');
}

/** `report` with the queries section replaced (or inserted before "## Reproduce", or appended). */
export function spliceQueries(report: string, section: string): string {
  return spliceSection(report, section, BEGIN, END);
}

/** `report` with the section between `begin` and `end` replaced (or inserted before "## Reproduce", or appended). */
export function spliceSection(report: string, section: string, beginMarker: string, endMarker: string): string {
  const begin = report.indexOf(beginMarker);
  const end = report.indexOf(endMarker);
  if (begin >= 0 && end > begin) return report.slice(0, begin) + section.trimEnd() + report.slice(end + endMarker.length);
  const reproduce = report.indexOf('\n## Reproduce');
  if (reproduce >= 0) return `${report.slice(0, reproduce + 1)}${section}\n${report.slice(reproduce + 1)}`;
  return `${report.trimEnd()}\n\n${section}`;
}
