/**
 * The body every POST workload of `npm run bench` sends (bench/dataset.ts `postBody`), as bytes, for
 * the plain-JavaScript keyed diagnostics (keyed-cost.mjs, keyed-minimum.mjs), which run without tsx:
 * asked of a child process that has it.
 */
import { execFileSync } from 'node:child_process';

export function postBodyBytes() {
  return execFileSync(process.execPath, ['--import', 'tsx', '-e', "import('./bench/dataset.ts').then((m) => process.stdout.write(m.postBody()))"], { cwd: new URL('..', import.meta.url).pathname });
}
