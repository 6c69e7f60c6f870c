import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { compileSchema } from '../../src/conventions/schema.js';

// Guards the committed demo data that `npm start` serves: read-only here, never written.
const DATA = fileURLToPath(new URL('../../data/', import.meta.url));
const SCRIPT = fileURLToPath(new URL('../../scripts/make-demo-data.mjs', import.meta.url));
const FILES = ['products.jsonl', 'products.schema.json', 'categories.jsonl'] as const;

/** The store's id shape (docs/conventions.md §2): 16 URL-safe characters. */
const ID = /^[A-Za-z0-9_-]{16}$/;
/** Categories are keyed by their slug, so that links to them read as words (docs/relations.md). */
const SLUG_ID = /^[a-z][a-z0-9-]*$/;
/** The server's fields, and the line's change stamp (docs/changes.md §5). */
const SERVER_FIELDS = new Set(['id', 'createdAt', 'updatedAt', '_change']);
/** Plausible demo timestamps: 2025-01-01 to 2026-12-31 (Unix seconds). */
const FROM = Date.UTC(2025, 0, 1) / 1000;
const TO = Date.UTC(2026, 11, 31) / 1000;

type Row = Record<string, unknown>;

const read = (file: string): Promise<string> => readFile(join(DATA, file), 'utf8');

async function readEntities(file: string): Promise<{ text: string; rows: Row[] }> {
  const text = await read(file);
  const rows = text.split('\n').slice(0, -1).map((line) => JSON.parse(line) as Row);
  return { text, rows };
}

/** The client's fields of an entity, as a request body would carry them. */
function clientFields(row: Row): Row {
  return Object.fromEntries(Object.entries(row).filter(([key]) => !SERVER_FIELDS.has(key)));
}

/** Every check of docs/conventions.md §2/§8 a stored line must pass; returns the problems found, by line. */
function storeProblems(text: string, rows: readonly Row[], id = ID): string[] {
  const problems: string[] = [];
  if (!text.endsWith('\n')) problems.push('file does not end with a newline');
  const ids = new Set<unknown>();
  let previous = -Infinity;
  rows.forEach((row, i) => {
    const at = `line ${i + 1}`;
    if (typeof row['id'] !== 'string' || !id.test(row['id'])) problems.push(`${at}: bad id ${String(row['id'])}`);
    if (ids.has(row['id'])) problems.push(`${at}: duplicate id ${String(row['id'])}`);
    ids.add(row['id']);
    const { createdAt, updatedAt } = row;
    if (!Number.isSafeInteger(createdAt) || (createdAt as number) < FROM || (createdAt as number) > TO) problems.push(`${at}: createdAt ${String(createdAt)}`);
    if (!Number.isSafeInteger(updatedAt) || (updatedAt as number) < (createdAt as number) || (updatedAt as number) > TO) problems.push(`${at}: updatedAt ${String(updatedAt)}`);
    if ((createdAt as number) < previous) problems.push(`${at}: not in creation order`);
    previous = createdAt as number;
    for (const key of ['_deleted', '_links', '_embedded']) if (key in row) problems.push(`${at}: has ${key}`);
    if (JSON.stringify(row) + '\n' !== text.split('\n')[i] + '\n') problems.push(`${at}: not in the store's compact form`);
  });
  return problems;
}

