/**
 * The `queries` workload's data: N seeded product entities (~250 bytes of JSON each) written twice,
 * as halserve's JSON-lines file (`<dir>/products.jsonl`) and as the same records in PostgreSQL's
 * COPY text format (`<dir>/products.tsv`), so that both servers answer over identical data.
 *
 * Four filterable fields (`status` 3 values, `category` 20, `price` a number with cents, `stock` an
 * integer), `name` and `description` text for `q`, a nested `dimensions.weight` and a `tags` array.
 * `description` is absent from one entity in ten (for `[exists]`). `brand` (40 values, skewed) is
 * drawn from a stream of its own, for facets; PostgreSQL holds it in `extra`.
 *
 * The vocabulary is chosen so that no word occurs inside another (checked below): `q=<noun>` then
 * matches exactly the entities whose name (or description) holds that noun, about 1% of them, and
 * PostgreSQL's `name ILIKE '%noun%' OR description ILIKE '%noun%'` selects the same rows.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import { prng, seededId } from './dataset.js';

export const PRODUCTS = 'products';

export const STATUSES = ['active', 'paused', 'archived'] as const;
export const CATEGORIES = [
  'lighting', 'kitchen', 'garden', 'office', 'bathroom', 'bedroom', 'audio', 'video', 'gaming', 'camping',
  'cycling', 'fitness', 'toys', 'pets', 'baby', 'beauty', 'tools', 'storage', 'textiles', 'decor',
] as const;
const FINISHES = ['brushed', 'polished', 'matte', 'glossy', 'rustic', 'vintage', 'modern', 'classic', 'compact', 'deluxe', 'slim', 'heavy'];
const MATERIALS = ['oak', 'walnut', 'steel', 'brass', 'copper', 'glass', 'linen', 'cotton', 'wool', 'bamboo', 'marble', 'ceramic'];
/** 100 nouns: each names about 1% of the products. */
export const NOUNS = [
  'lantern', 'kettle', 'blender', 'toaster', 'pillow', 'blanket', 'curtain', 'mirror', 'cabinet', 'drawer',
  'saucepan', 'skillet', 'teapot', 'colander', 'whisk', 'ladle', 'spatula', 'grater', 'peeler', 'trivet',
  'headphone', 'speaker', 'turntable', 'amplifier', 'webcam', 'monitor', 'keyboard', 'joystick', 'router', 'charger',
  'tent', 'hammock', 'compass', 'canteen', 'backpack', 'sleeping', 'hatchet', 'flashlight', 'stove', 'cooler',
  'helmet', 'saddle', 'pedal', 'pump', 'dumbbell', 'barbell', 'treadmill', 'yogamat', 'jumprope', 'stopwatch',
  'puzzle', 'marionette', 'kite', 'yoyo', 'robot', 'leash', 'collar', 'aquarium', 'birdcage', 'scratcher',
  'stroller', 'crib', 'rattle', 'pacifier', 'bib', 'hairdryer', 'razor', 'perfume', 'lipstick', 'sponge',
  'hammer', 'wrench', 'screwdriver', 'pliers', 'chisel', 'crate', 'basket', 'shelf', 'hamper', 'locker',
  'rug', 'quilt', 'towel', 'apron', 'napkin', 'vase', 'candle', 'clock', 'frame', 'sculpture',
  'easel', 'notebook', 'stapler', 'inkwell', 'typewriter', 'globe', 'lectern', 'footstool', 'ottoman', 'armchair',
];
/** Brands for facets: 40, a few frequent (the i-th about 1/(i+1) as often as the first), as catalogues have. */
export const BRANDS = Array.from({ length: 40 }, (_, i) => `brand-${String(i + 1).padStart(2, '0')}`);
const BRAND_WEIGHTS = BRANDS.map((_, i) => 1 / (i + 1));
const BRAND_TOTAL = BRAND_WEIGHTS.reduce((a, b) => a + b, 0);

/** A brand drawn from its own stream, so that every other field is what it was before brands came. */
function brandOf(random: () => number): string {
  let x = random() * BRAND_TOTAL;
  for (let i = 0; i < BRANDS.length; i++) {
    x -= BRAND_WEIGHTS[i]!;
    if (x < 0) return BRANDS[i]!;
  }
  return BRANDS[BRANDS.length - 1]!;
}

const TAGS = ['usb-c', 'wireless', 'eco', 'handmade', 'bestseller', 'refurbished', 'waterproof', 'giftable', 'limited', 'imported'];

