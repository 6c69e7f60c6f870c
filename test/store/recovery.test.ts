import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { firstNonUtf8 } from '../../src/store/log/jsonl-load.js';
import { openJsonlStore } from '../../src/store/log/jsonl-store.js';
import { nodeFs, type StoreFs } from '../../src/store/log/store-fs.js';
import { StoreOpenError } from '../../src/store/store.js';
import { line, plainLine, tempDir, tombstone, warnings } from './helpers.js';
import { withoutStamps } from './stamps.js';

const ids = (store: { values(): Iterable<{ id: string }> }): string[] => Array.from(store.values(), (e) => e.id);

test('torn last line at every byte offset -> earlier lines kept, tail truncated and saved, appends work', async () => {
  const dir = await tempDir();
  const head = [line('a', { n: 1 }), line('b', { text: 'ünïcödé' }), tombstone('a')].join('\n') + '\n';
  const last = line('c', { note: 'the line a crash cut short', list: [1, 2, 3] });
  const lastBytes = Buffer.from(last);
  for (let cut = 1; cut <= lastBytes.length; cut++) {
    const file = path.join(dir, `t${cut}.jsonl`);
    await fs.writeFile(file, Buffer.concat([Buffer.from(head), lastBytes.subarray(0, cut)]));
    const { warn, messages } = warnings();
    const store = await openJsonlStore({ file, warn });
    if (cut === lastBytes.length) {
      // Complete but for its newline: a whole record, kept; the next append adds the newline.
      assert.deepEqual(ids(store), ['b', 'c'], `cut ${cut}`);
      assert.deepEqual(messages, []);
    } else {
      assert.deepEqual(ids(store), ['b'], `cut ${cut}`);
      assert.equal(messages.length, 1);
      assert.match(messages[0]!, new RegExp(`t${cut}\\.jsonl: torn final line 4 at byte ${Buffer.byteLength(head)} `));
      assert.equal(await fs.readFile(`${file}.rejected`, 'utf8'), `${last.slice(0, cut)}\n`); // ASCII: bytes = chars
      assert.equal((await fs.stat(file)).size, Buffer.byteLength(head));
    }
    await store.create({ id: 'd', createdAt: 1, updatedAt: 1 });
    await store.close();
    const reopened = await openJsonlStore({ file, warn });
    assert.deepEqual(ids(reopened), cut === lastBytes.length ? ['b', 'c', 'd'] : ['b', 'd'], `reopen cut ${cut}`);
    await reopened.close();
  }
});

test('torn last line, the disk full while its bytes are kept in .rejected -> start-up refused; once there is room, .rejected holds the torn bytes alone, not glued to what the full disk let through', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'full.jsonl');
  const torn = `{"id":"t","text":"${'z'.repeat(600)}`;
  await fs.writeFile(file, `${line('a')}\n${torn}`);
  // A full disk: the first write to .rejected takes what fits, the next fails.
  const rejectedFds = new Set<number>();
  let room = 100;
  const full: StoreFs = {
    ...nodeFs,
    async open(name, flags, mode) {
      const fd = await nodeFs.open(name, flags, mode);
      if (name.endsWith('.rejected')) rejectedFds.add(fd);
      return fd;
    },
    async write(fd, buffer, offset, length, position) {
      if (!rejectedFds.has(fd)) return nodeFs.write(fd, buffer, offset, length, position);
      if (room === 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      const n = await nodeFs.write(fd, buffer, offset, Math.min(length, room), position);
      room -= n;
      return n;
    },
  };
  await assert.rejects(openJsonlStore({ file, fs: full }), (error: unknown) => error instanceof StoreOpenError && /ENOSPC/.test(error.message));
  assert.equal((await fs.readFile(`${file}.rejected`)).length, 0, 'what the full disk let through is cut off again');
  const { warn, messages } = warnings();
  const store = await openJsonlStore({ file, warn });
  assert.deepEqual(ids(store), ['a']);
  assert.equal(messages.length, 1);
  assert.equal(await fs.readFile(`${file}.rejected`, 'utf8'), `${torn}\n`);
  await store.close();
});

