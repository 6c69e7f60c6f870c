/**
 * Convergence under faults, in the style of Jepsen (issue 9): three halserve processes on one
 * PostgreSQL database, eight clients sending conditional increments (`If-Match`), creates and
 * deletes, each to a random process; midway PostgreSQL is stopped (fast shutdown) and started
 * again, and one halserve process is SIGKILLed and restarted. Then the history is checked:
 *
 * - every acknowledged increment is in its counter exactly once, and nothing else is, except
 *   writes whose outcome the client could not know (503 or a broken connection);
 * - every state a client read is a prefix of the final history (no lost or reordered update), and
 *   no 412 was granted while the state it was based on was still current;
 * - every acknowledged create is there at the end unless deleted, every acknowledged delete gone;
 * - every process serves identical pages (a full traversal of each);
 * - no response but 2xx, 404, 412 and 503 (and a refused connection to the killed process).
 *
 * Each counter keeps the ids of the increments applied to it (`ops`), so the final state is the
 * full history of writes. Seeded (`CONVERGENCE_SEED`); on failure the history is written to a file
 * whose path the assertion message gives.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { findPostgres, startCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { LIVENESS_MS, startCli, tempDir, type CliProcess } from '../helpers/process.js';
import { prng } from '../helpers/prng.js';

const SEED = Number(process.env['CONVERGENCE_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
const CLIENTS = 8;
const COUNTERS = 6;
/** Seconds from the start of the load: the outage, the kill, the end. */
const SCHEDULE = { pgStop: 4, pgStart: 7, kill: 9, restart: 10, end: 15 };
const TOKEN = 'convergence-token';
const RESOURCE = 'counters';

type Outcome = 'ok' | 'refused' | 'unknown';
interface Increment {
  readonly op: string;
  readonly counter: string;
  /** The history the client read before writing. */
  readonly base: readonly string[];
  readonly sent: number;
  received: number;
  status: number | string;
  outcome: Outcome;
}
interface Lifecycle {
  readonly kind: 'create' | 'delete';
  readonly id: string;
  readonly sent: number;
  status: number | string;
  outcome: Outcome;
}

const found = findPostgres();
const skip = 'missing' in found ? found.missing : false;

