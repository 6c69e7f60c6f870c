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
/** A stamp value is at most this long; looking further back finds none. */
const MAX_VALUE_BYTES = 40;

const LETTER: Readonly<Record<ChangeType, string>> = { created: 'c', updated: 'u', deleted: 'd' };

export function stampValue(stamp: ChangeStamp): string {
  return `${stamp.seq}.${LETTER[stamp.type]}.${stamp.at}`;
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
export function readStamp(buf: Uint8Array, comma: number, end: number): ChangeStamp | undefined {
  const from = comma + PREFIX_BYTES.length;
  const to = end - 2;
  const seq = stampSeqOf(buf, from, to);
  if (seq === 0) return undefined;
  // `stampSeqOf` checked the whole value: the type's letter follows the number and its dot.
  let i = from + 1;
  while (buf[i] !== DOT) i++;
  return { seq, type: TYPE_OF_BYTE[buf[i + 1]!]!, at: decimalAt(buf, i + 3, to) };
}

/**
 * The sequence number of the stamp at `comma` (as `findStamp` found it) of the object ending at
 * `end`, or 0 when malformed: `readStamp(…)?.seq ?? 0` without the object. A start-up reads it for
 * every line of the log, some lines more than once; read from a string made of its bytes, with a
 * regular expression, it was two fifths of a start-up at 1,000,000 entities (bench/NOTES.md,
 * "2026-12-02").
 */
export function readStampSeq(buf: Uint8Array, comma: number, end: number): number {
  return stampSeqOf(buf, comma + PREFIX_BYTES.length, end - 2);
}

const DOT = 0x2e;
const ZERO = 0x30;
const TYPE_OF_BYTE: Readonly<Record<number, ChangeType>> = { 0x63: 'created', 0x75: 'updated', 0x64: 'deleted' };

/**
 * The value `buf[from, to)` checked as a stamp value, `<seq>.<c|u|d>.<at>`: `seq` 1–16 digits
 * without a leading zero, `at` likewise or 0, both safe integers. Its sequence number, or 0 when it
 * is not a stamp value.
 */
function stampSeqOf(buf: Uint8Array, from: number, to: number): number {
  const seqEnd = digitsEnd(buf, from, to, false);
  if (seqEnd < 0 || seqEnd + 2 >= to || buf[seqEnd] !== DOT || TYPE_OF_BYTE[buf[seqEnd + 1]!] === undefined || buf[seqEnd + 2] !== DOT) return 0;
  if (digitsEnd(buf, seqEnd + 3, to, true) !== to) return 0;
  const seq = decimalAt(buf, from, seqEnd);
  return Number.isSafeInteger(seq) && Number.isSafeInteger(decimalAt(buf, seqEnd + 3, to)) ? seq : 0;
}

/**
 * Where the decimal number that begins at `from` ends (before `to`): 1–16 digits without a leading
 * zero (`zero`: or a lone 0), or -1 when there is none.
 */
function digitsEnd(buf: Uint8Array, from: number, to: number, zero: boolean): number {
  const first = buf[from]! - ZERO;
  if (from >= to || first < 0 || first > 9) return -1;
  if (first === 0) return zero ? from + 1 : -1;
  let i = from + 1;
  for (; i < to && i - from < 16; i++) {
    const digit = buf[i]! - ZERO;
    if (digit < 0 || digit > 9) break;
  }
  return i;
}

/**
 * The decimal number `buf[from, to)` (digits only): exact up to `Number.MAX_SAFE_INTEGER`, and a
 * larger number is never taken for a safe one (every partial value below 2^53 is exact; the last
 * step rounds to 2^53 or above).
 */
function decimalAt(buf: Uint8Array, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) n = n * 10 + (buf[i]! - ZERO);
  return n;
}
