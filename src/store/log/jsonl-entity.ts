import type { ChangeType, EntityRecord, StoredEntity } from '../store.js';
import { readStamp, readStampSeq, stampedLine, type ChangeStamp } from '../changes/change-stamp.js';
import type { HeldChange } from '../changes/local-feed.js';
import { valueAt } from '../../conventions/query.js';
import { valuesAt } from './json-fields.js';
import { base36 } from '../../structures/base36.js';
import type { RecordHolder } from './recent-records.js';

/**
 * Entities of the JSON-lines store. Each keeps its line as the source of truth and parses its
 * record only when asked (filters, sorts, updates): a million parsed records would not fit the
 * memory budget, and most requests only need the stored JSON text.
 *
 * The version is `<line number>.<hash of the line>`, both base 36. The line number makes it unique
 * per write for the life of a file; the hash keeps it safe across restarts after a compaction has
 * renumbered the lines: two states of one entity can share a version only if their JSON is equal.
 *
 * Each is also the latest change of its entity (`HeldChange`): its line ends with the change's
 * stamp (change-stamp.ts), which is not part of its JSON. A line written before stamps existed (or
 * by hand) has none until start-up gives it one (`RestampedEntity`); its `seq` is 0 meanwhile.
 */

/**
 * An entity the store wrote in this process: its JSON is a string. While it is among the last
 * updated (recent-records.ts), or freshly created and its batch not yet followed by another, it
 * also holds the record it was written from, and reads it without parsing its JSON.
 */
export class WrittenEntity implements StoredEntity, HeldChange, RecordHolder {
  readonly id: string;
  readonly json: string;
  #stamp: ChangeStamp | undefined;
  /** The record `json` is the `JSON.stringify` of, until `releaseRecord`. */
  #made: EntityRecord | undefined;

  /** True when `json` is `JSON.stringify` of the record it was written from (`StoredEntity.serialised`). */
  readonly serialised: boolean;

  constructor(id: string, json: string, stamp?: ChangeStamp, made?: EntityRecord, serialised = false) {
    this.id = id;
    this.json = json;
    this.serialised = serialised;
    this.#stamp = stamp;
    this.#made = made;
  }

  releaseRecord(): void {
    this.#made = undefined;
  }

  /** Gives a freshly written entity its change's stamp (once, when its batch is composed). */
  stamp(stamp: ChangeStamp): void {
    this.#stamp = stamp;
  }

  /** The line the log holds. */
  line(): string {
    return this.#stamp ? stampedLine(this.json, this.#stamp) : this.json;
  }

  get seq(): number {
    return this.#stamp?.seq ?? 0;
  }
  get type(): ChangeType {
    return this.#stamp?.type ?? 'created';
  }
  get at(): number {
    return this.#stamp?.at ?? 0;
  }
  get entity(): StoredEntity {
    return this;
  }

  /** Read-only, as every store's record: the held one is shared by all its readers. */
  get record(): EntityRecord {
    return this.#made ?? (JSON.parse(this.json) as EntityRecord);
  }

  valuesAt(paths: readonly (readonly string[])[]): unknown[] {
    const made = this.#made;
    if (made !== undefined) return paths.map((path) => valueAt(made, path));
    const bytes = Buffer.from(this.json);
    return valuesAt(bytes, 0, bytes.length, paths);
  }

  #version: string | undefined;

  /** Hashed once: a written entity is served and checked (`If-Match`) again and again. */
  get version(): string {
    this.#version ??= contentVersion(this.json);
    return this.#version;
  }

  /** The line's bytes, for compaction. */
  bytes(): Uint8Array {
    return Buffer.from(this.line());
  }
}

/**
 * An entity loaded at start-up: it points into the block of the file it was read from, so loading
 * a million lines builds no strings at all — not even the ids, which are decoded when asked for
 * (the index hashes their bytes). Only plain ids are stored this way: an id with escapes or
 * non-ASCII characters is loaded as a `WrittenEntity`.
 */
export class LoadedEntity implements StoredEntity, HeldChange {
  readonly #buffer: Buffer;
  readonly #start: number;
  readonly #end: number;
  readonly #idStart: number;
  readonly #idEnd: number;
  /** Where the line's stamp begins (`findStamp`), or -1 for a line without one. */
  readonly #stampAt: number;

  constructor(buffer: Buffer, start: number, end: number, idStart: number, idEnd: number, stampAt = -1) {
    this.#buffer = buffer;
    this.#start = start;
    this.#end = end;
    this.#idStart = idStart;
    this.#idEnd = idEnd;
    this.#stampAt = stampAt;
  }

  get id(): string {
    return this.#buffer.toString('latin1', this.#idStart, this.#idEnd); // ASCII, see above
  }

  /** `id === this.id`, compared with the id's bytes (ASCII, see above) instead of a string built from them. */
  hasId(id: string): boolean {
    const start = this.#idStart;
    const length = this.#idEnd - start;
    if (id.length !== length) return false;
    const buffer = this.#buffer;
    for (let i = 0; i < length; i++) if (buffer[start + i] !== id.charCodeAt(i)) return false;
    return true;
  }

  get json(): string {
    return this.#stampAt < 0
      ? this.#buffer.toString('utf8', this.#start, this.#end)
      : `${this.#buffer.toString('utf8', this.#start, this.#stampAt)}}`;
  }

