import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CursorExpiredError } from '../../src/store/changes/change-feed.js';
import { CHANGES_FILE } from '../../src/store/log/changes-file.js';
import { openDataDir, type DataDir } from '../../src/store/log/data-dir.js';
import type { JsonlStore } from '../../src/store/log/jsonl-store.js';
import type { StoreChange } from '../../src/store/store.js';
import { plainLine, tempDir } from './helpers.js';
import { manualClock } from './stamps.js';

const DAY_MS = 86_400_000;
const rec = (id: string, n = 0) => ({ id, createdAt: 1, updatedAt: 1, n });

const open = (dir: string, clock = manualClock(), resources = ['items', 'orders']): Promise<DataDir> =>
  openDataDir({ dir, resources, durability: 'full', repair: false, warn: () => {}, now: clock.now, compaction: { auto: false } });

/** What a feed answer says, in a comparable form. */
const shown = (changes: readonly StoreChange[]): string[] => changes.map((c) => `${c.cursor} ${c.type} ${c.resource}/${c.id} ${c.entity?.json ?? '-'} @${c.at}`);
const all = (data: DataDir, since?: string): string[] => shown(data.changes.read(since, 1000).changes);
/** Every change, a page of 1,000 at a time. */
function everyChange(data: DataDir): string[] {
  const out: string[] = [];
  for (let since: string | undefined; ; ) {
    const { changes } = data.changes.read(since, 1000);
    out.push(...shown(changes));
    if (changes.length < 1000) return out;
    since = String(changes.at(-1)!.cursor);
  }
}
const store = (data: DataDir, name: string): JsonlStore => data.stores.get(name) as JsonlStore;

test('writes to two resources, reopen -> the same changes with the same cursors; new ones above them', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const data = await open(dir, clock);
  await Promise.all([store(data, 'items').create(rec('i1')), store(data, 'orders').create(rec('o1')), store(data, 'items').create(rec('i2'))]);
  await store(data, 'items').update('i1', (c) => ({ ...c.record, n: 1 }));
  await store(data, 'orders').delete('o1');
  const before = all(data);
  assert.equal(before.length, 3, 'i2, i1 (updated), o1 (deleted): one change per entity');
  const latest = data.changes.latest;
  await data.close();
  clock.advance(1000);
  const again = await open(dir, clock);
  assert.deepEqual(all(again), before);
  assert.equal(again.changes.latest, latest);
  await store(again, 'items').create(rec('i3'));
  const after = again.changes.read(latest, 10).changes;
  assert.deepEqual(after.map((c) => c.id), ['i3']);
  assert.ok(Number(after[0]!.cursor) > Number(latest));
  await again.close();
});

test('compaction within retention -> cursors unchanged and deletes still read; past retention -> forgotten, older cursors 410, even after reopen', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const data = await open(dir, clock);
  const items = store(data, 'items');
  for (let i = 0; i < 10; i++) await items.create(rec(`e${i}`));
  const early = data.changes.latest; // before the deletes
  for (let i = 0; i < 10; i += 2) await items.delete(`e${i}`);
  await items.update('e1', (c) => ({ ...c.record, n: 1 }));
  const before = all(data);
  assert.equal(await items.compact(), true);
  assert.deepEqual(all(data), before, 'compaction keeps every change and its cursor');
  clock.advance(8 * DAY_MS);
  await store(data, 'orders').create(rec('o1')); // a change after the deletes' expiry
  assert.equal(await items.compact(), true);
  assert.throws(() => data.changes.read(early, 10), CursorExpiredError);
  assert.deepEqual(all(data).filter((c) => c.includes(' deleted ')), []);
  const forgotten = JSON.parse(await fs.readFile(path.join(dir, CHANGES_FILE), 'utf8')) as { forgotten: number };
  assert.equal(forgotten.forgotten, 10 + 5, 'the last forgotten delete');
  const kept = all(data);
  await data.close();
  const again = await open(dir, clock);
  assert.deepEqual(all(again), kept);
  assert.throws(() => again.changes.read(early, 10), CursorExpiredError);
  // A cursor at or after the forgotten horizon resumes.
  assert.deepEqual(shown(again.changes.read(String(forgotten.forgotten), 10).changes).length, 2);
  await again.close();
});