describe('three processes on one PostgreSQL: convergence under faults', { skip }, () => {
  let cluster: PgCluster;
  let url: string;
  const processes: (CliProcess | undefined)[] = [];
  // Each process gets an empty data directory of its own (no schema, no files); the ops lists
  // grow past the default limit of values per entity.
  const start = async (): Promise<CliProcess> =>
    startCli(['--store', url, '--data', await tempDir('halserve-convergence-'), '--resource', RESOURCE, '--port', '0', '--log', 'off', '--token', TOKEN, '--max-body-values', '1000000']);

  before(async () => {
    if (!('bin' in found)) return;
    cluster = await startCluster(found.bin);
    url = cluster.url(await cluster.createDatabase('convergence'));
  });
  after(async () => {
    for (const p of processes) p?.child.kill('SIGKILL');
    await cluster?.stop();
  });

  test(`seed ${SEED}: every acknowledged write counted once, no wrong 412, identical pages, only 503s in the outage`, async () => {
    // Started here, not in before(): the helpers tie each process's lifetime to the current test.
    for (let i = 0; i < 3; i++) processes.push(await start());
    const random = prng(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const headers = { authorization: `Bearer ${TOKEN}` };
    const json = { ...headers, 'content-type': 'application/json' };
    const live = (): CliProcess[] => processes.filter((p): p is CliProcess => p !== undefined);

    const counters: string[] = [];
    for (let i = 0; i < COUNTERS; i++) {
      const response = await fetch(`${processes[0]!.url}/${RESOURCE}`, { method: 'POST', headers: json, body: JSON.stringify({ kind: 'counter', count: 0, ops: [] }) });
      assert.equal(response.status, 201);
      counters.push(((await response.json()) as { id: string }).id);
    }

    const increments: Increment[] = [];
    const lifecycles: Lifecycle[] = [];
    const anomalies: string[] = [];
    const faults: string[] = [];
    const t0 = performance.now();
    const now = (): number => performance.now() - t0;
    let outage = false;
    let opSeq = 0;
    const createdIds: string[] = [];

    /** A request to a random live process; a refused or broken connection is `'network'`. */
    const send = async (path: string, init: RequestInit): Promise<{ status: number | 'network'; body: unknown; etag: string | null }> => {
      const target = pick(live());
      try {
        const response = await fetch(`${target.url}${path}`, { ...init, signal: AbortSignal.timeout(5000) });
        const text = await response.text();
        const body = text && response.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as unknown) : text;
        if (![200, 201, 204, 404, 412, 503].includes(response.status)) {
          anomalies.push(`${init.method ?? 'GET'} ${path} -> ${response.status} ${text.slice(0, 200)}${outage ? ' (during the outage)' : ''}`);
        }
        return { status: response.status, body, etag: response.headers.get('etag') };
      } catch {
        return { status: 'network', body: undefined, etag: null };
      }
    };

    const outcomeOf = (status: number | 'network', ok: number[], refused: number[]): Outcome =>
      typeof status === 'number' && ok.includes(status) ? 'ok' : typeof status === 'number' && refused.includes(status) ? 'refused' : 'unknown';

    const client = async (c: number): Promise<void> => {
      while (now() < SCHEDULE.end * 1000) {
        const roll = random();
        if (roll < 0.8) {
          const counter = pick(counters);
          const read = await send(`/${RESOURCE}/${counter}`, { headers });
          if (read.status !== 200 || !read.etag) continue;
          const state = read.body as { count: number; ops: string[] };
          const op = `c${c}-${++opSeq}`;
          const inc: Increment = { op, counter, base: state.ops, sent: now(), received: 0, status: 0, outcome: 'unknown' };
          increments.push(inc);
          const write = await send(`/${RESOURCE}/${counter}`, {
            method: 'PATCH',
            headers: { ...headers, 'content-type': 'application/merge-patch+json', 'if-match': read.etag },
            body: JSON.stringify({ count: state.count + 1, ops: [...state.ops, op] }),
          });
          inc.received = now();
          inc.status = write.status;
          inc.outcome = outcomeOf(write.status, [200], [412]);
        } else if (roll < 0.9 || createdIds.length === 0) {
          const sent = now();
          const write = await send(`/${RESOURCE}`, { method: 'POST', headers: json, body: JSON.stringify({ kind: 'temp', by: c }) });
          const id = write.status === 201 ? (write.body as { id: string }).id : '';
          lifecycles.push({ kind: 'create', id, sent, status: write.status, outcome: outcomeOf(write.status, [201], []) });
          if (id) createdIds.push(id);
        } else {
          const id = createdIds.splice(Math.floor(random() * createdIds.length), 1)[0]!;
          const sent = now();
          const write = await send(`/${RESOURCE}/${id}`, { method: 'DELETE', headers });
          lifecycles.push({ kind: 'delete', id, sent, status: write.status, outcome: outcomeOf(write.status, [204], [404]) });
          if (write.status === 'network' || write.status === 503) createdIds.push(id);
        }
      }
    };

    const nemesis = async (): Promise<void> => {
      const at = async (seconds: number): Promise<void> => {
        const wait = seconds * 1000 - now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      };
      await at(SCHEDULE.pgStop);
      outage = true;
      await cluster.pause('fast');
      faults.push(`${now().toFixed(0)} ms: PostgreSQL stopped (fast shutdown)`);
      await at(SCHEDULE.pgStart);
      await cluster.resume();
      outage = false;
      faults.push(`${now().toFixed(0)} ms: PostgreSQL started`);
      await at(SCHEDULE.kill);
      processes[2]!.child.kill('SIGKILL');
      await processes[2]!.exited;
      processes[2] = undefined;
      faults.push(`${now().toFixed(0)} ms: process 3 SIGKILLed`);
      await at(SCHEDULE.restart);
      processes[2] = await start();
      faults.push(`${now().toFixed(0)} ms: process 3 restarted`);
    };

    await Promise.all([nemesis(), ...Array.from({ length: CLIENTS }, (_, c) => client(c))]);

    // Every process converges on one state: compare full traversals until they agree.
    const traverse = async (p: CliProcess): Promise<string[]> => {
      const lines: string[] = [];
      let next: string | undefined = `/${RESOURCE}?limit=100`;
      while (next) {
        const response = await fetch(`${p.url}${next}`, { headers });
        assert.equal(response.status, 200);
        const page = (await response.json()) as { _embedded: Record<string, unknown[]>; _links: { next?: { href: string } } };
        for (const entity of Object.values(page._embedded)[0] ?? []) lines.push(JSON.stringify(entity));
        next = page._links.next?.href.replace(/^\/v1/, '');
      }
      return lines;
    };
    let views: string[][] = [];
    const deadline = Date.now() + LIVENESS_MS;
    for (;;) {
      views = await Promise.all(live().map(traverse));
      if (views.every((v) => JSON.stringify(v) === JSON.stringify(views[0]))) break;
      if (Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const finalById = new Map<string, Record<string, unknown>>();
    for (const line of views[0] ?? []) {
      const entity = JSON.parse(line) as Record<string, unknown>;
      finalById.set(entity['id'] as string, entity);
    }
    const problems: string[] = [...anomalies];
    if (!views.every((v) => JSON.stringify(v) === JSON.stringify(views[0]))) problems.push('the processes serve different pages after 10 s');

    for (const counter of counters) {
      const entity = finalById.get(counter);
      if (!entity) {
        problems.push(`counter ${counter} is missing`);
        continue;
      }
      const ops = entity['ops'] as string[];
      if (entity['count'] !== ops.length) problems.push(`counter ${counter}: count ${String(entity['count'])} but ${ops.length} ops`);
      if (new Set(ops).size !== ops.length) problems.push(`counter ${counter}: an op applied twice`);
      const position = new Map(ops.map((op, i) => [op, i]));
      for (const inc of increments.filter((i) => i.counter === counter)) {
        const joined = inc.base.join(',');
        if (ops.slice(0, inc.base.length).join(',') !== joined) problems.push(`${inc.op}: read a state that is not a prefix of the final history`);
        const at = position.get(inc.op);
        if (inc.outcome === 'ok' && at === undefined) problems.push(`${inc.op}: acknowledged but lost`);
        if (inc.outcome === 'ok' && at !== undefined && at !== inc.base.length) problems.push(`${inc.op}: applied over a state other than the one its If-Match named`);
        if (inc.outcome === 'refused' && at !== undefined) problems.push(`${inc.op}: refused with 412 but applied`);
        if (inc.outcome === 'refused') {
          // The state it was based on must have been replaced before the 412 was received.
          const successor = ops[inc.base.length];
          const replacer = successor === undefined ? undefined : increments.find((i) => i.op === successor);
          if (!replacer || replacer.sent > inc.received) problems.push(`${inc.op}: 412 while its base state was still current`);
        }
      }
      for (const op of ops) {
        const inc = increments.find((i) => i.op === op);
        if (!inc) problems.push(`counter ${counter}: op ${op} was never sent`);
        else if (inc.outcome === 'refused') problems.push(`counter ${counter}: op ${op} refused but present`);
      }
    }
    const deletedOk = new Set(lifecycles.filter((l) => l.kind === 'delete' && l.outcome === 'ok').map((l) => l.id));
    for (const life of lifecycles) {
      if (life.kind === 'create' && life.outcome === 'ok' && !deletedOk.has(life.id) && !finalById.has(life.id)) {
        const deleteTried = lifecycles.some((l) => l.kind === 'delete' && l.id === life.id);
        if (!deleteTried) problems.push(`create ${life.id}: acknowledged but missing`);
      }
      if (life.kind === 'delete' && life.outcome === 'ok' && finalById.has(life.id)) problems.push(`delete ${life.id}: acknowledged but still there`);
    }

    const acked = increments.filter((i) => i.outcome === 'ok').length;
    const summary = {
      seed: SEED,
      operations: increments.length + lifecycles.length,
      increments: { acknowledged: acked, refused412: increments.filter((i) => i.outcome === 'refused').length, unknown: increments.filter((i) => i.outcome === 'unknown').length },
      creates: lifecycles.filter((l) => l.kind === 'create').length,
      deletes: lifecycles.filter((l) => l.kind === 'delete').length,
      status503: [...increments, ...lifecycles].filter((x) => x.status === 503).length,
      faults,
      anomalies: problems.length,
    };
    console.log(`convergence: ${JSON.stringify(summary)}`);
    if (problems.length > 0) {
      const file = join(tmpdir(), `halserve-convergence-${SEED}-${Date.now()}.json`);
      await writeFile(file, JSON.stringify({ summary, problems, faults, increments, lifecycles, final: views }, null, 1));
      assert.fail(`${problems.length} anomalies (seed ${SEED}; history in ${file}):\n${problems.slice(0, 20).join('\n')}`);
    }
    assert.equal(faults.length, 4, 'every fault was injected');
    assert.ok(acked > 0, 'some increments were acknowledged');
    assert.ok(summary.status503 > 0, 'writes during the outage were answered 503');
  });
});