/** Every word of the vocabulary, whole: no one of them may occur inside another (so `q` stays exact). */
function checkVocabulary(): void {
  const words = [...STATUSES, ...CATEGORIES, ...FINISHES, ...MATERIALS, ...NOUNS, ...TAGS, 'in', 'a'];
  for (const noun of NOUNS) {
    for (const word of words) {
      if (word !== noun && word.includes(noun)) throw new Error(`bench vocabulary: "${noun}" occurs inside "${word}"`);
    }
    if (NOUNS.indexOf(noun) !== NOUNS.lastIndexOf(noun)) throw new Error(`bench vocabulary: "${noun}" twice`);
  }
}
checkVocabulary();

export { prng } from './dataset.js';


/** The client fields of one product (also the body of the POST workload). */
export function productFields(random: () => number): Record<string, unknown> {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const finish = pick(FINISHES);
  const material = pick(MATERIALS);
  const noun = pick(NOUNS);
  const tags: string[] = [];
  for (const tag of TAGS) if (random() < 0.12) tags.push(tag);
  const fields: Record<string, unknown> = {
    name: `${finish} ${material} ${noun}`,
    status: pick(STATUSES),
    category: pick(CATEGORIES),
    price: Math.round(random() * 100_000) / 100,
    stock: Math.floor(random() * 1000),
    tags,
    dimensions: { weight: Math.round(1 + random() * 1999) / 100 },
  };
  if (random() >= 0.1) fields['description'] = `A ${finish} ${noun} in ${material}.`;
  return fields;
}

/** What a generated product set holds. */
export interface Products {
  readonly dir: string;
  readonly size: number;
  readonly jsonl: string;
  readonly tsv: string;
  readonly fileBytes: number;
  readonly bytesPerEntity: number;
  /** Ids spread over the creation order (GET workloads). */
  readonly sampleIds: readonly string[];
}

/** COPY text format: backslash, tab, newline and carriage return escaped; `\N` is NULL. */
function copyText(value: unknown): string {
  if (value === undefined || value === null) return '\\N';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

/** The PostgreSQL table the TSV fills; `seq` is the creation order (the line number). */
export const PG_COLUMNS = 'seq, id, created_at, updated_at, status, category, price, stock, name, description, extra';
export const PG_TABLE = `CREATE TABLE ${PRODUCTS} (
  seq bigint NOT NULL,
  id text PRIMARY KEY,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  status text,
  category text,
  price double precision,
  stock integer,
  name text,
  description text,
  extra jsonb NOT NULL
)`;

async function write(stream: WriteStream, chunk: string): Promise<void> {
  if (!stream.write(chunk)) await once(stream, 'drain');
}

/** Writes `size` products (seeded: every run, every server, the same records). */
export async function generateProducts(dir: string, size: number): Promise<Products> {
  await fs.mkdir(dir, { recursive: true });
  const random = prng(20261122);
  const brands = prng(20261126);
  const jsonlPath = path.join(dir, `${PRODUCTS}.jsonl`);
  const tsvPath = path.join(dir, `${PRODUCTS}.tsv`);
  const jsonl = createWriteStream(jsonlPath);
  const tsv = createWriteStream(tsvPath);
  const sampleEvery = Math.max(1, Math.floor(size / 1000));
  const sampleIds: string[] = [];
  const start = 1_700_000_000;
  let bytes = 0;
  let chunk = '';
  let tsvChunk = '';
  for (let n = 0; n < size; n++) {
    const id = seededId(random);
    if (n % sampleEvery === Math.floor(sampleEvery / 2)) sampleIds.push(id);
    const createdAt = start + Math.floor(n / 10);
    const fields: Record<string, unknown> = { ...productFields(random), brand: brandOf(brands) };
    const line = JSON.stringify({ id, createdAt, updatedAt: createdAt, ...fields });
    bytes += Buffer.byteLength(line) + 1;
    chunk += line + '\n';
    const { status, category, price, stock, name, description, ...extra } = fields;
    tsvChunk += [n, id, createdAt, createdAt, status, category, price, stock, name, description, extra].map(copyText).join('\t') + '\n';
    if (chunk.length > 1 << 20) {
      await write(jsonl, chunk);
      await write(tsv, tsvChunk);
      chunk = '';
      tsvChunk = '';
    }
  }
  jsonl.end(chunk);
  tsv.end(tsvChunk);
  await Promise.all([once(jsonl, 'finish'), once(tsv, 'finish')]);
  return { dir, size, jsonl: jsonlPath, tsv: tsvPath, fileBytes: bytes, bytesPerEntity: size === 0 ? 0 : Math.round(bytes / size), sampleIds };
}