test('every change deleted and forgotten, then reopen -> no cursor is handed out twice', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const data = await open(dir, clock, ['items']);
  const items = store(data, 'items');
  await items.create(rec('a'));
  await items.delete('a');
  const last = data.changes.latest;
  clock.advance(8 * DAY_MS);
  assert.equal(await items.compact(), true);
  await data.close();
  const again = await open(dir, clock, ['items']);
  assert.equal(again.changes.latest, last);
  await store(again, 'items').create(rec('b'));
  assert.ok(Number(again.changes.latest) > Number(last));
  await again.close();
});

test('lines without stamps (written by hand) -> numbered above every stamped one at open, once: a reopen gives the same', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const data = await open(dir, clock);
  await store(data, 'orders').create(rec('o1'));
  await data.close();
  await fs.appendFile(path.join(dir, 'orders.jsonl'), `${plainLine('o2')}\n`);
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${plainLine('h1')}\n${plainLine('h2')}\n{"id":"gone","_deleted":true}\n`);
  const first = await open(dir, clock);
  const listed = all(first);
  assert.deepEqual(
    listed.map((c) => c.split(' ').slice(0, 3).join(' ')),
    ['1 created orders/o1', '2 created items/h1', '3 created items/h2', '4 deleted items/gone', '5 created orders/o2'],
  );
  await first.close();
  const second = await open(dir, clock);
  assert.deepEqual(all(second), listed);
  await second.close();
});

test('stamped lines out of order, a stamp met twice (a line copied by hand) and one line without -> each number kept by the first line met with it, the copy and the unstamped line numbered above them in file order', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const line = (id: string, stamp?: string): string => JSON.stringify({ id, createdAt: 1, updatedAt: 1, n: 0, ...(stamp === undefined ? {} : { _change: stamp }) });
  const lines = [line('a', '5.c.100'), line('b', '3.u.100'), line('c', '5.c.100'), line('d'), '{"id":"gone","_deleted":true,"_change":"4.d.100"}', '{"id":"e","_deleted":true,"_change":"3.d.100"}'];
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${lines.join('\n')}\n`);
  const first = await open(dir, clock, ['items']);
  const listed = everyChange(first).map((l) => l.split(' ').slice(0, 3).join(' '));
  assert.deepEqual(listed, ['3 updated items/b', '4 deleted items/gone', '5 created items/a', '6 created items/c', '7 created items/d', '8 deleted items/e']);
  await first.close();
  const second = await open(dir, clock, ['items']);
  assert.deepEqual(everyChange(second).map((l) => l.split(' ').slice(0, 3).join(' ')), listed);
  await second.close();
});

