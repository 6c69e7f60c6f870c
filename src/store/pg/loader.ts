import { hashIdBytes } from '../index/entity-index.js';
import type { Sql } from './driver.js';
import { decimalColumn, NEWLINE, splitColumns, unescapeColumn } from './copy-text.js';
import { SCHEMA } from './layout.js';
import { LoadedRowEntity, RowEntity, type PgEntity } from './pg-entity.js';

/** Where loaded rows go: the index of a resource, or undefined to skip the resource. */
export type LoadSink = (resource: string) => { put(entity: PgEntity, idHash?: number): void } | undefined;

/** Bytes of the first block rows are copied into; blocks double up to `MAX_BLOCK`. */
const FIRST_BLOCK = 64 * 1024;
const MAX_BLOCK = 8 * 1024 * 1024;
const COLUMNS = 5;

/**
 * Start-up (docs/storage.md §2): every live row of every resource, in `pos` order, into the indexes.
 * Rows travel as `COPY … TO STDOUT` text, parsed here byte by byte: a million rows build no string
 * and no row object in the driver. Ids and bodies are copied into blocks the entities point into,
 * so the driver's buffers are not kept alive.
 *
 * Returns `pg_snapshot_xmin` taken just before the copy: every transaction below it had ended, so
 * the copy (a later snapshot) holds all of their rows. The change feed starts there; the rows it
 * brings again (those of later transactions the copy already saw) are skipped by `rev`.
 */
export async function loadRows(sql: Sql, sink: LoadSink): Promise<bigint> {
  const [snapshot] = await sql.unsafe<{ h: string }[]>('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h');
  const stream = await sql
    .unsafe(`COPY (SELECT resource, id, pos, rev, body FROM ${SCHEMA}.entities WHERE body IS NOT NULL ORDER BY resource, pos) TO STDOUT`)
    .readable();
  const rows = new RowParser(sink);
  for await (const chunk of stream) rows.take(chunk as Buffer);
  rows.end();
  return BigInt(snapshot!.h);
}

/** Splits COPY output into rows (a row may straddle two chunks) and hands each to its resource. */
class RowParser {
  readonly #sink: LoadSink;
  readonly #bounds = new Int32Array(COLUMNS + 1);
  #carry: Buffer | undefined;
  #block = Buffer.allocUnsafe(FIRST_BLOCK);
  #used = 0;
  #resource: Buffer = Buffer.alloc(0);
  #target: ReturnType<LoadSink>;

  constructor(sink: LoadSink) {
    this.#sink = sink;
  }

  take(chunk: Buffer): void {
    let start = 0;
    if (this.#carry) {
      const newline = chunk.indexOf(NEWLINE);
      if (newline === -1) {
        this.#carry = Buffer.concat([this.#carry, chunk]);
        return;
      }
      const joined = Buffer.concat([this.#carry, chunk.subarray(0, newline)]);
      this.#carry = undefined;
      this.#row(joined, 0, joined.length);
      start = newline + 1;
    }
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, start);
      if (newline === -1) break;
      this.#row(chunk, start, newline);
      start = newline + 1;
    }
    if (start < chunk.length) this.#carry = Buffer.from(chunk.subarray(start));
  }

  end(): void {
    if (this.#carry) throw new Error('COPY output ended inside a row');
  }

  #row(src: Buffer, start: number, end: number): void {
    const b = this.#bounds;
    if (!splitColumns(src, start, end, b, COLUMNS)) throw new Error(`COPY output: a row without ${COLUMNS} columns`);
    const resourceEnd = b[1]! - 1;
    if (this.#resource.length !== resourceEnd - start || this.#resource.compare(src, start, resourceEnd) !== 0) {
      this.#resource = Buffer.from(src.subarray(start, resourceEnd));
      // Resource names are plain ASCII (docs/conventions.md §1): no escapes.
      this.#target = this.#sink(this.#resource.toString('latin1'));
    }
    const target = this.#target;
    if (target === undefined) return;
    const pos = decimalColumn(src, b[2]!, b[3]! - 1);
    const rev = decimalColumn(src, b[3]!, b[4]! - 1);
    const need = end - b[1]!;
    if (this.#used + need > this.#block.length) {
      this.#block = Buffer.allocUnsafe(Math.max(need, Math.min(MAX_BLOCK, this.#block.length * 2)));
      this.#used = 0;
    }
    const block = this.#block;
    const idStart = this.#used;
    const idEnd = unescapeColumn(src, b[1]!, b[2]! - 1, block, idStart);
    const bodyEnd = unescapeColumn(src, b[4]!, end, block, idEnd);
    this.#used = bodyEnd;
    const idHash = hashIdBytes(block, idStart, idEnd);
    if (idHash !== undefined) {
      target.put(new LoadedRowEntity(block, idStart, idEnd, bodyEnd, pos, rev), idHash);
    } else {
      // An id beyond ASCII: its bytes are not its UTF-16 units, so it is kept as a string.
      target.put(new RowEntity(block.toString('utf8', idStart, idEnd), block.toString('utf8', idEnd, bodyEnd), pos, rev));
    }
  }
}
