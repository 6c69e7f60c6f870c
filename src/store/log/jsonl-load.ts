import { isUtf8 } from 'node:buffer';
import { findStamp, readStamp, readStampSeq, type ChangeStamp } from '../changes/change-stamp.js';
import { hasLoneSurrogate } from '../../conventions/uri-component.js';
import { hashIdBytes } from '../index/entity-index.js';
import type { IndexWriter } from '../index/materialised-index.js';
import { AnswerLines, isAnswersLine } from './answer-lines.js';
import { LoadedEntity, WrittenEntity, type LogEntity } from './jsonl-entity.js';
import { LineScanner } from './line-scanner.js';
import { OPEN_READ, type StoreFs } from './store-fs.js';
import { StoreOpenError } from '../store.js';

/** What loading a log file found. */
export interface LoadResult {
  /** Physical lines kept, including blank ones: the next line written is number `lines + 1`. */
  lines: number;
  /** Bytes of the file that hold kept lines; the torn tail, if any, lies beyond. */
  size: number;
  /** The final line is complete but has no newline: the next append must supply it. */
  needsNewline: boolean;
  /** A torn final line (a crash mid-append): its byte offset and bytes. */
  torn?: { offset: number; line: number; bytes: Buffer };
  /** Bytes of its answers lines. */
  answerBytes: number;
  /** The largest change number of any line, superseded ones included (0: none). */
  maxSeq: number;
  /**
   * Entities whose last line came after a line of their id with a larger change number (an older
   * line copied after a newer one): their state is not the one that number's readers saw last, so
   * they are numbered anew (`stampUnstamped`). A delete in that position is told to `deleted`
   * without its stamp, for the same reason.
   */
  behind: LogEntity[];
  /** Malformed lines set aside by `repair` (none without it). */
  rejected: { line: number; bytes: Buffer; reason: string }[];
  /** False when the file does not exist yet. */
  exists: boolean;
}

/** Bytes read per chunk: large reads keep a 250 MB start-up in a few dozen system calls. */
export const LOAD_CHUNK_BYTES = 16 * 1024 * 1024;
const NEWLINE = 0x0a;

interface Pending {
  line: number;
  offset: number;
  bytes: Buffer;
}

/**
 * Reads a log file into `index` (last line per id wins; a tombstone removes, and is told to
 * `deleted` with its stamp), and its answers lines into `answers`. A malformed final
 * line is reported as torn; any other malformed line throws `StoreOpenError` naming `file:line`,
 * or is collected in `rejected` when `repair` is set.
 */
