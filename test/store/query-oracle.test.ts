import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { parseCollectionQuery } from '../../src/conventions/query.js';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import type { EntityRecord, Store, StoredEntity } from '../../src/store/store.js';
import postgres from 'postgres';
import { tempDir } from './helpers.js';
import { LIVENESS_MS } from '../helpers/process.js';
import { freshDatabase, openStores, pgMissing } from '../pg/helpers.js';
import { manualClock } from './stamps.js';

/*
 * The oracle test (issue 8): random data, thousands of random query strings, and the store's
 * `query()` compared with a naive scan written here from the words of docs/queries.md alone — it
 * deliberately imports nothing of src/conventions/query.ts but the parser whose output the store
 * takes. Then random creates, patches, deletes (and for the JSON-lines store a compaction and a
 * reopen) and the same comparison again.
 *
 * Replay a failure with QUERY_ORACLE_SEED=<seed printed in the message> (each test on its own too:
 * --test-name-pattern).
 */

const SEED = process.env.QUERY_ORACLE_SEED !== undefined ? Number(process.env.QUERY_ORACLE_SEED) : randomInt(2 ** 31);
/** Scales the number of queries (QUERY_ORACLE_SCALE=10 for a long soak). */
const SCALE = Number(process.env.QUERY_ORACLE_SCALE ?? 1);

// ---- a seeded PRNG (mulberry32) ----

class Random {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j] as T, items[i] as T];
    }
    return items;
  }
}

// ---- the oracle: docs/queries.md read independently ----

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Rec = { [key: string]: Json };

const isObject = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A dotted path reaches into nested objects: each segment an own member of an object, else nothing. */
function reach(record: Rec, segments: readonly string[]): Json | undefined {
  let v: Json | undefined = record;
  for (const s of segments) {
    if (!isObject(v) || !Object.prototype.hasOwnProperty.call(v, s)) return undefined;
    v = v[s];
  }
  return v;
}

/** "values compare by their JSON text, so stock=0 matches the number 0": a string is its own text. */
const jsonText = (v: Json): string => (typeof v === 'string' ? v : JSON.stringify(v));

/**
 * Unicode default (full) case folding, for the characters this test's data holds: toLowerCase
 * plus the full foldings that differ from lower case (ß → ss, final sigma → σ, long s, micro
 * sign, ligatures). Dotless ı has no folding: it stays ı.
 */
const FOLDS: Record<string, string> = { ß: 'ss', ς: 'σ', ſ: 's', µ: 'μ', ﬁ: 'fi', ﬂ: 'fl', ﬀ: 'ff', ϐ: 'β', ϑ: 'θ' };
function caseFold(text: string): string {
  let out = '';
  for (const ch of text.toLowerCase()) out += FOLDS[ch] ?? ch;
  return out;
}

const JSON_NUMBER_TEXT = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
/** A range bound: a JSON number, a JSON string in quotes, or any other text as a string. */
function bound(text: string): number | string {
  if (JSON_NUMBER_TEXT.test(text)) return Number(text);
  if (text.startsWith('"')) return JSON.parse(text) as string;
  return text;
}

type Op = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'exists';
interface OracleFilter {
  segments: string[];
  op: Op;
  values: string[];
}
interface OracleQuery {
  filters: OracleFilter[];
  sort: { segments: string[]; descending: boolean }[];
  words: string[];
}

/** The parameters as a query string: each value encoded, but its commas sent literally, as separators of alternatives. */
function queryText(params: readonly (readonly [string, string])[]): string {
  const encode = (text: string): string => encodeURIComponent(text).replaceAll('%2C', ',');
  return params.map(([name, value]) => `${encode(name)}=${encode(value)}`).join('&');
}

/** Reads the parameter list as docs/queries.md describes it (the store gets the same list through the parser). */
function oracleQuery(params: readonly (readonly [string, string])[]): OracleQuery {
  const groups = new Map<string, OracleFilter>();
  let sort: OracleQuery['sort'] = [];
  let words: string[] = [];
  for (const [name, value] of params) {
    if (name === 'sort') {
      sort = value.split(',').map((key) => ({ segments: key.replace(/^-/, '').split('.'), descending: key.startsWith('-') }));
      continue;
    }
    if (name === 'q') {
      words = value.split(/\s+/).filter((w) => w !== '').map(caseFold);
      continue;
    }
    const m = /^([^[]*)(?:\[([a-z]+)\])?$/.exec(name);
    assert.ok(m, `the generator made a bad parameter ${name}`);
    const field = m[1] as string;
    const op = (m[2] ?? 'eq') as Op;
    const key = `${field} ${op}`;
    const group = groups.get(key) ?? { segments: field.split('.'), op, values: [] };
    groups.set(key, group);
    // Commas separate alternatives of eq and ne; repeating the parameter adds alternatives.
    group.values.push(...(op === 'eq' || op === 'ne' ? value.split(',') : [value]));
  }
  return { filters: [...groups.values()], sort, words };
}

function holds(record: Rec, f: OracleFilter): boolean {
  const v = reach(record, f.segments);
  if (f.op === 'exists') return (v !== undefined) === (f.values[0] === 'true');
  if (v === undefined) return false;
  // "for an array field: some element equals the value (every operator applies per element)"
  const elements: Json[] = Array.isArray(v) ? v : [v];
  switch (f.op) {
    case 'eq':
      return elements.some((e) => f.values.includes(jsonText(e)));
    case 'ne':
      return elements.some((e) => !f.values.includes(jsonText(e)));
    default: {
      const b = bound(f.values[0] as string);
      return elements.some((e) => {
        if (typeof e !== typeof b) return false; // "a bound of the other kind matches nothing"
        const x = e as number | string;
        return f.op === 'gt' ? x > b : f.op === 'gte' ? x >= b : f.op === 'lt' ? x < b : x <= b;
      });
    }
  }
}

function strings(v: Json, out: string[]): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const e of v) strings(e, out);
  else if (isObject(v)) for (const k of Object.keys(v)) strings(v[k] as Json, out);
  return out;
}

