import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

/**
 * How long a test waits for something that should happen soon (a process ready, a change seen)
 * before calling it a failure. A bound for liveness on a loaded machine, never a measure of speed:
 * no test asserts how fast anything happened.
 */
export const LIVENESS_MS = 60_000;

/** A halserve process started from the CLI, as a user would start it. */
export interface CliProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** Everything printed so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal's name) when the process ends. */
  readonly exited: Promise<number | string>;
}

/** Spawns the CLI with `args`; `env` is added to the environment. */
export function spawnCli(args: readonly string[], env: Record<string, string> = {}): { child: ChildProcess; stdout: () => string; stderr: () => string; exited: Promise<number | string> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Starts the CLI and waits for its ready line (docs/conventions.md §8). */
export async function startCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliProcess> {
  const proc = spawnCli(args, env);
  const deadline = Date.now() + LIVENESS_MS;
  for (;;) {
    const match = /halserve listening on (http:\/\/\S+)\n/.exec(proc.stdout());
    if (match?.[1]) return { ...proc, url: match[1] };
    if (proc.child.exitCode !== null) throw new Error(`halserve exited ${proc.child.exitCode}: ${proc.stderr()}`);
    if (Date.now() > deadline) throw new Error(`halserve did not start: ${proc.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Directories `tempDir` made that no hook has removed yet. */
const madeDirs = new Set<string>();
// Removed at the latest when the test file's process exits: an `after` registered once the test
// that asked for the directory has ended (a callback that outlived it) never runs, and a full run
// left such directories behind.
process.once('exit', () => {
  for (const dir of madeDirs) rmSync(dir, { recursive: true, force: true });
});

/** A temporary directory removed after the test file. */
export async function tempDir(prefix = 'halserve-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  madeDirs.add(dir);
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    madeDirs.delete(dir);
  });
  return dir;
}

/** Waits until `condition` holds (polling), or fails after `ms` saying `what` did not happen. */
export async function eventually(condition: () => boolean | Promise<boolean>, what = 'a condition', ms = LIVENESS_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not in ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
