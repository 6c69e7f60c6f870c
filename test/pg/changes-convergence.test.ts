/**
 * The change feed's promise on PostgreSQL, end to end: three halserve processes on one database,
 * writers through all of them, and a client that applies every event it receives from a stream
 * and resumes with `Last-Event-ID` — moved from one process to another, through a database
 * stop/start (`pg_ctl stop`, then start) and a `kill -9` of the process it reads from. At the end
 * its copy equals a full listing of every process, no event id came twice, and every acknowledged
 * write's effect is there.
 *
 * Beside it runs the same client with its cursor logic broken: at each move it resumes one event
 * late. The same checks must catch it (a move is made at a quiet moment, after one create nobody
 * writes again: the event it skips), so the checker is shown to fail when the cursor logic does.
 *
 * Deterministic: every phase waits for events (`eventually`), never for a time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findPostgres, startCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { eventually, startCli, tempDir, type CliProcess } from '../helpers/process.js';
import { prng } from '../helpers/prng.js';
import { follow, listing, Mirror, type FeedEvent } from '../changes/mirror.js';

const RESOURCE = 'items';
const WRITERS = 4;
/** Events the follower must see in each phase before the next fault. */
const PHASE_EVENTS = 30;
const JSON_HEADERS = { 'content-type': 'application/json' };

const found = findPostgres();
const skip = 'missing' in found ? found.missing : false;

/** A mirror whose resume is broken: after each move it drops the first event it gets, as if it had resumed one event late. */
class LateMirror extends Mirror {
  late = false;
  override apply(event: FeedEvent): void {
    if (this.late) {
      this.late = false;
      this.lastId = event.id;
      return;
    }
    super.apply(event);
  }
}

/** A client reading one process's stream into `mirror`, reconnecting with its last id until moved or stopped. */
class Follower {
  readonly mirror: Mirror;
  #url = '';
  #stop = false;
  #loop: Promise<void> = Promise.resolve();

  constructor(mirror: Mirror) {
    this.mirror = mirror;
  }

