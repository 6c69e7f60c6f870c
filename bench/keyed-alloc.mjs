/**
 * What a keyed POST allocates, beside the same POST unkeyed: `node bench/keyed-alloc.mjs` after
 * `npm run build` (`SRC=<dir>` measures another build's `dist/`; `N`, requests measured, default
 * 100,000; `PRELOAD`, requests first, default 20,000).
 *
 * Runs `bench/keyed-cost.mjs` alone for each contender (`ONLY=keyed`, `ONLY=plain`) under node's
 * `--trace-gc-nvp`, and sums what the collector's lines report: bytes allocated since the last
 * collection, bytes promoted, collections and their pauses, over the whole process, divided by the
 * requests it sent. Allocation does not move with the host's steal as CPU time does
 * (bench/NOTES.md, 2026-12-03), so a change to the keyed path that allocates less can be told from
 * one that does not on any day; its CPU cost still needs `bench/ab-deployed.ts` on a quiet host
 * (bench/proposals/lean-keyed-path.md).
 */
import { spawnSync } from 'node:child_process';

const script = new URL('./keyed-cost.mjs', import.meta.url).pathname;
const N = Number(process.env['N'] ?? 100_000);
const PRELOAD = Number(process.env['PRELOAD'] ?? 20_000);
const requests = N + PRELOAD;

/** Sums one `--trace-gc-nvp` field over the lines that have it. */
function total(lines, field) {
  const pattern = new RegExp(`\\b${field}=([0-9.]+)`);
  let sum = 0;
  for (const line of lines) sum += Number(pattern.exec(line)?.[1] ?? 0);
  return sum;
}

function measure(only) {
  const run = spawnSync(process.execPath, ['--trace-gc-nvp', script], {
    env: { ...process.env, ONLY: only, N: String(N), PRELOAD: String(PRELOAD) },
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`keyed-cost.mjs (ONLY=${only}) failed: ${run.stderr || run.stdout}`);
  const lines = run.stdout.split('\n').filter((line) => line.includes('allocated='));
  return {
    kb: total(lines, 'allocated') / requests / 1024,
    promoted: total(lines, 'promoted') / requests,
    collections: lines.length,
    pauseUs: (total(lines, 'pause') * 1000) / requests,
  };
}

const plain = measure('plain');
const keyed = measure('keyed');
const row = (name, m) => `${name}: ${m.kb.toFixed(1)} KB allocated a request, ${m.promoted.toFixed(0)} bytes promoted, ${m.collections} collections, pauses ${m.pauseUs.toFixed(1)} µs a request`;
console.log(row('nonce', plain));
console.log(row('keyed', keyed));
console.log(`the key allocates ${(keyed.kb - plain.kb).toFixed(1)} KB a request more (${requests.toLocaleString('en-US')} requests each, preload included)`);
