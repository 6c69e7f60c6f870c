import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * What `npm install halserve` gives an embedder (README, "Embedding"): the files `npm pack` puts in
 * the package (`files` of package.json, read by npm itself), checked against what the shipped
 * README and docs send a reader to, and against `exports`.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Manifest {
  readonly dependencies?: Record<string, string>;
  readonly files: readonly string[];
  readonly exports: Record<string, string | Record<string, string>>;
}

/** The paths `npm pack` would put in the package (without building: `prepare` is not run). */
async function packed(): Promise<Set<string>> {
  const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT });
  const [report] = JSON.parse(stdout) as [{ files: { path: string }[] }];
  return new Set(report.files.map((file) => file.path));
}

/** The relative targets of a Markdown text's links and images, resolved from `from`, anchors dropped. */
function linkTargets(markdown: string, from: string): string[] {
  return [...markdown.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z]+:/i.test(target))
    .map((target) => path.posix.normalize(path.posix.join(path.posix.dirname(from), target)));
}

test("the package ships the documents its README and docs link to for how the server behaves (docs/, src/store/README.md)", async () => {
  const files = await packed();
  const documents = ['README.md', ...[...files].filter((file) => file.startsWith('docs/') && file.endsWith('.md'))];
  const missing: string[] = [];
  for (const document of documents) {
    const text = await readFile(path.join(ROOT, document), 'utf8');
    for (const target of linkTargets(text, document)) {
      // Benchmarks and source files are the repository's; the behaviour an embedder relies on is documented here.
      if (!target.startsWith('docs/') && target !== 'src/store/README.md') continue;
      if (!files.has(target)) missing.push(`${document} -> ${target}`);
    }
  }
  assert.deepEqual(missing, []);
  assert.ok(files.has('docs/conventions.md'), 'docs/ ships');
});

test("package.json: no dependencies (the PostgreSQL driver an optional peer), and every export's file under files", async () => {
  const manifest = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;
  assert.deepEqual(manifest.dependencies ?? {}, {});
  const targets = Object.values(manifest.exports).flatMap((target) => (typeof target === 'string' ? [target] : Object.values(target)));
  for (const target of targets) {
    const file = path.posix.normalize(target);
    assert.ok(file === 'package.json' || manifest.files.some((entry) => file === entry || file.startsWith(`${entry}/`)), `${target} is shipped`);
  }
});
