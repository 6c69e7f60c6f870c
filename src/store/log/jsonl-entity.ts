import type { EntityRecord, StoredEntity } from '../store.js';
import { valuesAt } from './json-fields.js';

/**
 * Entities of the JSON-lines store. Each keeps its line as the source of truth and parses its
 * record only when asked (filters, sorts, updates): a million parsed records would not fit the
 * memory budget, and most requests only need the stored JSON text.
 *
 * The version is `<line number>.<hash of the line>`, both base 36. The line number makes it unique
 * per write for the life of a file; the hash keeps it safe across restarts after a compaction has
 * renumbered the lines: two states of one entity can share a version only if their JSON is equal.
 */

/** An entity the store wrote in this process: its JSON is a string. */
export class WrittenEntity implements StoredEntity {
  readonly id: string;
  readonly json: string;
  readonly #line: number;

  constructor(id: string, json: string, line: number) {
    this.id = id;
    this.json = json;
    this.#line = line;
  }

  get record(): EntityRecord {
    return JSON.parse(this.json) as EntityRecord;
  }

  #version: string | undefined;

  /** Hashed once: a written entity is served and checked (`If-Match`) again and again. */
  get version(): string {
    this.#version ??= versionOf(this.#line, this.json);
    return this.#version;
  }

  /** The line's bytes, for compaction. */
  bytes(): Uint8Array {
    return Buffer.from(this.json);
  }
}

/**
 * An entity loaded at start-up: it points into the block of the file it was read from, so loading
 * a million lines builds no strings at all — not even the ids, which are decoded when asked for
 * (the index hashes their bytes). Only plain ids are stored this way: an id with escapes or
 * non-ASCII characters is loaded as a `WrittenEntity`.
 */
export class LoadedEntity implements StoredEntity {
  readonly #buffer: Buffer;
  readonly #start: number;
  readonly #end: number;
  readonly #line: number;
  readonly #idStart: number;
  readonly #idEnd: number;

  constructor(buffer: Buffer, start: number, end: number, line: number, idStart: number, idEnd: number) {
    this.#buffer = buffer;
    this.#start = start;
    this.#end = end;
    this.#line = line;
    this.#idStart = idStart;
    this.#idEnd = idEnd;
  }

  get id(): string {
    return this.#buffer.toString('latin1', this.#idStart, this.#idEnd); // ASCII, see above
  }

  get json(): string {
    return this.#buffer.toString('utf8', this.#start, this.#end);
  }

  get record(): EntityRecord {
    return JSON.parse(this.json) as EntityRecord;
  }

  get version(): string {
    return versionOf(this.#line, this.json);
  }

  bytes(): Uint8Array {
    return this.#buffer.subarray(this.#start, this.#end);
  }

  valuesAt(paths: readonly (readonly string[])[]): unknown[] {
    return valuesAt(this.#buffer, this.#start, this.#end, paths);
  }
}

export type LogEntity = WrittenEntity | LoadedEntity;

/** `<line>.<53-bit hash of json>` (cyrb53: cheap, and well spread for short strings). */
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
  return `${line.toString(36)}.${hash.toString(36)}`;
}