/** Records never change in place (a write makes a new object): their folded strings are kept. */
const foldedStrings = new WeakMap<Rec, string[]>();
function found(record: Rec, words: readonly string[]): boolean {
  if (words.length === 0) return true;
  let texts = foldedStrings.get(record);
  if (texts === undefined) foldedStrings.set(record, (texts = strings(record, []).map(caseFold)));
  return words.every((w) => texts.some((t) => t.includes(w)));
}

/** "an absent field sorts first; values of different kinds order null < boolean < number < string < other" */
function kind(v: Json | undefined): number {
  if (v === undefined) return 0;
  if (v === null) return 1;
  if (typeof v === 'boolean') return 2;
  if (typeof v === 'number') return 3;
  if (typeof v === 'string') return 4;
  return 5;
}
function compare(a: Json | undefined, b: Json | undefined): number {
  const ka = kind(a);
  const kb = kind(b);
  if (ka !== kb) return ka < kb ? -1 : 1;
  if (ka === 2 || ka === 3) return a === b ? 0 : (a as number) < (b as number) ? -1 : 1;
  if (ka === 4) return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
  if (ka === 5) {
    // The contract leaves the order among objects and arrays open; src orders them by JSON text.
    const ta = JSON.stringify(a);
    const tb = JSON.stringify(b);
    return ta === tb ? 0 : ta < tb ? -1 : 1;
  }
  return 0;
}

/** The naive answer: every live record in creation order, filtered, searched, stably sorted. */
function oracle(model: ReadonlyMap<string, Rec>, q: OracleQuery): string[] {
  const kept: Rec[] = [];
  for (const record of model.values()) if (q.filters.every((f) => holds(record, f)) && found(record, q.words)) kept.push(record);
  if (q.sort.length > 0) {
    const rows = kept.map((record, position) => ({ id: record.id as string, position, keys: q.sort.map(({ segments }) => reach(record, segments)) }));
    rows.sort((a, b) => {
      for (let k = 0; k < q.sort.length; k++) {
        const c = compare(a.keys[k], b.keys[k]);
        if (c !== 0) return q.sort[k]?.descending ? -c : c;
      }
      return a.position - b.position; // "ties end in creation order"
    });
    return rows.map((row) => row.id);
  }
  return kept.map((r) => r.id as string);
}

// ---- random data ----

const WORDS = [
  'lamp', 'Lamp', 'LAMP', 'desk lamp', 'Desk', 'Straße', 'STRASSE', 'strasse', 'Σύστημα', 'ΣΎΣΤΗΜΑ', 'οδός', 'ΟΔΟΣ',
  'Σίσυφος', 'café', 'CAFÉ', 'cafe', 'İstanbul', 'Kırmızı', 'kirmizi', 'ﬁle', 'µm', 'usb-c', 'USB-C', 'a', 'A', 'b', 'B',
  'z', 'Z', 'é', '', '0', '10', '-1', '9', '100', '2.5', 'true', 'null', 'x,y', 'a b', '__proto__', 'constructor',
  'toString', '😀 smile', 'ǅemal', 'Ωmega', '~tilde',
];
const NUMBERS = [0, 1, -1, 2, 2.5, -3.75, 9, 10, 100, 0.1, 42, -100, 1e6, 1e21, 1e-7, 0.000001, 3.14159];
const QUERY_WORDS = ['strasse', 'STRASSE', 'ss', 'ß', 'σύσ', 'σύστημα', 'ος', 'οσ', 'i', 'ı', 'kir', 'İ', 'fi', 'µ', 'μ', 'e0', 'lamp'];
function scalar(r: Random): Json {
  const k = r.int(10);
  if (k < 5) return r.pick(WORDS);
  if (k < 8) return r.pick(NUMBERS);
  if (k < 9) return r.chance(0.5);
  return null;
}
function anyValue(r: Random, depth = 0): Json {
  const k = r.int(10);
  if (k < 7 || depth > 1) return scalar(r);
  if (k < 8) return Array.from({ length: r.int(4) }, () => anyValue(r, depth + 1));
  return { w: scalar(r), x: r.pick(WORDS) };
}
/** Sets or leaves out a field: "missing fields" are common. */
function maybe(r: Random, rec: Rec, key: string, p: number, make: () => Json): void {
  if (r.chance(p)) rec[key] = make();
}

function clientFields(r: Random): Rec {
  const rec: Rec = {};
  maybe(r, rec, 's', 0.85, () => (r.chance(0.9) ? r.pick(WORDS) : scalar(r)));
  maybe(r, rec, 'n', 0.85, () => (r.chance(0.9) ? r.pick(NUMBERS) : scalar(r)));
  maybe(r, rec, 'b', 0.7, () => (r.chance(0.9) ? r.chance(0.5) : null));
  maybe(r, rec, 'm', 0.8, () => anyValue(r));
  maybe(r, rec, 'z', 0.3, () => (r.chance(0.6) ? null : scalar(r)));
  maybe(r, rec, 'tags', 0.75, () => Array.from({ length: r.int(5) }, () => (r.chance(0.8) ? r.pick(WORDS) : scalar(r))));
  maybe(r, rec, 'dim', 0.75, () => {
    if (r.chance(0.1)) return r.chance(0.5) ? r.pick(WORDS) : [r.pick(NUMBERS)];
    const dim: Rec = {};
    maybe(r, dim, 'w', 0.8, () => (r.chance(0.85) ? r.pick(NUMBERS) : scalar(r)));
    maybe(r, dim, 'h', 0.6, () => scalar(r));
    maybe(r, dim, 'deep', 0.5, () => {
      const deep: Rec = {};
      maybe(r, deep, 'x', 0.8, () => scalar(r));
      maybe(r, deep, 'arr', 0.4, () => Array.from({ length: r.int(3) }, () => scalar(r)));
      return deep;
    });
    return dim;
  });
  maybe(r, rec, 'variants', 0.2, () => Array.from({ length: r.int(3) }, () => ({ color: r.pick(WORDS), size: r.pick(NUMBERS) })));
  maybe(r, rec, 'name', 0.7, () => Array.from({ length: 1 + r.int(3) }, () => r.pick(WORDS)).join(' '));
  maybe(r, rec, 'constructor', 0.05, () => scalar(r));
  // A member whose name holds a dot: `dim.w` is a path into `dim`, never this member.
  maybe(r, rec, 'dim.w', 0.05, () => r.pick(NUMBERS));
  return rec;
}