test('a change number in two logs (a file from another data directory, a line copied across) -> the first log keeps it, the other\'s change is numbered above all, with a warning: no two changes share a cursor, and a reader paging one at a time misses none', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const line = (id: string, stamp: string, n = 0): string => JSON.stringify({ id, createdAt: 1, updatedAt: 1, n, _change: stamp });
  // items numbered 1..3; orders brought from elsewhere, numbered 2 and 3 there, and a delete numbered 1.
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${[line('i1', '1.c.100'), line('i2', '2.c.100'), line('i3', '3.c.100')].join('\n')}\n`);
  await fs.writeFile(path.join(dir, 'orders.jsonl'), `${['{"id":"gone","_deleted":true,"_change":"1.d.100"}', line('o2', '2.c.100'), line('o3', '3.c.100')].join('\n')}\n`);
  const warnings: string[] = [];
  const first = await openDataDir({ dir, resources: ['items', 'orders'], durability: 'full', repair: false, warn: (m) => warnings.push(m), now: clock.now, compaction: { auto: false } });
  const cursors = everyChange(first).map((l) => l.split(' ')[0]!);
  assert.equal(new Set(cursors).size, cursors.length, `a cursor twice: ${cursors.join(' ')}`);
  assert.equal(cursors.length, 6);
  // Paging one change at a time reaches every one.
  const paged: string[] = [];
  for (let since: string | undefined; ; ) {
    const { changes } = first.changes.read(since, 1);
    if (changes.length === 0) break;
    paged.push(`${changes[0]!.resource}/${changes[0]!.id}`);
    since = changes[0]!.cursor;
  }
  assert.deepEqual(paged.sort(), ['items/i1', 'items/i2', 'items/i3', 'orders/gone', 'orders/o2', 'orders/o3']);
  assert.deepEqual(everyChange(first).map((l) => l.split(' ').slice(0, 3).join(' ')), ['1 created items/i1', '2 created items/i2', '3 created items/i3', '4 created orders/o2', '5 created orders/o3', '6 deleted orders/gone']);
  assert.ok(warnings.some((w) => w.includes('orders.jsonl: 3 change numbers (the first 1) also found')), warnings.join('\n'));
  const listed = everyChange(first);
  await first.close();
  const second = await open(dir, clock);
  assert.deepEqual(everyChange(second), listed, 'numbered once: a reopen gives the same');
  await second.close();
});

test('an older line of an entity copied after its newer one (the last line wins) -> that state numbered above every number met, so a reader past the newer line\'s number gets it; the newer number never handed out again; a reopen gives the same', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const line = (id: string, stamp: string, n: number): string => JSON.stringify({ id, createdAt: 1, updatedAt: 1, n, _change: stamp });
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${[line('i1', '1.c.100', 0), line('i1', '2.u.100', 1), line('i1', '1.c.100', 0)].join('\n')}\n`);
  const data = await open(dir, clock, ['items']);
  assert.equal(store(data, 'items').get('i1')?.record.n, 0, 'the last line wins');
  const after2 = data.changes.read('2', 10).changes;
  assert.deepEqual(after2.map((c) => `${c.id} ${c.entity?.record.n}`), ['i1 0'], 'a reader that saw cursor 2 (n: 1) learns of the state served now');
  assert.ok(Number(after2[0]!.cursor) > 2);
  await store(data, 'items').create(rec('i2'));
  const created = all(data).find((l) => l.includes('items/i2'))!;
  assert.ok(Number(created.split(' ')[0]) > Number(after2[0]!.cursor), `i2 got: ${created}`);
  const listed = all(data);
  await data.close();
  const again = await open(dir, clock, ['items']);
  assert.deepEqual(all(again), listed, 'numbered once');
  await again.close();
});

test('an older line copied after its entity\'s delete, or an older delete copied after a newer line -> the state served numbered above both, so a reader past them learns of it', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const line = (id: string, stamp: string, n: number): string => JSON.stringify({ id, createdAt: 1, updatedAt: 1, n, _change: stamp });
  const tombstone = (id: string, stamp: string): string => JSON.stringify({ id, _deleted: true, _change: stamp });
  // r1: created 1, deleted 2, its create copied after. r2: created 3, deleted 4, created again 5, the delete copied after.
  const lines = [line('r1', '1.c.100', 0), tombstone('r1', '2.d.100'), line('r1', '1.c.100', 0), line('r2', '3.c.100', 0), tombstone('r2', '4.d.100'), line('r2', '5.c.100', 1), tombstone('r2', '4.d.100')];
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${lines.join('\n')}\n`);
  const data = await open(dir, clock, ['items']);
  assert.equal(store(data, 'items').get('r1')?.record.n, 0, 'r1 back');
  assert.equal(store(data, 'items').get('r2'), undefined, 'r2 deleted');
  const after5 = data.changes.read('5', 10).changes;
  assert.deepEqual(after5.map((c) => `${c.type} ${c.id}`).sort(), ['created r1', 'deleted r2']);
  const listed = all(data);
  await data.close();
  const again = await open(dir, clock, ['items']);
  assert.deepEqual(all(again), listed, 'numbered once');
  await again.close();
});

test('more unstamped lines than one append holds (several megabytes, one line longer than an append) -> each stamped once, in file order, its JSON unchanged', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  // One line longer than a whole append (4 MiB) goes on its own.
  const pad = (i: number): string => (i === 100 ? 'y'.repeat(5 * 2 ** 20) : 'x'.repeat(300));
  // An id with an escape and one with non-ASCII text load as written entities, not from their bytes.
  const ids = Array.from({ length: 20_000 }, (_, i) => (i === 7 ? 'q"7' : i === 9 ? 'ü9' : `h${i}`));
  const json = (i: number): string => JSON.stringify({ id: ids[i], createdAt: 1, updatedAt: 1, n: i, pad: pad(i) });
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${ids.map((_, i) => json(i)).join('\n')}\n`);
  const first = await open(dir, clock);
  const listed = everyChange(first);
  assert.equal(listed.length, ids.length);
  listed.forEach((line, i) => assert.equal(line.slice(0, line.lastIndexOf(' @')), `${i + 1} created items/${ids[i]} ${json(i)}`));
  await first.close();
  const text = await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8');
  assert.equal(text.split('\n').filter((l) => l !== '').length, 2 * ids.length, 'a stamped copy of every line appended');
  const second = await open(dir, clock);
  assert.deepEqual(everyChange(second), listed);
  await second.close();
});

