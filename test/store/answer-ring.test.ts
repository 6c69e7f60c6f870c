import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Remembered } from '../../src/store/idempotency.js';
import { entryOf, HeldAnswer, heldLine, locateAnswers } from '../../src/store/log/answer-lines.js';
import { AnswerRing } from '../../src/store/log/answer-ring.js';

/** A seeded generator (mulberry32), so that a failure can be replayed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Bodies with what UTF-8 and JSON make hard: quotes, escapes, two-, three- and four-byte characters. */
const PIECES = ['a', 'é', '€', '😀', '"', '\\', '\n', 'z', '\u2028'];
function bodyOf(random: () => number, length: number): string {
  let body = '';
  for (let i = 0; i < length; i++) body += PIECES[Math.floor(random() * PIECES.length)];
  return body;
}

function answer(key: string, at: number, body: string, status = 201): Remembered {
  return { fingerprint: `fp-${key}`, at, answer: { status, headers: { 'content-type': 'application/hal+json', location: `/items/${key}` }, body } };
}

/** What a held answer gives back, to compare with what was put. */
function seen(r: Remembered | undefined): unknown {
  return r === undefined ? undefined : { fingerprint: r.fingerprint, at: r.at, answer: r.answer };
}

/**
 * The ring's rule, written plainly: records in the order put, past `maxAnswers` records (dead ones
 * included) the oldest go, a key put again or deleted leaves a dead record, expiry drops from the
 * oldest while they are old enough.
 */
class Model {
  records: { key: string; value: Remembered; dead: boolean }[] = [];
  live = new Map<string, { key: string; value: Remembered; dead: boolean }>();
  /** Live answers the bound pushed out (expiry aside). */
  pushedOut = 0;
  constructor(readonly max: number) {}
  put(key: string, value: Remembered): void {
    this.delete(key);
    while (this.records.length >= this.max) if (this.#shift()) this.pushedOut++;
    const record = { key, value, dead: false };
    this.records.push(record);
    this.live.set(key, record);
  }
  delete(key: string): boolean {
    const record = this.live.get(key);
    if (record === undefined) return false;
    record.dead = true;
    this.live.delete(key);
    return true;
  }
  dropExpired(cutoff: number): void {
    while (this.records.length > 0 && this.records[0]!.value.at <= cutoff) this.#shift();
  }
  /** Whether a live answer left. */
  #shift(): boolean {
    const record = this.records.shift()!;
    if (!record.dead) this.live.delete(record.key);
    return !record.dead;
  }
  entries(): [string, Remembered][] {
    return this.records.filter((r) => !r.dead).map((r) => [r.key, r.value]);
  }
}