test('torn tail of NUL bytes after the last newline -> truncated with a warning', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'nul.jsonl');
  await fs.writeFile(file, Buffer.concat([Buffer.from(`${line('a')}\n`), Buffer.alloc(64)]));
  const { warn, messages } = warnings();
  const store = await openJsonlStore({ file, warn });
  assert.deepEqual(ids(store), ['a']);
  assert.equal(messages.length, 1);
  assert.match(messages[0]!, /torn final line 2 at byte \d+ \(64 bytes/);
  await store.close();
});

test('malformed line in the middle -> StoreOpenError naming file:line and the reason', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'items.jsonl');
  await fs.writeFile(file, [line('a'), line('b'), '{"id":"c",}', line('d')].join('\n') + '\n');
  await assert.rejects(openJsonlStore({ file }), (error: unknown) => {
    assert.ok(error instanceof StoreOpenError);
    assert.match(error.message, new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3: .*JSON`));
    return true;
  });
  // Nothing was changed on disk.
  assert.equal((await fs.readFile(file, 'utf8')).split('\n')[2], '{"id":"c",}');
});

test('a line that is not UTF-8 (Latin-1 café), in the middle -> StoreOpenError naming file:line and the byte; --repair -> moved aside, nothing else lost', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'items.jsonl');
  const latin1 = Buffer.concat([Buffer.from('{"id":"a1","name":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
  const content = Buffer.concat([Buffer.from(`${line('a0')}\n`), latin1, Buffer.from(`\n${line('a2', { name: 'café ✓ 𝄞' })}\n`)]);
  await fs.writeFile(file, content);
  await assert.rejects(openJsonlStore({ file }), new StoreOpenError(`${file}:2: not UTF-8 text (byte 23 of the line)`));
  assert.deepEqual(await fs.readFile(file), content, 'nothing changed on disk');
  // With reads of 16 bytes, the line straddles blocks: found all the same.
  await assert.rejects(openJsonlStore({ file, loadChunkBytes: 16 }), new StoreOpenError(`${file}:2: not UTF-8 text (byte 23 of the line)`));
  const { warn, messages } = warnings();
  const store = await openJsonlStore({ file, repair: true, warn });
  assert.deepEqual(ids(store), ['a0', 'a2']);
  assert.equal(store.get('a2')?.record.name, 'café ✓ 𝄞');
  assert.deepEqual(await fs.readFile(`${file}.rejected`), Buffer.concat([latin1, Buffer.from('\n')]));
  assert.match(messages[0]!, /items\.jsonl:2: not UTF-8 text \(byte 23 of the line\) — moved to/);
  await store.close();
});

test('firstNonUtf8 -> the first byte outside a well-formed character (overlong, surrogate, cut short, out of range), -1 for UTF-8', () => {
  for (const [bytes, at] of [
    [[0x61, 0xc3, 0xa9, 0xe2, 0x9c, 0x93, 0xf0, 0x9d, 0x84, 0x9e], -1],
    [[0x61, 0xc0, 0x80], 1],
    [[0xed, 0xa0, 0x80], 0],
    [[0x61, 0x62, 0xe2, 0x82], 2],
    [[0xf4, 0x90, 0x80, 0x80], 0],
    [[0x61, 0x80], 1],
  ] as const) {
    assert.equal(firstNonUtf8(Uint8Array.from(bytes)), at, bytes.map((b) => b.toString(16)).join(' '));
  }
});

test('two ids that differ only in bytes that are not UTF-8 -> refused, never merged into one id', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'items.jsonl');
  await fs.writeFile(file, Buffer.concat([Buffer.from('{"id":"x'), Buffer.from([0xe9]), Buffer.from('","v":1}\n{"id":"x'), Buffer.from([0xe8]), Buffer.from('","v":2}\n')]));
  await assert.rejects(openJsonlStore({ file }), new StoreOpenError(`${file}:1: not UTF-8 text (byte 9 of the line)`));
});

test('a line whose id is . or .. (escaped or not) -> StoreOpenError file:line: no URL could name it; ids that merely hold dots load', async () => {
  const dir = await tempDir();
  for (const [i, bad] of ['{"id":".."}', '{"id":"."}', '{"id":"\\u002e\\u002e"}'].entries()) {
    const file = path.join(dir, `dots${i}.jsonl`);
    await fs.writeFile(file, `${line('a')}\n${bad}\n${line('b')}\n`);
    await assert.rejects(openJsonlStore({ file }), new StoreOpenError(`${file}:2: id . or .. cannot name an entity: as a URL path segment it means the collection or its parent (RFC 3986 §5.2.4)`));
  }
  const file = path.join(dir, 'fine.jsonl');
  await fs.writeFile(file, ['{"id":"..."}', '{"id":".a"}', '{"id":"a.."}'].join('\n') + '\n');
  const store = await openJsonlStore({ file });
  assert.deepEqual(ids(store), ['...', '.a', 'a..']);
  await store.close();
});

test('a line whose id holds a lone surrogate (escaped: the file is UTF-8) -> StoreOpenError file:line: no URL could name it; a pair loads', async () => {
  const dir = await tempDir();
  for (const [i, bad] of ['{"id":"\\ud800"}', '{"id":"a\\udfff"}', '{"id":"\\ude00\\ud83d"}'].entries()) {
    const file = path.join(dir, `lone${i}.jsonl`);
    await fs.writeFile(file, `${line('a')}\n${bad}\n${line('b')}\n`);
    await assert.rejects(openJsonlStore({ file }), new StoreOpenError(`${file}:2: id holds a lone surrogate, which no URL can carry (RFC 3986 §2.5: percent-encoded UTF-8)`));
  }
  const file = path.join(dir, 'pair.jsonl');
  await fs.writeFile(file, '{"id":"\\ud83d\\ude00"}\n');
  const store = await openJsonlStore({ file });
  assert.deepEqual(ids(store), ['\ud83d\ude00']);
  await store.close();
});

test('a file that begins with a byte order mark (an editor\'s) -> its first line loads; the next write and a compaction leave the mark out', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'bom.jsonl');
  await fs.writeFile(file, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`${line('only')}\n`)]));
  const { warn, messages } = warnings();
  const store = await openJsonlStore({ file, warn });
  assert.deepEqual(ids(store), ['only']);
  assert.deepEqual(messages, []);
  await store.create({ id: 'next', createdAt: 1, updatedAt: 1 });
  await store.compact();
  await store.close();
  const text = await fs.readFile(file, 'utf8');
  assert.equal(text.charCodeAt(0), '{'.charCodeAt(0));
  const reopened = await openJsonlStore({ file });
  assert.deepEqual(ids(reopened), ['only', 'next']);
  await reopened.close();
});

test('an entity\'s version -> the same after a compaction, a restart and a first start that stamps its line; a write changes it', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'v.jsonl');
  // Unstamped lines, as written by hand: the first start stamps them (appending a copy of each).
  await fs.writeFile(file, `${plainLine('a', { n: 1 })}\n${plainLine('b', { n: 1 })}\n`);
  const first = await openJsonlStore({ file });
  const a = first.get('a')!.version;
  await first.update('b', () => ({ id: 'b', createdAt: 1, updatedAt: 2, n: 2 }));
  const b = first.get('b')!.version;
  await first.compact();
  assert.deepEqual([first.get('a')!.version, first.get('b')!.version], [a, b], 'after a compaction, in the same process');
  await first.close();
  const again = await openJsonlStore({ file });
  assert.deepEqual([again.get('a')!.version, again.get('b')!.version], [a, b], 'after a restart');
  await again.update('a', () => ({ id: 'a', createdAt: 1, updatedAt: 3, n: 1 }));
  assert.notEqual(again.get('a')!.version, a, 'a write changes it');
  await again.close();
});

test('line without a string id in the middle or at the end -> StoreOpenError file:line', async () => {
  const dir = await tempDir();
  for (const [name, content, lineNo, reason] of [
    ['noid', `${line('a')}\n{"name":"x"}\n`, 2, 'a line needs a non-empty string id'],
    ['numid', `{"id":7}\n${line('a')}\n`, 1, 'id must be a string'],
    ['array', `${line('a')}\n[1,2]\n${line('b')}\n`, 2, 'a line must be a JSON object'],
  ] as const) {
    const file = path.join(dir, `${name}.jsonl`);
    await fs.writeFile(file, content);
    await assert.rejects(openJsonlStore({ file }), new StoreOpenError(`${file}:${lineNo}: ${reason}`));
  }
});

test('two malformed lines at the end -> the first is in the middle: refused', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'two.jsonl');
  await fs.writeFile(file, `${line('a')}\n{"id":\n{"id":"b"`);
  await assert.rejects(openJsonlStore({ file }), (error: unknown) => error instanceof StoreOpenError && error.message.startsWith(`${file}:2: `));
});

test('--repair with malformed lines -> moved to .rejected, file rewritten, store opens', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'repair.jsonl');
  await fs.writeFile(file, [line('a'), 'garbage here', line('b'), '{"name":"no id"}', line('a', { n: 2 }), '{"id":"c'].join('\n'));
  const { warn, messages } = warnings();
  const store = await openJsonlStore({ file, repair: true, warn });
  assert.deepEqual(ids(store), ['a', 'b']);
  assert.equal(store.get('a')?.record.n, 2);
  assert.equal(await fs.readFile(`${file}.rejected`, 'utf8'), '{"id":"c\ngarbage here\n{"name":"no id"}\n');
  // The rewritten file holds the kept lines, their stamps as they were.
  assert.equal(withoutStamps(await fs.readFile(file, 'utf8')), `${plainLine('a', { n: 2 })}\n${plainLine('b')}\n`);
  assert.equal(messages.length, 3);
  assert.match(messages[0]!, /torn final line 6/);
  assert.match(messages[1]!, /repair\.jsonl:2: .* moved to .*repair\.jsonl\.rejected/);
  assert.match(messages[2]!, /repair\.jsonl:4: a line needs a non-empty string id — moved to/);
  await store.create({ id: 'd', createdAt: 1, updatedAt: 1 });
  await store.close();
  const reopened = await openJsonlStore({ file });
  assert.deepEqual(ids(reopened), ['a', 'b', 'd']);
  await reopened.close();
});

test('blank lines, CRLF and spaces -> ignored; line numbers still count them', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'blank.jsonl');
  await fs.writeFile(file, `\n  ${line('a')}  \r\n\n${line('b')}\r\n   \n{bad}\n${line('c')}\n`);
  await assert.rejects(openJsonlStore({ file }), (error: unknown) => error instanceof StoreOpenError && error.message.startsWith(`${file}:6: `));
  await fs.writeFile(file, `\n  ${line('a')}  \r\n\n${line('b')}\r\n   \n`);
  const store = await openJsonlStore({ file });
  assert.deepEqual(ids(store), ['a', 'b']);
  assert.equal(store.get('a')?.json, plainLine('a'));
  await store.close();
});

test('tombstones and repeated lines -> last line per id wins, first appearance orders', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'log.jsonl');
  await fs.writeFile(
    file,
    [line('a', { v: 1 }), line('b', { v: 1 }), line('a', { v: 2 }), tombstone('b'), line('c'), line('b', { v: 3 }), tombstone('zz')].join('\n') + '\n',
  );
  const store = await openJsonlStore({ file });
  assert.deepEqual(ids(store), ['a', 'c', 'b']);
  assert.equal(store.get('a')?.record.v, 2);
  assert.equal(store.get('b')?.record.v, 3);
  assert.equal(store.lineCount, 7);
  await store.close();
});

test('lines crossing read-chunk boundaries, one longer than a chunk -> all loaded intact', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'chunks.jsonl');
  const lines = Array.from({ length: 300 }, (_, i) => line(`e${i}`, { pad: 'x'.repeat(i % 50), big: i === 150 ? 'y'.repeat(5000) : '' }));
  await fs.writeFile(file, lines.join('\n') + '\n');
  const store = await openJsonlStore({ file, loadChunkBytes: 1024 });
  assert.equal(store.size, 300);
  assert.deepEqual(Array.from(store.values(), (e) => e.json), lines.map(withoutStamps));
  await store.close();
});

test('stale .jsonl.tmp from an interrupted compaction -> removed with a warning, log intact', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'tmp.jsonl');
  await fs.writeFile(file, `${line('a')}\n`);
  await fs.writeFile(`${file}.tmp`, `${line('half')}\n{"id":`);
  const { warn, messages } = warnings();
  const store = await openJsonlStore({ file, warn });
  assert.deepEqual(ids(store), ['a']);
  assert.deepEqual(messages, [`${file}.tmp: removed an unfinished compaction`]);
  await assert.rejects(fs.stat(`${file}.tmp`), { code: 'ENOENT' });
  await store.close();
});

test('missing file -> empty store; first write creates it', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'new.jsonl');
  const store = await openJsonlStore({ file });
  assert.equal(store.size, 0);
  await assert.rejects(fs.stat(file), { code: 'ENOENT' });
  await store.create({ id: 'x', createdAt: 1, updatedAt: 1 });
  assert.equal(withoutStamps(await fs.readFile(file, 'utf8')), '{"id":"x","createdAt":1,"updatedAt":1}\n');
  await store.close();
});

test('escaped id in the file -> decoded id', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'esc.jsonl');
  await fs.writeFile(file, '{"id":"a\\u0062c","n":1}\n');
  const store = await openJsonlStore({ file });
  assert.equal(store.get('abc')?.record.n, 1);
  await store.close();
});

test('unparsable final line that does end in a newline -> torn too: truncated, kept in .rejected', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'nl.jsonl');
  const a = line('a');
  await fs.writeFile(file, `${a}\n{"id":"b","createdAt":17\n\n`);
  const { warn, messages } = warnings();
  const store = await openJsonlStore({ file, warn });
  assert.deepEqual(ids(store), ['a']);
  assert.equal(messages.length, 1);
  assert.match(messages[0]!, new RegExp(`torn final line 2 at byte ${a.length + 1} `));
  assert.equal(await fs.readFile(file, 'utf8'), `${a}\n`);
  assert.equal(await fs.readFile(`${file}.rejected`, 'utf8'), '{"id":"b","createdAt":17\n');
  await store.close();
});

test('non-ASCII and escaped ids, updated and deleted in the log -> found by their decoded id', async () => {
  const dir = await tempDir();
  const file = path.join(dir, 'utf8.jsonl');
  await fs.writeFile(
    file,
    [line('café', { v: 1 }), line('日本', { v: 1 }), '{"id":"caf\\u00e9","v":2}', '{"id":"日本","_deleted":true}', line('plain', { v: 1 })].join('\n') + '\n',
  );
  const store = await openJsonlStore({ file });
  assert.deepEqual(ids(store), ['café', 'plain']);
  assert.equal(store.get('café')?.record.v, 2);
  assert.equal(store.get('日本'), undefined);
  assert.equal(store.get('plain')?.id, 'plain');
  await store.update('café', (c) => ({ ...c.record, v: 3 }));
  await store.close();
  const reopened = await openJsonlStore({ file });
  assert.equal(reopened.get('café')?.record.v, 3);
  await reopened.close();
});
