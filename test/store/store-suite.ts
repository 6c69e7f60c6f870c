import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { KeyReusedError, ReplayedAnswer, type KeyedWrite, type StoredAnswer } from '../../src/store/idempotency.js';
import { StoreConflictError, type EntityRecord, type Store, type StoreChange, type StoredEntity } from '../../src/store/store.js';

/** How the suite gets a fresh, empty store of one kind, and (for persistent kinds) reopens it. */
export interface StoreFactory {
  open(): Promise<Store>;
  /** Closes `store` and opens the same data again; absent for stores that keep nothing. */
  reopen?: (store: Store) => Promise<Store>;
  cleanup?: () => Promise<void>;
  /** Resolves once the store has reported every change acknowledged so far (a store whose changes come back through a feed). */
  caughtUp?: (store: Store) => Promise<void>;
}

/** What a follower was told, without the entity object. */
interface Told {
  readonly resource: string;
  readonly id: string;
  readonly type: string;
  readonly json: string | undefined;
  readonly cursor: string;
  readonly at: number;
}
const told = (change: StoreChange): Told => ({
  resource: change.resource,
  id: change.id,
  type: change.type,
  json: change.entity?.json,
  cursor: change.cursor,
  at: change.at,
});
/** Cursors are opaque; what the suite may rely on is that each is a distinct RFC 3986 unreserved string. */
const UNRESERVED = /^[A-Za-z0-9._~-]{1,255}$/;

export const record = (id: string, fields: Record<string, unknown> = {}): EntityRecord => ({
  id,
  createdAt: 1_700_000_000,
  updatedAt: 1_700_000_000,
  ...fields,
});

/** Positions `[offset, offset + limit)` of the creation order, through the port's query. */
const pageOf = async (store: Store, offset: number, limit: number): Promise<readonly StoredEntity[]> =>
  (await store.query({ filters: [], sort: [], search: [], offset, limit })).entities;

const ids = (entities: Iterable<{ id: string }>): string[] => Array.from(entities, (e) => e.id);

