import assert from 'node:assert/strict';
import { setImmediate as turn } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { fold, matchesSearch, searchWords } from '../../src/conventions/query.js';
import { QueryEngine } from '../../src/store/index/query-engine.js';
import type { Rows } from '../../src/store/index/rows.js';
import { Slice, type Work } from '../../src/store/index/slices.js';
import { FOLDS_TO_ASCII, repeatsAName, scanCandidates, scanPlan, valueStringEnd } from '../../src/store/index/text-scan.js';
import { QueryTimeoutError, type StoredEntity } from '../../src/store/store.js';

let seed = 11;
const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) >>> 8) % n;
const pick = <T>(items: readonly T[]): T => items[rnd(items.length)]!;

/** A slice that is always due: every yield point is taken. */
const due = (): Slice => new Slice(0, () => 1);
function run<T>(work: Work<T>): T {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
  }
}

/** Text values: mixed case, words inside words, escapes, non-ASCII, and characters whose folding holds ASCII letters. */
const TEXTS = [
  'Phone', 'smartPHONE case', 'phones', 'kilo', 'Kilo Lamp', 'desk lamp', 'Straße', 'STRASSE', '\u212Aey ring', 'key', '\uFB01le', 'file',
  'café', 'naïve', 'say "phone"', 'back\\slash', 'new\nline kilo', '日本 phone', 'phone-case', 't-shirt', 'T-SHIRT XL', '123', 'x123y', 'ſ', 'İstanbul', 'line',
];
/** Member names, some of them the words searched: a hit in a name is no match. */
const NAMES = ['name', 'phone', 'desc', 'kilo', 'tags', 'straße', 'n', 'line'];

function value(depth: number): unknown {
  const kind = rnd(depth > 2 ? 4 : 7);
  if (kind <= 1) return pick(TEXTS);
  if (kind === 2) return pick([123, 4123, 0.5, -7]);
  if (kind === 3) return pick([true, false, null]);
  if (kind === 4) return Array.from({ length: rnd(4) }, () => value(depth + 1));
  return record(depth + 1);
}
function record(depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = rnd(5); i >= 0; i--) out[pick(NAMES)] = value(depth);
  return out;
}

