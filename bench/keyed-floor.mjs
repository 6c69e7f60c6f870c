/**
 * How low a keyed JSON-lines POST can go as deployed (issue 17; bench/NOTES.md, "how low a keyed
 * JSON-lines POST can go"): `node bench/keyed-floor.mjs [rounds]` after `npm run build`.
 *
 * Makes two copies of `dist/` in a temporary directory, each with one piece of the keyed path cut
 * out, and measures them beside the build as it is with `bench/ab-deployed.ts post` (1,000 entities
 * loaded, rounds in a rotated order), each server sent a fresh `Idempotency-Key` with every POST;
 * the last column is the build as it is sent the same bytes under `X-Request-Nonce`, which it does
 * not read, so that every ratio printed is "÷ the same POST unkeyed":
 *
 * - `minimal-entry`: a keyed write's entry in the log's answers line is written without the
 *   answer's headers and body (what would be left if a replay were rebuilt from the change's line
 *   instead of recorded, which the contract's "the first answer exactly as it was sent" rules out);
 * - `no-ledger`: no claim and no answer recorded: only the key's parse and digest and the keyed
 *   path through the handler and the write batcher are left.
 *
 * The copies are wrong on purpose (a retry of them writes twice): a measurement of what each piece
 * costs, never a server to run. Each cut is a text substitution in the compiled JavaScript; if a
 * place it cuts has changed, the script says which and stops rather than measure something else.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const dist = path.join(root, 'dist');
const rounds = process.argv[2] ?? '6';
if (!fs.existsSync(path.join(dist, 'cli.js'))) {
  console.error('keyed-floor: run `npm run build` first');
  process.exit(1);
}

/** A copy of `dist/` with `cuts` applied: [file, text to find, its replacement]. */
function strippedCopy(dir, cuts) {
  fs.cpSync(dist, dir, { recursive: true });
  for (const [file, find, replace] of cuts) {
    const at = path.join(dir, file);
    const text = fs.readFileSync(at, 'utf8');
    if (!text.includes(find)) throw new Error(`keyed-floor: ${file} no longer holds ${JSON.stringify(find)}: update this script's cuts`);
    fs.writeFileSync(at, text.replace(find, replace));
  }
  return path.join(dir, 'cli.js');
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'halserve-keyed-floor-'));
try {
  const minimal = strippedCopy(path.join(tmp, 'minimal-entry'), [
    [
      'store/log/answer-lines.js',
      'const shared = line === undefined ? 0 : sharedWithLine(body, line, json);',
      "return { k: key, f: remembered.fingerprint, t: remembered.at, s: answer.status, h: {}, bp: 0, bx: '', n };",
    ],
  ]);
  const none = strippedCopy(path.join(tmp, 'no-ledger'), [
    ['http/idempotent-write.js', 'const claimed = ledger.claim(key, fingerprint, legacy);', "const claimed = { kind: 'fresh', release() {} };"],
    ['http/idempotent-write.js', 'return given === undefined ? undefined : storedAnswer(given);', 'return undefined;'],
  ]);
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'bench/ab-deployed.ts'), 'post', rounds, '1000', 'keyed:dist/cli.js', `keyed:${minimal}`, `keyed:${none}`, 'nonce:dist/cli.js'],
    { cwd: root, stdio: 'inherit' },
  );
  process.exitCode = run.status ?? 1;
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
