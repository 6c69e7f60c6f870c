import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fold, matchesSearch } from '../../src/conventions/query.js';
import { JsonTokens } from '../../src/store/index/json-tokens.js';
import { Slice, type Work } from '../../src/store/index/slices.js';
import { TextBuilder, TextIndex, tokensOf } from '../../src/store/index/text-index.js';
import { hashTokenBytes, Vocabulary } from '../../src/store/index/vocabulary.js';
import type { StoredEntity } from '../../src/store/store.js';

let seed = 7;
const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) >>> 8) % n;

/** A slice that is always due: every yield point is taken (the most interleaved run). */
const due = (): Slice => new Slice(0, () => 1);
function run<T>(work: Work<T>): T {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
  }
}

const bytesOf = (s: string): Uint8Array => new TextEncoder().encode(s);
const intern = (v: Vocabulary, token: string): number => {
  const b = bytesOf(token);
  return v.intern(b, 0, b.length, hashTokenBytes(b, 0, b.length));
};

describe('Vocabulary: interned tokens in one pool', () => {
  test('intern gives one number per distinct token, in order of first sight; find and token agree', () => {
    const v = new Vocabulary();
    const tokens = Array.from({ length: 5000 }, (_, i) => `t${(i * 7919) % 3000}x`);
    const ids = tokens.map((t) => intern(v, t));
    assert.equal(v.size, 3000);
    for (const [i, t] of tokens.entries()) {
      assert.equal(v.find(t), ids[i]);
      assert.equal(v.token(ids[i]!), t);
    }
    assert.equal(v.find('absent'), -1);
    assert.equal(intern(v, 'ünïcode'), 3000);
    assert.equal(v.token(3000), 'ünïcode');
  });
  test('containing -> every token holding the piece, once, in order, across search windows', () => {
    const v = new Vocabulary();
    // ~1.2 MB of tokens: several 256 KB windows, matches straddling their ends.
    const tokens = Array.from({ length: 60_000 }, (_, i) => `${'abcdefghij'.slice(0, 3 + (i % 8))}${i.toString(36)}q${(i * 31) % 97}`);
    for (const t of tokens) intern(v, t);
    for (const piece of ['q1', 'abcdefghij', 'zz', 'q96', 'a', '9q']) {
      const want = tokens.map((t, i) => (t.includes(piece) ? i : -1)).filter((i) => i >= 0);
      assert.deepEqual([...run(v.containing(piece, due()))], want, piece);
      assert.deepEqual([...run(v.containing(piece, new Slice()))], want, piece);
    }
  });
});

