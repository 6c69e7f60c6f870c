import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { HELP, OPTIONS, parseConfig, parseDuration, parseSize, type Config } from '../../src/config.js';
import type { Metric } from '../../src/metrics/registry.js';
import { ServerMetrics } from '../../src/metrics/server-metrics.js';
import { WebhookMetrics } from '../../src/metrics/webhook-metrics.js';
import { ROUTE_SCOPES } from '../../src/http/route-scopes.js';
import { compileSchema } from '../../src/conventions/schema.js';

/**
 * The reference tables users read instead of the source — README's flags, the container's
 * variables, the metrics of README and docs/webhooks.md — against what they describe
 * (src/config.ts, the Dockerfile, the metrics registry), and every relative link of the documents
 * against the repository. Each table is read from the document itself.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');
const README = read('README.md');
const DOCUMENTS = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`), 'src/store/README.md'];

/** The rows of the Markdown table whose header row starts with `header`, each as its cells. */
function tableRows(markdown: string, header: string): string[][] {
  const lines = markdown.split('\n');
  const at = lines.findIndex((line) => line.startsWith(header));
  assert.ok(at !== -1, `a table headed ${header}`);
  const rows: string[][] = [];
  for (let i = at + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
    rows.push(lines[i]!.replace(/\\\|/g, '\u0000').split('|').slice(1, -1).map((cell) => cell.replace(/\u0000/g, '|').trim()));
  }
  return rows;
}

/** The backticked words of a cell, without a `=value` example. */
const codes = (cell: string): string[] => [...cell.matchAll(/`([^`]*)`/g)].map((m) => m[1]!.replace(/=.*$/, ''));

/** The Config member a flag sets. */
const KEYS: Record<string, keyof Config> = {
  resource: 'resources',
  token: 'tokens',
  webhook: 'webhooks',
  'webhook-resource': 'webhookResources',
  'query-budget': 'queryBudgetMs',
  'changes-retention': 'changesRetentionMs',
  'webhook-lease': 'webhookLeaseMs',
};
const keyOf = (flag: string): keyof Config => KEYS[flag] ?? (flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()) as keyof Config);
const DURATIONS: ReadonlySet<string> = new Set(['changes-retention', 'webhook-lease']);
const SIZES: ReadonlySet<string> = new Set(['idempotency-memory']);

/** Whether `shown` (a table's default, backticks removed) is the value `flag` defaults to. */
function sameDefault(flag: string, value: unknown, shown: string): boolean {
  if (DURATIONS.has(flag)) return parseDuration(flag, shown) === value;
  if (SIZES.has(flag)) return parseSize(flag, shown) === value;
  return String(value) === shown;
}
const absent = (value: unknown): boolean => value === undefined || value === '' || value === false || (Array.isArray(value) && value.length === 0);

test("README's flag table: every flag of src/config.ts, with its variables and its default (and --help's)", () => {
  const rows = tableRows(README, '| Flag | Variable | Default | Meaning |');
  const defaults = parseConfig([], {});
  const helpLines = HELP.split('\n');
  assert.deepEqual(
    rows.map((row) => /^`--([a-z-]+)/.exec(row[0]!)?.[1]),
    OPTIONS.map((o) => o.flag),
    'one row per flag, in the order of --help',
  );
  for (const option of OPTIONS) {
    const [, variables, shown] = rows.find((row) => row[0]!.startsWith(`\`--${option.flag}`))!;
    assert.deepEqual(codes(variables!), [...option.env], `--${option.flag}: its variables`);
    const value = defaults[keyOf(option.flag)];
    const concrete = /^`[^`]*`$/.test(shown!) ? shown!.slice(1, -1) : undefined;
    if (absent(value)) {
      assert.equal(concrete, undefined, `--${option.flag} has no default value, README shows ${shown}`);
      continue;
    }
    assert.ok(concrete !== undefined && sameDefault(option.flag, value, concrete), `--${option.flag} defaults to ${String(value)}, README shows ${shown}`);
    const help = helpLines.find((line) => line.startsWith(`  --${option.flag} `));
    const helpDefault = /\(default ([^ )]+)\)/.exec(help ?? '')?.[1];
    if (helpDefault !== undefined) assert.equal(helpDefault, concrete, `--help's default of --${option.flag}`);
  }
});

