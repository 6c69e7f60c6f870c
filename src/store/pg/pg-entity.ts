import type { EntityRecord, StoredEntity } from '../store.js';
import { valuesAt } from '../log/json-fields.js';
import { versionOf } from '../log/jsonl-entity.js';

/**
 * Entities of the PostgreSQL store: the row's JSON text as stored (byte for byte what the file
 * store would serve), and the row's `pos` (place in the creation order) and `rev` (writes of the
 * id so far), which the change feed compares to never apply an older state over a newer one.
 *
 * The version is `<rev>.<pos>.<hash of the JSON>` (base 36): computed from the row alone, so every
 * process serves the same ETag for the same state; `pos` and `rev` make it unique per write of an
 * id, and the hash keeps it so after a database is restored or re-imported.
 */
export interface PgEntity extends StoredEntity {
  readonly pos: number;
  readonly rev: number;
}

export function pgVersion(pos: number, rev: number, json: string): string {
  return `${rev.toString(36)}.${versionOf(pos, json)}`;
}

/** An entity written or received from the change feed in this process: its JSON is a string. */
export class RowEntity implements PgEntity {
  readonly id: string;
  readonly json: string;
  readonly pos: number;
  readonly rev: number;
  #version: string | undefined;

  constructor(id: string, json: string, pos: number, rev: number) {
    this.id = id;
    this.json = json;
    this.pos = pos;
    this.rev = rev;
  }

  get record(): EntityRecord {
    return JSON.parse(this.json) as EntityRecord;
  }

  /** Hashed once: a written entity is served and checked (`If-Match`) again and again. */
  get version(): string {
    this.#version ??= pgVersion(this.pos, this.rev, this.json);
    return this.#version;
  }
}

/**
 * An entity loaded at start-up: its id and JSON are bytes in a block the loader filled, so a
 * million rows build no strings; the id (plain ASCII only, see `hashIdBytes`) is decoded when asked.
 */
export class LoadedRowEntity implements PgEntity {
  readonly #block: Buffer;
  readonly #idStart: number;
  readonly #start: number;
  readonly #end: number;
  readonly pos: number;
  readonly rev: number;

  constructor(block: Buffer, idStart: number, start: number, end: number, pos: number, rev: number) {
    this.#block = block;
    this.#idStart = idStart;
    this.#start = start;
    this.#end = end;
    this.pos = pos;
    this.rev = rev;
  }

  get id(): string {
    return this.#block.toString('latin1', this.#idStart, this.#start);
  }

  get json(): string {
    return this.#block.toString('utf8', this.#start, this.#end);
  }

  get record(): EntityRecord {
    return JSON.parse(this.json) as EntityRecord;
  }

  get version(): string {
    return pgVersion(this.pos, this.rev, this.json);
  }

  valuesAt(paths: readonly (readonly string[])[]): unknown[] {
    return valuesAt(this.#block, this.#start, this.#end, paths);
  }
}