/** True when some member name, at any depth, holds a character JSON escapes. */
function escapedName(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some(escapedName);
  return Object.entries(value).some(([name, v]) => /["\\\u0000-\u001f]/.test(name) || escapedName(v));
}

describe('JsonTokens: the tokens of JSON text without parsing it', () => {
  const scanned = (json: string): Set<string> | undefined => {
    const v = new Vocabulary();
    const t = new JsonTokens();
    const bytes = bytesOf(json);
    const n = t.scan(bytes, 0, bytes.length, v);
    if (n < 0) return undefined;
    return new Set(Array.from(t.ids.subarray(0, n), (id) => v.token(id)));
  };
  test('string values only, folded, nested objects and arrays, escapes as separators', () => {
    const record = { id: 'AbC_12-x', name: 'Deluxe LAMP', n: 42, ok: true, nil: null, tags: ['USB-C', 'eco'], dims: { w: 'Heavy9', deep: { k: 'Z' } }, quote: 'say "hi"\nnow\\then/' };
    assert.deepEqual(scanned(JSON.stringify(record)), tokensOf(record));
    assert.deepEqual(scanned('{"a" : "x y" , "b":[ "Q" ,{"c" :"r"}]}'), new Set(['x', 'y', 'q', 'r']));
    assert.deepEqual(scanned('{"a\\/b":1}'), undefined, 'an escaped member name');
  });
  test('what only the parse folds alike -> -1: non-ASCII, \\u escapes, a repeated member name', () => {
    assert.equal(scanned(JSON.stringify({ name: 'Straße' })), undefined);
    assert.equal(scanned('{"name":"caf\\u00e9"}'), undefined);
    assert.equal(scanned('{"a":"x","a":"y"}'), undefined);
    assert.equal(scanned('{"o":{"a":"x","a":"y"}}'), undefined);
    // The same name in two objects is no repeat.
    assert.deepEqual(scanned('{"a":"x","o":{"a":"y"},"p":[{"a":"z"}]}'), new Set(['x', 'y', 'z']));
  });
  test('random ASCII records -> the same tokens as tokensOf', () => {
    const alphabet = 'aZ09 -_."\\/\n\tbQ';
    const str = (): string => Array.from({ length: rnd(12) }, () => alphabet[rnd(alphabet.length)]).join('');
    const value = (depth: number): unknown => {
      const k = rnd(depth > 2 ? 3 : 5);
      if (k === 0) return str();
      if (k === 1) return rnd(100);
      if (k === 2) return rnd(2) === 0 ? null : true;
      if (k === 3) return Array.from({ length: rnd(4) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: rnd(4) }, (_, i) => [`${str()}${i}`, value(depth + 1)]));
    };
    let parsed = 0;
    for (let i = 0; i < 2000; i++) {
      const record = { id: str(), v: value(0) };
      const json = JSON.stringify(record);
      const found = scanned(json);
      // Left to the parse only for a member name with an escape.
      if (found === undefined && escapedName(record)) parsed++;
      else assert.deepEqual(found, tokensOf(record), json);
    }
    assert.ok(parsed < 1000, `${parsed} of 2000 left to the parse`);
  });
  test('whitespace anywhere, empty objects and arrays, literals, exponents, a record cut before its closing brace -> the same tokens', () => {
    const records = [
      { id: 'k1', e: {}, a: [], n: [[], [{}], { x: [] }], s: 'Deep  Blue', t: true, f: false, z: null, x: -1.5e-7, y: 2e10 },
      { id: 'k2', list: [1, 'one', [2, 'Two', { three: 'THREE' }], null], last: 'end' },
      { id: 'k3', o: { a: { b: { c: 'nested Word' } } }, after: 'after it' },
    ];
    for (const record of records) {
      const want = tokensOf(record);
      for (const json of [JSON.stringify(record), JSON.stringify(record, null, 2), JSON.stringify(record, null, '\t').replaceAll('\n', '\r\n'), ` ${JSON.stringify(record)}\n`]) {
        assert.deepEqual(scanned(json), want, json);
      }
      // As a stamped line's bytes reach the scan: up to the stamp's comma, no closing brace.
      const json = JSON.stringify(record);
      assert.deepEqual(scanned(json.slice(0, -1)), want, `${json} without its closing brace`);
    }
    assert.deepEqual(scanned('{}'), new Set());
    assert.deepEqual(scanned('{"a":{},"b":"x"}'), new Set(['x']));
  });
});

/** Entities for the builder: some hand their bytes, some only their JSON. */
function entity(record: Record<string, unknown>, bytes: boolean): StoredEntity {
  const json = JSON.stringify(record);
  const base = { id: String(record['id']), json, version: '1', get record() { return JSON.parse(json) as never; } };
  if (!bytes) return base;
  const buffer = Buffer.from(`  ${json}  `);
  return { ...base, record: JSON.parse(json) as never, jsonBytes: (read) => read(buffer, 2, 2 + Buffer.byteLength(json)) };
}

describe('TextIndex: laid out once, then kept current by writes', () => {
  const words = ['lamp', 'Lampshade', 'desk', 'DESKTOP', 'ünï', 'Straße', 'oak', 'x-ray', 'a1'];
  const recordOf = (i: number): Record<string, unknown> => ({ id: `e${i}`, name: `${words[rnd(words.length)]} ${words[rnd(words.length)]}`, tags: [words[rnd(words.length)]] });
  const search = (index: TextIndex, slots: number, q: string): number[] => {
    const { rows } = run(index.candidates([fold(q)], slots, due()));
    return [...rows];
  };
  test('built rows, then updates, deletes, creates and a re-pack -> the rows whose records match', () => {
    const records: (Record<string, unknown> | undefined)[] = Array.from({ length: 300 }, (_, i) => (i % 17 === 5 ? undefined : recordOf(i)));
    const builder = new TextBuilder(records.length);
    records.forEach((r, row) => builder.add(row, r === undefined ? undefined : entity(r, row % 3 !== 0)));
    const index = run(builder.finish(due()));
    let slots = records.length;
    const check = (when: string): void => {
      for (const q of ['lamp', 'desk', 'top', 'ü', 'ss', 'oak', 'ray', 'a1', 'zzz']) {
        const want = records.flatMap((r, row) => (r !== undefined && matchesSearch(r, [fold(q)]) ? [row] : []));
        assert.deepEqual(search(index, slots, q), want, `${when}: q=${q}`);
      }
    };
    check('built');
    for (let i = 0; i < 200; i++) {
      const row = rnd(slots + 5);
      if (row >= slots) {
        records.push(recordOf(slots));
        index.add(slots, records[slots]);
        slots++;
        continue;
      }
      const old = records[row];
      if (old !== undefined) index.remove(row, old);
      records[row] = rnd(4) === 0 ? undefined : recordOf(row);
      if (records[row] !== undefined) index.add(row, records[row]);
    }
    check('after writes');
    // Re-pack: the holes go, the rows keep their order.
    const moved = new Int32Array(slots);
    const packed: Record<string, unknown>[] = [];
    records.forEach((r, row) => {
      if (r === undefined) return;
      moved[row] = packed.length;
      packed.push(r);
    });
    index.remap(moved, packed.length);
    records.splice(0, records.length, ...packed);
    slots = packed.length;
    check('after a re-pack');
    index.add(slots, { id: 'new', name: 'lamp' });
    records.push({ id: 'new', name: 'lamp' });
    slots++;
    check('after a create past the re-pack');
  });
  test('pairs kept in several chunks (rows with more tokens than a chunk holds, rows with none, repeats) -> the same index as one chunk', () => {
    const records: (Record<string, unknown> | undefined)[] = Array.from({ length: 200 }, (_, i) => {
      if (i % 23 === 7) return undefined;
      if (i % 19 === 3) return { id: 'x', n: 1 };
      const many = Array.from({ length: rnd(15) }, () => `w${rnd(40)}`).join(' ');
      return { id: `r${i}`, text: `${many} ${many}`, tags: [words[rnd(words.length)]] };
    });
    const build = (pairsPerChunk?: number): TextIndex => {
      const builder = new TextBuilder(records.length, pairsPerChunk);
      records.forEach((r, row) => builder.add(row, r === undefined ? undefined : entity(r, row % 4 !== 0)));
      return run(builder.finish(due()));
    };
    const one = build();
    for (const size of [1, 5, 16]) {
      const chunked = build(size);
      for (const q of ['w1', 'w2', 'w39', 'w', 'lamp', 'x', 'r1', 'r', 'ü', 'zzz']) {
        const want = records.flatMap((r, row) => (r !== undefined && matchesSearch(r, [fold(q)]) ? [row] : []));
        assert.deepEqual(search(chunked, records.length, q), want, `chunks of ${size}: q=${q}`);
        assert.deepEqual(search(chunked, records.length, q), search(one, records.length, q), `chunks of ${size}: q=${q}`);
      }
    }
  });
  test('an empty index filled by writes', () => {
    const index = TextIndex.empty();
    index.add(0, { name: 'Oak desk' });
    index.add(1, { name: 'lamp' });
    assert.deepEqual(search(index, 2, 'desk'), [0]);
    index.remove(0, { name: 'Oak desk' });
    assert.deepEqual(search(index, 2, 'desk'), []);
  });
});