test('a first start on unstamped lines, compaction on -> the stamped copies compacted away in the background: one line per entity and per delete, every line stamped, a reopen gives the same changes', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const ids = Array.from({ length: 2_000 }, (_, i) => `h${i}`);
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${ids.map((id) => plainLine(id)).join('\n')}\n{"id":"gone","_deleted":true}\n`);
  const first = await openDataDir({ dir, resources: ['items'], durability: 'full', repair: false, warn: () => {}, now: clock.now, compaction: { minBytes: 0 } });
  const listed = everyChange(first);
  assert.equal(listed.length, ids.length + 1);
  await store(first, 'items').settled();
  const lines = (await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8')).split('\n').filter((l) => l !== '');
  assert.equal(lines.length, ids.length + 1, 'one line per entity and one for the delete, not two each');
  assert.equal(lines.every((l) => l.includes('"_change":"')), true, 'every line kept is a stamped one');
  assert.deepEqual(everyChange(first), listed);
  await first.close();
  const second = await open(dir, clock, ['items']);
  assert.deepEqual(everyChange(second), listed);
  await second.close();
});

test('a first start whose compaction never ran (stopped first) -> the next start compacts the stamped copies away, and the changes stay the same', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const ids = Array.from({ length: 2_000 }, (_, i) => `h${i}`);
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${ids.map((id) => plainLine(id)).join('\n')}\n`);
  const lineCount = async (): Promise<number> => (await fs.readFile(path.join(dir, 'items.jsonl'), 'utf8')).split('\n').filter((l) => l !== '').length;
  // Compaction off: the stamped copies are appended, and nothing removes the originals.
  const first = await open(dir, clock, ['items']);
  const listed = everyChange(first);
  await first.close();
  assert.equal(await lineCount(), 2 * ids.length, 'each line twice: unstamped, then its stamped copy');
  const second = await openDataDir({ dir, resources: ['items'], durability: 'full', repair: false, warn: () => {}, now: clock.now, compaction: { minBytes: 0 } });
  await store(second, 'items').settled();
  assert.equal(await lineCount(), ids.length, 'one line per entity once the start has compacted');
  assert.deepEqual(everyChange(second), listed);
  await second.close();
  const third = await open(dir, clock, ['items']);
  assert.deepEqual(everyChange(third), listed);
  await third.close();
});

test('a follower of the data set -> told of every resource\'s changes in cursor order', async () => {
  const dir = await tempDir();
  const data = await open(dir);
  const told: string[] = [];
  data.changes.follow((change) => told.push(`${change.cursor} ${change.resource}/${change.id}`));
  await Promise.all(Array.from({ length: 20 }, (_, i) => store(data, i % 2 ? 'items' : 'orders').create(rec(`x${i}`))));
  assert.equal(told.length, 20);
  const cursors = told.map((t) => Number(t.split(' ')[0]));
  assert.deepEqual(cursors, [...cursors].sort((a, b) => a - b));
  await data.close();
});

