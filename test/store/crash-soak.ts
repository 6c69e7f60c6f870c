/**
 * The long crash run, by hand: `node --import tsx test/store/crash-soak.ts [cycles] [clients]`.
 * Kills the server with SIGKILL at random moments under concurrent writes, restarts it and checks
 * every acknowledged write (see crash-harness.ts). Prints a summary line; exits 1 on any loss.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { crashRun, removeDir } from './crash-harness.js';

const cycles = Number(process.argv[2] ?? 300);
const clients = Number(process.argv[3] ?? 4);
const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-soak-'));
try {
  const result = await crashRun(dir, {
    cycles,
    clients,
    log: (message) => {
      if (/^cycle \d*0:/.test(message)) process.stderr.write(`${message}\n`);
    },
  });
  const size = (await fs.stat(path.join(dir, 'items.jsonl'))).size;
  console.log(
    `crash soak: ${result.cycles} SIGKILL cycles, ${clients} clients, ${result.acknowledged} acknowledged writes, ` +
      `0 lost; ${result.inFlightAtKill} writes in flight at a kill (${result.inFlightLanded} landed), ` +
      `${result.tornTailsRepaired} torn tails truncated, compactions: ${result.compactionsCompleted} completed, ` +
      `${result.compactionsInterrupted} cut short by a kill; ${result.entities} live entities, file ${size} bytes, ${(result.ms / 1000).toFixed(1)} s`,
  );
} catch (error) {
  console.error(`crash soak FAILED: ${(error as Error).stack ?? String(error)}`);
  console.error(`data kept in ${dir}`);
  process.exit(1);
}
await removeDir(dir);