  /** Stops reading where it is and goes on at `url` with `Last-Event-ID` (from the origin at first). */
  async moveTo(url: string): Promise<void> {
    await this.stop();
    if (this.mirror instanceof LateMirror && this.mirror.lastId !== undefined) this.mirror.late = true;
    this.#url = url;
    this.#stop = false;
    this.#loop = (async () => {
      while (!this.#stop) {
        // A stream ends when its process dies or cannot read the database: reconnect to the same one.
        await follow(this.#url, this.mirror, () => this.#stop, {}, undefined, '0.0').catch(() => {});
        if (!this.#stop) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stop = true;
    await this.#loop;
  }
}

/** Each entity's possible final states (`absent`, or its `n`), as the writers' acknowledged and unknown outcomes allow. */
interface History {
  readonly possible: Map<string, Set<string>>;
  /** `n` of creates whose answer was lost (a 503, a killed process): their entity may exist. */
  readonly unknownCreates: Set<string>;
  /** Answers no write should get. */
  readonly unexpected: string[];
  acknowledged: number;
  failures: number;
}

describe('three processes on one PostgreSQL: a stream client converges through faults', { skip }, () => {
  let cluster: PgCluster;
  let url: string;
  const processes: CliProcess[] = [];
  const start = async (): Promise<CliProcess> =>
    startCli(['--store', url, '--data', await tempDir('halserve-feed-convergence-'), '--resource', RESOURCE, '--port', '0', '--log', 'off']);

  before(async () => {
    if (!('bin' in found)) return;
    cluster = await startCluster(found.bin);
    url = cluster.url(await cluster.createDatabase('feed_convergence'));
  });
  after(async () => {
    for (const p of processes) p.child.kill('SIGKILL');
    await cluster?.stop();
  });

  test('writers on three processes, a stream moved by Last-Event-ID, pg_ctl stop/start, kill -9 -> the client equals the listing; the one resuming late does not', async () => {
    for (let i = 0; i < 3; i++) processes.push(await start());
    const history: History = { possible: new Map(), unknownCreates: new Set(), unexpected: [], acknowledged: 0, failures: 0 };
    let paused = false;
    let stopped = false;
    let inFlight = 0;
    let sent = 0;

    /** One writer: creates, patches and deletes its own entities, each request to a random process. */
    const writer = async (seed: number): Promise<void> => {
      const random = prng(seed);
      const mine: string[] = [];
      while (!stopped) {
        if (paused) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          continue;
        }
        const target = processes[Math.floor(random() * processes.length)]!.url;
        const n = String(++sent);
        const roll = random();
        const id = mine[Math.floor(random() * mine.length)];
        const kind = roll < 0.45 || id === undefined ? 'create' : roll < 0.85 ? 'patch' : 'delete';
        inFlight++;
        let status: number | string;
        let created: string | undefined;
        try {
          const res =
            kind === 'create'
              ? await fetch(`${target}/${RESOURCE}`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n }) })
              : kind === 'patch'
                ? await fetch(`${target}/${RESOURCE}/${id}`, { method: 'PATCH', headers: JSON_HEADERS, body: JSON.stringify({ n }) })
                : await fetch(`${target}/${RESOURCE}/${id}`, { method: 'DELETE' });
          status = res.status;
          const text = await res.text();
          if (status === 201) created = (JSON.parse(text) as { id: string }).id;
        } catch {
          status = 'no answer';
        } finally {
          inFlight--;
        }
        const ok = status === 201 || status === 200 || status === 204;
        if (!ok && status !== 503 && status !== 'no answer') {
          history.unexpected.push(`${kind} ${id ?? ''} -> ${status}`);
          continue;
        }
        if (ok) history.acknowledged++;
        else history.failures++;
        const after = kind === 'delete' ? 'absent' : n;
        if (kind === 'create') {
          if (created !== undefined) {
            history.possible.set(created, new Set([after]));
            mine.push(created);
          } else history.unknownCreates.add(n);
          continue;
        }
        const possible = history.possible.get(id!)!;
        if (ok) {
          possible.clear();
          possible.add(after);
          if (kind === 'delete') mine.splice(mine.indexOf(id!), 1);
        } else {
          // It may or may not have been made: both states are possible, and the writer leaves the entity alone from now on.
          possible.add(after);
          mine.splice(mine.indexOf(id!), 1);
        }
      }
    };
    const writing = Promise.all(Array.from({ length: WRITERS }, (_, i) => writer(1600 + i)));

    const latestOf = async (p: CliProcess): Promise<string | undefined> => {
      try {
        const res = await fetch(`${p.url}/changes?since=now`);
        return res.status === 200 ? ((await res.json()) as { cursor: string }).cursor : undefined;
      } catch {
        return undefined;
      }
    };
    /** Every process at the same latest change, and each follower's last id there. */
    const caughtUp = async (followers: readonly Follower[]): Promise<void> =>
      eventually(async () => {
        const latest = await Promise.all(processes.map(latestOf));
        return latest[0] !== undefined && latest.every((c) => c === latest[0]) && followers.every((f) => f.mirror.lastId === latest[0]);
      }, 'every process at one latest change, the followers there');
    const readiness = async (status: number): Promise<void> =>
      eventually(async () => {
        const answers = await Promise.all(processes.map((p) => fetch(`${p.url}/readyz`).then((r) => r.status, () => 0)));
        return answers.every((s) => s === status);
      }, `/readyz ${status} on every process`);
    const quiet = async (): Promise<void> => {
      paused = true;
      await eventually(() => inFlight === 0, 'the writers idle');
    };
    /**
     * Once the writers are idle, one more create, and every follower has it, then `caughtUp`: the
     * feed delivers in cursor order, so the followers then hold every write acknowledged before.
     * The processes agreeing on a latest change does not show that by itself: a committed write
     * that no process's feed has delivered yet is in none of their latest cursors.
     */
    const settled = async (what: string, followers: readonly Follower[]): Promise<void> => {
      const res = await fetch(`${processes[0]!.url}/${RESOURCE}`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ n: what }) });
      assert.equal(res.status, 201);
      const id = ((await res.json()) as { id: string }).id;
      history.possible.set(id, new Set([what]));
      await eventually(() => followers.every((f) => f.mirror.entities.has(`${RESOURCE}/${id}`)), `the followers have the create "${what}"`);
      await caughtUp(followers);
    };

    const honest = new Follower(new Mirror());
    const broken = new LateMirror();
    const late = new Follower(broken);
    const followers = [honest, late];
    const moveAll = async (p: CliProcess): Promise<void> => {
      await Promise.all(followers.map((f) => f.moveTo(p.url)));
    };
    const events = (): number => honest.mirror.seen.size;
    const phase = async (what: string): Promise<void> => {
      const from = events();
      await eventually(() => events() >= from + PHASE_EVENTS, `${PHASE_EVENTS} more events (${what})`);
    };

    // 1. From the origin, on process 0.
    await moveAll(processes[0]!);
    await phase('on process 0');

    // 2. A quiet move to process 1, past one create nobody writes again: the late client skips it.
    await quiet();
    await settled('before the marker', followers);
    await Promise.all(followers.map((f) => f.stop()));
    const res = await fetch(`${processes[2]!.url}/${RESOURCE}`, { method: 'POST', headers: JSON_HEADERS, body: '{"n":"marker"}' });
    assert.equal(res.status, 201);
    const marker = ((await res.json()) as { id: string }).id;
    history.possible.set(marker, new Set(['marker']));
    await moveAll(processes[1]!);
    await eventually(() => honest.mirror.entities.has(`${RESOURCE}/${marker}`) && broken.lastId === honest.mirror.lastId, 'the marker read on process 1');
    paused = false;
    await phase('on process 1');

    // 3. The database stopped and started again while everyone writes and reads.
    const failedBefore = history.failures;
    await cluster.pause('fast');
    await readiness(503);
    await eventually(() => history.failures > failedBefore, 'a write refused during the outage');
    await cluster.resume();
    await readiness(200);
    await phase('after the database came back');

    // 4. kill -9 of the process the stream is read from; the client moves to process 2.
    processes[1]!.child.kill('SIGKILL');
    await processes[1]!.exited;
    await moveAll(processes[2]!);
    processes[1] = await start();
    await phase('on process 2, process 1 restarted');

    // 5. Back to the restarted process 1; then the writers stop and everyone catches up.
    await moveAll(processes[1]!);
    await phase('on the restarted process 1');
    await quiet();
    stopped = true;
    await writing;
    await settled('the last', followers);
    await Promise.all(followers.map((f) => f.stop()));

    const listings = await Promise.all(processes.map((p) => listing(p.url, [RESOURCE])));
    assert.deepEqual(listings[1], listings[0], 'processes 0 and 1 list the same');
    assert.deepEqual(listings[2], listings[0], 'processes 0 and 2 list the same');
    const listed = listings[0]!;

    // The client: no id twice, its copy the listing.
    assert.deepEqual(honest.mirror.repeated, []);
    assert.deepEqual(honest.mirror.entities, listed);

    // Every acknowledged write's effect is there, and nothing else.
    assert.deepEqual(history.unexpected, []);
    assert.ok(history.acknowledged >= 4 * PHASE_EVENTS && history.failures > 0, `${history.acknowledged} acknowledged, ${history.failures} not`);
    const stateOf = (id: string): string => String((listed.get(`${RESOURCE}/${id}`) as { n?: unknown } | undefined)?.n ?? 'absent');
    for (const [id, possible] of history.possible) assert.ok(possible.has(stateOf(id)), `${id}: ${stateOf(id)}, not one of ${[...possible].join(', ')}`);
    for (const [key, entity] of listed) {
      const id = key.slice(RESOURCE.length + 1);
      assert.ok(history.possible.has(id) || history.unknownCreates.has(String(entity['n'])), `${key} was never written`);
    }

    // The client that resumed one event late: the same checks catch it.
    assert.deepEqual(broken.repeated, []);
    assert.notDeepEqual(broken.entities, listed);
    assert.ok(!broken.entities.has(`${RESOURCE}/${marker}`), 'the late client missed the marker');

    for (const p of processes) p.child.kill('SIGTERM');
    for (const p of processes) assert.equal(await p.exited, 0);
  });
});
