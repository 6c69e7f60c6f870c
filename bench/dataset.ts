/**
 * Synthetic data sets: the same entities for every server, in halserve's store format
 * (`<dir>/<name>.jsonl`, one full record per line) and as json-server's `db.json`.
 */
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { prng } from '../test/helpers/prng.js';

export { prng };

/** The resource every workload uses. */
export const RESOURCE = 'items';

/**
 * The linked resources of the embed workloads (issue 11): `products` whose `category` links to one
 * of 20 `categories` (`"x-link"` in `products.schema.json`).
 */
export const LINKED = { source: 'products', field: 'category', target: 'categories', targets: 20 } as const;

/** What a generated data set holds. */
export interface Dataset {
  readonly dir: string;
  readonly size: number;
  /** Ids spread evenly over the creation order, for GET/PATCH workloads. */
  readonly sampleIds: readonly string[];
  /** Average bytes of one line in the `.jsonl` file (the issue asks for ~250). */
  readonly bytesPerEntity: number;
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** A 16-character id like the server's, from the data set's seeded generator. */
export function seededId(random: () => number): string {
  let id = '';
  for (let i = 0; i < 16; i++) id += ID_ALPHABET[Math.floor(random() * 64)];
  return id;
}
const STATUSES = ['active', 'paused', 'archived'] as const;
const WORDS = ['red', 'blue', 'green', 'small', 'large', 'steel', 'oak', 'linen', 'glass', 'wool', 'round', 'flat'];

/** The client fields of a new entity as the write workloads send them (about 200 bytes of JSON). */
export function clientFields(random: () => number, n: number): Record<string, unknown> {
  const word = (): string => WORDS[Math.floor(random() * WORDS.length)] ?? 'plain';
  return {
    sku: `SKU-${String(n).padStart(8, '0')}`,
    name: `${word()} ${word()} ${word()}`,
    price: Math.round(random() * 100_000) / 100,
    stock: Math.floor(random() * 500),
    status: STATUSES[n % STATUSES.length],
    tags: [word(), word()],
    description: `A ${word()} and ${word()} thing of ${word()} with a ${word()} finish.`,
  };
}

/** The body every POST of the write workloads sends. */
export function postBody(): string {
  return JSON.stringify(clientFields(prng(7), 0));
}

/**
 * Writes `size` entities to `<dir>/items.jsonl` and, when `withDbJson`, the same records to
 * `<dir>/db.json` for json-server.
 */
export async function generateDataset(dir: string, size: number, withDbJson: boolean, linked = false): Promise<Dataset> {
  if (linked) await generateLinked(dir, size);
  await fs.mkdir(dir, { recursive: true });
  const random = prng(42);
  const jsonl = createWriteStream(path.join(dir, `${RESOURCE}.jsonl`));
  const db = withDbJson ? createWriteStream(path.join(dir, 'db.json')) : undefined;
  db?.write(`{"${RESOURCE}":[\n`);
  const sampleEvery = Math.max(1, Math.floor(size / 100));
  const sampleIds: string[] = [];
  const start = 1_700_000_000;
  let bytes = 0;
  let chunk = '';
  let dbChunk = '';
  for (let n = 0; n < size; n++) {
    const id = seededId(random);
    if (n % sampleEvery === Math.floor(sampleEvery / 2)) sampleIds.push(id);
    const createdAt = start + Math.floor(n / 10);
    const line = JSON.stringify({ id, createdAt, updatedAt: createdAt, ...clientFields(random, n) });
    bytes += line.length + 1;
    chunk += line + '\n';
    if (db) dbChunk += (n === 0 ? '' : ',\n') + line;
    // Write in ~1 MB slices, honouring back-pressure, so 1,000,000 entities stay cheap in memory.
    if (chunk.length > 1 << 20) {
      if (!jsonl.write(chunk)) await once(jsonl, 'drain');
      chunk = '';
      if (db && !db.write(dbChunk)) await once(db, 'drain');
      dbChunk = '';
    }
  }
  jsonl.end(chunk);
  db?.end(`${dbChunk}\n]}\n`);
  await Promise.all([once(jsonl, 'finish'), db ? once(db, 'finish') : undefined]);
  return { dir, size, sampleIds, bytesPerEntity: size === 0 ? 0 : Math.round(bytes / size) };
}

/** `size` products, each linking to one of the categories, and the categories (halserve only). */
async function generateLinked(dir: string, size: number): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  const random = prng(11);
  const { source, field, target, targets } = LINKED;
  const start = 1_700_000_000;
  const ids = Array.from({ length: targets }, (_, i) => `cat-${String(i).padStart(2, '0')}`);
  const categories = ids.map((id, i) => JSON.stringify({ id, createdAt: start, updatedAt: start, name: `Category ${i}`, description: `Everything of kind ${i}, from the ${WORDS[i % WORDS.length]} range to the ${WORDS[(i + 5) % WORDS.length]} one.` }));
  await fs.writeFile(path.join(dir, `${target}.jsonl`), `${categories.join('\n')}\n`);
  const schema = { type: 'object', properties: { [field]: { type: 'string', 'x-link': target } } };
  await fs.writeFile(path.join(dir, `${source}.schema.json`), JSON.stringify(schema));
  const out = createWriteStream(path.join(dir, `${source}.jsonl`));
  let chunk = '';
  for (let n = 0; n < size; n++) {
    const createdAt = start + 1 + Math.floor(n / 10);
    chunk += `${JSON.stringify({ id: seededId(random), createdAt, updatedAt: createdAt, ...clientFields(random, n), [field]: ids[Math.floor(random() * targets)] })}\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
}

/**
 * A fresh copy of a data set, so that writes of one workload never reach the next. A running
 * server's Unix socket (`_backup.sock`, for `halserve backup`) is not data and cannot be copied,
 * and a compaction's temporary file (`<file>.tmp`) comes and goes while the copy is made (a
 * server's first start on unstamped lines compacts in the background): both skipped.
 */
export async function copyDataset(data: Dataset, dir: string): Promise<Dataset> {
  await fs.cp(data.dir, dir, { recursive: true, filter: async (source) => !source.endsWith('.tmp') && !(await fs.lstat(source)).isSocket() });
  return { ...data, dir };
}
