import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OTHER_VARIABLES, unknownVariableWarnings } from '../../src/unknown-variables.js';
import { spawnCli, startCli, tempDir } from '../helpers/process.js';

/**
 * A `HALSERVE_*` variable halserve does not read, through the real CLI: said on stderr, by name
 * only, with the known name it is nearest to; the server starts all the same.
 */

const UNKNOWN = /reads no such variable/;
/** The lines the tests' own environment already earns (none, normally), so that a test counts only its own. */
const inherited = new Set(unknownVariableWarnings(process.env).map((message) => `halserve: ${message}`));
const ownLines = (stderr: string): string[] => stderr.split('\n').filter((line) => line !== '' && !inherited.has(line));

describe('unknown HALSERVE_* variables at start-up (src/unknown-variables.ts)', () => {
  test('HALSERVE_TOKEN and HALSERVE_DURABILTY -> a warning naming each and its nearest variable, never the value; the server starts', async () => {
    const dir = await tempDir();
    const secret = 'tok-N0t-2-b3-ech0ed';
    const cli = await startCli(['--port', '0', '--data', dir, '--resource', 'items', '--log', 'off'], { HALSERVE_TOKEN: secret, HALSERVE_DURABILTY: 'none' });
    const lines = ownLines(cli.stderr());
    assert.deepEqual(lines.slice(0, 2), [
      'halserve: HALSERVE_DURABILTY is set, but halserve reads no such variable (ignored): did you mean HALSERVE_DURABILITY?',
      'halserve: HALSERVE_TOKEN is set, but halserve reads no such variable (ignored): did you mean HALSERVE_TOKENS?',
    ]);
    // What the warning is for: the token was not taken, so anyone may read.
    assert.equal((await fetch(`${cli.url}/items`)).status, 200);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    assert.ok(!cli.stderr().includes(secret) && !cli.stdout().includes(secret), 'the value is never printed');
  });

  test('every variable halserve, its entrypoint, tests and benchmarks read -> no such warning', async () => {
    const dir = await tempDir();
    const others = Object.fromEntries(Object.keys(OTHER_VARIABLES).map((name) => [name, '0']));
    const cli = await startCli([], {
      ...others,
      HALSERVE_PORT: '0',
      HALSERVE_DATA: dir,
      HALSERVE_RESOURCES: 'items',
      HALSERVE_TOKENS: 'tok',
      HALSERVE_LOG: 'off',
      HALSERVE_DURABILITY: 'none',
      HALSERVE_RATE_LIMIT: '1000',
      HALSERVE_MAX_STREAMS: '10',
    });
    assert.equal((await fetch(`${cli.url}/items`, { headers: { authorization: 'Bearer tok' } })).status, 200);
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
    assert.deepEqual(ownLines(cli.stderr()).filter((line) => UNKNOWN.test(line)), []);
  });

  test('a start-up failure the misspelling causes -> the warning first, then the failure, exit 1', async () => {
    const dir = await tempDir();
    const proc = spawnCli(['--port', '0', '--data', dir, '--host', '0.0.0.0'], { HALSERVE_TOKEN: 'tok' });
    assert.equal(await proc.exited, 1);
    assert.deepEqual(ownLines(proc.stderr()), [
      'halserve: HALSERVE_TOKEN is set, but halserve reads no such variable (ignored): did you mean HALSERVE_TOKENS?',
      'halserve: refusing to listen on 0.0.0.0 without authentication: set HALSERVE_TOKENS (or --token) or HALSERVE_JWKS (--jwks), or HALSERVE_NO_AUTH=1 (--no-auth) to serve without it',
    ]);
  });

  test('halserve backup with HALSERVE_DAT -> the same warning before its own message', async () => {
    const dir = await tempDir();
    const proc = spawnCli(['backup', '--to', `${dir}/copy`], { HALSERVE_DAT: dir, HALSERVE_DATA: '', HALSERVE_STORE: '', DATABASE_URL: '' });
    assert.equal(await proc.exited, 1);
    assert.deepEqual(ownLines(proc.stderr()), [
      'halserve: HALSERVE_DAT is set, but halserve reads no such variable (ignored): did you mean HALSERVE_DATA?',
      'halserve: halserve backup needs --data <data-dir> (or HALSERVE_DATA), or --from postgres://…',
    ]);
  });
});
