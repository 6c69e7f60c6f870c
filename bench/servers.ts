/**
 * Starting and stopping the servers under test, each as its own process, pinned to the server core
 * when pinning is on.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import path from 'node:path';

/**
 * The kinds of server the harness compares: halserve as deployed (a bearer token on every
 * request), the same without a token for reference, the same with a JWT from an identity provider
 * (`halserve-jwt`), halserve restarted on data another one loaded
 * (`halserve-fresh`), the replay limit, the durable limit (the replay limit that also parses each
 * write's body, appends it and fdatasyncs per batch), and json-server.
 */
export type ServerKind = 'halserve' | 'halserve-keyed' | 'halserve-nonce' | 'halserve-no-token' | 'halserve-jwt' | 'halserve-fresh' | 'limit' | 'durable-limit' | 'durable-limit-dsync' | 'json-server';

/** The bearer token halserve is started with (`--token`) and every request to it sends, as deployments do. */
export const BENCH_TOKEN = 'bench-3f9c2a7d41e85b06c1d9e4f2a8b7c530';
/** The `Authorization` header of a request to halserve started with `BENCH_TOKEN` (RFC 6750 §2.1). */
export const BENCH_AUTHORIZATION = `Bearer ${BENCH_TOKEN}`;

/** A running server. */
export interface Running {
  readonly kind: ServerKind;
  readonly pid: number;
  readonly port: number;
  /** Milliseconds from spawn to ready (the listening line, or the first answer for json-server). */
  readonly startupMs: number;
  /** Sends SIGTERM and waits for the exit (SIGKILL after 10 s). Resolves the exit code. */
  stop(): Promise<number | null>;
  /** The last 4,000 characters the server wrote to stderr (warnings, errors). */
  stderr(): string;
  /** Undefined while it runs; its exit code or signal once it has exited on its own or been stopped. */
  exited(): string | undefined;
}

/** Cores: the server gets the first, the load generator the second (when pinning is on). */
export const SERVER_CPU = '0';
export const LOAD_CPU = '1';

/** `[command, ...args]`, prefixed with `taskset -c <cpu>` when pinning. */
export function pinned(pin: boolean, cpu: string, command: string, args: readonly string[]): [string, string[]] {
  return pin ? ['taskset', ['-c', cpu, command, ...args]] : [command, [...args]];
}

interface StartOptions {
  readonly kind: ServerKind;
  readonly pin: boolean;
  readonly args: readonly string[];
  readonly cwd: string;
  /** Returns the port once a stdout line says the server is ready. */
  readonly readyLine?: (line: string) => number | undefined;
  /** Otherwise: the port to poll until it answers. */
  readonly pollPort?: number;
  readonly timeoutMs: number;
}

function stopper(child: ChildProcess): () => Promise<number | null> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const [code] = (await exited) as [number | null];
    clearTimeout(timer);
    return code;
  };
}

async function start(options: StartOptions): Promise<Running> {
  const [command, args] = pinned(options.pin, SERVER_CPU, process.execPath, options.args);
  const started = process.hrtime.bigint();
  const child = spawn(command, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  // Keep both pipes drained for the whole run: a full pipe would stall the server.
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const lines = createInterface({ input: child.stdout! });
  const ready = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${options.kind} not ready after ${options.timeoutMs} ms\n${stderr}`)), options.timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${options.kind} exited with ${code} before it was ready:\n${stderr}`));
    });
    child.once('error', reject);
    if (options.readyLine) {
      const readyLine = options.readyLine;
      lines.on('line', (line) => {
        const port = readyLine(line);
        if (port !== undefined) {
          clearTimeout(timer);
          resolve(port);
        }
      });
    } else if (options.pollPort !== undefined) {
      lines.resume();
      const port = options.pollPort;
      void poll(port).then(() => {
        clearTimeout(timer);
        resolve(port);
      });
    }
  });
  try {
    const port = await ready;
    const startupMs = Number(process.hrtime.bigint() - started) / 1e6;
    child.removeAllListeners('exit');
    return {
      kind: options.kind,
      pid: child.pid!,
      port,
      startupMs,
      stop: stopper(child),
      stderr: () => stderr,
      exited: () => (child.exitCode !== null ? `exit code ${child.exitCode}` : child.signalCode !== null ? `signal ${child.signalCode}` : undefined),
    };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

async function poll(port: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET' }, (res) => {
        res.resume();
        resolve(true);
      });
      req.on('error', () => resolve(false));
      req.end();
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A free loopback port for servers that cannot be told `--port 0`. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

const LISTENING = /listening on http:\/\/[^\s:]+:(\d+)/;