const BASE_TIME = 1_735_689_600;
function newRecord(r: Random, id: string, now: number): Rec {
  // Several records share a createdAt, so that sorting by it has ties.
  return { id, createdAt: now, updatedAt: now + r.int(3), ...clientFields(r) };
}

// ---- random queries ----

const PATHS = [
  's', 's', 's', 'n', 'n', 'n', 'b', 'b', 'm', 'm', 'm', 'z', 'tags', 'tags', 'tags', 'dim', 'dim.w', 'dim.w', 'dim.w', 'dim.h',
  'dim.h', 'dim.deep.x', 'dim.deep.x', 'dim.deep.arr', 'dim.deep', 'variants', 'name', 'name', 'id', 'createdAt', 'updatedAt',
  'constructor',
];
/** Paths that reach nothing in any record (through an array, a string, a number; inherited names). */
const NOWHERE = ['missing', 'toString', '__proto__', 'dim.toString', 's.length', 'tags.length', 'tags.0', 'n.x', 'variants.color'];
const randomPath = (r: Random): string => (r.chance(0.08) ? r.pick(NOWHERE) : r.pick(PATHS));

/** A value that some record holds at the path (an element, for an array), as its JSON text; or any word. */
function sampleText(r: Random, records: readonly Rec[], segments: string[]): string {
  for (let tries = 0; tries < 4 && records.length > 0; tries++) {
    const v = reach(r.pick(records), segments);
    if (v === undefined) continue;
    const e = Array.isArray(v) ? (v.length > 0 ? v[r.int(v.length)] : undefined) : v;
    if (e !== undefined) return jsonText(e as Json);
  }
  return jsonText(scalar(r));
}

function boundText(r: Random, records: readonly Rec[], segments: string[]): string {
  const k = r.int(10);
  if (k < 2) return String(r.pick(NUMBERS));
  if (k < 3) return r.pick(['2.50', '1E2', '-0', '1e-3', '01', '+5', '.5', '5.']); // some numbers, some plain text
  const text = k < 9 ? sampleText(r, records, segments) : r.pick(WORDS.filter((w) => w !== ''));
  // A sampled number stays a number (a JSON number text).
  if (k < 9 && JSON_NUMBER_TEXT.test(text) && r.chance(0.8)) return text;
  // A text that reads as a JSON number or starts with a quote goes in quotes to stay a string.
  if (text === '' || JSON_NUMBER_TEXT.test(text) || text.startsWith('"') || r.chance(0.2)) return JSON.stringify(text);
  return text;
}

function searchText(r: Random, records: readonly Rec[]): string {
  const word = (): string => {
    if (r.chance(0.3)) return r.pick(QUERY_WORDS);
    const texts = records.length > 0 ? strings(r.pick(records), []) : [];
    const text = texts.length > 0 ? r.pick(texts) : r.pick(WORDS);
    const chars = [...text];
    const start = r.int(chars.length + 1);
    const piece = chars.slice(start, start + 1 + r.int(5));
    return piece.map((c) => (r.chance(0.3) ? c.toUpperCase() : r.chance(0.3) ? c.toLowerCase() : c)).join('');
  };
  const words: string[] = [];
  while (words.length < 1 + r.int(2)) {
    const w = word();
    words.push(w);
  }
  return words.join(r.pick([' ', '  ', ' ']));
}

