import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { describe, test } from 'node:test';
import { matches, parseCollectionQuery } from '../../src/conventions/query.js';
import { MAX_FACET_VALUES } from '../../src/store/index/facet-counts.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord, FacetCount, Store } from '../../src/store/store.js';
import { prng } from '../helpers/prng.js';

/*
 * Facets against a naive count written here from the words of docs/queries.md (Facets): random records (a
 * seeded PRNG), random filters and searches, and for each facet field the count of every value
 * over the matching records — an array counting each distinct element once, an absent field not
 * at all, null as a value — by count descending, ties by value, at most 50. Which records match
 * is the reference `matches` of src/conventions/query.ts (the query oracle checks the stores
 * against an independent reading of it); the counting, ordering and cap are checked here alone.
 *
 * Replay a failure with FACETS_ORACLE_SEED=<seed printed in the message>.
 */

const SEED = process.env.FACETS_ORACLE_SEED !== undefined ? Number(process.env.FACETS_ORACLE_SEED) : randomInt(2 ** 31);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Kinds ordered as sorting orders them: null < boolean < number < string < anything else. */
function kind(value: Json): number {
  if (value === null) return 1;
  if (typeof value === 'boolean') return 2;
  if (typeof value === 'number') return 3;
  if (typeof value === 'string') return 4;
  return 5;
}

function valueOrder(a: Json, b: Json): number {
  if (kind(a) !== kind(b)) return kind(a) - kind(b);
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const ta = typeof a === 'string' ? a : JSON.stringify(a);
  const tb = typeof b === 'string' ? b : JSON.stringify(b);
  return ta < tb ? -1 : ta > tb ? 1 : 0;
}

function reach(record: Json, path: readonly string[]): Json | undefined {
  let v: Json | undefined = record;
  for (const segment of path) {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || !Object.prototype.hasOwnProperty.call(v, segment)) return undefined;
    v = v[segment];
  }
  return v;
}

/** The naive facet: every matching record looked at, every value counted. */
function naiveFacet(records: readonly Json[], path: readonly string[]): FacetCount[] {
  const counts = new Map<string, { value: Json; count: number }>();
  const key = (v: Json): string => `${typeof v}:${JSON.stringify(v)}`;
  for (const record of records) {
    const v = reach(record, path);
    if (v === undefined) continue;
    const values = Array.isArray(v) ? v : [v];
    const once = new Map(values.map((e) => [key(e), e]));
    for (const [k, e] of once) {
      const known = counts.get(k);
      if (known) known.count++;
      else counts.set(k, { value: e, count: 1 });
    }
  }
  return [...counts.values()].sort((a, b) => b.count - a.count || valueOrder(a.value, b.value)).slice(0, 50);
}

const STATUSES = ['active', 'paused', 'archived', 'a,b'];
const BRANDS = Array.from({ length: 70 }, (_, i) => `brand-${String(i).padStart(2, '0')}`);
const TAGS = ['x', 'y', 'z', 'usb-c', 'lamp', 3, null];

function randomRecord(r: () => number, i: number): EntityRecord {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(r() * items.length)] as T;
  const fields: Record<string, Json> = {};
  if (r() < 0.9) fields.status = r() < 0.1 ? null : pick(STATUSES);
  // Seventy brands, a few frequent: more than 50 values, and many ties among the rare ones.
  if (r() < 0.95) fields.brand = r() < 0.5 ? pick(BRANDS.slice(0, 5)) : pick(BRANDS);
  if (r() < 0.8) fields.tags = Array.from({ length: Math.floor(r() * 4) }, () => pick(TAGS));
  if (r() < 0.8) fields.dims = r() < 0.1 ? null : { w: r() < 0.2 ? String(Math.floor(r() * 3)) : Math.floor(r() * 5) / 2, ...(r() < 0.5 ? { h: pick([1, 2, true, 'tall']) } : {}) };
  if (r() < 0.7) fields.price = Math.floor(r() * 200);
  // Mixed kinds in one field: 0 and "0", true and "true".
  if (r() < 0.5) fields.mixed = pick([0, '0', true, 'true', null, { a: 1 }, [1, 2], 'z']);
  fields.name = `${pick(['Desk', 'Floor', 'Table'])} ${pick(['lamp', 'shade', 'cable'])} ${i}`;
  return { id: `r${String(i).padStart(5, '0')}`, createdAt: 1_700_000_000 + i, updatedAt: 1_700_000_000 + i, ...fields } as EntityRecord;
}