function listeningPort(line: string): number | undefined {
  const match = LISTENING.exec(line);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * The node flags of a built CLI's first line (`#!/usr/bin/env -S node <flags>`, src/cli.ts): what
 * `halserve`, `npm start` and the image run it with. None for a file without them (an older build).
 */
export function nodeFlagsOf(entry: string): string[] {
  const first = readFileSync(entry, 'utf8').slice(0, 200).split('\n', 1)[0] ?? '';
  const flags = /^#!\/usr\/bin\/env -S node((?: --[\w-]+(?:=\S+)?)*)\s*$/.exec(first)?.[1];
  return flags === undefined ? [] : flags.trim().split(/\s+/).filter((f) => f !== '');
}

/**
 * halserve from its built output, as a user runs it: `node <flags of its first line> dist/cli.js --port 0 --data <dir> --log off`
 * (durability full, the default). `nodeArgs` go to node itself (`--cpu-prof` for bench/profile.ts),
 * `extraArgs` to halserve (`--durability full`, `--resource blobs`).
 */
export function startHalserve(
  root: string,
  dataDir: string,
  pin: boolean,
  nodeArgs: readonly string[] = [],
  extraArgs: readonly string[] = [],
  kind: ServerKind = 'halserve',
): Promise<Running> {
  const entry = process.env['BENCH_HALSERVE'] ?? 'dist/cli.js';
  return start({
    kind,
    pin,
    cwd: root,
    args: [...nodeFlagsOf(path.resolve(root, entry)), ...nodeArgs, entry, '--port', '0', '--host', '127.0.0.1', '--data', dataDir, '--log', 'off', ...extraArgs],
    readyLine: listeningPort,
    timeoutMs: 180_000,
  });
}

/** halserve as deployed: with `--token BENCH_TOKEN` (requests then send `BENCH_AUTHORIZATION`). */
export function startHalserveWithToken(root: string, dataDir: string, pin: boolean, extraArgs: readonly string[] = [], kind: ServerKind = 'halserve'): Promise<Running> {
  return startHalserve(root, dataDir, pin, [], ['--token', BENCH_TOKEN, ...extraArgs], kind);
}

/** The bench's identity provider: one RS256 key, its key set, and a token it signed (issue 17's JWT column). */
const JWT_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 });
export const BENCH_JWT_ISSUER = 'https://idp.bench.example/';
export const BENCH_JWT_AUDIENCE = 'halserve-bench';
const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
const jwtInput = `${b64url({ alg: 'RS256', kid: 'bench', typ: 'JWT' })}.${b64url({ iss: BENCH_JWT_ISSUER, aud: BENCH_JWT_AUDIENCE, sub: 'bench-client', iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 24 * 3600, scope: 'read write' })}`;
/** `Authorization` of the JWT column: the token is verified once, then its check is cached until its `exp`. */
export const BENCH_JWT_AUTHORIZATION = `Bearer ${jwtInput}.${sign('sha256', Buffer.from(jwtInput), JWT_KEY.privateKey).toString('base64url')}`;

/**
 * halserve as deployed with an identity provider: `--jwks` (a key set file beside the data
 * directory), `--jwt-issuer`, `--jwt-audience`, and the static token too; requests send
 * `BENCH_JWT_AUTHORIZATION`.
 */
export async function startHalserveWithJwt(root: string, dataDir: string, pin: boolean, kind: ServerKind = 'halserve-jwt'): Promise<Running> {
  const jwks = path.join(path.dirname(dataDir), `${path.basename(dataDir)}.jwks.json`);
  await writeFile(jwks, JSON.stringify({ keys: [{ ...JWT_KEY.publicKey.export({ format: 'jwk' }), kid: 'bench', alg: 'RS256', use: 'sig' }] }));
  return startHalserve(root, dataDir, pin, [], ['--token', BENCH_TOKEN, '--jwks', jwks, '--jwt-issuer', BENCH_JWT_ISSUER, '--jwt-audience', BENCH_JWT_AUDIENCE], kind);
}

/**
 * The replay server over a capture file. With `durableFile`, the durable limit: each request with
 * a body has it parsed, appended to that file as a line and fdatasync'd (one fdatasync per batch
 * of concurrent writes, as a group commit does) before its captured answer goes out; `dsync`: the
 * file opened with O_DSYNC instead, each batch one write and no fdatasync (a reference).
 */
export function startLimit(root: string, captureFile: string, pin: boolean, nodeArgs: readonly string[] = [], durableFile?: string, dsync = false): Promise<Running> {
  return start({
    kind: durableFile === undefined ? 'limit' : dsync ? 'durable-limit-dsync' : 'durable-limit',
    pin,
    cwd: root,
    args: [...nodeArgs, path.join(root, 'bench', 'limit-server.mjs'), captureFile, ...(durableFile === undefined ? [] : ['--durable', durableFile, ...(dsync ? ['--dsync'] : [])])],
    readyLine: listeningPort,
    timeoutMs: 30_000,
  });
}

/** json-server 0.17.4 from `.bench`, with its defaults and its log off. */
export async function startJsonServer(root: string, dbFile: string, pin: boolean): Promise<Running> {
  const port = await freePort();
  return start({
    kind: 'json-server',
    pin,
    cwd: path.dirname(dbFile),
    args: [path.join(root, '.bench', 'node_modules', 'json-server', 'lib', 'cli', 'bin.js'), dbFile, '--port', String(port), '--host', '127.0.0.1', '--quiet'],
    pollPort: port,
    timeoutMs: 120_000,
  });
}
