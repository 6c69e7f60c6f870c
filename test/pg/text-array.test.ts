import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import postgres from 'postgres';
import { textArray } from '../../src/store/pg/driver.js';
import { freshDatabase, pgMissing } from './helpers.js';

test('textArray -> each value quoted with only `"` and `\\` escaped by a backslash, on 2,000 generated arrays (a fixed seed)', () => {
  const alphabet = ['a', 'Z', ' ', ',', '{', '}', '"', '\\', '\n', '\u0000', '\u001f', '\u007f', 'é', '\u2028', '\ud83d\ude00', '\ud800', '\udfff', 'NULL'];
  let seed = 23;
  const random = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const value = (): string | null => (random() < 0.05 ? null : Array.from({ length: Math.floor(random() * 8) }, () => alphabet[Math.floor(random() * alphabet.length)]).join(''));
  for (let i = 0; i < 2000; i++) {
    const values = Array.from({ length: 1 + Math.floor(random() * 10) }, value);
    // The literal as PostgreSQL's array input reads it (and as an earlier version wrote it with one replace).
    const expected = `{${values.map((v) => (v === null ? 'NULL' : `"${[...v].map((c) => (c === '"' || c === '\\' ? `\\${c}` : c)).join('')}"`)).join(',')}}`;
    assert.equal(textArray(values), expected, JSON.stringify(values));
  }
});

describe('textArray: the writer\'s array parameters', { skip: pgMissing }, () => {
  const values = ['plain', 'dash-and_underscore', 'comma,inside', 'quote"inside', 'back\\slash', '{braces}', ' spaced ', 'NULL', '', 'ünïcødé ✓', '\\"', null, '{"a":[1,"x"]}', 'line\nbreak\ttab \u001f', 'emoji 😀 \u2028'];
  test('every value, escapes and NULL included -> the same values out of unnest($1::text[])', async () => {
    const sql = postgres(await freshDatabase(), { max: 1, onnotice: () => undefined });
    after(() => sql.end({ timeout: 1 }));
    const rows = await sql.unsafe<{ v: string | null }[]>('SELECT unnest($1::text[]) AS v', [textArray(values)]);
    assert.deepEqual(rows.map((r) => r.v), values);
    const [empty] = await sql.unsafe<{ n: number }[]>('SELECT cardinality($1::text[]) AS n', [textArray([])]);
    assert.equal(empty?.n, 0);
  });
});
