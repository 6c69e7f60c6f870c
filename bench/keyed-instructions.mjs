/**
 * What a keyed POST costs in instructions, beside the same POST unkeyed: `node bench/keyed-instructions.mjs`
 * after `npm run build` (`SRC=<dir>` for another build's `dist/`; `N1`, `N2`, requests of the short
 * and the long run, default 2,000 and 32,000; `PRELOAD`, requests before them, default 30,000;
 * `NODE_FLAGS`, node's flags, default `--single-threaded --initial-old-space-size=2048`). Needs
 * Valgrind (`apt-get install valgrind`); takes ~6 minutes, ~10 with another run beside it.
 *
 * Runs `bench/keyed-cost.mjs` with one contender alone (`ONLY=plain`, `ONLY=keyed`) under
 * `valgrind --tool=cachegrind`, which counts the instructions the process executes, the code the
 * JIT makes included (`--smc-check=all-non-file`). Each contender runs twice, `N1` and `N2`
 * requests after the same start-up and preload, and the difference of the two counts divided by
 * `N2 − N1` is the instructions a request: start-up, compilation of the harness and the preload
 * cancel out. The runs of one contender are side by side with the other's, one per core. Node runs
 * `--single-threaded`: with its compiler and collector on threads of their own, how much of their
 * work fell inside the window moved the count by a third between two runs of one build; on the
 * main thread, by under 2%. The old generation starts at 2 GiB (`--initial-old-space-size`), so
 * that no mark-compact of the whole heap falls inside either run: counted apart or not, one more or
 * fewer in a window still moved the rest of the count by up to ~10,000 instructions a request
 * (bench/NOTES.md, 2026-12-03, 11:40–13:30); with it, the full collector reads ~0 and runs of the
 * unkeyed POST agree within ~3k. With a window of 10,000 requests a keyed build still moved by
 * up to ~15k (some runs re-optimise in it); with 30,000 (`N2` 32,000, the default) two runs of each
 * build agreed within ~2k. Figures taken with another window are not comparable: the longer one
 * reads a few thousand more a keyed request. The preload is long enough for the functions a
 * batch calls once (the store's append) to be optimised before the window: with 10,000, ~6,000
 * instructions a keyed request of the window were still the optimising compiler's.
 *
 * Why: on this project's shared VM, CPU time moves with the neighbours even when the host's steal
 * reads 0% (bench/NOTES.md, 2026-12-03), and the VM exposes no hardware counters (`perf` has no
 * `cpu` events). Instructions do not move with them: two runs of the same build differ by ~1% of
 * the count, most of it start-up, which the difference cancels. A change to the keyed path can so
 * be told from one that does nothing on any day, beside `bench/keyed-alloc.mjs` (what it allocates).
 * Instructions are not time: a cache miss (a look-up in a full table of answers, the copy into cold
 * memory) costs time, not instructions, and the kernel's side of a synced write is not counted
 * (Valgrind counts user space), and under Valgrind OpenSSL does not see the processor's SHA
 * extensions, so a digest counts ~4,000 instructions more than it runs. The row itself is
 * `npm run bench`'s, as deployed.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const script = new URL('./keyed-cost.mjs', import.meta.url).pathname;
const N1 = Number(process.env['N1'] ?? 2_000);
const N2 = Number(process.env['N2'] ?? 32_000);
const PRELOAD = Number(process.env['PRELOAD'] ?? 30_000);
const NODE_FLAGS = (process.env['NODE_FLAGS'] ?? '--single-threaded --initial-old-space-size=2048').split(' ').filter(Boolean);

/**
 * What counts apart from the request's own work: the optimising compiler (how much of it falls in
 * the window depends on when each function reaches its threshold) and the full collector (a
 * mark-compact of the whole heap, one more or fewer of which in the window moved a run's count by
 * 10,000 instructions a request). Both are reported, each on its own line; the scavenger, whose
 * work grows with what a request allocates, stays in the request's count.
 */
const BUCKETS = [
  ['compiler', /v8::internal::compiler::|v8::internal::maglev::/],
  ['full collector', /MarkCompact|MarkingVisitor|MarkingBarrier|MarkingFromCode|MarkingSlow|IncrementalMarking|ConcurrentMarking|MarkBit|Sweeper|RecordMigratedSlot/],
];

/** The instructions a run of `only` with `n` requests executes, whole process, by bucket (`request`: the rest). */
function count(only, n) {
  return new Promise((resolve, reject) => {
    const out = path.join(tmp, `${only}-${n}.out`);
    const child = spawn('valgrind', ['--tool=cachegrind', '--cache-sim=no', '--smc-check=all-non-file', `--cachegrind-out-file=${out}`, process.execPath, ...NODE_FLAGS, script], {
      env: { ...process.env, ONLY: only, N: String(n), PRELOAD: String(PRELOAD) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => reject(error.code === 'ENOENT' ? new Error('keyed-instructions: valgrind is not installed (apt-get install valgrind)') : error));
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`keyed-instructions: ${only} with ${n} requests: exit ${code}\n${output.slice(-2000)}`));
      resolve(buckets(fs.readFileSync(out, 'utf8')));
    });
  });
}

/** A cachegrind output's instructions, summed by `BUCKETS` (by function name) and the rest. */
function buckets(text) {
  const sums = { request: 0, compiler: 0, 'full collector': 0 };
  let bucket = 'request';
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) {
      const name = line.slice(3);
      bucket = BUCKETS.find(([, pattern]) => pattern.test(name))?.[0] ?? 'request';
    } else if (line.charCodeAt(0) >= 0x30 && line.charCodeAt(0) <= 0x39) {
      sums[bucket] += Number(line.slice(line.indexOf(' ') + 1));
    }
  }
  return sums;
}

/** Instructions a request of `only`, by bucket: the slope between the short and the long run. */
async function perRequest(only) {
  const short = await count(only, N1);
  const long = await count(only, N2);
  return Object.fromEntries(Object.keys(short).map((name) => [name, (long[name] - short[name]) / (N2 - N1)]));
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'halserve-keyed-instructions-'));
try {
  const [plain, keyed] = await Promise.all([perRequest('plain'), perRequest('keyed')]);
  const k = (x) => `${(x / 1000).toFixed(1)}k`;
  for (const [name, r] of [['nonce', plain], ['keyed', keyed]]) console.log(`${name}: ${k(r.request)} instructions a request (and ${k(r.compiler)} of the compiler, ${k(r['full collector'])} of the full collector)`);
  console.log(`the key adds ${k(keyed.request - plain.request)} instructions a request; nonce ÷ keyed ${(plain.request / keyed.request).toFixed(3)}× (${N2 - N1} requests between the runs, ${PRELOAD} before)`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
