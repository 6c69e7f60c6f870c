import type { AnswerTable, Remembered } from '../idempotency.js';
import { entryOf, HeldAnswer } from './answer-lines.js';

/**
 * The JSON-lines store's table of remembered answers (`AnswerTable`, idempotency.ts): each answer
 * kept as bytes in a ring buffer, outside the JavaScript heap, and found through an open-addressing
 * hash table in a typed array, keyed by a 32-bit hash of its ledger key.
 *
 * ## Why bytes
 *
 * A keyed create load records an answer a request, and the table holds up to 100,000 of them. Held
 * as JavaScript objects (a `Map` from key to answer, an LRU list, each answer an object and a
 * string), every answer survived a collection of the young generation or two (copied each time),
 * was then marked by every full collection for the day it is kept, and each keyed write made four
 * lookups in a `Map` of 100,000 string keys (the claim's miss, the insert, the eviction of the
 * oldest, the answers file's check of its oldest unsaved answer), each missing the processor's
 * caches on the bucket, the entry and the key's string (bench/NOTES.md, "answers as bytes outside
 * the heap"). Here an answer is copied once, into the ring, and the collector never sees it; a
 * lookup hashes the key and reads slots of two numbers side by side (the hash and the record's
 * position); the oldest answer is where the ring's head is.
 *
 * ## Layout
 *
 * The ring is a `Buffer` of the largest power of two bytes within `maxBytes`, and the hash table
 * has room for every record the ring can hold at half its slots: both are allocated whole when
 * the first answer comes, and never grow. Their memory is taken from the system as it is first
 * written (a buffer this large is mapped, not filled), so a ring holds in RSS about what its
 * answers take. Grown by doubling instead (from 64 KiB), as a first version did, a keyed create
 * load copied every record at each doubling and first wrote twice the memory it ends up holding:
 * 4.5 µs a put while the ring grew, against 1.2 µs once full (bench/NOTES.md, "a ring allocated
 * once"). Positions are *logical*: they only grow, starting at 8 (so that 0 marks an empty slot),
 * and a record at logical position `p` lies at `p % capacity`, never across the buffer's end (a
 * pad record fills what is left there). Every record is a multiple of 8 bytes long, so a pad
 * fits wherever one is needed. A record is
 *
 *     u32 length · u32 kind (0 pad, 1 answer) · u32 hash · u32 unused · f64 time ·
 *     u32 text bytes · u32 cut · u32 end · u32 shared (characters) · u32 the body's start (bytes) ·
 *     u32 unused · text (UTF-8) · the body's start (UTF-8)
 *
 * (`HeldParts`: the entry's text as the log's answers line has it, and the characters of the
 * change's line the body begins with, when the body is given by reference).
 *
 * Answers leave from the ring's head, oldest first: past `maxAnswers` records, when the bytes
 * would pass the capacity, and when expired. A key recorded again, or an answer deleted (expired
 * when read), leaves its record in the ring as a dead one, no longer in the hash table, until the
 * head passes it: its bytes stay counted against the capacity, not the weight.
 *
 * A hash's match is checked against the key itself (the text begins with it, `HeldAnswer.isOf`),
 * so two keys of one hash are two entries of the table, each found by its own key.
 *
 * ## Saves
 *
 * The answers file (answer-file.ts) saves the answers recorded since its last save: those at
 * positions from `mark` on. A save takes the range (`takeUnsaved`) and reads it a chunk at a time
 * (`collect`), each chunk synchronously: what the head has passed meanwhile left the table and
 * needs no save, and positions do not move, so the save's cursor stays valid.
 */

/** A record's header: its fields' places in words (the time in doubles), and its size in bytes. */
const KIND = 1;
const HASH = 2;
const AT = 2;
const TEXT = 6;
const CUT = 7;
const END = 8;
const SHARED = 9;
const PREFIX = 10;
const HEADER = 48;
const KIND_PAD = 0;
const KIND_ANSWER = 1;
/** The largest ring, whatever `maxBytes` says: positions in it are counted in 32-bit words (`#word`). */
const MAX_CAPACITY = 2 ** 30;
/** The smallest record: a header and a key of a few characters. Bounds the records a ring can hold. */
const MIN_RECORD = HEADER + 8;
/** The first logical position: a slot whose position is 0 is empty. */
const FIRST = 8;
/** An empty slot (its position). */
const EMPTY = 0;
/** No slot (`#find`, `#slotOf`). */
const NONE = -1;
/** A table before the first answer: one empty slot. */
const NO_SLOTS = new Float64Array(2);

/**
 * A 32-bit hash of `key` (FNV-1a, finished as MurmurHash3's fmix32), unsigned. A table of up to a
 * few million keys at half load rarely sees two keys of one hash in a probe, and every match is
 * checked against the key itself, so 32 bits are enough; a second lane, for 52 bits, cost as much
 * again on every key.
 */
