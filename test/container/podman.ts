/**
 * What the container tests share: podman as a child process, the environment run.sh exports, and
 * JSON guards.
 */
import { spawn, type SpawnOptions } from 'node:child_process';

export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(`${name} is not set: run this through test/container/run.sh`);
  }
  return value;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Runs podman and resolves with its exit code and output; never rejects on a non-zero exit. */
export function podman(args: readonly string[], timeoutMs = 60_000): Promise<Result> {
  return run('podman', args, { timeout: timeoutMs });
}

/** Runs `command` and resolves with its exit code and output; never rejects on a non-zero exit. */
export function run(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs podman and resolves with its stdout; rejects, with its stderr, on a non-zero exit. */
export async function podmanOk(args: readonly string[]): Promise<string> {
  const result = await podman(args);
  if (result.code !== 0) {
    throw new Error(`podman ${args.join(' ')} -> exit ${result.code}\n${result.stderr}`);
  }
  return result.stdout;
}