test("README's container table: every variable of the CLI, with the image's defaults (Dockerfile ENV) or the server's", () => {
  const rows = tableRows(README, '| Variable | Image default | Meaning |');
  const listed = new Map<string, string>();
  for (const row of rows) for (const name of codes(row[0]!)) listed.set(name, row[1]!);
  const image = new Map([...read('Dockerfile').matchAll(/\b(HALSERVE_[A-Z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
  const defaults = parseConfig([], {});
  const missing = OPTIONS.filter((o) => o.env.length > 0 && !listed.has(o.env[0]!)).map((o) => o.env[0]!);
  assert.deepEqual(missing, [], 'variables the container table leaves out');
  for (const option of OPTIONS) {
    const name = option.env[0];
    if (name === undefined) continue;
    const shown = listed.get(name)!;
    const concrete = /^`[^`]*`$/.test(shown) ? shown.slice(1, -1) : undefined;
    if (concrete === undefined) continue;
    const expected = image.get(name) ?? defaults[keyOf(option.flag)];
    assert.ok(image.has(name) ? concrete === expected : sameDefault(option.flag, expected, concrete), `${name}: the image's default is ${String(expected)}, README shows ${shown}`);
  }
});

/** Every metric the server can expose, with its type and label names (one series of each made, so its labels show). */
function declaredMetrics(): Map<string, { type: string; labels: string[] }> {
  const server = new ServerMetrics();
  const webhooks = new WebhookMetrics(server.registry);
  server.track('products', () => 0);
  webhooks.track('http://hooks.example/h', 'http://hooks.example:80/h', { pending: () => 0, lagSeconds: () => 0, positionAgeSeconds: () => 0 });
  const metrics = new Map<string, { type: string; labels: string[] }>();
  for (const metric of server.registry.metrics as readonly Metric[]) {
    if (metric.type !== 'gauge') (metric as unknown as { series(): unknown }).series();
    const sample = metric.samples()[0];
    metrics.set(metric.name, { type: metric.type, labels: sample === undefined ? ['?'] : Object.keys(sample.labels) });
  }
  return metrics;
}

test("README's metrics table: every metric the registry declares, no other, each with its type and labels", () => {
  const declared = declaredMetrics();
  const rows = tableRows(README, '| Metric | Type | Labels | Meaning |');
  assert.deepEqual(rows.map((row) => codes(row[0]!)[0]).sort(), [...declared.keys()].sort());
  for (const [name, type, labels] of rows) {
    const metric = declared.get(codes(name!)[0]!)!;
    assert.equal(type, metric.type, `${name}: type`);
    if (metric.labels[0] !== '?') assert.deepEqual(codes(labels!), metric.labels, `${name}: labels`);
  }
});

test("docs/webhooks.md's metrics table: every halserve_webhook_ metric, with its type and labels", () => {
  const declared = [...declaredMetrics()].filter(([name]) => name.startsWith('halserve_webhook_'));
  const rows = tableRows(read('docs/webhooks.md'), '| Metric | Type | Meaning |');
  const shown = new Map(rows.map(([metric, type]) => {
    const [, name, labels] = /^`([a-z_]+)(?:\{([a-z,]*)\})?`$/.exec(metric!)!;
    return [name!, { type: type!, labels: labels === undefined ? [] : labels.split(',') }];
  }));
  assert.deepEqual([...shown.keys()].sort(), declared.map(([name]) => name).sort());
  for (const [name, metric] of declared) assert.deepEqual(shown.get(name), metric, name);
});

/** GitHub's anchor of a heading. */
const slug = (heading: string): string => heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
const withoutCode = (markdown: string): string => markdown.replace(/```[\s\S]*?```/g, '');

test('every relative link of README, docs/ and src/store/README.md leads to a file (and heading) of the repository, none outside it', () => {
  const broken: string[] = [];
  for (const document of DOCUMENTS) {
    for (const [, target] of withoutCode(read(document)).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target!)) continue;
      const [file, anchor] = target!.split('#');
      const resolved = file === '' ? document : path.posix.normalize(path.posix.join(path.posix.dirname(document), file!));
      if (resolved.startsWith('..') || resolved.startsWith('shared/') || !existsSync(path.join(ROOT, resolved))) {
        broken.push(`${document} -> ${target}`);
        continue;
      }
      if (anchor === undefined || !resolved.endsWith('.md')) continue;
      const headings = [...withoutCode(read(resolved)).matchAll(/^#+ (.*)$/gm)].map((m) => slug(m[1]!));
      if (!headings.includes(anchor)) broken.push(`${document} -> ${target} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});

test("the permission tables of README and docs/auth.md: each route of src/http/route-scopes.ts under the rule it has", () => {
  for (const document of ['README.md', 'docs/auth.md']) {
    const rows = tableRows(read(document), '| Route | Needs |');
    for (const [pattern, rule] of ROUTE_SCOPES) {
      if (rule === 'resource') continue;
      const row = rows.find(([route]) => codes(route!).includes(pattern));
      assert.ok(row !== undefined, `${document}: ${pattern} has a row`);
      assert.match(row[1]!, rule === 'listing' ? /a valid token/ : /every resource/, `${document}: ${pattern} needs ${rule}`);
    }
  }
});

test("the schema keywords README and docs/conventions.md list are those compileSchema takes, no more, no fewer", () => {
  // The keywords compileSchema supports, as its refusal of an unknown one lists them.
  const refusal = /\(supported: ([^)]*)\)/.exec((() => {
    try {
      compileSchema({ format: 'email' }, 'x.schema.json');
    } catch (error) {
      return (error as Error).message;
    }
    return '';
  })());
  assert.ok(refusal !== null, 'compileSchema refuses an unknown keyword, listing the supported ones');
  const supported = refusal[1]!.split(', ').sort();
  for (const [file, start] of [['README.md', 'a JSON Schema subset ('], ['docs/conventions.md', 'It is a subset of JSON\n  Schema:']] as const) {
    const text = read(file);
    const at = text.indexOf(start);
    assert.ok(at !== -1, `${file} lists the schema keywords`);
    const end = /Any other\s+keyword/.exec(text.slice(at));
    assert.ok(end !== null, `${file}: the list ends with "Any other keyword"`);
    const list = text.slice(at, at + end.index);
    assert.deepEqual([...new Set(codes(list).filter((code) => !code.includes('.')))].sort(), supported, file);
  }
});
