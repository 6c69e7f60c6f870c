/**
 * Kill/restart cycles against a real server process: several clients write concurrently, the
 * server is killed with SIGKILL at a random moment, restarted on the same data directory, and every
 * acknowledged write must be there with its acknowledged state. A write in flight at the kill may
 * land or not, but nothing else may appear, and the file must load (the restart proves it).
 *
 * Used by `crash.test.ts` (a bounded run in the suite) and `crash-soak.ts` (hundreds of cycles).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'src/cli.ts');
const READY = /^halserve listening on (http:\/\/\S+)$/m;

export interface Server {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts `halserve` on port 0 over `dir`; resolves once its ready line is out. */
export async function startServer(dir: string, extra: string[] = []): Promise<Server> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, '--port', '0', '--data', dir, '--resource', 'items', '--log', 'off', ...extra], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = READY.exec(out);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`server exited with ${code} before it was ready: ${err}`)));
  });
  return { child, url, stderr: () => err, exited };
}

/** Client fields of an entity: what a write controls. */
type Fields = Record<string, unknown>;

interface Tracked {
  /** The acknowledged full representation, or null once a delete was acknowledged. */
  acked: Fields | null;
  /** A write sent but not answered when the server died: its possible outcome. */
  inFlight?: { kind: 'put' | 'patch' | 'delete'; fields: Fields | null };
}

interface Client {
  ids: string[];
  /** A POST not answered when the server died, identified by its unique token. */
  pendingPost?: string;
}

export interface CrashRunOptions {
  cycles: number;
  clients?: number;
  /** Random delay before each kill, in ms. */
  minKillMs?: number;
  maxKillMs?: number;
  log?: (message: string) => void;
}