test('a whole log brought from another data directory (150,000 numbers met twice) -> start-up numbers them anew, with a warning', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const n = 150_000;
  const lines = (prefix: string): string => Array.from({ length: n }, (_, i) => `{"id":"${prefix}${i}","createdAt":1,"updatedAt":1,"_change":"${i + 1}.c.100"}\n`).join('');
  await fs.writeFile(path.join(dir, 'items.jsonl'), lines('i'));
  await fs.writeFile(path.join(dir, 'orders.jsonl'), lines('o'));
  const warnings: string[] = [];
  const data = await openDataDir({ dir, resources: ['items', 'orders'], durability: 'none', repair: false, warn: (m) => warnings.push(m), now: clock.now, compaction: { auto: false } });
  assert.ok(warnings.some((w) => w.includes(`orders.jsonl: ${n} change numbers (the first 1)`)), warnings.join('\n'));
  await data.close();
});

test('a damaged _changes (cut short) -> start-up refused, saying what the file is and how to go on; with repair -> set aside, a new change feed: every entity kept, every earlier cursor 410, new cursors named by the new data set', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const data = await open(dir, clock);
  const items = store(data, 'items');
  for (let i = 0; i < 4; i++) await items.create(rec(`e${i}`));
  await items.delete('e0');
  clock.advance(8 * DAY_MS);
  assert.equal(await items.compact(), true); // writes _changes: the delete forgotten
  const earlier = data.changes.latest;
  const entities = all(data).map((line) => line.split(' ').slice(1).join(' '));
  await data.close();
  const text = await fs.readFile(path.join(dir, CHANGES_FILE), 'utf8');
  await fs.writeFile(path.join(dir, CHANGES_FILE), text.slice(0, 8));
  await assert.rejects(open(dir, clock), (error: Error) => {
    assert.match(error.message, /_changes: .*JSON/);
    assert.match(error.message, /restore it from a backup, or start once with --repair/);
    return true;
  });
  const warnings: string[] = [];
  const repaired = await openDataDir({ dir, resources: ['items', 'orders'], durability: 'full', repair: true, warn: (w) => warnings.push(w), now: clock.now, compaction: { auto: false } });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /set aside as .*_changes\.rejected; a new change feed begins/);
  assert.equal(await fs.readFile(path.join(dir, `${CHANGES_FILE}.rejected`), 'utf8'), text.slice(0, 8), 'the damaged file kept as it was');
  assert.deepEqual(all(repaired).map((line) => line.split(' ').slice(1).join(' ')), entities, 'the same changes, under the new data set\'s cursors');
  assert.throws(() => repaired.changes.read(earlier, 10), CursorExpiredError);
  assert.match(repaired.changes.latest, /^b[0-9a-f]{16}-\d+$/);
  await store(repaired, 'orders').create(rec('o1'));
  assert.notEqual(repaired.changes.latest.split('-')[0], earlier.split('-')[0], 'a cursor of the new feed is never one handed out before, whatever its number');
  await repaired.close();
  const again = await open(dir, clock); // the new _changes is whole: no repair needed
  assert.equal(again.changes.latest, repaired.changes.latest);
  await again.close();
});

test('lines of an entity numbered 3, 1, 2 (an older line copied twice) -> the state served numbered above 3, though above the line it replaced; so is a delete copied in the same place', async () => {
  const dir = await tempDir();
  const clock = manualClock();
  const line = (id: string, stamp: string, n: number): string => JSON.stringify({ id, createdAt: 1, updatedAt: 1, n, _change: stamp });
  const tombstone = (id: string, stamp: string): string => JSON.stringify({ id, _deleted: true, _change: stamp });
  const lines = [line('i1', '3.u.100', 3), line('i1', '1.c.100', 1), line('i1', '2.u.100', 2), line('d1', '6.u.100', 6), line('d1', '4.c.100', 4), tombstone('d1', '5.d.100')];
  await fs.writeFile(path.join(dir, 'items.jsonl'), `${lines.join('\n')}\n`);
  const data = await open(dir, clock, ['items']);
  assert.equal(store(data, 'items').get('i1')?.record.n, 2, 'the last line wins');
  assert.equal(store(data, 'items').get('d1'), undefined, 'the last line, a delete, wins');
  const after6 = data.changes.read('6', 10).changes;
  assert.deepEqual(after6.map((c) => `${c.type} ${c.id} ${c.entity?.record.n}`).sort(), ['created i1 2', 'deleted d1 undefined'], 'a reader past 6 learns of the states served');
  await data.close();
});