// `name` has a value per record: more than the order is walked for (the rows are counted instead).
const FACET_FIELDS = ['status', 'brand', 'tags', 'dims.w', 'dims.h', 'price', 'mixed', 'nothing', 'dims', 'name'];
const FILTERS = [
  '',
  'status=active',
  'status=active,paused',
  'status=a%2Cb',
  'status[ne]=archived',
  'price[gte]=50&price[lt]=150',
  'tags=x',
  'tags=x,y&status=paused',
  'dims.w[lte]=1',
  'dims.h[exists]=true',
  'brand=brand-01,brand-02,brand-03&tags[exists]=false',
  'q=lamp',
  'q=desk cable&price[lt]=100',
  'mixed=0',
  'nothing=1',
];

function randomQuery(r: () => number): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(r() * items.length)] as T;
  const fields = new Set<string>();
  const count = 1 + Math.floor(r() * 4);
  while (fields.size < count) fields.add(pick(FACET_FIELDS));
  const filter = pick(FILTERS);
  return [filter, `facets=${[...fields].join(',')}`].filter((p) => p !== '').join('&');
}

async function compare(store: Store, records: readonly EntityRecord[], r: () => number, label: string, queries: number): Promise<void> {
  for (let i = 0; i < queries; i++) {
    const query = randomQuery(r);
    const parsed = parseCollectionQuery(query);
    const matching = records.filter((record) => matches(record, parsed.filters, parsed.search));
    const sliced = r() < 0.5;
    const answer = await store.query({
      filters: parsed.filters,
      sort: parsed.sort,
      search: parsed.search,
      offset: 0,
      limit: 5,
      facets: parsed.facets.map((f) => f.path),
      ...(sliced ? { deadline: performance.now() + 60_000 } : {}),
    });
    const where = `seed ${SEED} (FACETS_ORACLE_SEED=${SEED}), ${label}, query #${i}: ?${query}`;
    assert.equal(answer.total, matching.length, where);
    assert.deepEqual(
      answer.facets,
      parsed.facets.map((f) => naiveFacet(matching as Json[], f.path)),
      where,
    );
  }
}