/** A random query as the parameter list a client would send (in a random order). */
function randomParams(r: Random, records: readonly Rec[]): [string, string][] {
  const params: [string, string][] = [];
  const used = new Set<string>();
  const nFilters = r.pick([0, 1, 1, 1, 1, 1, 2, 2, 3]);
  for (let i = 0; i < nFilters; i++) {
    const field = randomPath(r);
    const segments = field.split('.');
    const op = r.pick<Op>(['eq', 'eq', 'eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'exists']);
    if (op === 'eq' || op === 'ne') {
      const values = Array.from({ length: 1 + r.int(3) }, () => sampleText(r, records, segments));
      const name = op === 'ne' ? `${field}[ne]` : r.chance(0.7) ? field : `${field}[eq]`;
      if (values.length > 1 && r.chance(0.3)) {
        // Repeating the parameter adds alternatives, like a comma.
        for (const v of values) params.push([op === 'ne' ? name : r.chance(0.5) ? field : `${field}[eq]`, v]);
      } else {
        params.push([name, values.join(',')]);
      }
    } else if (op === 'exists') {
      if (used.has(`${field}[exists]`)) continue;
      used.add(`${field}[exists]`);
      params.push([`${field}[exists]`, r.chance(0.5) ? 'true' : 'false']);
    } else {
      if (used.has(`${field}[${op}]`)) continue;
      used.add(`${field}[${op}]`);
      params.push([`${field}[${op}]`, boundText(r, records, segments)]);
      // Both ends of a range.
      const other = op.startsWith('g') ? r.pick(['lt', 'lte']) : r.pick(['gt', 'gte']);
      if (r.chance(0.35) && !used.has(`${field}[${other}]`)) {
        used.add(`${field}[${other}]`);
        params.push([`${field}[${other}]`, boundText(r, records, segments)]);
      }
    }
  }
  if (r.chance(0.6)) {
    const keys = Array.from({ length: 1 + r.int(3) }, () => `${r.chance(0.5) ? '-' : ''}${randomPath(r)}`);
    params.push(['sort', keys.join(',')]);
  }
  if (r.chance(0.25)) params.push(['q', searchText(r, records)]);
  return r.shuffle(params);
}

/**
 * JSON text of a value as a person or another program might write it: spaces and tabs around
 * tokens, escapes where none are needed (`\u0053`, `\/`), numbers spelled otherwise (`2.50`,
 * `1e0`, `10.0`), and now and then an earlier duplicate of a member (JSON.parse keeps the last).
 */
function noisyJson(r: Random, value: Json): string {
  const ws = (): string => (r.chance(0.7) ? '' : r.pick([' ', '  ', '\t', ' \t ']));
  const str = (text: string): string => {
    let out = '"';
    // By code point: the two halves of a surrogate pair are escaped together or not at all.
    for (const char of text) {
      if (char === '"' || char === '\\') out += `\\${char}`;
      else if (char === '/' && r.chance(0.5)) out += '\\/';
      else if (char.charCodeAt(0) < 0x20 || r.chance(0.15)) {
        for (let k = 0; k < char.length; k++) {
          const hex = char.charCodeAt(k).toString(16).padStart(4, '0');
          out += `\\u${r.chance(0.5) ? hex.toUpperCase() : hex}`;
        }
      } else out += char;
    }
    return `${out}"`;
  };
  const num = (n: number): string => {
    const text = JSON.stringify(n);
    if (!r.chance(0.4)) return text;
    if (/^-?\d+$/.test(text)) return r.pick([`${text}.0`, `${text}e0`, `${text}E+0`, `${text}.00e-0`]);
    if (/^-?\d+\.\d+$/.test(text)) return r.pick([`${text}0`, `${text}e0`, `${text}E-0`]);
    return text;
  };
  const write = (v: Json): string => {
    if (v === null || typeof v === 'boolean') return String(v);
    if (typeof v === 'number') return num(v);
    if (typeof v === 'string') return str(v);
    if (Array.isArray(v)) return `[${ws()}${v.map((e) => write(e)).join(`${ws()},${ws()}`)}${ws()}]`;
    const members: string[] = [];
    for (const [key, member] of Object.entries(v)) {
      // An earlier duplicate that the real member replaces whole (a nested object included).
      if (key !== 'id' && r.chance(0.05)) members.push(`${str(key)}${ws()}:${ws()}${write(r.chance(0.5) ? { w: 999, x: 'dup' } : scalar(r))}`);
      // The loader finds `id` by its plain spelling: an escaped "\u0069d" key is refused at start-up (reported).
      members.push(`${key === 'id' ? '"id"' : str(key)}${ws()}:${ws()}${write(member as Json)}`);
    }
    return `{${ws()}${members.join(`${ws()},${ws()}`)}${ws()}}`;
  };
  return `${ws()}${write(value)}${ws()}`;
}

// ---- running it ----

interface Subject {
  store: Store;
  /** Live records in creation order, as the oracle sees them. */
  model: Map<string, Rec>;
}

/** How many queries kept some but not all records: a guard against a generator that tests nothing. */
const selective = { queries: 0, some: 0, kinds: { none: [] as string[], all: [] as string[], some: [] as string[] } };

type MakeParams = (r: Random, records: readonly Rec[]) => [string, string][];

async function compareQueries(subject: Subject, r: Random, count: number, label: string, makeParams: MakeParams = randomParams): Promise<number> {
  const records = [...subject.model.values()];
  let pagesCompared = 0;
  for (let i = 0; i < count; i++) {
    const params = makeParams(r, records);
    const qs = queryText(params);
    const expected = oracle(subject.model, oracleQuery(params));
    const parsed = parseCollectionQuery(qs);
    selective.queries++;
    if (expected.length > 0 && expected.length < subject.model.size) selective.some++;
    if (process.env.QUERY_ORACLE_STATS) selective.kinds[expected.length === 0 ? 'none' : expected.length === subject.model.size ? 'all' : 'some'].push(qs);
    const where = (what: string): string => `seed ${SEED} (QUERY_ORACLE_SEED=${SEED}), ${label}, query #${i}: ?${decodeURIComponent(qs)} — ${what}`;
    const ask = async (offset: number, limit: number): Promise<readonly StoredEntity[]> => {
      const query = { filters: parsed.filters, sort: parsed.sort, search: parsed.search, offset, limit };
      // Half of the queries with a deadline far off: an engine that works in slices must still answer them whole.
      const result = await subject.store.query(r.chance(0.5) ? { ...query, deadline: performance.now() + 60_000 } : query);
      pagesCompared++;
      // Nothing was written meanwhile: the answer describes the store's current revision.
      assert.equal(result.revision, subject.store.revision, where('revision'));
      if (result.total !== expected.length) {
        // Name the records the two sides disagree on, with their data, before failing.
        const all = await subject.store.query({ filters: parsed.filters, sort: parsed.sort, search: parsed.search, offset: 0, limit: result.total });
        const got = new Set(all.entities.map((e) => e.id));
        const want = new Set(expected);
        const show = (ids: string[]): string => ids.slice(0, 3).map((id) => JSON.stringify(subject.model.get(id))).join('; ');
        const extra = [...got].filter((id) => !want.has(id));
        const missing = [...want].filter((id) => !got.has(id));
        assert.fail(where(`total ${result.total}, expected ${expected.length}; store only: ${show(extra)}; oracle only: ${show(missing)}`));
      }
      assert.deepEqual(
        result.entities.map((e) => e.id),
        expected.slice(offset, offset + limit),
        where(`ids at offset ${offset}, limit ${limit} (expected all: ${JSON.stringify(expected.slice(0, 40))}${expected.length > 40 ? '…' : ''})`),
      );
      return result.entities;
    };
    // A random window, past the end too; its entities as the model holds them (no stale version).
    const limit = r.chance(0.1) ? 200 : 1 + r.int(50);
    const offset = r.chance(0.1) ? expected.length + r.int(1000) : r.int(expected.length + 5);
    const window = await ask(offset, limit);
    for (const entity of window) assert.deepEqual(entity.record, subject.model.get(entity.id), where(`the record of ${entity.id}`));
    // Every page, as a client following `next` sees them (of a long list: the first, some, the last).
    if (i % 8 === 0) {
      const pageLimit = expected.length <= 100 ? r.pick([7, 20]) : r.pick([50, 200]);
      const pages = Math.max(1, Math.ceil(expected.length / pageLimit));
      const chosen = pages <= 30 ? [...Array(pages).keys()] : [0, 1, 2, r.int(pages), r.int(pages), pages - 2, pages - 1];
      for (const page of chosen) await ask(page * pageLimit, pageLimit);
    }
  }
  return pagesCompared;
}

let clock = 0;
let nextId = 0;
/** Each test numbers its ids and times afresh, so that it replays alone. */
function restart(): void {
  clock = BASE_TIME + 10_000;
  nextId = 0;
}
/** Now and then an id the JSON-lines file must escape, or one with non-ASCII text (q searches ids too). */
const ID_SUFFIXES = ['', '', '', '', '', '', '', '', '-\u00fcber', '"q', '\\x', '-Straße'];
const freshId = (): string => `r${String(nextId++).padStart(5, '0')}${ID_SUFFIXES[nextId % ID_SUFFIXES.length]}`;

/** Random writes, applied to the store and to the model alike. */
async function mutate(subject: Subject, r: Random, count: number, deleted: string[]): Promise<void> {
  const { store, model } = subject;
  for (let i = 0; i < count; i++) {
    const k = r.int(10);
    const ids = [...model.keys()];
    if (k < 3 || ids.length === 0) {
      // A create; now and then one reusing a deleted id (it goes to the end of the creation order).
      const id = deleted.length > 0 && r.chance(0.2) ? (deleted.splice(r.int(deleted.length), 1)[0] as string) : freshId();
      const rec = newRecord(r, id, r.chance(0.3) ? clock : ++clock);
      await store.create(rec as EntityRecord);
      model.set(id, rec);
    } else if (k < 8) {
      const id = r.pick(ids);
      const current = model.get(id) as Rec;
      const next: Rec = { ...current, updatedAt: ++clock };
      if (r.chance(0.2)) {
        // A replacement: every client field new.
        for (const key of Object.keys(next)) if (!['id', 'createdAt', 'updatedAt'].includes(key)) delete next[key];
        Object.assign(next, clientFields(r));
      } else {
        const fresh = clientFields(r);
        for (let j = 1 + r.int(3); j > 0; j--) {
          const key = r.pick(['s', 'n', 'b', 'm', 'z', 'tags', 'dim', 'variants', 'name']);
          if (r.chance(0.3) || fresh[key] === undefined) delete next[key]; // a field removed
          else next[key] = fresh[key] as Json; // changed, added, or of another kind now
        }
      }
      const updated = await store.update(id, (stored) => {
        assert.deepEqual(stored.record, current, `seed ${SEED}: the store's state of ${id} differs from the model's before an update`);
        return next as EntityRecord;
      });
      assert.ok(updated, `seed ${SEED}: update of ${id}`);
      model.set(id, next);
    } else {
      const id = r.pick(ids);
      assert.equal(await store.delete(id), true, `seed ${SEED}: delete of ${id}`);
      model.delete(id);
      deleted.push(id);
    }
  }
}

/**
 * A query that keeps (almost) every record, sorted, now and then narrowed by one random filter or
 * searched: more than 20,000 matches make the engine walk a sort order testing each row, rather
 * than sort the matches.
 */
function broadParams(r: Random, records: readonly Rec[]): [string, string][] {
  const params: [string, string][] = [];
  params.push(
    r.pick<[string, string]>([
      ['id[exists]', 'true'],
      ['createdAt[gte]', String(BASE_TIME - 1)],
      ['updatedAt[lte]', '99999999999'],
      ['missing[exists]', 'false'],
      ['id[gt]', 'r'],
      ['id[ne]', String(r.pick(records).id)],
      ['dim.toString[exists]', 'false'],
    ]),
  );
  const more = randomParams(r, records);
  for (const [name, value] of more) {
    if (name === 'sort') params.push([name, value]);
    else if (name === 'q') params.push([name, r.chance(0.5) ? value : r.pick(['r', 'R0', '0'])]);
    else if (r.chance(0.15) && !params.some(([n]) => n === name)) params.push([name, value]);
  }
  if (!params.some(([name]) => name === 'sort')) params.push(['sort', `${r.chance(0.5) ? '-' : ''}${r.pick(PATHS)}`]);
  return r.shuffle(params);
}

function initialRecords(r: Random, count: number): Rec[] {
  return Array.from({ length: count }, (_, i) => newRecord(r, freshId(), BASE_TIME + Math.floor(i / 3)));
}

const queries = (n: number): number => Math.max(1, Math.round(n * SCALE));

describe(`query oracle (seed ${SEED})`, () => {
  test('memory store: random queries -> the naive scan, before and after random writes', async () => {
    const r = new Random(SEED);
    restart();
    const initial = initialRecords(r, 1200);
    const subject: Subject = { store: createMemoryStore(initial as EntityRecord[]), model: new Map(initial.map((rec) => [rec.id as string, rec])) };
    const deleted: string[] = [];
    await compareQueries(subject, r, queries(1000), 'memory store, initial data');
    for (let round = 0; round < 4; round++) {
      await mutate(subject, r, 150, deleted);
      await compareQueries(subject, r, queries(150), `memory store, after write round ${round + 1}`);
    }
  });

  test('large memory store: index builds racing writes, walks over 20,000+ matches, a re-pack after mass deletes -> the naive scan', async () => {
    const r = new Random(SEED ^ 0x2545f491);
    restart();
    const initial = initialRecords(r, 21_000);
    const memory = createMemoryStore(initial as EntityRecord[]);
    const subject: Subject = { store: memory, model: new Map(initial.map((rec) => [rec.id as string, rec])) };
    const { store, model } = subject;
    const deleted: string[] = [];
    // Queries that must build indexes (in slices), with writes landing before they finish: an
    // answer that names a revision is exact for the state the store is in when it comes, and names
    // that state's (a query starts over when a write lands between its slices); one that needed
    // more than 10 ms whole under writes names none (slices.ts). Asked again: exact.
    for (let i = 0; i < queries(8); i++) {
      // The first query only searches: the text index is built while writes land.
      const textRace = true;
      const params = textRace && i === 0 ? [['q', searchText(r, initial)] as [string, string]] : randomParams(r, initial).filter(([name]) => textRace || name !== 'q');
      const qs = queryText(params);
      const parsed = parseCollectionQuery(qs);
      const ask = () => store.query({ filters: parsed.filters, sort: parsed.sort, search: parsed.search, offset: 0, limit: 30 });
      // The store's own state, read in the turn the answer comes in (the model may lag a write).
      const state = () => ({ revision: store.revision, records: new Map([...memory.values()].map((e) => [e.id, e.record as Rec])) });
      const asked = ask();
      const pending = asked instanceof Promise ? asked.then((answer) => ({ answer, ...state() })) : { answer: asked, ...state() };
      await mutate(subject, r, 25, deleted);
      const raced = await pending;
      const where = `seed ${SEED}, query racing writes #${i}: ?${decodeURIComponent(qs)}`;
      if (raced.answer.revision !== undefined) {
        const expectedThen = oracle(raced.records, oracleQuery(params));
        assert.equal(raced.answer.revision, raced.revision, where);
        assert.equal(raced.answer.total, expectedThen.length, where);
        assert.deepEqual(raced.answer.entities.map((e) => e.id), expectedThen.slice(0, 30), where);
      }
      const again = await ask();
      const expected = oracle(model, oracleQuery(params));
      assert.equal(again.total, expected.length, `${where}, asked again`);
      assert.deepEqual(again.entities.map((e) => e.id), expected.slice(0, 30), `${where}, asked again`);
    }
    await compareQueries(subject, r, queries(35), 'large memory store, broad sorted queries', broadParams);
    await compareQueries(subject, r, queries(25), 'large memory store, random queries');
    // The 1,200 oldest deleted: whole chunks of the createdAt and id orders empty out.
    const orderQueries = ['sort=createdAt', 'sort=-id', 'createdAt[lt]=1735690100&sort=-createdAt', 'id[lt]=r01300&sort=id'];
    const byOrder: MakeParams = (rr) => [...new URLSearchParams(rr.pick(orderQueries))] as [string, string][];
    await compareQueries(subject, r, orderQueries.length * 2, 'large memory store, before the oldest are deleted', byOrder);
    for (const id of [...model.keys()].slice(0, 1200)) {
      assert.equal(await store.delete(id), true);
      model.delete(id);
      deleted.push(id);
    }
    await compareQueries(subject, r, orderQueries.length * 3, 'large memory store, after the oldest are deleted', byOrder);
    // More deletes than live entities left: the creation order is re-packed and every index
    // renumbered, here while a query waits for an index to be built on a field never asked before.
    const fresh = { filters: [], sort: parseCollectionQuery('sort=-fresh,dim.deep.x').sort, search: [], offset: 5, limit: 40 };
    const state = () => ({ revision: store.revision, records: new Map([...memory.values()].map((e) => [e.id, e.record as Rec])) });
    const asked = store.query(fresh);
    const pending = asked instanceof Promise ? asked.then((answer) => ({ answer, ...state() })) : { answer: asked, ...state() };
    const doomed = r.shuffle([...model.keys()]).slice(0, 11_500);
    for (const id of doomed) {
      assert.equal(await store.delete(id), true);
      model.delete(id);
      deleted.push(id);
    }
    const raced = await pending;
    // Naming a revision, exact for the state it came in, whatever number of the deletes had landed by then.
    if (raced.answer.revision !== undefined) {
      const expectedThen = oracle(raced.records, oracleQuery([['sort', '-fresh,dim.deep.x']]));
      assert.equal(raced.answer.revision, raced.revision, `seed ${SEED}: sort=-fresh,dim.deep.x racing a re-pack`);
      assert.deepEqual(raced.answer.entities.map((e) => e.id), expectedThen.slice(5, 45), `seed ${SEED}: sort=-fresh,dim.deep.x racing a re-pack`);
    }
    const again = await store.query(fresh);
    const expected = oracle(model, oracleQuery([['sort', '-fresh,dim.deep.x']]));
    assert.equal(again.total, expected.length, `seed ${SEED}: sort=-fresh,dim.deep.x after a re-pack`);
    assert.deepEqual(again.entities.map((e) => e.id), expected.slice(5, 45), `seed ${SEED}: sort=-fresh,dim.deep.x after a re-pack`);
    await compareQueries(subject, r, queries(30), 'large memory store, after mass deletes', broadParams);
    await compareQueries(subject, r, queries(25), 'large memory store, after mass deletes, random queries');
    await mutate(subject, r, 300, deleted);
    await compareQueries(subject, r, queries(35), 'large memory store, after mass deletes and writes');
  });

  test('JSON-lines store: random queries -> the naive scan, after writes, a compaction and a reopen', async () => {
    const r = new Random(SEED ^ 0x5bd1e995);
    restart();
    const dir = await tempDir('halserve-oracle-');
    const file = path.join(dir, 'items.jsonl');
    // The log as a server leaves it: records, later versions of some, and tombstones.
    // Half of its lines written otherwise than JSON.stringify would (the store reads indexed values
    // from a loaded line's bytes); the model is what JSON.parse makes of each line.
    const model = new Map<string, Rec>();
    const lines: string[] = [];
    const append = (rec: Rec): void => {
      const line = r.chance(0.5) ? noisyJson(r, rec) : JSON.stringify(rec);
      const parsed = JSON.parse(line) as Rec;
      assert.deepEqual(parsed, rec, `seed ${SEED}: noisy JSON ${line}`);
      lines.push(line);
      model.set(rec.id as string, parsed);
    };
    for (const rec of initialRecords(r, 700)) append(rec);
    for (let i = 0; i < 150; i++) {
      const id = r.pick([...model.keys()]);
      if (r.chance(0.3)) {
        model.delete(id);
        lines.push(r.chance(0.5) ? JSON.stringify({ id, _deleted: true }) : `{ "id" : ${JSON.stringify(id)} , "_deleted" : true }`);
      } else {
        const rec = model.get(id) as Rec;
        append({ id, createdAt: rec.createdAt as number, updatedAt: (rec.updatedAt as number) + 1, ...clientFields(r) });
      }
    }
    await fs.writeFile(file, lines.join('\n') + '\n');
    const clock = manualClock();
    const open = () => openJsonlStore({ file, durability: 'none', compaction: { auto: false }, now: clock.now });
    const subject: Subject = { store: await open(), model };
    const deleted: string[] = [];
    await compareQueries(subject, r, queries(400), 'JSON-lines store, loaded from a log with history');
    for (let round = 0; round < 3; round++) {
      await mutate(subject, r, 150, deleted);
      await compareQueries(subject, r, queries(120), `JSON-lines store, after write round ${round + 1}`);
    }
    const store = subject.store as Awaited<ReturnType<typeof open>>;
    // Past the retention of deletes (7 days): the compaction forgets them.
    clock.advance(8 * 24 * 3600 * 1000);
    assert.equal(await store.compact(), true, `seed ${SEED}: compaction`);
    assert.equal(store.lineCount, model.size, `seed ${SEED}: one line per live entity after compaction`);
    await compareQueries(subject, r, queries(150), 'JSON-lines store, after compaction');
    await mutate(subject, r, 100, deleted);
    await compareQueries(subject, r, queries(120), 'JSON-lines store, after compaction and more writes');
    await store.close();
    subject.store = await open();
    await compareQueries(subject, r, queries(150), 'JSON-lines store, reopened');
    await mutate(subject, r, 100, deleted);
    await compareQueries(subject, r, queries(120), 'JSON-lines store, reopened, after more writes');
    await subject.store.close();
  });
});

describe(`query oracle, PostgreSQL store (seed ${SEED})`, { skip: pgMissing }, () => {
  test('PostgreSQL store: random queries -> the naive scan, loaded from rows written otherwise than JSON.stringify, after writes, a reopen, and on a second store', async (t) => {
    const r = new Random(SEED ^ 0x27d4eb2d);
    restart();
    const url = await freshDatabase();
    // Rows as an import (or another halserve) leaves them: half of the bodies spaced otherwise
    // than JSON.stringify would (tabs included: COPY escapes them), some ids that need escapes in
    // JSON and in COPY, and tombstones. The model is what JSON.parse makes of each body.
    const model = new Map<string, Rec>();
    const rows: { id: string; body: string | null }[] = [];
    for (const rec of initialRecords(r, 700)) {
      const body = r.chance(0.5) ? noisyJson(r, rec) : JSON.stringify(rec);
      rows.push({ id: rec.id as string, body });
      model.set(rec.id as string, JSON.parse(body) as Rec);
    }
    for (const row of rows) {
      if (r.chance(0.1)) {
        row.body = null;
        model.delete(row.id);
      }
    }
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    t.after(() => sql.end({ timeout: 1 }));
    const first = await openStores(url, ['items']);
    await first.close();
    await sql.begin(async (tx) => {
      for (const row of rows) {
        await tx.unsafe(`INSERT INTO halserve.entities (resource, id, pos, rev, body) VALUES ('items', $1, nextval('halserve.creation'), $2, $3)`, [row.id, row.body === null ? 2 : 1, row.body]);
      }
    });
    const subject: Subject = { store: (await openStores(url, ['items'])).stores.get('items')!, model };
    const deleted: string[] = [];
    await compareQueries(subject, r, queries(300), 'PostgreSQL store, loaded');
    for (let round = 0; round < 2; round++) {
      await mutate(subject, r, 120, deleted);
      await compareQueries(subject, r, queries(100), `PostgreSQL store, after write round ${round + 1}`);
    }
    const second = await openStores(url, ['items']);
    await mutate(subject, r, 80, deleted);
    await second.sync();
    await compareQueries({ store: second.stores.get('items')!, model }, r, queries(120), 'PostgreSQL store, a second store fed by the change feed');
    await subject.store.close();
    subject.store = (await openStores(url, ['items'])).stores.get('items')!;
    await compareQueries(subject, r, queries(120), 'PostgreSQL store, reopened');
  });
});

test('query oracle: the random queries are selective -> most keep some records but not all', () => {
  // Runs after the two oracle tests above (node:test runs a file's tests in order).
  if (process.env.QUERY_ORACLE_STATS) for (const [k, v] of Object.entries(selective.kinds)) console.log(k, v.length, v.slice(0, 30).map(decodeURIComponent));
  assert.ok(selective.queries >= 1000, `${selective.queries} queries compared`);
  assert.ok(selective.some / selective.queries > 0.4, `seed ${SEED}: only ${selective.some} of ${selective.queries} queries were selective`);
});

describe('index builds racing writes', () => {
  // 30,000 records: building the text index takes more than one slice, so writes land meanwhile.
  const start = () => {
    const store = createMemoryStore(
      Array.from({ length: 30_000 }, (_, i) => ({ id: `e${i}`, createdAt: 1, updatedAt: 1, name: i === 0 ? 'alpha' : i === 1 ? 'gamma' : `word${i}` })),
    );
    const q = async (word: string) => {
      const result = await store.query({ filters: [], sort: [], search: [word], offset: 0, limit: 10 });
      return { total: result.total, ids: result.entities.map((e) => e.id) };
    };
    return { store, q };
  };
  test('q=alpha building the text index, e0 renamed alpha -> beta meanwhile -> then q=alpha finds nothing, q=beta finds e0', async () => {
    const { store, q } = start();
    const pending = q('alpha');
    await store.update('e0', (current) => ({ ...current.record, name: 'beta' }));
    await pending;
    assert.deepEqual(await q('alpha'), { total: 0, ids: [] });
    assert.deepEqual(await q('beta'), { total: 1, ids: ['e0'] });
  });
  test('q=alpha building the text index, e1 (gamma) deleted meanwhile -> then q=gamma has total 0', async () => {
    const { store, q } = start();
    const pending = q('alpha');
    await store.delete('e1');
    await pending;
    assert.deepEqual(await q('gamma'), { total: 0, ids: [] });
  });
  test(
    '60,000 entities, sort=x building its index, 30,001 deleted meanwhile (a re-pack) -> the query is answered, and asked again is exact',
    async () => {
      const script = fileURLToPath(new URL('./fixtures/repack-race.ts', import.meta.url));
      const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), LIVENESS_MS);
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      clearTimeout(timer);
      assert.equal(code, 0, `the child was killed after ${LIVENESS_MS / 1000} s without an answer (a normal run takes about a second; a build that restarts forever never answers): ${out}`);
      const answer = JSON.parse(out) as { again: { total: number; ids: string[] } };
      assert.deepEqual(answer.again, { total: 29_999, ids: ['e31000', 'e32000', 'e33000'] });
    },
  );
  test('sort=name building its index, e0 renamed and e1 deleted meanwhile -> then name=alpha and name=gamma find nothing', async () => {
    const { store } = start();
    const ask = (query: string) => {
      const parsed = parseCollectionQuery(query);
      return store.query({ filters: parsed.filters, sort: parsed.sort, search: [], offset: 0, limit: 10 });
    };
    const pending = ask('sort=name');
    await store.update('e0', (current) => ({ ...current.record, name: 'beta' }));
    await store.delete('e1');
    await pending;
    for (const [query, total] of [['name=alpha', 0], ['name=gamma', 0], ['name=beta', 1], ['name[lt]=c', 1]] as const) {
      assert.equal((await ask(query)).total, total, query);
    }
  });
});

