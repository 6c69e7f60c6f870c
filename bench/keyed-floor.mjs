/**
 * How low a keyed JSON-lines POST can go as deployed (issue 17; bench/NOTES.md, "how low a keyed
 * JSON-lines POST can go"): `node bench/keyed-floor.mjs [rounds]` after `npm run build`.
 *
 * Makes copies of `dist/` in a temporary directory, each with a piece of the keyed path cut out
 * (three of `bench/keyed-variants.mjs`'s: `minimal-entry`, `no-ledger`, `essentials`; see there
 * what each cuts), and measures them beside the build as it is with `bench/ab-deployed.ts post` (1,000 entities
 * loaded, rounds in a rotated order), each server sent a fresh `Idempotency-Key` with every POST;
 * the last column is the build as it is sent the same bytes under `X-Request-Nonce`, which it does
 * not read, so that every ratio printed is "÷ the same POST unkeyed". The copies write twice on a
 * retry: a measurement, never a server to run.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dist, writeVariants } from './keyed-variants.mjs';

const root = new URL('..', import.meta.url).pathname;
const rounds = process.argv[2] ?? '6';
if (!fs.existsSync(path.join(dist, 'cli.js'))) {
  console.error('keyed-floor: run `npm run build` first');
  process.exit(1);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'halserve-keyed-floor-'));
try {
  const variants = writeVariants(tmp, ['minimal-entry', 'no-ledger', 'essentials']);
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'bench/ab-deployed.ts'), 'post', rounds, '1000', 'keyed:dist/cli.js', ...Object.values(variants).map((cli) => `keyed:${cli}`), 'nonce:dist/cli.js'],
    { cwd: root, stdio: 'inherit' },
  );
  process.exitCode = run.status ?? 1;
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
