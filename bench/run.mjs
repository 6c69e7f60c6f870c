// Entry of `npm run bench`: the harness is TypeScript (bench/main.ts), run through tsx like the tests.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// `node bench/run.mjs webhooks [...]`: the webhook targets alone (bench/webhooks.ts), an optional section.
const [first, ...rest] = process.argv.slice(2);
const entry = first === 'webhooks' ? [path.join('bench', 'webhooks.ts'), ...rest] : [path.join('bench', 'main.ts'), ...process.argv.slice(2)];
const child = spawn(process.execPath, ['--import', 'tsx', ...entry], {
  cwd: root,
  stdio: 'inherit',
});
// Forward Ctrl-C and termination so that the harness can stop the servers it started.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