export interface CrashRunResult {
  cycles: number;
  acknowledged: number;
  inFlightAtKill: number;
  inFlightLanded: number;
  tornTailsRepaired: number;
  /** Restarts that found a compaction cut short by the kill (its temporary file removed). */
  compactionsInterrupted: number;
  /** Cycles in which the file shrank: a compaction completed. */
  compactionsCompleted: number;
  entities: number;
  ms: number;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const clientFields = (entity: Fields): Fields => {
  const { id: _id, createdAt: _c, updatedAt: _u, _links: _l, ...rest } = entity;
  return rest;
};

/** Runs the cycles in `dir` (which should be empty); throws on the first lost or wrong write. */
export async function crashRun(dir: string, options: CrashRunOptions): Promise<CrashRunResult> {
  const started = Date.now();
  const nClients = options.clients ?? 4;
  const minKill = options.minKillMs ?? 30;
  const maxKill = options.maxKillMs ?? 400;
  const model = new Map<string, Tracked>();
  const clients: Client[] = Array.from({ length: nClients }, () => ({ ids: [] }));
  const result: CrashRunResult = {
    cycles: 0,
    acknowledged: 0,
    inFlightAtKill: 0,
    inFlightLanded: 0,
    tornTailsRepaired: 0,
    compactionsInterrupted: 0,
    compactionsCompleted: 0,
    entities: 0,
    ms: 0,
  };
  let fileSize = 0;
  let token = 0;

  for (let cycle = 0; cycle < options.cycles; cycle++) {
    const server = await startServer(dir);
    await verify(server.url, model, clients, result);
    // Warnings are written before the ready line; by now they have arrived.
    result.tornTailsRepaired += (server.stderr().match(/torn final line/g) ?? []).length;
    result.compactionsInterrupted += (server.stderr().match(/removed an unfinished compaction/g) ?? []).length;
    if (cycle > 0) assert.match(server.stderr(), /stale lock of process \d+ \(no longer running\) taken over/);

    let stop = false;
    const work = clients.map(async (client, c) => {
      while (!stop) {
        const r = Math.random();
        const id = client.ids.length > 0 ? client.ids[Math.floor(Math.random() * client.ids.length)]! : undefined;
        if (id === undefined || r < 0.4) {
          const mark = `t${++token}`;
          const body = { client: c, mark, n: 0, text: 'x'.repeat(Math.floor(Math.random() * 200)) };
          client.pendingPost = mark;
          const response = await send(`${server.url}/items`, 'POST', body);
          if (!response) return;
          assert.equal(response.status, 201);
          const entity = await readJson(response);
          if (!entity) return; // acknowledged, but the body was cut off: treated as in flight
          model.set(entity.id as string, { acked: entity });
          client.ids.push(entity.id as string);
          delete client.pendingPost;
        } else if (r < 0.8) {
          const kind = r < 0.6 ? 'put' : 'patch';
          const tracked = model.get(id)!;
          const change = kind === 'put' ? { client: c, replaced: ++token, n: Math.random() } : { n: ++token, patched: true };
          const next = kind === 'put' ? change : { ...clientFields(tracked.acked!), ...change };
          tracked.inFlight = { kind, fields: next };
          const response = await send(`${server.url}/items/${id}`, kind.toUpperCase(), change);
          if (!response) return;
          assert.equal(response.status, 200);
          const entity = await readJson(response);
          if (!entity) return;
          tracked.acked = entity;
          assert.deepEqual(clientFields(entity), next);
          delete tracked.inFlight;
        } else {
          const tracked = model.get(id)!;
          tracked.inFlight = { kind: 'delete', fields: null };
          const response = await send(`${server.url}/items/${id}`, 'DELETE');
          if (!response) return;
          assert.equal(response.status, 204);
          tracked.acked = null;
          delete tracked.inFlight;
          client.ids.splice(client.ids.indexOf(id), 1);
        }
        result.acknowledged++;
      }
    });
    await new Promise((resolve) => setTimeout(resolve, minKill + Math.random() * (maxKill - minKill)));
    server.child.kill('SIGKILL');
    stop = true;
    await server.exited;
    await Promise.all(work);
    result.inFlightAtKill += clients.filter((c) => c.pendingPost).length + [...model.values()].filter((t) => t.inFlight).length;
    const size = await fs.stat(path.join(dir, 'items.jsonl')).then((s) => s.size, () => 0);
    if (size < fileSize) result.compactionsCompleted++;
    fileSize = size;
    result.cycles++;
    options.log?.(`cycle ${cycle + 1}: ${result.acknowledged} writes acknowledged so far, ${model.size} ids`);
  }
  // The last kill's outcome is checked by one more start.
  const server = await startServer(dir);
  await verify(server.url, model, clients, result);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  result.entities = [...model.values()].filter((t) => t.acked).length;
  result.ms = Date.now() - started;
  return result;
}

/** A request whose failure (the server died) yields undefined. */
async function send(url: string, method: string, body?: unknown): Promise<Response | undefined> {
  try {
    return await fetch(url, { method, headers: JSON_HEADERS, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  } catch {
    return undefined;
  }
}

async function readJson(response: Response): Promise<Fields | undefined> {
  try {
    return (await response.json()) as Fields;
  } catch {
    return undefined;
  }
}

/** Reads every entity back and checks it against the model; settles in-flight writes either way. */
async function verify(url: string, model: Map<string, Tracked>, clients: Client[], result: CrashRunResult): Promise<void> {
  const seen = new Map<string, Fields>();
  for (let page = 1; ; page++) {
    const response = await fetch(`${url}/items?page=${page}&limit=200`);
    assert.equal(response.status, 200);
    const body = (await response.json()) as { pages: number; _embedded: { items: Fields[] } };
    for (const entity of body._embedded.items) seen.set(entity.id as string, entity);
    if (page >= body.pages) break;
  }
  for (const [id, tracked] of model) {
    const actual = seen.get(id);
    seen.delete(id);
    if (!tracked.inFlight) {
      assert.deepEqual(actual ?? null, tracked.acked, `acknowledged state of ${id}`);
      continue;
    }
    // In flight at the kill: the old acknowledged state, or the write's outcome.
    const landed =
      tracked.inFlight.fields === null ? actual === undefined : actual !== undefined && isDeepEqual(clientFields(actual), tracked.inFlight.fields);
    if (!landed) assert.deepEqual(actual ?? null, tracked.acked, `${id}: neither its acknowledged state nor its in-flight write`);
    else result.inFlightLanded++;
    tracked.acked = actual ?? null;
    delete tracked.inFlight;
    if (!actual) for (const client of clients) if (client.ids.includes(id)) client.ids.splice(client.ids.indexOf(id), 1);
  }
  // Anything else must be an unanswered POST that landed anyway.
  for (const [id, entity] of seen) {
    const owner = clients[entity.client as number];
    assert.ok(owner && owner.pendingPost === entity.mark, `unexpected entity ${JSON.stringify(entity)}`);
    delete owner.pendingPost;
    model.set(id, { acked: entity });
    owner.ids.push(id);
    result.inFlightLanded++;
  }
  for (const client of clients) delete client.pendingPost;
}

function isDeepEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

/** Removes a run's directory. */
export const removeDir = (dir: string): Promise<void> => fs.rm(dir, { recursive: true, force: true });
