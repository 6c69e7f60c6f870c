import type { ChangeType } from '../store.js';

/**
 * The stamp a log line carries: the change's sequence number in its data directory, its type and
 * the Unix second it was applied. It is the line's last member, `"_change":"<seq>.<c|u|d>.<at>"`,
 * so that the entity's own JSON is the line without it (the stamp is never served) and start-up
 * finds it by looking back from the line's end instead of parsing the record.
 */
export interface ChangeStamp {
  readonly seq: number;
  readonly type: ChangeType;
  readonly at: number;
}

/** The member's key; `_change` is server-managed, so no client field can take its place. */
export const STAMP_KEY = '_change';
/** `,"_change":"`: what precedes a stamp's value in a line. */
const STAMP_PREFIX = `,"${STAMP_KEY}":"`;
const PREFIX_BYTES = Buffer.from(STAMP_PREFIX, 'latin1');
/** `<seq>.<type>.<at>`, both numbers decimal without leading zeros. */
const STAMP_VALUE = /^([1-9][0-9]{0,15})\.([cud])\.(0|[1-9][0-9]{0,15})$/;
/** A stamp value is at most this long; looking further back finds none. */
const MAX_VALUE_BYTES = 40;

const LETTER: Readonly<Record<ChangeType, string>> = { created: 'c', updated: 'u', deleted: 'd' };
const TYPE: Readonly<Record<string, ChangeType>> = { c: 'created', u: 'updated', d: 'deleted' };

export function stampValue(stamp: ChangeStamp): string {
  return `${stamp.seq}.${LETTER[stamp.type]}.${stamp.at}`;
}

export function parseStampValue(value: string): ChangeStamp | undefined {
  const m = STAMP_VALUE.exec(value);
  if (!m) return undefined;
  const seq = Number(m[1]);
  const at = Number(m[3]);
  if (!Number.isSafeInteger(seq) || !Number.isSafeInteger(at)) return undefined;
  return { seq, type: TYPE[m[2]!]!, at };
}

/** The line of an entity whose JSON object text is `json`, stamped. */
export function stampedLine(json: string, stamp: ChangeStamp): string {
  return `${json.slice(0, -1)}${STAMP_PREFIX}${stampValue(stamp)}"}`;
}

/** The line of a delete of `id`, stamped. */
export function tombstoneLine(id: string, stamp: ChangeStamp): string {
  return `{"id":${JSON.stringify(id)},"_deleted":true${STAMP_PREFIX}${stampValue(stamp)}"}`;
}

/**
 * Where the stamp of the valid JSON object `buf[start, end)` begins (its comma), or -1 when the
 * object has none. Sound on any valid object: `,"_change":"` with unescaped quotes cannot lie
 * inside a string, and the object's last member is the only one followed by its closing brace.
 */
export function findStamp(buf: Uint8Array, start: number, end: number): number {
  if (end - start < PREFIX_BYTES.length + 4 || buf[end - 1] !== 0x7d || buf[end - 2] !== 0x22) return -1;
  let q = end - 3;
  const floor = Math.max(start, end - 3 - MAX_VALUE_BYTES);
  while (q > floor && buf[q] !== 0x22) q--;
  if (buf[q] !== 0x22) return -1;
  const comma = q - PREFIX_BYTES.length + 1;
  if (comma <= start) return -1;
  for (let i = 0; i < PREFIX_BYTES.length; i++) if (buf[comma + i] !== PREFIX_BYTES[i]) return -1;
  return comma;
}

/** The stamp at `comma` (as `findStamp` found it) of the object ending at `end`, or undefined when malformed. */
export function readStamp(buf: Buffer, comma: number, end: number): ChangeStamp | undefined {
  return parseStampValue(buf.toString('latin1', comma + PREFIX_BYTES.length, end - 2));
}
