/** Readings of a process from Linux's `/proc`: CPU time and memory. */
import { readdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`, 100 on Linux). */
const CLOCK_TICKS = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * User + system CPU seconds the process has used so far, all its threads included (libuv's pool,
 * where fdatasync runs, counts too). Fields 14 and 15 of `/proc/<pid>/stat`, proc(5).
 */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces; the fields after it start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / CLOCK_TICKS;
}

/**
 * The machine's CPU time so far, in clock ticks, from the first line of `/proc/stat` (proc(5)):
 * `busy`, the time its CPUs ran anything or were taken by the hypervisor (user, nice, system, irq,
 * softirq and steal), and `steal`, the time a virtual CPU wanted to run while the hypervisor ran
 * another guest. Undefined where `/proc/stat` cannot be read (not Linux).
 */
export function hostTicks(): { readonly busy: number; readonly steal: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
    return { busy: user + nice + system + irq + softirq + steal, steal };
  } catch {
    return undefined;
  }
}

/**
 * The share of the machine's busy CPU time the hypervisor took (steal) between two `hostTicks`
 * readings: NaN when either is missing or nothing ran between them.
 */
export function stealShare(before: ReturnType<typeof hostTicks>, after: ReturnType<typeof hostTicks>): number {
  if (before === undefined || after === undefined) return NaN;
  const busy = after.busy - before.busy;
  return busy > 0 ? (after.steal - before.steal) / busy : NaN;
}

/** Resident memory now and at its peak, in MiB (`VmRSS`, `VmHWM` of `/proc/<pid>/status`). */
export function memoryMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/**
 * Nanoseconds the process's live threads have run on a CPU (the first field of each
 * `/proc/<pid>/task/<tid>/schedstat`): the same measure as `cpuSeconds`, at nanosecond rather than
 * clock-tick (10 ms) resolution, for requests that take a millisecond. Threads that have exited
 * are not counted.
 */
export function runNanoseconds(pid: number): number {
  let total = 0;
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return NaN; // The process has exited.
  }
  for (const tid of tids) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return total;
}

/**
 * Waits until none of `pids` has used more than `share` of a core over a `windowMs` window, or
 * `maxMs` have passed; returns the milliseconds waited. A contender is measured only once the ones
 * before it have finished what they still had queued: json-server goes on answering the requests
 * it had accepted for a second or more after its load generator stops, on the core the next server
 * is pinned to, and the first contender of every round paid for it. A process that has exited
 * counts as quiet.
 */
export async function untilQuiet(pids: readonly number[], maxMs = 15_000, share = 0.05, windowMs = 250): Promise<number> {
  const started = Date.now();
  const cpuOf = (pid: number): number => {
    try {
      return runNanoseconds(pid) / 1e9;
    } catch {
      return NaN;
    }
  };
  for (;;) {
    const before = pids.map(cpuOf);
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const busy = pids.some((pid, i) => cpuOf(pid) - before[i]! > (share * windowMs) / 1000);
    if (!busy || Date.now() - started >= maxMs) return Date.now() - started;
  }
}

/** This process's CPU list (`taskset -c -p`), e.g. `0,1` or `0-1`; undefined without taskset. */
export function ownCpuList(): string | undefined {
  try {
    return /list:\s*(\S+)/.exec(execFileSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8' }))?.[1];
  } catch {
    return undefined;
  }
}

/**
 * Puts this process back on `list` when a section left it elsewhere (the queries and fairness
 * sections pin the harness to the load generator's core while they run, and a thread that ends
 * while `taskset -a` walks them makes it fail without a word): every later section, and every
 * process it starts, would inherit one core. Returns a line saying what was found, or undefined
 * when nothing was wrong.
 */
export function restoreCpuList(list: string | undefined): string | undefined {
  if (list === undefined) return undefined;
  const found = ownCpuList();
  if (found === undefined || found === list) return undefined;
  for (const args of [['-a', '-p', '-c', list, String(process.pid)], ['-p', '-c', list, String(process.pid)]]) {
    try {
      execFileSync('taskset', args, { stdio: 'ignore' });
    } catch {
      // Tried again without -a below; checked after.
    }
    if (ownCpuList() === list) break;
  }
  return `the harness was left on CPUs ${found} (of ${list}); now on ${ownCpuList() ?? 'unknown'}`;
}