/** JSON text of a record as a user's file may hold it: canonical, spaced, or naming a member twice. */
function textOf(id: string, rec: Record<string, unknown>): string {
  const canonical = JSON.stringify({ id, ...rec });
  const form = rnd(6);
  if (form === 0) return canonical.replace(/,"/g, ' , "').replace(/":/g, '" : ');
  if (form === 1) return `{"id":${JSON.stringify(id)},"name":${JSON.stringify(pick(TEXTS))},${canonical.slice(1)}`; // "name" twice when rec has one
  return canonical;
}

interface Fake {
  readonly record: unknown;
  readonly json: string;
  jsonBytes?: <T>(read: (bytes: Uint8Array, start: number, end: number) => T) => T;
}

/**
 * Rows whose bytes lie in shared blocks, as a loaded file's do: each line followed by a stamp (which
 * is not part of the JSON, and holds words that would match), some rows left as holes, some with
 * only a JSON string (no bytes).
 */
function rowsOf(texts: readonly (string | undefined)[]): Rows<StoredEntity> {
  const entities: (Fake | undefined)[] = [];
  let block = Buffer.alloc(0);
  let at = 0;
  for (const text of texts) {
    if (text === undefined) {
      entities.push(undefined);
      continue;
    }
    const json = text;
    const record: unknown = JSON.parse(json);
    if (rnd(10) === 0) {
      entities.push({ record, json });
      continue;
    }
    const line = Buffer.from(`${json.slice(0, -1)},"_stamp":{"note":"phone kilo 123 key"}}\n`, 'utf8');
    if (at + line.length > block.length) {
      block = Buffer.alloc(Math.max(line.length, 50_000 + rnd(30_000)));
      at = 0;
    }
    line.copy(block, at);
    const [bytes, start, end] = [block, at, at + Buffer.byteLength(json) - 1];
    at += line.length;
    entities.push({ record, json, jsonBytes: (read) => read(bytes, start, end) });
  }
  const live = entities.filter((e) => e !== undefined);
  return {
    size: live.length,
    slotCount: entities.length,
    layout: 0,
    revision: '1',
    at: (row) => entities[row] as StoredEntity | undefined,
    page: () => [],
  };
}

const QUERIES = ['phone', 'kilo', 'strasse', 'ss', 'key', 'k', 'file', 'fi', 'caf', '123', '12', 'phone kilo', 'lamp desk', 'slash', 'line', 'name', 'stamp', 'note', 'e', 'zzz', 'istanbul', 't-shirt', 'phone-case', 'x123y'];

describe('scanCandidates: q over the stored bytes, without the text index', () => {
  const texts = Array.from({ length: 3000 }, (_, i) => (rnd(20) === 0 ? undefined : textOf(`p${i}`, record())));
  const rows = rowsOf(texts);
  const expected = (words: readonly string[]): number[] => {
    const out: number[] = [];
    for (let row = 0; row < rows.slotCount; row++) {
      const entity = rows.at(row);
      if (entity !== undefined && matchesSearch(entity.record, words)) out.push(row);
    }
    return out;
  };

  test('every word one piece -> exactly the rows matchesSearch takes, in creation order, sliced or not', () => {
    let some = 0;
    for (const q of QUERIES) {
      const words = searchWords(q);
      const plan = scanPlan(words);
      assert.ok(plan, q);
      if (!plan.exact) continue;
      const want = expected(words);
      if (want.length > 0) some++;
      for (const slice of [due(), new Slice()]) {
        const got: { rows: Int32Array; exact: boolean } = run(scanCandidates(words, plan, rows, slice));
        assert.equal(got.exact, true);
        assert.deepEqual([...got.rows], want, `q=${q}`);
      }
    }
    assert.ok(some >= 15, `${some} queries matched something`);
  });

  test('a word of several pieces -> candidates holding every match; the check against the records leaves exactly the matches', () => {
    for (const q of ['t-shirt', 'phone-case', 'phone t-shirt', 'say "phone"']) {
      const words = searchWords(q);
      const plan = scanPlan(words);
      assert.ok(plan && !plan.exact, q);
      const got = run(scanCandidates(words, plan, rows, due()));
      assert.equal(got.exact, false);
      const want = expected(words);
      assert.ok(want.length > 0, q);
      assert.deepEqual([...got.rows].filter((row) => matchesSearch(rows.at(row)!.record, words)), want, q);
    }
  });

  test('the cases one by one: a member name, a number, an escape, a folding character, a stamp, a repeated name', () => {
    const cases: [string, string, boolean][] = [
      ['{"phone":1}', 'phone', false],
      ['{"a":"Smartphone"}', 'phone', true],
      ['{"a":4123}', '123', false],
      ['{"a":["x", "y123z"]}', '123', true],
      ['{"a" : "x", "phone" : "y"}', 'phone', false],
      ['{"a":"back\\\\slash"}', 'kslash', false],
      ['{"a":"back\\\\slash"}', 'slash', true],
      ['{"a":"x\\u0050hone"}', 'phone', true],
      ['{"a":"Stra\u00dfe"}', 'strasse', true],
      ['{"a":"\u212Aey"}', 'key', true],
      ['{"a":"\u00e9phone"}', 'phone', true],
      ['{"name":"phone","name":"lamp"}', 'phone', false],
      ['{"name":"lamp","name":"phone"}', 'phone', true],
      ['{"o":{"name":"phone"},"name":"lamp"}', 'phone', true],
      ['{"a":"note"}', 'stamp', false],
    ];
    for (const [json, q, match] of cases) {
      const one = rowsOf([json, json]);
      const words = searchWords(q);
      const got = run(scanCandidates(words, scanPlan(words)!, one, due()));
      const live = [0, 1].filter((row) => one.at(row) !== undefined);
      assert.deepEqual([...got.rows], match ? live : [], `${json} q=${q}`);
      assert.equal(matchesSearch(JSON.parse(json), words), match, `the reference agrees: ${json} q=${q}`);
    }
  });

  test('scanPlan: pieces of ASCII letters and digits only; otherwise the index is waited for', () => {
    assert.deepEqual(scanPlan(['phone', 'x1']), { pieces: ['phone', 'x1'], exact: true });
    assert.deepEqual(scanPlan(['t-shirt']), { pieces: ['t', 'shirt'], exact: false });
    assert.equal(scanPlan(['café']), undefined);
    assert.equal(scanPlan(['--']), undefined);
  });

  test('FOLDS_TO_ASCII is every code point whose folding holds an ASCII letter or digit', () => {
    const found: number[] = [];
    for (let cp = 0x80; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      if (/[a-z0-9]/.test(fold(String.fromCodePoint(cp)))) found.push(cp);
    }
    assert.deepEqual(found, [...FOLDS_TO_ASCII]);
  });

  test('valueStringEnd: the closing quote of a value string; minus where to look on otherwise, never past the row', () => {
    const at = (json: string, piece: string, end = Buffer.byteLength(json)): number => valueStringEnd(Buffer.from(json), 0, json.indexOf(piece), end);
    assert.equal(at('{"a":"xy z"}', 'y'), 10);
    assert.equal(at('{"xy" : 1}', 'y'), -5, 'a member name: on after its closing quote');
    assert.equal(at('{"a":123}', '2'), -7, 'a number: on after the hit');
    assert.equal(at('{"a":"xyz', 'y', 9), -9, 'a string the row does not close: on at its end');
  });
  test('repeatsAName: per object, nested objects and arrays apart, spaced text', () => {
    const r = (json: string): boolean => {
      const bytes = Buffer.from(json);
      return repeatsAName(bytes, 0, bytes.length);
    };
    assert.equal(r('{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}'), false);
    assert.equal(r('{"a":1,"b":2,"a":3}'), true);
    assert.equal(r('{"a" : 1 , "a" : 2}'), true);
    assert.equal(r('{"x":{"a":1,"a":2}}'), true);
    assert.equal(r('{"a":"a","b":["a","a"]}'), false);
    assert.equal(r('{"ab":1,"a":2,"b":3}'), false);
    assert.equal(r(`${'{"a":'.repeat(70)}1${'}'.repeat(70)}`), true, 'deeper than it follows: parsed');
  });
});

describe('QueryEngine: the first q is answered by a scan, and the text index is built after it', () => {
  test('q before the index, and after it: the same answer; the build starts once the scan has answered', async () => {
    const texts = Array.from({ length: 2000 }, (_, i) => textOf(`p${i}`, record()));
    const rows = rowsOf(texts);
    const engine = new QueryEngine(rows);
    const ask = async (on: QueryEngine<StoredEntity>, q: string) => {
      const answer = await on.query({ filters: [], sort: [], search: searchWords(q), offset: 0, limit: 50 });
      return { total: answer.total, ids: answer.entities.map((e) => (e.record as { id: string }).id) };
    };
    assert.equal(engine.searchIndexed, false);
    const first = await ask(engine, 'phone');
    assert.ok(first.total > 0);
    for (let turns = 0; !engine.searchIndexed; turns++) {
      assert.ok(turns < 10_000, 'the text index was not built after the scan answered');
      await turn();
    }
    // Each word asked of the indexed engine for the first time (no kept search), and of a fresh engine, which scans.
    for (const q of QUERIES.filter((w) => w !== 'phone')) {
      const fresh = new QueryEngine(rows);
      assert.deepEqual(await ask(engine, q), await ask(fresh, q), q);
    }
    assert.deepEqual(await ask(engine, 'phone'), first);
  });

  test('a first search cut off by its budget -> the build starts all the same, and the retry waits for it', async () => {
    // 20,000 rows (about 3 MB of JSON): more than one 0.5 ms slice of scanning on any machine, so the
    // query, already past its deadline, is cut off at its first yield.
    const rows = rowsOf(Array.from({ length: 20_000 }, (_, i) => textOf(`p${i}`, record())));
    const engine = new QueryEngine(rows);
    const ask = (deadline?: number) => engine.query({ filters: [], sort: [], search: ['kilo'], offset: 0, limit: 10, ...(deadline === undefined ? {} : { deadline }) });
    await assert.rejects(Promise.resolve(ask(performance.now() - 1)), QueryTimeoutError);
    const retry = await ask();
    assert.equal(engine.searchIndexed, true, 'the retry was answered from the index the cut-off scan started');
    assert.equal(retry.total, (await new QueryEngine(rows).query({ filters: [], sort: [], search: ['kilo'], offset: 0, limit: 10 })).total);
  });

  test('a search while the build runs -> it waits for the index (no second scan), and the answer is the same', async () => {
    const rows = rowsOf(Array.from({ length: 3000 }, (_, i) => textOf(`p${i}`, record())));
    const engine = new QueryEngine(rows);
    const total = async (on: QueryEngine<StoredEntity>, q: string): Promise<number> => (await on.query({ filters: [], sort: [], search: searchWords(q), offset: 0, limit: 10 })).total;
    await total(engine, 'kilo');
    assert.equal(engine.searchIndexed, false, 'the first search was answered before the build');
    const during = await total(engine, 'lamp');
    assert.equal(engine.searchIndexed, true, 'the second search waited for the index');
    assert.equal(during, await total(new QueryEngine(rows), 'lamp'));
  });
});