describe('facets against a naive count', () => {
  test(`random records, random filters, arrays, dotted paths, mixed kinds, ties, the 50-value cap -> the naive counts (seed ${SEED})`, async () => {
    const r = prng(SEED);
    const records = Array.from({ length: 3000 }, (_, i) => randomRecord(r, i));
    const store = createMemoryStore(records);
    await compare(store, records, r, 'as loaded', 60);
    // Writes: the indexes the facets read are kept current.
    const live = new Map(records.map((rec) => [rec.id, rec]));
    for (let i = 0; i < 400; i++) {
      const ids = [...live.keys()];
      const id = ids[Math.floor(r() * ids.length)]!;
      const roll = r();
      if (roll < 0.3) {
        await store.delete(id);
        live.delete(id);
      } else if (roll < 0.7) {
        const next = { ...randomRecord(r, 10_000 + i), id, createdAt: live.get(id)!.createdAt };
        await store.update(id, () => next);
        live.set(id, next);
      } else {
        const created = randomRecord(r, 20_000 + i);
        await store.create(created);
        live.set(created.id, created);
      }
    }
    await compare(store, [...live.values()], r, 'after writes', 60);
  });

  test(`a field of more than 256 values of every kind, no filter (counted by runs of its order) -> the naive counts; kept across pages, counted again after a write (seed ${SEED})`, async () => {
    const r = prng(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(r() * items.length)] as T;
    const value = (): Json => pick<() => Json>([() => Math.floor(r() * 300) / 2, () => `v${Math.floor(r() * 400)}`, () => String(Math.floor(r() * 5)), () => pick([null, true, false, 0, -0]), () => ({ o: Math.floor(r() * 3) })])();
    const records = Array.from({ length: 4000 }, (_, i) => ({ id: `m${i}`, createdAt: 1, updatedAt: 1, ...(r() < 0.9 ? { many: value() } : {}) })) as EntityRecord[];
    const store = createMemoryStore(records);
    const ask = async (offset: number) => (await store.query({ filters: [], sort: [], search: [], offset, limit: 5, facets: [['many']] })).facets;
    assert.deepEqual(await ask(0), [naiveFacet(records as Json[], ['many'])], `seed ${SEED}`);
    assert.deepEqual(await ask(5), [naiveFacet(records as Json[], ['many'])], `seed ${SEED}: the next page`);
    // Writes that make a new most frequent value: a facet kept from before would miss it.
    const after = records.map((record, i) => (i % 13 === 0 ? { ...record, updatedAt: 2, many: 'hot' } : record));
    for (let i = 0; i < after.length; i += 13) await store.update(after[i]!.id, () => after[i]!);
    const facet = await ask(5);
    assert.deepEqual(facet, [naiveFacet(after as Json[], ['many'])], `seed ${SEED}: after writes`);
    assert.deepEqual(facet?.[0]?.[0], { value: 'hot', count: Math.ceil(after.length / 13) });
  });

  test(`a field whose arrays hold strings only, no filter (counted from its element postings), strings and null beside the arrays; writes that bring a number into an array and take it out -> the naive counts (seed ${SEED})`, async () => {
    const r = prng(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(r() * items.length)] as T;
    const words = Array.from({ length: 80 }, (_, i) => `w${i}`);
    const value = (): Json | undefined => {
      const roll = r();
      if (roll < 0.1) return undefined;
      if (roll < 0.15) return null;
      if (roll < 0.25) return pick(['w1', 'w2', 'alone', '3']);
      // Repeats within an array, empty arrays, a few frequent words and many rare ones (ties).
      return Array.from({ length: Math.floor(r() * 5) }, () => (r() < 0.5 ? pick(words.slice(0, 6)) : pick(words)));
    };
    const record = (id: string): EntityRecord => {
      const tags = value();
      return { id, createdAt: 1, updatedAt: 1, ...(tags === undefined ? {} : { tags }) } as EntityRecord;
    };
    const live = new Map<string, EntityRecord>();
    for (let i = 0; i < 3000; i++) live.set(`s${i}`, record(`s${i}`));
    const store = createMemoryStore([...live.values()]);
    const check = async (label: string): Promise<void> => {
      const sliced = r() < 0.5;
      const answer = await store.query({ filters: [], sort: [], search: [], offset: 0, limit: 5, facets: [['tags']], ...(sliced ? { deadline: performance.now() + 60_000 } : {}) });
      assert.deepEqual(answer.facets, [naiveFacet([...live.values()] as Json[], ['tags'])], `seed ${SEED} (FACETS_ORACLE_SEED=${SEED}), ${label}`);
    };
    await check('as loaded');
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 200; i++) {
        const id = `s${Math.floor(r() * 3300)}`;
        const roll = r();
        if (roll < 0.2 && live.has(id)) {
          await store.delete(id);
          live.delete(id);
        } else if (live.has(id)) {
          const next = record(id);
          await store.update(id, () => next);
          live.set(id, next);
        } else {
          const created = record(id);
          await store.create(created);
          live.set(id, created);
        }
      }
      await check(`after writes, round ${round}`);
      // A number beside "3" in one array: the postings key both as "3", so the arrays are counted.
      const mixed = { id: 's0', createdAt: 1, updatedAt: 2, tags: ['3', 3, 'w1'] } as EntityRecord;
      if (live.has('s0')) await store.update('s0', () => mixed);
      else await store.create(mixed);
      live.set('s0', mixed);
      await check(`an array holding a number, round ${round}`);
      const plain = { id: 's0', createdAt: 1, updatedAt: 3, tags: ['3', 'w1'] } as EntityRecord;
      await store.update('s0', () => plain);
      live.set('s0', plain);
      await check(`the number gone again, round ${round}`);
    }
  });

  test('a field with 70 values -> 50 listed, the ties among the rarest by value', async () => {
    const records = BRANDS.map((brand, i) => ({ id: `b${i}`, createdAt: 1, updatedAt: 1, brand })) as EntityRecord[];
    records.push({ id: 'extra', createdAt: 2, updatedAt: 2, brand: 'brand-69' });
    const store = createMemoryStore(records);
    const answer = await store.query({ filters: [], sort: [], search: [], offset: 0, limit: 0, facets: [['brand']] });
    const facet = answer.facets?.[0] ?? [];
    assert.equal(facet.length, MAX_FACET_VALUES);
    assert.deepEqual(facet[0], { value: 'brand-69', count: 2 });
    assert.deepEqual(facet.slice(1).map((f) => f.value), BRANDS.slice(0, 49));
  });
});
