import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { FilePositions, POSITIONS_FILE } from '../../src/webhooks/file-positions.js';
import { PositionWriter, type Position, type Positions } from '../../src/webhooks/positions.js';
import { spawnCli, tempDir } from '../helpers/process.js';
import { SECRET } from './receiver.js';

describe('FilePositions (<data>/_webhooks)', () => {
  test('no file -> no positions; saved -> read back, other URLs kept, replaced atomically (no .tmp left)', async () => {
    const dir = await tempDir();
    const positions = new FilePositions(dir);
    assert.deepEqual(await positions.load(), new Map());
    await positions.save(new Map([['http://a/x', { cursor: '3', at: 10 }]]));
    await positions.save(new Map([['http://b/y', { cursor: '5', at: 20 }]]));
    assert.deepEqual(await new FilePositions(dir).load(), new Map([['http://a/x', { cursor: '3', at: 10 }], ['http://b/y', { cursor: '5', at: 20 }]]));
    assert.equal(await readFile(join(dir, POSITIONS_FILE), 'utf8'), '{"http://a/x":{"cursor":"3","at":10},"http://b/y":{"cursor":"5","at":20}}\n');
    await assert.rejects(readFile(join(dir, `${POSITIONS_FILE}.tmp`)), { code: 'ENOENT' });
  });

  for (const [text, message] of [
    ['not json', /Unexpected token|not valid JSON/],
    ['[1]', /not a JSON object/],
    ['{"http://a/x":{"cursor":3,"at":1}}', /the position of http:\/\/a\/x needs a string "cursor" and a number "at"/],
  ] as const) {
    test(`a file holding ${text} -> an error naming the file`, async () => {
      const dir = await tempDir();
      await writeFile(join(dir, POSITIONS_FILE), text);
      await assert.rejects(new FilePositions(dir).load(), (error: Error) => error.message.startsWith(`${join(dir, POSITIONS_FILE)}: `) && message.test(error.message));
    });
  }

  test('the file names the URLs as configured, credentials and all -> readable by the server\'s user alone (0600)', async () => {
    const dir = await tempDir();
    // A temporary file left by a crash, readable by all, is not reused as it is.
    await writeFile(join(dir, `${POSITIONS_FILE}.tmp`), '{"partial', { mode: 0o644 });
    const positions = new FilePositions(dir);
    await positions.save(new Map([['https://user:secret@hooks.example/in?token=abc', { cursor: '5', at: 1 }]]));
    assert.equal((await stat(join(dir, POSITIONS_FILE))).mode & 0o777, 0o600);
  });

  test('the CLI with a malformed positions file -> one line, exit 1 (a guessed position could skip events)', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, POSITIONS_FILE), '[1]');
    const proc = spawnCli(['--data', dir, '--port', '0', '--resource', 'items', '--webhook', 'http://127.0.0.1:9/x', '--webhook-secret', SECRET]);
    assert.equal(await proc.exited, 1);
    assert.equal(proc.stderr(), `halserve: cannot read the webhooks' positions: ${join(dir, POSITIONS_FILE)}: not a JSON object\n`);
  });
});

describe('PositionWriter', () => {
  test('positions set during a save -> saved together by the next; a failed save is said, and flush tries again', async () => {
    const saved: Map<string, Position>[] = [];
    let fail = 1;
    const errors: string[] = [];
    const port: Positions = {
      load: () => Promise.resolve(new Map()),
      save: async (positions) => {
        await new Promise((resolve) => setImmediate(resolve));
        if (fail-- > 0) throw new Error('disk full');
        saved.push(new Map(positions));
      },
    };
    const writer = new PositionWriter(port, (error) => errors.push((error as Error).message));
    writer.set('u', { cursor: '1', at: 1 });
    writer.set('u', { cursor: '2', at: 2 });
    await writer.flush();
    assert.deepEqual(errors, ['disk full']);
    assert.deepEqual(saved, [new Map([['u', { cursor: '2', at: 2 }]])]);
    writer.set('v', { cursor: '9', at: 3 });
    await writer.flush();
    assert.deepEqual(saved.at(-1), new Map([['v', { cursor: '9', at: 3 }]]));
  });
});