function hashKey(key: string): number {
  let h = 0x811c9dc5 | 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The largest power of two within `n` (at least 8). */
function powerWithin(n: number): number {
  let p = 8;
  while (p * 2 <= n) p *= 2;
  return p;
}

/**
 * `Buffer#utf8Write`, which `Buffer#write` calls once it has worked out its arguments: called
 * directly, a record's two strings are written without that (Node has it on every `Buffer`).
 */
interface Utf8Writable {
  utf8Write(text: string, offset: number, length?: number): number;
}
const utf8Write = (Buffer.prototype as unknown as Utf8Writable).utf8Write;

export interface AnswerRingOptions {
  /** Answers held at most (at least 1). */
  readonly maxAnswers: number;
  /** Bytes of the ring at most: its capacity is the largest power of two within it (and within 1 GiB). */
  readonly maxBytes: number;
  /** The bits of a key's hash that the table keeps (default all): tests keep few, so that keys collide. */
  readonly hashMask?: number;
}

export class AnswerRing implements AnswerTable {
  readonly #maxAnswers: number;
  readonly #capacity: number;
  readonly #hashMask: number;
  /** Empty until the first answer (`#allocate`). */
  #buf: Buffer;
  /** The buffer's words and doubles (a record starts at a multiple of 8, so its header's fields are whole elements: `word`). */
  #u32: Uint32Array;
  #f64: Float64Array;
  /** Logical positions: the oldest record, and where the next goes. */
  #head = FIRST;
  #tail = FIRST;
  /** Records in the ring (pads aside), live or dead. */
  #records = 0;
  /** Answers let go by the bounds, not by their time (`AnswerTable.pushedOut`). */
  #pushedOut = 0;
  /** Records in the hash table, and their bytes. */
  #live = 0;
  #liveBytes = 0;
  /** Where the answers not yet saved begin (`takeUnsaved`), and how many records and text bytes are at or after it. */
  #mark = FIRST;
  #unsaved = 0;
  #unsavedBytes = 0;
  /** The hash table, two numbers a slot side by side (one cache line for both): its key's hash (`hashKey`) and its record's logical position (EMPTY: none). */
  #slots = NO_SLOTS;
  #mask = 0;

  constructor(options: AnswerRingOptions) {
    if (!(options.maxAnswers >= 1)) throw new RangeError('maxAnswers must be at least 1');
    this.#maxAnswers = Math.floor(options.maxAnswers);
    this.#capacity = powerWithin(Math.min(options.maxBytes, MAX_CAPACITY));
    this.#hashMask = options.hashMask ?? -1;
    this.#buf = Buffer.alloc(0);
    this.#u32 = new Uint32Array(0);
    this.#f64 = new Float64Array(0);
  }

  /** The ring and the table, whole, at the first answer: room for every record at half the table's slots. */
  #allocate(): void {
    const capacity = this.#capacity;
    const buf = (this.#buf = Buffer.allocUnsafeSlow(capacity));
    this.#u32 = new Uint32Array(buf.buffer, buf.byteOffset, capacity >>> 2);
    this.#f64 = new Float64Array(buf.buffer, buf.byteOffset, capacity >>> 3);
    let slots = 2;
    while (slots < 2 * Math.min(this.#maxAnswers, Math.ceil(capacity / MIN_RECORD))) slots *= 2;
    this.#slots = new Float64Array(2 * slots);
    this.#mask = slots - 1;
  }

  /** Answers held. */
  get size(): number {
    return this.#live;
  }

  get pushedOut(): number {
    return this.#pushedOut;
  }

  /** Bytes of the answers held (their records). */
  get weight(): number {
    return this.#liveBytes;
  }

  /** The ring's capacity: the largest power of two within `maxBytes`. */
  get capacity(): number {
    return this.#capacity;
  }

  hashOf(key: string): number {
    return (hashKey(key) & this.#hashMask) >>> 0;
  }

  peek(key: string, hash = this.hashOf(key)): HeldAnswer | undefined {
    const slot = this.#find(key, hash);
    return slot === NONE ? undefined : this.#held(this.#slots[2 * slot + 1]!);
  }

  /** Where the record at logical position `at` begins in the buffer, in words (`#u32`). */
  #word(at: number): number {
    return (at % this.#capacity) >>> 2;
  }

  /** The answer at logical position `at`, from its record's parts. */
  #held(at: number): HeldAnswer {
    const u32 = this.#u32;
    const w = this.#word(at);
    const p = w << 2;
    const textBytes = u32[w + TEXT]!;
    const shared = u32[w + SHARED]!;
    const text = this.#buf.toString('utf8', p + HEADER, p + HEADER + textBytes);
    const prefix = shared === 0 ? undefined : this.#buf.toString('utf8', p + HEADER + textBytes, p + HEADER + textBytes + u32[w + PREFIX]!);
    return new HeldAnswer({ at: this.#f64[(w >>> 1) + AT]!, text, cut: u32[w + CUT]!, end: u32[w + END]!, shared }, prefix);
  }

  put(key: string, remembered: Remembered, _weight: number, fresh: boolean, hash = this.hashOf(key)): void {
    const held = remembered instanceof HeldAnswer ? remembered : new HeldAnswer(entryOf(key, remembered));
    if (!fresh) this.#delete(key, hash);
    // Located in the store's append (`locateAnswers`): bytes one for one character, copied from there.
    const located = held.bytes;
    const text = held.text;
    const prefix = located === undefined ? held.prefix() : '';
    const textBytes = located === undefined ? Buffer.byteLength(text) : text.length;
    const prefixBytes = located === undefined ? (prefix === '' ? 0 : Buffer.byteLength(prefix)) : held.shared;
    const length = (HEADER + textBytes + prefixBytes + 7) & ~7;
    if (length > this.#capacity) {
      this.#pushedOut++;
      return;
    }
    if (this.#u32.length === 0) this.#allocate();
    const at = this.#reserve(length);
    const u32 = this.#u32;
    const w = this.#word(at);
    const p = w << 2;
    u32[w] = length;
    u32[w + KIND] = KIND_ANSWER;
    u32[w + HASH] = hash;
    this.#f64[(w >>> 1) + AT] = held.at;
    u32[w + TEXT] = textBytes;
    u32[w + CUT] = held.cut;
    u32[w + END] = held.end;
    u32[w + SHARED] = held.shared;
    u32[w + PREFIX] = prefixBytes;
    if (located !== undefined) {
      located.copy(this.#buf, p + HEADER, held.textAt, held.textAt + textBytes);
      if (prefixBytes > 0) located.copy(this.#buf, p + HEADER + textBytes, held.prefixAt, held.prefixAt + prefixBytes);
    } else {
      utf8Write.call(this.#buf, text, p + HEADER, textBytes);
      if (prefixBytes > 0) utf8Write.call(this.#buf, prefix, p + HEADER + textBytes, prefixBytes);
    }
    this.#tail = at + length;
    this.#records++;
    this.#unsaved++;
    this.#unsavedBytes += textBytes + 1;
    this.#live++;
    this.#liveBytes += length;
    this.#insert(hash, at);
  }

  delete(key: string): boolean {
    return this.#delete(key, this.hashOf(key));
  }

  #delete(key: string, hash: number): boolean {
    const slot = this.#find(key, hash);
    if (slot === NONE) return false;
    this.#liveBytes -= this.#u32[this.#word(this.#slots[2 * slot + 1]!)]!;
    this.#live--;
    this.#removeSlot(slot);
    return true;
  }

  dropExpired(cutoff: number): void {
    while (this.#head < this.#tail) {
      const w = this.#word(this.#head);
      if (this.#u32[w + KIND] === KIND_ANSWER && this.#f64[(w >>> 1) + AT]! > cutoff) return;
      this.#evict();
    }
  }

  *entries(): IterableIterator<[string, Remembered]> {
    const end = this.#tail;
    for (let at = this.#head; at < end; ) {
      at = Math.max(at, this.#head);
      if (at >= end) return;
      const length = this.#u32[this.#word(at)]!;
      if (this.#isLive(at)) {
        const held = this.#held(at);
        yield [(JSON.parse(held.text) as { k: string }).k, held];
      }
      at += length;
    }
  }

  /** Answers recorded since the last save (`takeUnsaved`) that the ring still holds, live or dead. */
  get unsaved(): number {
    return this.#unsaved;
  }

  /** Their text bytes, each with a newline: about what they take in the log's answers lines. */
  get unsavedBytes(): number {
    return this.#unsavedBytes;
  }

  /** The range of positions recorded since the last save, which now counts as saved; `restoreUnsaved(from)` if the save fails. */
  takeUnsaved(): { readonly from: number; readonly to: number; readonly count: number } {
    const taken = { from: this.#mark, to: this.#tail, count: this.#unsaved };
    this.#mark = this.#tail;
    this.#unsaved = 0;
    this.#unsavedBytes = 0;
    return taken;
  }

  /** Positions from `from` on are unsaved again (a save that failed), those the head has not passed. */
  restoreUnsaved(from: number): void {
    this.#mark = Math.max(Math.min(from, this.#mark), this.#head);
    this.#unsaved = 0;
    this.#unsavedBytes = 0;
    for (let at = this.#mark; at < this.#tail; ) {
      const w = this.#word(at);
      if (this.#u32[w + KIND] === KIND_ANSWER) {
        this.#unsaved++;
        this.#unsavedBytes += this.#u32[w + TEXT]! + 1;
      }
      at += this.#u32[w]!;
    }
  }

  /** The oldest position held: a save of every answer (`collect`) starts here. */
  get head(): number {
    return this.#head;
  }

  /**
   * Calls `each` with the live answers from position `from` (or the head, if it has passed it) up
   * to `to`, at most `max` of them, in the order recorded; returns where the next call goes on
   * from (`to` once all were given).
   */
  collect(from: number, to: number, max: number, each: (held: HeldAnswer) => void): number {
    let at = Math.max(from, this.#head);
    let given = 0;
    while (at < to && given < max) {
      const length = this.#u32[this.#word(at)]!;
      if (this.#isLive(at)) {
        each(this.#held(at));
        given++;
      }
      at += length;
    }
    return Math.min(at, to);
  }

  /** Whether the record at `at` is an answer the hash table still holds. */
  #isLive(at: number): boolean {
    const w = this.#word(at);
    return this.#u32[w + KIND] === KIND_ANSWER && this.#slotOf(this.#u32[w + HASH]!, at) !== NONE;
  }

  /** Room for a record of `length` bytes where the tail is (past a pad, if the buffer ends first): its logical position. */
  #reserve(length: number): number {
    const capacity = this.#capacity;
    for (;;) {
      const p = this.#tail % capacity;
      const start = p + length > capacity ? this.#tail + capacity - p : this.#tail;
      if (start + length - this.#head <= capacity && this.#records < this.#maxAnswers) {
        if (start > this.#tail) {
          this.#u32[p >>> 2] = start - this.#tail;
          this.#u32[(p >>> 2) + KIND] = KIND_PAD;
        }
        return start;
      }
      if (this.#head === this.#tail) this.#head = this.#tail = start;
      else if (this.#evict()) this.#pushedOut++;
    }
  }

  /** The record at the head leaves the ring (and the hash table, if it is live there: then true). */
  #evict(): boolean {
    const at = this.#head;
    const u32 = this.#u32;
    const w = this.#word(at);
    const length = u32[w]!;
    if (u32[w + KIND] === KIND_ANSWER) {
      this.#records--;
      if (at >= this.#mark) {
        this.#unsaved--;
        this.#unsavedBytes -= u32[w + TEXT]! + 1;
      }
      const slot = this.#slotOf(u32[w + HASH]!, at);
      if (slot !== NONE) {
        this.#live--;
        this.#liveBytes -= length;
        this.#removeSlot(slot);
        this.#head = at + length;
        return true;
      }
    }
    this.#head = at + length;
    return false;
  }

  /** The slot of `key`, whose hash is `hash` (`hashOf`), or NONE. */
  #find(key: string, hash: number): number {
    const slots = this.#slots;
    const mask = this.#mask;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const at = slots[2 * i + 1]!;
      if (at === EMPTY) return NONE;
      if (slots[2 * i] === hash && this.#held(at).isOf(key)) return i;
    }
  }

  /** The slot holding the record at `at`, whose key's hash is `hash`; NONE if none (a dead record). */
  #slotOf(hash: number, at: number): number {
    const slots = this.#slots;
    const mask = this.#mask;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const held = slots[2 * i + 1]!;
      if (held === EMPTY) return NONE;
      if (held === at) return i;
    }
  }

  /** Puts the record at `at`, of hash `hash`, in the first free slot from its home (there is always one: `#allocate`). */
  #insert(hash: number, at: number): void {
    const slots = this.#slots;
    const mask = this.#mask;
    let i = hash & mask;
    while (slots[2 * i + 1] !== EMPTY) i = (i + 1) & mask;
    slots[2 * i] = hash;
    slots[2 * i + 1] = at;
  }

  /** Empties `slot`, moving back the entries after it that it would cut off from their home slot (linear probing's deletion, no tombstones). */
  #removeSlot(slot: number): void {
    const slots = this.#slots;
    const mask = this.#mask;
    let hole = slot;
    for (let j = (hole + 1) & mask; slots[2 * j + 1] !== EMPTY; j = (j + 1) & mask) {
      const home = slots[2 * j]! & mask;
      // The entry at j stays if its home lies cyclically in (hole, j].
      if (hole <= j ? hole < home && home <= j : hole < home || home <= j) continue;
      slots[2 * hole] = slots[2 * j]!;
      slots[2 * hole + 1] = slots[2 * j + 1]!;
      hole = j;
    }
    slots[2 * hole + 1] = EMPTY;
  }
}