export async function loadLog(
  fsys: StoreFs,
  file: string,
  index: IndexWriter<LogEntity>,
  repair: boolean,
  chunkBytes = LOAD_CHUNK_BYTES,
  deleted?: (id: string, stamp: ChangeStamp | undefined) => void,
  answers = new AnswerLines(() => {}),
): Promise<LoadResult> {
  let fd: number;
  try {
    fd = await fsys.open(file, OPEN_READ);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return { lines: 0, size: 0, needsNewline: false, answerBytes: 0, maxSeq: 0, behind: [], rejected: [], exists: false };
    }
    throw new StoreOpenError(`${file}: ${(error as Error).message}`);
  }
  const scanner = new LineScanner();
  const rejected: LoadResult['rejected'] = [];
  /** A malformed line that is torn if nothing but whitespace follows it. */
  let suspect: Pending | undefined;
  let line = 0;
  let keptSize = 0;
  let needsNewline = false;
  let answerBytes = 0;
  let maxSeq = 0;
  const behind: LogEntity[] = [];
  /** The largest number of the earlier lines of an entity's id, kept only where it is above the entity's own (rare). */
  const above = new Map<LogEntity, number>();
  /** The largest number of `replaced` and of the lines of its id before it. */
  const highest = (replaced: LogEntity): number => Math.max(replaced.seq, above.get(replaced) ?? 0);
  /** Notes `entity` (its line numbered `seq`) when a line of its id before it had a larger number. */
  const replacing = (entity: LogEntity, replaced: LogEntity | undefined, seq: number): void => {
    if (replaced === undefined) return;
    const high = highest(replaced);
    if (high <= seq) return;
    // Kept for a line after it: 9, 2, 5 leaves 5 below 9 though above the line it replaced.
    above.set(entity, high);
    if (seq !== 0) behind.push(entity);
  };
  /**
   * Whether the lines now taken may hold bytes that are not UTF-8, which the scanner does not
   * look at: each block's whole lines are checked at once, and one by one only when that fails
   * (decoded, a stray byte would become U+FFFD, and two ids that differ only there one id).
   */
  let unchecked = true;

  /** Takes in the line `buffer[start, end)`, found at file offset `offset`. */
  const takeLine = (buffer: Buffer, start: number, end: number, offset: number, terminated: boolean): void => {
    line++;
    if (scanner.scan(buffer, start, end) && (!unchecked || isUtf8(buffer.subarray(start, end)))) {
      if (suspect) middleLine(suspect);
      suspect = undefined;
      const r = scanner.result;
      if (r.idStart < 0 && isAnswersLine(buffer, r.objectStart, r.objectEnd) && answers.answers(buffer, r.objectStart, r.objectEnd)) {
        answerBytes += end - start + 1;
      } else if (r.idStart < 0 || r.idEnd === r.idStart || unnamable(buffer, r.idStart, r.idEnd, r.idEscaped) !== undefined) {
        const bytes = Buffer.from(buffer.subarray(start, end));
        const reason = r.idNotString ? 'id must be a string' : r.idStart >= 0 && r.idEnd > r.idStart ? unnamable(buffer, r.idStart, r.idEnd, r.idEscaped)! : 'a line needs a non-empty string id';
        if (!repair) throw new StoreOpenError(`${file}:${line}: ${reason}`);
        rejected.push({ line, bytes, reason });
      } else {
        const idHash = r.idEscaped || r.deleted ? undefined : hashIdBytes(buffer, r.idStart, r.idEnd);
        let stampAt = findStamp(buffer, r.objectStart, r.objectEnd);
        // The number alone, without the stamp's object, for the lines a loaded entity holds.
        const seq = stampAt < 0 ? 0 : readStampSeq(buffer, stampAt, r.objectEnd);
        if (seq === 0) stampAt = -1;
        else {
          answers.change(seq, buffer, r.objectStart, r.objectEnd);
          if (seq > maxSeq) maxSeq = seq;
        }
        if (idHash !== undefined) {
          const entity = new LoadedEntity(buffer, r.objectStart, r.objectEnd, r.idStart, r.idEnd, stampAt);
          replacing(entity, index.put(entity, idHash), seq);
        } else {
          const stamp = stampAt < 0 ? undefined : readStamp(buffer, stampAt, r.objectEnd);
          const id = r.idEscaped
            ? (JSON.parse(`"${buffer.toString('utf8', r.idStart, r.idEnd)}"`) as string)
            : buffer.toString('utf8', r.idStart, r.idEnd);
          if (r.deleted) {
            const replaced = index.get(id);
            index.remove(id);
            deleted?.(id, replaced !== undefined && stamp !== undefined && highest(replaced) > stamp.seq ? undefined : stamp);
          } else {
            const json = stampAt < 0 ? buffer.toString('utf8', r.objectStart, r.objectEnd) : `${buffer.toString('utf8', r.objectStart, stampAt)}}`;
            const entity = new WrittenEntity(id, json, stamp);
            replacing(entity, index.put(entity), seq);
          }
        }
      }
      keptSize = offset + end - start + (terminated ? 1 : 0);
      needsNewline = !terminated;
    } else if (!isBlank(buffer, start, end)) {
      if (suspect) middleLine(suspect);
      suspect = { line, offset, bytes: Buffer.from(buffer.subarray(start, end)) };
    } else if (!suspect) {
      // A blank line keeps its number; it holds nothing to lose.
      keptSize = offset + end - start + (terminated ? 1 : 0);
      needsNewline = false;
    }
  };

  let next: Promise<Buffer> | undefined;
  try {
    const fileSize = (await fsys.fstat(fd)).size;
    // Blocks are read one ahead of the one being indexed, so the disk and the CPU overlap. Each
    // block keeps its own buffer (loaded entities point into it); only a line that straddles two
    // blocks is copied.
    // Sized to what the file holds (it cannot grow: the directory is locked), so that no block
    // carries unused memory for the life of its entities.
    const readBlock = async (position: number): Promise<Buffer> => {
      const size = Math.max(0, Math.min(chunkBytes, fileSize - position));
      const buffer = Buffer.allocUnsafe(size);
      let filled = 0;
      while (filled < size) {
        const n = await fsys.read(fd, buffer, filled, size - filled, position + filled);
        if (n === 0) break;
        filled += n;
      }
      return buffer.subarray(0, filled);
    };
    let base = 0;
    let carry: Buffer | undefined;
    let carryOffset = 0;
    const ahead = (position: number): Promise<Buffer> => {
      const read = readBlock(position);
      read.catch(() => {}); // awaited below, or abandoned when a bad line stops the load
      return read;
    };
    next = ahead(0);
    for (;;) {
      const block = await next;
      if (block.length === 0) break;
      const blockBase = base;
      base += block.length;
      next = ahead(base);
      let start = 0;
      if (carry) {
        const newline = block.indexOf(NEWLINE);
        if (newline < 0) {
          carry = Buffer.concat([carry, block]);
          continue;
        }
        const joined = Buffer.concat([carry, block.subarray(0, newline)]);
        carry = undefined;
        unchecked = true;
        takeLine(joined, 0, joined.length, carryOffset, true);
        start = newline + 1;
      }
      // A byte order mark that an editor put before the first line (RFC 8259 §8.1 lets a parser
      // ignore it) is not part of that line.
      if (blockBase === 0 && start === 0 && block[0] === 0xef && block[1] === 0xbb && block[2] === 0xbf) {
        start = 3;
        // Its bytes stay in the file: the next append goes after them (the log checks the file's size).
        keptSize = 3;
      }
      const last = block.lastIndexOf(NEWLINE);
      unchecked = last > start && !isUtf8(block.subarray(start, last));
      for (;;) {
        const newline = block.indexOf(NEWLINE, start);
        if (newline < 0) break;
        takeLine(block, start, newline, blockBase + start, true);
        start = newline + 1;
      }
      if (start < block.length) {
        carry = Buffer.from(block.subarray(start));
        carryOffset = blockBase + start;
      }
      // Size the id table once from the first block, instead of doubling it all the way up.
      if (blockBase === 0 && base < fileSize) index.reserve(Math.ceil((index.size * fileSize) / base));
    }
    unchecked = true;
    if (carry) takeLine(carry, 0, carry.length, carryOffset, false);
  } finally {
    await next?.catch(() => {});
    await fsys.close(fd);
  }

  function middleLine(bad: Pending): void {
    const reason = whyMalformed(bad.bytes);
    if (!repair) throw new StoreOpenError(`${file}:${bad.line}: ${reason}`);
    rejected.push({ line: bad.line, bytes: bad.bytes, reason });
  }

  answers.end();
  const result: LoadResult = { lines: line, size: keptSize, needsNewline, answerBytes, maxSeq, behind, rejected, exists: true };
  if (suspect) {
    result.torn = { offset: suspect.offset, line: suspect.line, bytes: suspect.bytes };
    result.lines = suspect.line - 1;
    result.size = suspect.offset;
    result.needsNewline = false;
  }
  return result;
}

