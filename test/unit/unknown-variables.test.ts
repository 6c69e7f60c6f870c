import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { OPTIONS } from '../../src/config.js';
import { editDistance, KNOWN_VARIABLES, nearestKnown, OTHER_VARIABLES, unknownVariableWarnings } from '../../src/unknown-variables.js';

const warning = (name: string, hint: string): string => `${name} is set, but halserve reads no such variable (ignored): ${hint}`;

describe('unknown HALSERVE_* variables (src/unknown-variables.ts)', () => {
  test('editDistance: insertions, deletions, substitutions and a swap of neighbours each cost 1', () => {
    assert.equal(editDistance('TOKENS', 'TOKENS'), 0);
    assert.equal(editDistance('TOKEN', 'TOKENS'), 1);
    assert.equal(editDistance('DURABILTY', 'DURABILITY'), 1);
    assert.equal(editDistance('RATELIMIT', 'RATE_LIMIT'), 1);
    assert.equal(editDistance('TOKNES', 'TOKENS'), 1);
    assert.equal(editDistance('PORT', 'HOST'), 2);
    assert.equal(editDistance('', 'LOG'), 3);
    assert.equal(editDistance('LOG', ''), 3);
  });

  test('a misspelling -> the nearest known names; a name far from all of them -> none', () => {
    assert.deepEqual(nearestKnown('HALSERVE_TOKEN'), ['HALSERVE_TOKENS']);
    assert.deepEqual(nearestKnown('HALSERVE_DURABILTY'), ['HALSERVE_DURABILITY']);
    assert.deepEqual(nearestKnown('HALSERVE_RATELIMIT'), ['HALSERVE_RATE_LIMIT']);
    assert.deepEqual(nearestKnown('HALSERVE_WEBHOOK'), ['HALSERVE_WEBHOOKS']);
    assert.deepEqual(nearestKnown('HALSERVE_NOAUTH'), ['HALSERVE_NO_AUTH']);
    assert.deepEqual(nearestKnown('HALSERVE_Tokens'), ['HALSERVE_TOKENS'], 'letter case is no distance');
    assert.deepEqual(nearestKnown('HALSERVE_POST'), ['HALSERVE_HOST', 'HALSERVE_PORT'], 'a tie names both');
    assert.deepEqual(nearestKnown('HALSERVE_SEEDS'), ['HALSERVE_SEED'], "the entrypoint's variable is among the known");
    assert.deepEqual(nearestKnown('HALSERVE_FOO'), [], 'two edits in three letters is no slip');
    assert.deepEqual(nearestKnown('HALSERVE_X'), []);
    assert.deepEqual(nearestKnown('HALSERVE_CACHE_SIZE'), []);
  });

  test('every variable halserve reads -> no warning; nor one without the prefix', () => {
    const env = Object.fromEntries([...KNOWN_VARIABLES, 'PORT', 'HOST', 'DATABASE_URL', 'HALSERVE', 'HALSERVETOKENS', 'halserve_tokens'].map((name) => [name, 'x']));
    assert.deepEqual(unknownVariableWarnings(env), []);
    for (const option of OPTIONS) for (const name of option.env) if (name.startsWith('HALSERVE_')) assert.ok(KNOWN_VARIABLES.has(name), name);
    for (const name of ['HALSERVE_DATA', 'HALSERVE_STORE']) assert.ok(KNOWN_VARIABLES.has(name), `${name}: read by halserve backup, import and export`);
  });

  test('unknown ones -> one line each, in name order, naming the variable and never its value', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const lines = unknownVariableWarnings({ HALSERVE_TOKEN: secret, HALSERVE_DURABILTY: 'none', HALSERVE_CACHE_SIZE: secret, HALSERVE_TOKENS: 't' });
    assert.deepEqual(lines, [
      warning('HALSERVE_CACHE_SIZE', 'halserve --help lists the variables it reads'),
      warning('HALSERVE_DURABILTY', 'did you mean HALSERVE_DURABILITY?'),
      warning('HALSERVE_TOKEN', 'did you mean HALSERVE_TOKENS?'),
    ]);
    for (const line of lines) assert.ok(!line.includes(secret) && !line.includes('none'), line);
  });

  test('a name with a line break or other odd characters -> quoted as JSON, one line; a very long one -> cut', () => {
    assert.deepEqual(unknownVariableWarnings({ 'HALSERVE_A\nhalserve: forged': '1' }), [warning('"HALSERVE_A\\nhalserve: forged"', 'halserve --help lists the variables it reads')]);
    const [long] = unknownVariableWarnings({ [`HALSERVE_${'Z'.repeat(500)}`]: '1' });
    assert.ok(long !== undefined && long.length < 200 && long.startsWith(`HALSERVE_${'Z'.repeat(71)}…`), long);
  });

  test('every HALSERVE_ name the repository mentions is one halserve reads (or is said here why not)', () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    // Names that look like variables and are not: an error's code, and the README's example of a misspelling.
    const notVariables = new Set(['HALSERVE_DEADLINE', 'HALSERVE_TOKEN']);
    // The tests of the warning, which misspell on purpose.
    const skipped = new Set(['test/unit/unknown-variables.test.ts', 'test/cli/unknown-variables.test.ts']);
    const mentioned = new Map<string, string[]>();
    const walk = (dir: string): void => {
      for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
        const file = dir === '' ? entry.name : `${dir}/${entry.name}`;
        if (entry.isDirectory()) {
          if (!['node_modules', '.git', 'dist', 'coverage', '.bench'].includes(entry.name)) walk(file);
        } else if (entry.isFile() && !skipped.has(file) && statSync(path.join(root, file)).size < 2_000_000) {
          for (const m of readFileSync(path.join(root, file), 'utf8').matchAll(/\bHALSERVE_[A-Z0-9_]*[A-Z0-9]\b/g)) mentioned.set(m[0], [...(mentioned.get(m[0]) ?? []), file]);
        }
      }
    };
    walk('');
    const unknown = [...mentioned].filter(([name]) => !KNOWN_VARIABLES.has(name) && !notVariables.has(name)).map(([name, files]) => `${name} (${files.join(', ')})`);
    assert.deepEqual(unknown, [], 'add these to OTHER_VARIABLES in src/unknown-variables.ts, or say here why they are not variables');
    // And the other way round: every extra name is still mentioned beside the list itself.
    const elsewhere = (name: string): boolean => (mentioned.get(name) ?? []).some((file) => file !== 'src/unknown-variables.ts');
    assert.deepEqual(Object.keys(OTHER_VARIABLES).filter((name) => !elsewhere(name)), []);
  });
});