  #stamp(): ChangeStamp | undefined {
    return this.#stampAt < 0 ? undefined : readStamp(this.#buffer, this.#stampAt, this.#end);
  }
  get seq(): number {
    return this.#stampAt < 0 ? 0 : readStampSeq(this.#buffer, this.#stampAt, this.#end);
  }
  get type(): ChangeType {
    return this.#stamp()?.type ?? 'created';
  }
  get at(): number {
    return this.#stamp()?.at ?? 0;
  }
  get entity(): StoredEntity {
    return this;
  }

  get record(): EntityRecord {
    return JSON.parse(this.json) as EntityRecord;
  }

  get version(): string {
    return contentVersion(this.json);
  }

  bytes(): Uint8Array {
    return this.#buffer.subarray(this.#start, this.#end);
  }

  valuesAt(paths: readonly (readonly string[])[]): unknown[] {
    return valuesAt(this.#buffer, this.#start, this.#end, paths);
  }

  /** `writeLine` of the line with `stamp` in place of its own, copied from its bytes. */
  writeStamped(target: Buffer, at: number, stamp: ChangeStamp): number {
    const end = this.#stampAt < 0 ? this.#end - 1 : this.#stampAt;
    const suffix = stampedLine('}', stamp);
    const next = at + (end - this.#start) + suffix.length + 1;
    if (next > target.length) return -1;
    this.#buffer.copy(target, at, this.#start, end);
    target.write(suffix, next - suffix.length - 1, 'latin1');
    target[next - 1] = 0x0a;
    return next;
  }

  /** The line with `stamp` in place of its own (`stampedLine` of its JSON), from its bytes. */
  stampedBytes(stamp: ChangeStamp): Buffer {
    const body = this.#buffer.subarray(this.#start, this.#stampAt < 0 ? this.#end - 1 : this.#stampAt);
    return Buffer.concat([body, Buffer.from(stampedLine('}', stamp), 'latin1')]);
  }

  /** The object's bytes up to its stamp (which is not part of its JSON). */
  jsonBytes<T>(read: (bytes: Uint8Array, start: number, end: number) => T): T {
    return read(this.#buffer, this.#start, this.#stampAt < 0 ? this.#end : this.#stampAt);
  }
}

/**
 * A line that had no stamp (written before stamps, or by hand), given one at start-up: a create
 * numbered `seq` at `at`. The two numbers are kept as they are, not as a stamp object: a file of
 * a million such lines makes a million of these.
 */
export class RestampedEntity implements StoredEntity, HeldChange {
  readonly #inner: WrittenEntity | LoadedEntity;
  readonly #seq: number;
  readonly #at: number;

  constructor(inner: WrittenEntity | LoadedEntity, seq: number, at: number) {
    this.#inner = inner;
    this.#seq = seq;
    this.#at = at;
  }
  get id(): string {
    return this.#inner.id;
  }
  hasId(id: string): boolean {
    const inner = this.#inner;
    return inner instanceof LoadedEntity ? inner.hasId(id) : inner.id === id;
  }
  get json(): string {
    return this.#inner.json;
  }
  get record(): EntityRecord {
    return this.#inner.record;
  }
  get version(): string {
    return this.#inner.version;
  }
  get seq(): number {
    return this.#seq;
  }
  get type(): ChangeType {
    return 'created';
  }
  get at(): number {
    return this.#at;
  }
  get entity(): StoredEntity {
    return this;
  }
  valuesAt(paths: readonly (readonly string[])[]): unknown[] {
    return this.#inner.valuesAt(paths);
  }
  jsonBytes<T>(read: (bytes: Uint8Array, start: number, end: number) => T): T {
    const inner = this.#inner;
    if (inner instanceof LoadedEntity) return inner.jsonBytes(read);
    const bytes = Buffer.from(inner.json, 'utf8');
    return read(bytes, 0, bytes.length);
  }
  /** `writeLine` of the stamped line; a loaded line's bytes are copied, not decoded. */
  writeLine(target: Buffer, at: number): number {
    const stamp: ChangeStamp = { seq: this.#seq, type: 'created', at: this.#at };
    const inner = this.#inner;
    return inner instanceof LoadedEntity ? inner.writeStamped(target, at, stamp) : writeLine(target, at, stampedLine(inner.json, stamp));
  }

  /** The stamped line; for a loaded line, its bytes and the stamp, without decoding it. */
  bytes(): Uint8Array {
    const stamp: ChangeStamp = { seq: this.#seq, type: 'created', at: this.#at };
    const inner = this.#inner;
    return inner instanceof LoadedEntity ? inner.stampedBytes(stamp) : Buffer.from(stampedLine(inner.json, stamp));
  }
}

export type LogEntity = WrittenEntity | LoadedEntity | RestampedEntity;

/** Writes `line` and a newline into `target` at `at` (UTF-8): the end, or -1 when it does not fit. */
export function writeLine(target: Buffer, at: number, line: string): number {
  const next = at + Buffer.byteLength(line) + 1;
  if (next > target.length) return -1;
  target.write(line, at, 'utf8');
  target[next - 1] = 0x0a;
  return next;
}

/**
 * A file store entity's version (its ETag's): a 53-bit hash of its JSON. Of the text alone, so
 * that it is the same after a restart, a compaction, a first start that stamps the lines, and in a
 * backup's copy (a line's number, once part of it, changes with each). Every write changes the
 * text (`updatedAt`, at the least, or the fields); two states of one text are one representation,
 * as a strong validator may say (RFC 9110 §8.8.1).
 */
export function contentVersion(json: string): string {
  return versionOf(-1, json);
}

/** `<n>.<53-bit hash of json>` (cyrb53: cheap, and well spread for short strings); `n` -1: the hash alone. */
export function versionOf(line: number, json: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  const hash = 4294967296 * (2097151 & h2) + (h1 >>> 0);
  return line < 0 ? base36(hash) : `${line.toString(36)}.${base36(hash)}`;
}
