/**
 * The long crash run of keyed writes, by hand: `node --import tsx test/store/idempotency-soak.ts [cycles]`.
 *
 * Each cycle: 16 clients POST with fresh `Idempotency-Key`s to a real server process over one data
 * directory, the server is killed (SIGKILL) once a random number of them (1–80) has been answered,
 * it restarts, and every key of the cycle is sent again. Checked each cycle: every retry answers
 * 201; an acknowledged key replays its first answer (`Idempotency-Replayed: true`, the same
 * Location and body); and the collection holds exactly one entity per key ever sent — a write made
 * before the crash is replayed, one that was not is made by its retry, none twice. Bodies of ~0.6 KB
 * take the log past the compaction threshold (1 MiB) within a few cycles, and again each time it
 * doubles: compactions (which move the answers from the log into `_idempotency.items`) come in
 * between, some cut short by a kill.
 * Prints a summary line; exits 1 on the first violation.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { removeDir, startServer, type Server } from './crash-harness.js';

const cycles = Number(process.argv[2] ?? 50);
const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'halserve-idem-soak-'));
const started = performance.now();
const post = (url: string, key: string): Promise<Response> =>
  fetch(`${url}/items`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify({ sku: key, note: 'x'.repeat(512) }) });
const start = (): Promise<Server> => startServer(dir);

let total = 0;
let acknowledgedTotal = 0;
let madeBeforeKill = 0;
try {
  for (let cycle = 1; cycle <= cycles; cycle++) {
    let server = await start();
    const target = 1 + Math.floor(Math.random() * 80);
    const acknowledged = new Map<string, { location: string | null; body: string }>();
    const keys: string[] = [];
    let stop = false;
    let answered = 0;
    let killed: () => void = () => {};
    const kill = new Promise<void>((resolve) => (killed = resolve));
    const clients = Array.from({ length: 16 }, async (_, c) => {
      for (let n = 0; !stop; n++) {
        const key = `c${cycle}-${c}-${n}`;
        keys.push(key);
        try {
          const response = await post(server.url, key);
          const body = await response.text();
          assert.equal(response.status, 201, `${key}: ${body}`);
          acknowledged.set(key, { location: response.headers.get('location'), body });
          if (++answered >= target) killed();
        } catch (error) {
          if (error instanceof assert.AssertionError) throw error;
          return; // the server died with this request in flight
        }
      }
    });
    await kill;
    server.child.kill('SIGKILL');
    stop = true;
    await Promise.all(clients);
    await server.exited;
    server = await start();
    const made = new Set<string>();
    let replayed = 0;
    for (const key of keys) {
      const again = await post(server.url, key);
      const body = await again.text();
      assert.equal(again.status, 201, `cycle ${cycle}, ${key}: ${body}`);
      const first = acknowledged.get(key);
      if (again.headers.get('idempotency-replayed') === 'true') replayed++;
      if (first !== undefined) {
        assert.equal(again.headers.get('idempotency-replayed'), 'true', `cycle ${cycle}, ${key}: an acknowledged key must replay`);
        assert.equal(again.headers.get('location'), first.location, `cycle ${cycle}, ${key}`);
        assert.equal(body, first.body, `cycle ${cycle}, ${key}`);
      }
      made.add(again.headers.get('location') ?? '');
    }
    assert.equal(made.size, keys.length, `cycle ${cycle}: one entity per key`);
    total += keys.length;
    acknowledgedTotal += acknowledged.size;
    madeBeforeKill += replayed - acknowledged.size;
    const list = (await (await fetch(`${server.url}/items?limit=1`)).json()) as { total: number };
    assert.equal(list.total, total, `cycle ${cycle}: the collection holds one entity per key ever sent`);
    server.child.kill('SIGKILL');
    await server.exited;
    if (cycle % 10 === 0) process.stderr.write(`cycle ${cycle}: ${total} keys, ${acknowledgedTotal} acknowledged\n`);
  }
  const answersFile = await fs.stat(path.join(dir, '_idempotency.items')).then(() => true, () => false);
  console.log(
    `idempotency soak: ${cycles} SIGKILL cycles, ${total} keys sent, ${acknowledgedTotal} acknowledged and replayed, ` +
      `${madeBeforeKill} made but unanswered at a kill (replayed), ${total - acknowledgedTotal - madeBeforeKill} made by their retry; ` +
      `one entity per key; answers file ${answersFile ? 'written by a compaction' : 'never written'}; ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
} catch (error) {
  console.error(`idempotency soak FAILED: ${(error as Error).stack ?? String(error)}`);
  process.exitCode = 1;
} finally {
  await removeDir(dir);
}