describe('search words the text index cannot answer alone', () => {
  const search = async (names: string[], q: string): Promise<string[]> => {
    const store = createMemoryStore(names.map((name, i) => ({ id: `t${i}`, createdAt: 1, updatedAt: 1, name })));
    const parsed = parseCollectionQuery(new URLSearchParams({ q }).toString());
    const result = await store.query({ filters: parsed.filters, sort: parsed.sort, search: parsed.search, offset: 0, limit: 10 });
    return result.entities.map((e) => e.id);
  };
  test('q=<300 pieces joined by ->z over two names that differ only at the end -> the one that holds it', async () => {
    const long = 'a-'.repeat(300);
    assert.deepEqual(await search([`${long}y`, `${long}z`, 'a'], `${long}z`), ['t1']);
  });
  test('q=-- (no letter or digit) -> the names that hold "--"', async () => {
    assert.deepEqual(await search(['a--b', 'a-b', '--', 'ab'], '--'), ['t0', 't2']);
  });
  test('q=😀 -> the names that hold the emoji', async () => {
    assert.deepEqual(await search(['😀 smile', 'smile', 'x😀'], '😀'), ['t0', 't2']);
  });
  test('q=usb-c over "USB-C hub", "usb c", "usbc" -> only the first', async () => {
    assert.deepEqual(await search(['USB-C hub', 'usb c', 'usbc'], 'usb-c'), ['t0']);
  });
});