describe('AnswerRing: the answers of keyed writes as bytes outside the heap', () => {
  test('random puts, puts again, deletes and expiry against a plain model of its rule -> the same answers, byte for byte, in the same order', () => {
    for (const [seed, hashMask] of [
      [1, -1],
      [2, -1],
      [3, 0x3],
    ] as const) {
      const random = seeded(seed);
      const max = 50;
      // Room for every record: only the count and the expiry bound it here. `hashMask` 3: keys collide.
      const ring = new AnswerRing({ maxAnswers: max, maxBytes: 1 << 24, hashMask });
      const model = new Model(max);
      let now = 0;
      for (let step = 0; step < 4000; step++) {
        const key = `["p","POST","/items","k${Math.floor(random() * 120)}"]`;
        const roll = random();
        if (roll < 0.6) {
          now += Math.floor(random() * 3);
          const value = answer(key, now, bodyOf(random, Math.floor(random() * 300)), random() < 0.1 ? 404 : 201);
          const fresh = !model.live.has(key);
          ring.put(key, value, 0, fresh && random() < 0.5);
          model.put(key, value);
        } else if (roll < 0.7) {
          assert.equal(ring.delete(key), model.delete(key), `step ${step}: delete ${key}`);
        } else if (roll < 0.75) {
          const cutoff = now - 40;
          ring.dropExpired(cutoff);
          model.dropExpired(cutoff);
        } else {
          assert.deepEqual(seen(ring.peek(key)), seen(model.live.get(key)?.value), `step ${step}: peek ${key}`);
        }
        assert.equal(ring.size, model.live.size, `step ${step}: size`);
        assert.equal(ring.pushedOut, model.pushedOut, `step ${step}: pushed out`);
      }
      assert.ok(model.pushedOut > 100, `${model.pushedOut} pushed out`);
      assert.deepEqual(
        [...ring.entries()].map(([k, r]) => [k, seen(r)]),
        model.entries().map(([k, r]) => [k, seen(r)]),
      );
    }
  });

  test('bounded by bytes -> the ring is the largest power of two within maxBytes, wraps, and keeps exactly the newest answers, each as put', () => {
    const random = seeded(7);
    const maxBytes = 40_000;
    const ring = new AnswerRing({ maxAnswers: 100_000, maxBytes });
    const put: [string, Remembered][] = [];
    for (let i = 0; i < 3000; i++) {
      const key = `k${i}`;
      const value = answer(key, i, bodyOf(random, Math.floor(random() * 700)));
      ring.put(key, value, 0, true);
      put.push([key, value]);
      assert.ok(ring.capacity <= maxBytes && ring.weight <= ring.capacity, `${ring.weight} bytes in ${ring.capacity}`);
      // The newest is always kept, and what is kept is the newest answers, none missing between.
      assert.deepEqual(seen(ring.peek(key)), seen(value));
      if (i % 97 === 0) {
        const kept = [...ring.entries()].map(([k, r]) => [k, seen(r)]);
        assert.deepEqual(kept, put.slice(put.length - kept.length).map(([k, r]) => [k, seen(r)]), `after ${i + 1}`);
        assert.equal(kept.length, ring.size);
      }
    }
    assert.equal(ring.capacity, 32_768);
    assert.ok(ring.size > 10, `${ring.size} kept`);
    // One larger than the ring is not kept, and takes none of the others with it.
    // Every answer not kept was pushed out by the bound (none expired, none deleted).
    assert.equal(ring.pushedOut, 3000 - ring.size);
    const before = ring.size;
    ring.put('huge', answer('huge', 4000, 'x'.repeat(40_000)), 0, true);
    assert.equal(ring.peek('huge'), undefined);
    assert.equal(ring.size, before);
    assert.equal(ring.pushedOut, 3001 - ring.size, 'an answer too large to keep counts as let go');
  });

  test('records of every size, wrapping many times -> pads where the buffer ends, and each answer held stays as put', () => {
    const random = seeded(11);
    const ring = new AnswerRing({ maxAnswers: 60, maxBytes: 1 << 16 });
    const model = new Model(60);
    for (let i = 0; i < 2600; i++) {
      const key = `k${i}`;
      // Small answers first, then larger ones, up to a sixteenth of the ring: the count bounds the
      // ring at first, then its bytes.
      const value = answer(key, i, bodyOf(random, i < 2000 ? 20 : Math.floor(random() * 4000)));
      ring.put(key, value, 0, true);
      model.put(key, value);
      const kept = [...ring.entries()].map(([k, r]) => [k, seen(r)]);
      if (i % 25 === 0 || i > 2590) {
        // The ring keeps the newest of the model's answers: all of them while the count bounds it.
        const expected = model.entries().map(([k, r]) => [k, seen(r)]);
        assert.deepEqual(kept, expected.slice(expected.length - kept.length), `after ${i + 1}`);
        if (i < 2000) assert.equal(kept.length, expected.length);
      }
    }
    assert.equal(ring.capacity, 1 << 16);
  });

  test('a body given by reference to its change line -> held with that line\'s start, answered and written whole as the answer it was', () => {
    const ring = new AnswerRing({ maxAnswers: 10, maxBytes: 1 << 16 });
    const json = JSON.stringify({ id: 'a', name: 'Zoë 😀 "quoted"', stock: 3 });
    const line = `${json.slice(0, -1)},"_change":"5.1.1"}`;
    const body = `${json.slice(0, -1)},"_links":{"self":{"href":"/items/a"}}}`;
    const remembered = answer('a', 12, body);
    const held = new HeldAnswer(entryOf('key-a', remembered, 5, line, json), line);
    assert.ok(held.shared > 32, 'the body is given by reference');
    ring.put('key-a', held, 0, true);
    const back = ring.peek('key-a')!;
    assert.deepEqual(seen(back), seen(remembered));
    assert.equal(back.wholeText(), held.wholeText());
    assert.equal(back.text, held.text);
  });

  test('an answer located in an append\'s bytes -> copied from them, and held as the same answer the strings give', () => {
    const json = JSON.stringify({ id: 'a', name: 'plain "quoted" ascii', stock: 3 });
    const line = `${json.slice(0, -1)},"_change":"5.1.1"}`;
    const body = `${json.slice(0, -1)},"_links":{"self":{"href":"/items/a"}}}`;
    const remembered = answer('a', 12, body);
    const fromStrings = new HeldAnswer(entryOf('key-a', remembered, 5, line, json), line);
    const located = new HeldAnswer(entryOf('key-a', remembered, 5, line, json), line);
    const lines = [heldLine([located], 5), line];
    assert.ok(locateAnswers([located], lines, Buffer.from(`${lines.join('\n')}\n`), () => 1));
    const a = new AnswerRing({ maxAnswers: 10, maxBytes: 1 << 16 });
    const b = new AnswerRing({ maxAnswers: 10, maxBytes: 1 << 16 });
    a.put('key-a', fromStrings, 0, true);
    b.put('key-a', located, 0, true);
    const [x, y] = [a.peek('key-a')!, b.peek('key-a')!];
    assert.equal(y.text, x.text);
    assert.equal(y.prefix(), x.prefix());
    assert.deepEqual(seen(y), seen(remembered));
  });

  test('a save\'s range -> the answers recorded since the last one, read a chunk at a time while newer ones push the oldest out; a failed save gives them back', () => {
    const ring = new AnswerRing({ maxAnswers: 20, maxBytes: 1 << 20 });
    const put = (from: number, to: number): void => {
      for (let i = from; i < to; i++) ring.put(`k${i}`, answer(`k${i}`, i, 'body'), 0, true);
    };
    const keysOf = (from: number, to: number, max: number): { keys: string[]; next: number } => {
      const keys: string[] = [];
      const next = ring.collect(from, to, max, (held) => keys.push((JSON.parse(held.text) as { k: string }).k));
      return { keys, next };
    };
    put(0, 10);
    assert.equal(ring.unsaved, 10);
    const first = ring.takeUnsaved();
    assert.equal(first.count, 10);
    assert.equal(ring.unsaved, 0);
    put(10, 15);
    assert.equal(ring.unsaved, 5);
    // Read 4 of the first range, then 16 more answers push its oldest 11 out: the rest starts past them.
    const part = keysOf(first.from, first.to, 4);
    assert.deepEqual(part.keys, ['k0', 'k1', 'k2', 'k3']);
    put(15, 31);
    const rest = keysOf(part.next, first.to, 100);
    assert.deepEqual(rest.keys, []);
    assert.equal(rest.next, first.to);
    // 20 held: k11…k30; unsaved those of k11…k30 recorded after the first range.
    assert.equal(ring.size, 20);
    assert.equal(ring.unsaved, 20);
    const second = ring.takeUnsaved();
    assert.deepEqual(keysOf(second.from, second.to, 100).keys, Array.from({ length: 20 }, (_, i) => `k${11 + i}`));
    // A save that failed: its range is unsaved again, with what came since.
    put(31, 33);
    ring.restoreUnsaved(second.from);
    assert.equal(ring.unsaved, 20);
    assert.ok(ring.unsavedBytes > 20 * 'body'.length);
    const all = ring.takeUnsaved();
    assert.deepEqual(keysOf(all.from, all.to, 100).keys, Array.from({ length: 20 }, (_, i) => `k${13 + i}`));
  });
});