/** The behaviour every `Store` shares (hono-style: one suite, every implementation). */
export function storeSuite(name: string, factory: StoreFactory): void {
  describe(`${name}: Store behaviour`, () => {
    const opened: Store[] = [];
    const open = async (): Promise<Store> => {
      const store = await factory.open();
      opened.push(store);
      return store;
    };
    after(async () => {
      for (const store of opened) await store.close();
      await factory.cleanup?.();
    });

    test('new store -> empty, ready, page 0 empty', async () => {
      const store = await open();
      assert.equal(store.size, 0);
      assert.equal(store.ready, true);
      assert.deepEqual((await pageOf(store, 0, 20)), []);
      assert.deepEqual((await pageOf(store, 0, 1e9)), []);
      assert.equal(await store.get('nope'), undefined);
    });

    test('create -> entity with record, json of the record, version; get returns it', async () => {
      const store = await open();
      const input = record('a1', { name: 'first', tags: ['x', 'y'], nested: { n: 1 } });
      const created = await store.create(input);
      assert.equal(created.id, 'a1');
      assert.deepEqual(created.record, input);
      assert.equal(created.json, JSON.stringify(input));
      assert.equal(typeof created.version, 'string');
      assert.ok(created.version.length > 0);
      const got = await store.get('a1');
      assert.ok(got);
      assert.deepEqual(got.record, input);
      assert.equal(got.json, created.json);
      assert.equal(got.version, created.version);
      assert.equal(store.size, 1);
    });

    test('create with an existing id -> StoreConflictError, nothing changes', async () => {
      const store = await open();
      const first = await store.create(record('dup', { v: 1 }));
      await assert.rejects(store.create(record('dup', { v: 2 })), StoreConflictError);
      assert.equal(store.size, 1);
      assert.deepEqual((await store.get('dup'))?.record, first.record);
    });

    test('creates -> page and values in creation order', async () => {
      const store = await open();
      for (const id of ['c', 'a', 'b', 'e', 'd']) await store.create(record(id));
      assert.deepEqual(ids((await pageOf(store, 0, 10))), ['c', 'a', 'b', 'e', 'd']);
      assert.deepEqual(ids((await pageOf(store, 1, 2))), ['a', 'b']);
      assert.deepEqual(ids((await pageOf(store, 4, 2))), ['d']);
      assert.deepEqual(ids((await pageOf(store, 5, 2))), []);
      assert.deepEqual(ids((await pageOf(store, 0, 1e9))), ['c', 'a', 'b', 'e', 'd']);
    });

    test('concurrent creates -> all stored, in call order', async () => {
      const store = await open();
      const created = await Promise.all(Array.from({ length: 50 }, (_, i) => store.create(record(`k${i}`, { i }))));
      assert.deepEqual(ids(created), Array.from({ length: 50 }, (_, i) => `k${i}`));
      assert.deepEqual(ids((await pageOf(store, 0, 1e9))), ids(created));
    });

    test('update -> new state and version, same place in the order', async () => {
      const store = await open();
      for (const id of ['u1', 'u2', 'u3']) await store.create(record(id, { n: 0 }));
      const before = (await store.get('u2'))!;
      const updated = await store.update('u2', (current) => ({ ...current.record, n: 1, updatedAt: 1_700_000_100 }));
      assert.ok(updated);
      assert.deepEqual(updated.record, record('u2', { n: 1, updatedAt: 1_700_000_100 }));
      assert.equal(updated.json, JSON.stringify(updated.record));
      assert.notEqual(updated.version, before.version);
      assert.deepEqual((await store.get('u2'))?.record, updated.record);
      assert.deepEqual(ids((await pageOf(store, 0, 1e9))), ['u1', 'u2', 'u3']);
    });

    test('updates that change the content, even by a field inside a nested object -> a new version each time', async () => {
      const store = await open();
      const created = await store.create(record('same', { nested: { n: 0 } }));
      const versions = new Set([created.version]);
      for (let i = 1; i <= 5; i++) {
        const updated = await store.update('same', (current) => ({ ...current.record, nested: { n: i } }));
        versions.add(updated!.version);
      }
      // (An update to the very same text may keep the version: it names the same representation,
      // as a strong validator may (RFC 9110 §8.8.1); the file store's is of its text.)
      assert.equal(versions.size, 6);
    });

    test('update of a missing id -> undefined, change not called', async () => {
      const store = await open();
      let called = false;
      const result = await store.update('ghost', (current) => {
        called = true;
        return current.record;
      });
      assert.equal(result, undefined);
      assert.equal(called, false);
      assert.equal(store.size, 0);
    });

    test('update whose change throws -> that error, state unchanged', async () => {
      const store = await open();
      const created = await store.create(record('t', { n: 1 }));
      const refusal = new Error('refused by validation');
      await assert.rejects(
        store.update('t', () => {
          throw refusal;
        }),
        (error) => error === refusal,
      );
      assert.equal((await store.get('t'))?.version, created.version);
      assert.deepEqual((await store.get('t'))?.record, created.record);
    });

    test('concurrent read-modify-write updates -> none lost', async () => {
      const store = await open();
      await store.create(record('counter', { n: 0 }));
      await Promise.all(
        Array.from({ length: 25 }, () =>
          store.update('counter', (current) => ({ ...current.record, n: (current.record.n as number) + 1 })),
        ),
      );
      assert.equal((await store.get('counter'))?.record.n, 25);
    });

    test('delete -> true; gone from get, page, values and size', async () => {
      const store = await open();
      for (const id of ['d1', 'd2', 'd3']) await store.create(record(id));
      assert.equal(await store.delete('d2'), true);
      assert.equal(await store.get('d2'), undefined);
      assert.equal(store.size, 2);
      assert.deepEqual(ids((await pageOf(store, 0, 10))), ['d1', 'd3']);
      assert.deepEqual(ids((await pageOf(store, 0, 1e9))), ['d1', 'd3']);
    });

    test('delete of a missing id -> false', async () => {
      const store = await open();
      assert.equal(await store.delete('ghost'), false);
    });

    test('delete whose check throws -> that error, entity kept', async () => {
      const store = await open();
      await store.create(record('keep'));
      const refusal = new Error('precondition failed');
      let seen: string | undefined;
      await assert.rejects(
        store.delete('keep', (current) => {
          seen = current.id;
          throw refusal;
        }),
        (error) => error === refusal,
      );
      assert.equal(seen, 'keep');
      assert.ok(await store.get('keep'));
      assert.equal(store.size, 1);
    });

    test('delete then create the same id -> placed at the end', async () => {
      const store = await open();
      for (const id of ['r1', 'r2', 'r3']) await store.create(record(id));
      await store.delete('r1');
      await store.create(record('r1', { again: true }));
      assert.deepEqual(ids((await pageOf(store, 0, 1e9))), ['r2', 'r3', 'r1']);
      assert.equal((await store.get('r1'))?.record.again, true);
    });

    test('update then delete queued together -> delete sees the update; final state gone', async () => {
      const store = await open();
      await store.create(record('q', { n: 0 }));
      let seenN: unknown;
      const [updated, deleted] = await Promise.all([
        store.update('q', (current) => ({ ...current.record, n: 1 })),
        store.delete('q', (current) => {
          seenN = current.record.n;
        }),
      ]);
      assert.equal(updated?.record.n, 1);
      assert.equal(deleted, true);
      assert.equal(seenN, 1);
      assert.equal(await store.get('q'), undefined);
    });

    test('3000 creates with scattered deletes -> every page matches the creation order', async () => {
      const store = await open();
      const model: string[] = [];
      await Promise.all(Array.from({ length: 3000 }, (_, i) => store.create(record(`p${i}`))));
      for (let i = 0; i < 3000; i++) model.push(`p${i}`);
      // Delete a long run (forces holes past the re-pack threshold) and a scattering.
      const doomed = new Set<string>();
      for (let i = 100; i < 2200; i++) doomed.add(`p${i}`);
      for (let i = 2200; i < 3000; i += 7) doomed.add(`p${i}`);
      await Promise.all([...doomed].map((id) => store.delete(id)));
      const live = model.filter((id) => !doomed.has(id));
      assert.equal(store.size, live.length);
      for (const limit of [1, 20, 200]) {
        for (let offset = 0; offset <= live.length; offset += 37) {
          assert.deepEqual(ids((await pageOf(store, offset, limit))), live.slice(offset, offset + limit), `offset ${offset} limit ${limit}`);
        }
      }
      assert.deepEqual(ids((await pageOf(store, 0, 1e9))), live);
    });

    test('facets of a filtered query -> exact counts by value, arrays once per distinct element; writes move them', async () => {
      const store = await open();
      await store.create(record('f1', { status: 'on', tags: ['x', 'y', 'x'], d: { w: 1 } }));
      await store.create(record('f2', { status: 'on', tags: ['x'], d: { w: 2 } }));
      await store.create(record('f3', { status: 'off', tags: ['y'], d: { w: 1 } }));
      await store.create(record('f4', { status: 'on', d: null }));
      const facets = async (): Promise<unknown> =>
        (await store.query({ filters: [{ field: 'status', path: ['status'], op: 'eq', values: ['on'] }], sort: [], search: [], offset: 0, limit: 1, facets: [['tags'], ['d', 'w']] })).facets;
      assert.deepEqual(await facets(), [
        [{ value: 'x', count: 2 }, { value: 'y', count: 1 }],
        [{ value: 1, count: 1 }, { value: 2, count: 1 }],
      ]);
      await store.update('f2', (current) => ({ ...current.record, tags: ['z'], d: { w: 1 } }));
      await store.delete('f1');
      assert.deepEqual(await facets(), [[{ value: 'z', count: 1 }], [{ value: 1, count: 1 }]]);
      const whole = await store.query({ filters: [], sort: [], search: [], offset: 0, limit: 0, facets: [['status']] });
      assert.deepEqual(whole.facets, [[{ value: 'on', count: 2 }, { value: 'off', count: 1 }]]);
      assert.equal((await store.query({ filters: [], sort: [], search: [], offset: 0, limit: 0 })).facets, undefined);
    });

    test('close -> not ready; writes after close reject', async () => {
      const store = await open();
      await store.close();
      assert.equal(store.ready, false);
      await assert.rejects(store.create(record('late')));
    });

    const caughtUp = async (store: Store): Promise<void> => {
      await factory.caughtUp?.(store);
    };

    test('create, update, delete -> followers told created, updated, deleted, in order, once each, with the state each write left', async () => {
      const store = await open();
      const changes: Told[] = [];
      store.follow((change) => changes.push(told(change)));
      const created = await store.create(record('f1', { n: 1 }));
      const updated = await store.update('f1', (current) => ({ ...current.record, n: 2 }));
      assert.equal(await store.delete('f1'), true);
      await caughtUp(store);
      const expected = [
        { id: 'f1', type: 'created', json: created.json },
        { id: 'f1', type: 'updated', json: updated!.json },
        { id: 'f1', type: 'deleted', json: undefined },
      ];
      assert.deepEqual(changes.map(({ id, type, json }) => ({ id, type, json })), expected);
      assert.equal(new Set(changes.map((c) => c.cursor)).size, changes.length);
      for (const change of changes) {
        assert.match(change.cursor, UNRESERVED);
        assert.notEqual(change.cursor, 'now');
        assert.ok(Number.isInteger(change.at) && change.at > 0, `at ${change.at} is a Unix second`);
      }
    });

    test('a follower told of a change -> the store already answers with it', async () => {
      const store = await open();
      const seen: (string | undefined)[] = [];
      store.follow((change) => {
        const got = store.get(change.id);
        if (!(got instanceof Promise)) seen.push(got?.json);
      });
      const created = await store.create(record('r1'));
      await caughtUp(store);
      assert.deepEqual(seen, [created.json]);
    });

    test('refused and empty writes (a duplicate create, a change that throws, a missing id) -> no change told', async () => {
      const store = await open();
      await store.create(record('x'));
      await caughtUp(store);
      const changes: Told[] = [];
      store.follow((change) => changes.push(told(change)));
      await assert.rejects(store.create(record('x')), StoreConflictError);
      await assert.rejects(
        store.update('x', () => {
          throw new Error('refused');
        }),
      );
      assert.equal(await store.update('ghost', (current) => current.record), undefined);
      assert.equal(await store.delete('ghost'), false);
      await store.create(record('y'));
      await caughtUp(store);
      assert.deepEqual(changes.map((c) => `${c.type} ${c.id}`), ['created y']);
    });

    test('unsubscribed follower -> told nothing more; a follower that throws -> the write stands and the others are told', async () => {
      const store = await open();
      const first: string[] = [];
      const second: string[] = [];
      const stop = store.follow((change) => first.push(change.id));
      store.follow(() => {
        throw new Error('a broken follower');
      });
      store.follow((change) => second.push(change.id));
      await store.create(record('a'));
      await caughtUp(store);
      stop();
      const b = await store.create(record('b'));
      await caughtUp(store);
      assert.equal(b.id, 'b');
      assert.deepEqual(first, ['a']);
      assert.deepEqual(second, ['a', 'b']);
    });

    test("concurrent writes -> each told once, each entity's changes in write order", async () => {
      const store = await open();
      const changes: Told[] = [];
      store.follow((change) => changes.push(told(change)));
      await Promise.all(Array.from({ length: 30 }, (_, i) => store.create(record(`c${i}`))));
      await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? store.delete(`c${i}`) : store.update(`c${i}`, (c) => ({ ...c.record, i })))));
      await caughtUp(store);
      // Coalescing is allowed only across answers of a feed, never for followers of one process's writes.
      assert.equal(changes.length, 60);
      assert.equal(new Set(changes.map((c) => c.cursor)).size, changes.length);
      for (let i = 0; i < 30; i++) {
        assert.deepEqual(changes.filter((c) => c.id === `c${i}`).map((c) => c.type), ['created', i % 3 === 0 ? 'deleted' : 'updated'], `c${i}`);
      }
    });

    test('ten updates of one entity queued at once -> ten changes told, in write order, each with the state its write left', async () => {
      const store = await open();
      await store.create(record('q', { n: 0 }));
      await caughtUp(store);
      const changes: Told[] = [];
      store.follow((change) => changes.push(told(change)));
      const written = await Promise.all(Array.from({ length: 10 }, (_, i) => store.update('q', (current) => ({ ...current.record, n: i + 1 }))));
      await caughtUp(store);
      assert.deepEqual(
        changes.map(({ type, json }) => ({ type, json })),
        written.map((entity) => ({ type: 'updated', json: entity!.json })),
      );
      assert.deepEqual(written.map((entity) => (JSON.parse(entity!.json) as { n: number }).n), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });

    /** A key whose answers carry the written entity's id, or 404 / the refusal's message. */
    const keyed = (key: string, fingerprint = 'f'): KeyedWrite => ({
      key,
      fingerprint,
      answer: (outcome): StoredAnswer => ('error' in outcome ? { status: 412, headers: {}, body: String(outcome.error) } : { status: outcome.entity ? 201 : 404, headers: { id: outcome.entity?.id ?? '' }, body: '' }),
    });
    const replayOf = async (run: () => Promise<unknown>): Promise<StoredAnswer> => {
      const error = await run().then(() => undefined, (e: unknown) => e);
      assert.ok(error instanceof ReplayedAnswer, `a replay, not ${String(error)}`);
      return error.answer;
    };

    test('keyed create, the same key again -> ReplayedAnswer with the first answer, nothing written; another fingerprint -> KeyReusedError', async () => {
      const store = await open();
      assert.ok(store.idempotency, 'the store keeps answers');
      await store.create(record('k1'), keyed('a'));
      assert.deepEqual((await replayOf(() => store.create(record('k2'), keyed('a')))).headers, { id: 'k1' });
      await assert.rejects(store.create(record('k3'), keyed('a', 'other')), KeyReusedError);
      assert.deepEqual(ids(await pageOf(store, 0, 10)), ['k1']);
    });

    test('keyed update -> its answer kept: of a missing id (404), of a refused change (the refusal), of a write', async () => {
      const store = await open();
      await store.create(record('u1', { n: 1 }));
      assert.equal(await store.update('none', (c) => c.record, keyed('missing')), undefined);
      await assert.rejects(store.update('u1', () => { throw new Error('refused'); }, keyed('refused')), /refused/);
      await store.update('u1', (c) => ({ ...c.record, n: 2 }), keyed('written'));
      await store.update('u1', (c) => ({ ...c.record, n: 3 }));
      assert.equal((await replayOf(() => store.update('none', (c) => c.record, keyed('missing')))).status, 404);
      assert.equal((await replayOf(() => store.update('u1', (c) => c.record, keyed('refused')))).status, 412);
      assert.deepEqual((await replayOf(() => store.update('u1', (c) => ({ ...c.record, n: 9 }), keyed('written')))).headers, { id: 'u1' });
      assert.equal((await store.get('u1'))?.record['n'], 3);
    });

    if (factory.reopen) {
      const reopen = factory.reopen;
      test('keyed writes, then reopen -> their answers replayed', async () => {
        const store = await open();
        await store.create(record('r1'), keyed('c'));
        await store.update('r1', (c) => ({ ...c.record, n: 1 }), keyed('u'));
        const reopened = await reopen(store);
        opened.push(reopened);
        assert.deepEqual((await replayOf(() => reopened.create(record('r2'), keyed('c')))).headers, { id: 'r1' });
        assert.equal((await replayOf(() => reopened.update('r1', (c) => c.record, keyed('u')))).status, 201);
        assert.equal(reopened.size, 1);
      });

      test('writes, then reopen -> same entities, order, records, json and versions', async () => {
        const store = await open();
        for (let i = 0; i < 20; i++) await store.create(record(`s${i}`, { i, text: `héllo "${i}"\n` }));
        await store.update('s3', (current) => ({ ...current.record, i: 300 }));
        await store.delete('s5');
        await store.delete('s0');
        await store.create(record('s0', { back: true }));
        const before = (await pageOf(store, 0, 1e9)).map((e) => ({ id: e.id, record: e.record, json: e.json, version: e.version }));
        const reopened = await reopen(store);
        opened.push(reopened);
        const afterReopen = (await pageOf(reopened, 0, 1e9)).map((e) => ({ id: e.id, record: e.record, json: e.json, version: e.version }));
        assert.deepEqual(afterReopen, before);
        assert.equal(reopened.size, 19);
      });
    }
  });
}
