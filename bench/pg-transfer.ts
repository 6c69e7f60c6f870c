/**
 * `halserve import` and `halserve export` at scale (issue 9's target: import of 1M entities ≤ 60 s).
 *
 *   node --import tsx bench/pg-transfer.ts [entities=1000000] [runs=3] [links]
 *
 * Generates the `queries` workload's products (bench/products.ts, ~258 bytes a line), starts a
 * throwaway PostgreSQL 15 with the bench's settings (bench/pg.ts) on TCP, then per run: `halserve
 * import` into an empty database, `halserve export` into an empty directory, and a byte-for-byte
 * comparison of the exported file with the generated one. Beside it, as PostgreSQL's own floor:
 * psql's COPY FROM STDIN of the same rows (text format) into the same table layout.
 * Each command is timed from spawn to exit, as a user would time it (start-up of node included).
 * With `links`, the directory also holds the 20 categories and a products schema declaring
 * `category` a link to them (`x-link`), so that the import checks every product's link.
 */
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { LAYOUT_DDL } from '../src/store/pg/layout.js';
import { PG_SETTINGS } from './pg.js';
import { CATEGORIES, generateProducts, PRODUCTS } from './products.js';
import { median } from './stats.js';
import { PG_BIN, startCluster } from '../test/helpers/pg-cluster.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const size = Number(process.argv[2] ?? 1_000_000);
const runs = Number(process.argv[3] ?? 3);
const links = process.argv[4] === 'links';
const log = (message: string): void => void process.stderr.write(`[pg-transfer] ${message}\n`);

/** Runs the CLI; resolves with seconds from spawn to exit, rejects on a non-zero exit. */
function halserve(args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'src/cli.ts'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
    child.on('error', reject);
    child.on('exit', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (code !== 0) reject(new Error(`halserve ${args[0]} exited ${code}: ${output}`));
      else {
        log(output.trim());
        resolve(seconds);
      }
    });
  });
}

/** The rows psql's COPY takes: (resource, id, pos, rev, body) in COPY text format. */
async function writeCopyFile(jsonl: string, out: string): Promise<void> {
  const escape = (text: string): string => text.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
  const stream = createWriteStream(out);
  let pos = 0;
  let chunk = '';
  for await (const line of createInterface({ input: createReadStream(jsonl), crlfDelay: Infinity })) {
    const id = (JSON.parse(line) as { id: string }).id;
    chunk += `${PRODUCTS}\t${escape(id)}\t${++pos}\t1\t${escape(line)}\n`;
    if (chunk.length > 1 << 20) {
      if (!stream.write(chunk)) await once(stream, 'drain');
      chunk = '';
    }
  }
  stream.end(chunk);
  await once(stream, 'finish');
}

const work = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-pg-transfer-'));
const cluster = await startCluster(PG_BIN, { settings: { ...PG_SETTINGS, listen_addresses: '127.0.0.1' } });
process.on('SIGINT', () => {
  cluster.stopSync();
  process.exit(130);
});
try {
  const source = path.join(work, 'source');
  log(`generating ${size.toLocaleString('en-US')} products`);
  const products = await generateProducts(source, size);
  await fs.rm(products.tsv);
  if (links) {
    const categories = CATEGORIES.map((id) => JSON.stringify({ id, createdAt: 1_700_000_000, updatedAt: 1_700_000_000, name: id }));
    await fs.writeFile(path.join(source, 'categories.jsonl'), categories.join('\n') + '\n');
    await fs.writeFile(path.join(source, `${PRODUCTS}.schema.json`), JSON.stringify({ type: 'object', properties: { category: { type: 'string', 'x-link': 'categories' } } }));
  }
  const copyFile = path.join(work, 'copy.tsv');
  await writeCopyFile(products.jsonl, copyFile);
  const imports: number[] = [];
  const exports: number[] = [];
  const copies: number[] = [];
  for (let run = 1; run <= runs; run++) {
    const db = await cluster.createDatabase(`transfer_${run}`);
    const url = cluster.url(db);
    imports.push(await halserve(['import', '--from', source, '--to', url]));
    const out = path.join(work, `export-${run}`);
    exports.push(await halserve(['export', '--from', url, '--to', out]));
    const [a, b] = await Promise.all([fs.readFile(products.jsonl), fs.readFile(path.join(out, `${PRODUCTS}.jsonl`))]);
    if (!a.equals(b)) throw new Error(`run ${run}: the exported file differs from the imported one`);
    await fs.rm(out, { recursive: true });
    const floor = await cluster.createDatabase(`copy_${run}`);
    await cluster.psql(LAYOUT_DDL, undefined, floor);
    const started = performance.now();
    await cluster.psql([`COPY halserve.entities (resource, id, pos, rev, body) FROM STDIN`], copyFile, floor);
    copies.push((performance.now() - started) / 1000);
    log(`run ${run}: import ${imports.at(-1)!.toFixed(1)} s, export ${exports.at(-1)!.toFixed(1)} s, psql COPY ${copies.at(-1)!.toFixed(1)} s`);
  }
  const s = (values: number[]): string => `${median(values).toFixed(1)} s (${values.map((v) => v.toFixed(1)).join(', ')})`;
  console.log(`PostgreSQL ${cluster.version}, ${size.toLocaleString('en-US')} entities, ${(products.fileBytes / 1e6).toFixed(0)} MB, ${runs} runs, median (each run):`);
  console.log(`| measure | time |`);
  console.log(`|---|---|`);
  console.log(`| halserve import (spawn to exit, one transaction) | ${s(imports)} |`);
  console.log(`| halserve export (spawn to exit, files synced) | ${s(exports)} |`);
  console.log(`| psql COPY FROM STDIN of the same rows (PostgreSQL's floor) | ${s(copies)} |`);
  console.log(`exported files byte-identical to the imported ones: yes (${runs} of ${runs})`);
} finally {
  await cluster.stop();
  await fs.rm(work, { recursive: true, force: true });
}
