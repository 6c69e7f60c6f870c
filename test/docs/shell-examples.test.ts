import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The shell examples of README.md and docs/*.md, as a user pastes them: what the shell does to
 * them before halserve sees anything. Each is read from the documents' ```sh and ```bash blocks.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCUMENTS = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Every ```sh / ```bash block of every document, its comment lines and trailing comments dropped. */
function shellBlocks(): { file: string; lines: string[] }[] {
  const blocks: { file: string; lines: string[] }[] = [];
  for (const file of DOCUMENTS) {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    for (const m of text.matchAll(/^```(?:sh|bash)\n([\s\S]*?)^```/gm)) {
      const lines = m[1]!.split('\n').filter((line) => !/^\s*#/.test(line)).map((line) => line.replace(/\s+#\s.*$/, ''));
      blocks.push({ file, lines });
    }
  }
  return blocks;
}

test('no shell example puts a variable in single quotes, where the shell would send its name instead of its value', () => {
  const blocks = shellBlocks();
  assert.ok(blocks.length > 10, `found ${blocks.length} shell blocks`);
  for (const { file, lines } of blocks) {
    for (const line of lines) {
      // The quoted strings of the line, outside double quotes: `'…$TOKEN…'` sends "$TOKEN" itself.
      for (const quoted of line.replace(/"[^"]*"/g, '""').matchAll(/'([^']*)'/g)) {
        assert.doesNotMatch(quoted[1]!, /\$\{?[A-Za-z_]/, `${file}: ${line.trim()}`);
      }
    }
  }
});

test("every `halserve backup --to <dir>/<name>` example makes <dir> first: the command refuses a missing parent", () => {
  let seen = 0;
  for (const { file, lines } of shellBlocks()) {
    const block = lines.join('\n');
    for (const m of block.matchAll(/halserve backup [^\n]*--to (\.\/[^\s/]+)\/[^\s/]+/g)) {
      seen++;
      const made = new RegExp(`mkdir -p [^\\n]*${m[1]!.replace(/[.]/g, '\\.')}(\\s|$)`).exec(block.slice(0, m.index));
      assert.ok(made !== null, `${file}: ${m[0]} needs \`mkdir -p ${m[1]}\` before it`);
    }
  }
  assert.ok(seen >= 2, `found ${seen} backup examples`);
});
