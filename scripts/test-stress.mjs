#!/usr/bin/env node
// `npm run test:stress`: the whole test suite, several times in a row, while a CPU hog keeps every
// core busy. A test that depends on an idle machine (a duration, a count of timer ticks, a race it
// usually wins) fails here; `npm test` must not have any. Exits 1 if any run has a failure.
//
//   STRESS_RUNS=5        how many runs (default 5)
//   STRESS_HOG=stress-ng the hog: Debian's stress-ng when installed, else busy-looping node children
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';

const runs = Number(process.env.STRESS_RUNS ?? 5);
const cores = availableParallelism();

/** One busy worker per core, at the same priority as the tests. */
function startHog() {
  const stressNg = spawnSync('stress-ng', ['--version'], { stdio: 'ignore' }).status === 0;
  if (stressNg && process.env.STRESS_HOG !== 'node') {
    // A group of its own, ended whole: a SIGTERM to stress-ng alone left its workers spinning after
    // the runs (seen on 2026-11-26, eating both cores of every benchmark that came after).
    const child = spawn('stress-ng', ['--cpu', String(cores), '--cpu-method', 'matrixprod', '--quiet'], { stdio: 'ignore', detached: true });
    const stop = () => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    return { name: `stress-ng --cpu ${cores}`, stop };
  }
  const children = Array.from({ length: cores }, () => spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' }));
  return { name: `${cores} busy-looping node processes`, stop: () => children.forEach((child) => child.kill('SIGKILL')) };
}

/** Where each run's whole TAP output is kept, to read what failed and why. */
const logs = mkdtempSync(join(tmpdir(), 'halserve-stress-'));

/** Runs the suite once; resolves with its summary counts and the names of the tests that failed. */
function runSuite(run) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn('npm', ['run', '--silent', 'test:suite'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (out += chunk));
    child.on('exit', (code) => {
      writeFileSync(join(logs, `run-${run}.tap`), out);
      const count = (name) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(out)?.[1] ?? NaN);
      const failed = [...out.matchAll(/^\s*not ok \d+ - (.*)$/gm)].map((m) => m[1]);
      resolve({ code, tests: count('tests'), pass: count('pass'), fail: count('fail'), skipped: count('skipped'), cancelled: count('cancelled'), failed, seconds: Math.round((Date.now() - started) / 1000) });
    });
  });
}

const hog = startHog();
const stop = () => hog.stop();
process.on('exit', stop);
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

console.log(`test:stress: ${runs} runs of the suite while ${hog.name} keeps all ${cores} cores busy; each run's output in ${logs}`);
let failures = 0;
for (let run = 1; run <= runs; run++) {
  const result = await runSuite(run);
  const bad = result.code !== 0 || result.fail > 0 || result.cancelled > 0;
  if (bad) failures++;
  console.log(`run ${run}/${runs}: ${bad ? 'FAILED' : 'ok'} — tests ${result.tests}, pass ${result.pass}, fail ${result.fail}, cancelled ${result.cancelled}, skipped ${result.skipped}, exit ${result.code}, ${result.seconds} s`);
  for (const name of result.failed) console.log(`  not ok: ${name}`);
}
console.log(failures === 0 ? `test:stress: all ${runs} runs green under load` : `test:stress: ${failures} of ${runs} runs failed`);
process.exitCode = failures === 0 ? 0 : 1;
// The hog's child process keeps the event loop alive: ended here, or the script never exits.
stop();