function isBlank(buffer: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = buffer[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d) return false;
  }
  return true;
}

/** The reason `JSON.parse` gives for a line the scanner refused, or why a parsed line is unfit. */
export function whyMalformed(bytes: Buffer): string {
  if (!isUtf8(bytes)) return `not UTF-8 text (byte ${firstNonUtf8(bytes) + 1} of the line)`;
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? 'malformed JSON'
      : 'a line must be a JSON object';
  } catch (error) {
    return (error as Error).message;
  }
}

/** The offset of the first byte of `bytes` that does not belong to a well-formed UTF-8 character (RFC 3629 §4). */
export function firstNonUtf8(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i]!;
    const length = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (length === 0 || !isUtf8(bytes.subarray(i, i + length))) return i;
    i += length;
  }
  return -1;
}

const DOT_SEGMENT = 'id . or .. cannot name an entity: as a URL path segment it means the collection or its parent (RFC 3986 §5.2.4)';
const LONE_SURROGATE = 'id holds a lone surrogate, which no URL can carry (RFC 3986 §2.5: percent-encoded UTF-8)';

/**
 * Why no URL can name the id `buffer[start, end)` (JSON string content, escaped or not), or
 * undefined: `.` or `..`, or a lone surrogate, which only an escape can write in UTF-8 text (its
 * links would throw or lead nowhere).
 */
function unnamable(buffer: Buffer, start: number, end: number, escaped: boolean): string | undefined {
  if (escaped) {
    const id = JSON.parse(`"${buffer.toString('utf8', start, end)}"`) as string;
    if (id === '.' || id === '..') return DOT_SEGMENT;
    return hasLoneSurrogate(id) ? LONE_SURROGATE : undefined;
  }
  const length = end - start;
  return (length === 1 || length === 2) && buffer[start] === 0x2e && buffer[end - 1] === 0x2e ? DOT_SEGMENT : undefined;
}