/*
 * docs/queries.md's "Unicode default case folding" where lower-casing alone gets it wrong: final
 * sigma, sharp s, dotless ı.
 */
describe('search case folding, docs/queries.md against src', () => {
  const search = async (texts: string[], q: string): Promise<string[]> => {
    const store = createMemoryStore(texts.map((name, i) => ({ id: `t${i}`, createdAt: 1, updatedAt: 1, name })));
    const parsed = parseCollectionQuery(new URLSearchParams({ q }).toString());
    const result = await store.query({ filters: parsed.filters, sort: parsed.sort, search: parsed.search, offset: 0, limit: 10 });
    return result.entities.map((e) => e.record.name as string);
  };
  test('Straße / STRASSE / strasse, q=strasse and q=STRASSE and q=ß -> each finds all three', async () => {
    for (const q of ['strasse', 'STRASSE', 'straße', 'ss']) assert.deepEqual(await search(['Straße', 'STRASSE', 'strasse'], q), ['Straße', 'STRASSE', 'strasse'], q);
  });
  test('"Σύστημα", q=σύσ (a prefix ending in sigma) -> found', async () => {
    assert.deepEqual(await search(['Σύστημα', 'ΣΎΣΤΗΜΑ'], 'σύσ'), ['Σύστημα', 'ΣΎΣΤΗΜΑ']);
  });
  test('"ΟΔΟΣ" and "οδός", q=σ -> both found', async () => {
    assert.deepEqual(await search(['ΟΔΟΣ', 'οδός', 'lamp'], 'σ'), ['ΟΔΟΣ', 'οδός']);
  });
  test('"Kırmızı" (dotless ı), q=kirmizi -> not found: ı has no case folding in Unicode', async () => {
    assert.deepEqual(await search(['Kırmızı', 'kirmizi', 'KIRMIZI'], 'kirmizi'), ['kirmizi', 'KIRMIZI']);
  });
});
