/**
 * A process of test/store/dir-lock.test.ts: waits for the file `go`, takes the lock of `dir`, says
 * `locked` or `refused: …`, and holds it until its stdin ends.
 */
import fs from 'node:fs';
import { lockDirectory } from '../../src/store/log/dir-lock.js';

const [dir, go] = process.argv.slice(2) as [string, string];
process.stdout.write('ready\n');
while (!fs.existsSync(go)) await new Promise((resolve) => setTimeout(resolve, 1));
try {
  const lock = await lockDirectory(dir, () => {});
  process.stdout.write('locked\n');
  process.stdin.resume();
  process.stdin.on('end', () => void lock.release());
} catch (error) {
  process.stdout.write(`refused: ${(error as Error).message}\n`);
  process.stdin.resume();
}
