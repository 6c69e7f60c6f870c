import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import postgres from 'postgres';
import { textArray } from '../../src/store/pg/driver.js';
import { freshDatabase, pgMissing } from './helpers.js';

describe('textArray: the writer\'s array parameters', { skip: pgMissing }, () => {
  const values = ['plain', 'dash-and_underscore', 'comma,inside', 'quote"inside', 'back\\slash', '{braces}', ' spaced ', 'NULL', '', 'ünïcødé ✓', '\\"', null, '{"a":[1,"x"]}'];
  test('every value, escapes and NULL included -> the same values out of unnest($1::text[])', async () => {
    const sql = postgres(await freshDatabase(), { max: 1, onnotice: () => undefined });
    after(() => sql.end({ timeout: 1 }));
    const rows = await sql.unsafe<{ v: string | null }[]>('SELECT unnest($1::text[]) AS v', [textArray(values)]);
    assert.deepEqual(rows.map((r) => r.v), values);
    const [empty] = await sql.unsafe<{ n: number }[]>('SELECT cardinality($1::text[]) AS n', [textArray([])]);
    assert.equal(empty?.n, 0);
  });
});