describe('demo data', () => {
  test('products.jsonl -> 300 well-formed entities in creation order', async () => {
    const { text, rows } = await readEntities('products.jsonl');
    assert.equal(rows.length, 300);
    assert.deepEqual(storeProblems(text, rows), []);
  });

  test('products.jsonl -> about 250-350 bytes an entity (a line without its change stamp)', async () => {
    const { rows } = await readEntities('products.jsonl');
    const bytes = rows.reduce((sum, { _change, ...entity }) => sum + Buffer.byteLength(JSON.stringify(entity)) + 1, 0);
    const average = bytes / rows.length;
    assert.ok(average >= 250 && average <= 350, `average ${average} bytes`);
  });

  test('every product -> satisfies products.schema.json', async () => {
    const validate = compileSchema(JSON.parse(await read('products.schema.json')), 'data/products.schema.json');
    const { rows } = await readEntities('products.jsonl');
    const failures = rows.flatMap((row) => {
      const messages = validate(clientFields(row));
      return messages === undefined ? [] : [`${String(row['id'])}: ${JSON.stringify(messages)}`];
    });
    assert.deepEqual(failures, []);
  });

  test('the product schema -> refuses a product that breaks it', async () => {
    const validate = compileSchema(JSON.parse(await read('products.schema.json')), 'data/products.schema.json');
    const { rows } = await readEntities('products.jsonl');
    const first = rows[0];
    assert.ok(first !== undefined);
    const broken = { ...clientFields(first), price: -1, status: 'sold', dimensions: { width: 1 }, sku: undefined, colour: 'red' };
    assert.deepEqual(validate(broken), {
      sku: { required: 'is required' },
      price: { minimum: 'must be >= 0' },
      status: { enum: 'must be one of: active, paused, archived' },
      'dimensions.height': { required: 'is required' },
      'dimensions.depth': { required: 'is required' },
      colour: { additionalProperties: 'is not allowed' },
    });
  });

  test('products -> unique skus, every category the id of a category (its link resolves), a mix of statuses and currencies', async () => {
    const { rows: products } = await readEntities('products.jsonl');
    const { rows: categories } = await readEntities('categories.jsonl');
    const ids = new Set(categories.map((c) => c['id']));
    assert.equal(new Set(products.map((p) => p['sku'])).size, products.length);
    assert.deepEqual(products.filter((p) => !ids.has(p['category'])).map((p) => p['id']), []);
    assert.equal(new Set(products.map((p) => p['category'])).size, categories.length, 'every category has products');
    assert.deepEqual(new Set(products.map((p) => p['status'])), new Set(['active', 'paused', 'archived']));
    assert.deepEqual(new Set(products.map((p) => p['currency'])), new Set(['EUR', 'GBP', 'USD']));
    assert.ok(products.some((p) => p['stock'] === 0), 'some products are out of stock');
  });

  test('categories.jsonl -> 10-15 well-formed entities, each with its slug as id, and known parents', async () => {
    const { text, rows } = await readEntities('categories.jsonl');
    assert.ok(rows.length >= 10 && rows.length <= 15, `${rows.length} categories`);
    assert.deepEqual(storeProblems(text, rows, SLUG_ID), []);
    assert.deepEqual(rows.filter((row) => row['id'] !== row['slug']).map((row) => row['id']), []);
    const slugs = rows.map((row) => row['slug']);
    assert.equal(new Set(slugs).size, rows.length);
    assert.deepEqual(rows.filter((row) => row['parent'] !== null && !slugs.includes(row['parent'])).map((row) => row['slug']), []);
  });

  test('ids -> unique across both resources', async () => {
    const { rows: products } = await readEntities('products.jsonl');
    const { rows: categories } = await readEntities('categories.jsonl');
    const ids = [...products, ...categories].map((row) => row['id']);
    assert.equal(new Set(ids).size, ids.length);
  });

  test('make-demo-data.mjs run again -> the committed files, byte for byte', async () => {
    const out = await mkdtemp(join(tmpdir(), 'halserve-demo-data-'));
    try {
      await promisify(execFile)(process.execPath, [SCRIPT, out]);
      for (const file of FILES) {
        // Compared line by line so a failure names the first line that differs, not the whole file.
        const fresh = (await readFile(join(out, file), 'utf8')).split('\n');
        const committed = (await read(file)).split('\n');
        const i = fresh.findIndex((line, n) => line !== committed[n]);
        assert.equal(committed[i], fresh[i], `${file}:${i + 1} differs from a fresh run`);
        assert.equal(committed.length, fresh.length, `${file}: line count differs from a fresh run`);
      }
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});
