/**
 * The node flags halserve runs with (src/cli.ts, its first line and the comment under it): the
 * same in every way the server is started — the `halserve` command (the first line itself),
 * `npm start` and the image's entrypoint — and doing what they are there for on this Node.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from '../helpers/process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/** The first line of src/cli.ts, and the flags it gives node. */
async function shebang(): Promise<{ line: string; flags: string }> {
  const line = (await readFile(join(ROOT, 'src', 'cli.ts'), 'utf8')).split('\n', 1)[0]!;
  const flags = /^#!\/usr\/bin\/env -S node((?: --[\w-]+=\S+)+)$/.exec(line)?.[1]?.trim();
  assert.ok(flags, `src/cli.ts starts with "#!/usr/bin/env -S node --flag=value…", not ${JSON.stringify(line)}`);
  return { line, flags };
}

test('npm start and the image entrypoint start the CLI with the flags of its first line', async () => {
  const { flags } = await shebang();
  const start = (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['start'] ?? '';
  assert.match(start, /\bnode .*dist\/cli\.js\b/);
  assert.ok(start.includes(`node ${flags} dist/cli.js`), `package.json start: ${start}`);
  const execs = (await readFile(join(ROOT, 'docker', 'entrypoint.sh'), 'utf8')).split('\n').filter((l) => /\bexec node\b/.test(l));
  assert.ok(execs.length >= 2, 'the entrypoint execs node for the server and for import/export');
  for (const line of execs) assert.ok(line.includes(`exec node ${flags} /app/dist/cli.js`), `docker/entrypoint.sh: ${line.trim()}`);
});

test('the first line runs node with a young generation of at least 16 MiB, which a bare node starts at 1 MiB', async () => {
  const { line } = await shebang();
  const dir = await tempDir();
  const probe = join(dir, 'probe.mjs');
  const report = "import v8 from 'node:v8';\nconst young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');\nprocess.stdout.write(JSON.stringify({ argv: process.execArgv, young: young.space_size }));\n";
  await writeFile(probe, `${line}\n${report}`);
  await chmod(probe, 0o755);
  // Run as a command, through env -S, as the `halserve` bin is.
  const flagged = JSON.parse((await run(probe, [], { cwd: dir })).stdout) as { argv: string[]; young: number };
  assert.ok(flagged.argv.includes('--min-semi-space-size=16'), JSON.stringify(flagged.argv));
  assert.ok(flagged.young >= 16 * 1024 * 1024, `young generation ${flagged.young} bytes`);
  // The difference the flag makes: without it the young generation starts (and shrinks back) small.
  const bare = JSON.parse((await run(process.execPath, [probe], { cwd: dir })).stdout) as { young: number };
  assert.ok(bare.young < flagged.young, `bare ${bare.young} against ${flagged.young}`);
});
