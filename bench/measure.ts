/** One measured run: the load generator against one server, with the server's CPU time around it. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { BenchConfig } from './config.js';
import type { BenchRequest } from './capture.js';
import { cpuSeconds, hostTicks, stealShare } from './proc.js';
import { LOAD_CPU, pinned, type Running } from './servers.js';

/** What one run of one contender measured. */
export interface Sample {
  readonly requests: number;
  readonly rps: number;
  /** Latency percentiles in ms (autocannon's histogram has 1 ms resolution). */
  readonly p50: number;
  readonly p99: number;
  /** Server CPU (user + system, all threads) per completed request, in microseconds. */
  readonly cpuUs: number;
  /** Share of its core the load generator used; near 1 means it set the pace, not the server. */
  readonly loadCpu: number;
  /**
   * Share of the machine's busy CPU time the hypervisor gave to other guests over the measured run
   * (`stealShare`; NaN off Linux). A virtual machine's neighbours slow every contender, but not
   * each part of a request alike, so the ratios of a run with much steal are not those of a quiet one.
   */
  readonly steal: number;
  readonly non2xx: number;
  readonly errors: number;
  /** Set when some answers were not 2xx, or failed: the figures of this run are not comparable. */
  readonly problem?: string;
}

interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  loadCpu: number;
}

/**
 * How the connections walk a contender's requests: each from the start of the list (autocannon's
 * way), or all together through one walk, so that each request goes out once before any repeats.
 */
export type RequestOrder = 'per-connection' | 'global';

/**
 * Runs warm-up and then the measured load against `server`. A run in which some answer was not 2xx
 * is returned with `problem` set (and reported as such), never quietly averaged in.
 */
export async function measure(config: BenchConfig, server: Running, requests: readonly BenchRequest[], label: string, order: RequestOrder = 'per-connection', fresh?: string): Promise<Sample> {
  const job = path.join(config.work, `job-${process.pid}.json`);
  await fs.writeFile(
    job,
    JSON.stringify({
      url: `http://127.0.0.1:${server.port}`,
      connections: config.connections,
      warmup: config.warmup,
      duration: config.duration,
      rate: config.rate,
      order,
      fresh,
      requests,
    }),
  );
  const [command, args] = pinned(config.pin, LOAD_CPU, process.execPath, [path.join(config.root, 'bench', 'load.mjs'), job]);
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  let before = 0;
  let hostBefore: ReturnType<typeof hostTicks>;
  let result: LoadResult | undefined;
  for await (const line of createInterface({ input: child.stdout })) {
    const message = JSON.parse(line) as { event: string; result?: LoadResult };
    if (message.event === 'ready') {
      // The warm-up is over: count the server's CPU from here.
      before = cpuSeconds(server.pid);
      hostBefore = hostTicks();
      child.stdin.write('go\n');
    } else if (message.event === 'done') {
      result = message.result;
      break;
    }
  }
  const after = cpuSeconds(server.pid);
  const steal = stealShare(hostBefore, hostTicks());
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const [code] = (await exited) as [number | null];
  clearTimeout(timer);
  await fs.rm(job, { force: true });
  if (!result || code !== 0) throw new Error(`load generator for ${label} failed (exit ${code})`);
  const failed = result.non2xx > 0 || result.errors > 0 || result.timeouts > 0;
  return {
    ...(failed ? { problem: `${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts` } : {}),
    requests: result.requests,
    rps: result.rps,
    p50: result.p50,
    p99: result.p99,
    cpuUs: result.requests === 0 ? NaN : ((after - before) * 1e6) / result.requests,
    loadCpu: result.loadCpu,
    steal,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}
