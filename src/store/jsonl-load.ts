import type { EntityIndex } from './entity-index.js';
import { LoadedEntity, type LogEntity } from './jsonl-entity.js';
import { LineScanner } from './line-scanner.js';
import { OPEN_READ, type StoreFs } from './store-fs.js';
import { StoreOpenError } from './store.js';

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
 * Reads a log file into `index` (last line per id wins; a tombstone removes). A malformed final
 * line is reported as torn; any other malformed line throws `StoreOpenError` naming `file:line`,
 * or is collected in `rejected` when `repair` is set.
 */
export async function loadLog(
  fsys: StoreFs,
  file: string,
  index: EntityIndex<LogEntity>,
  repair: boolean,
  chunkBytes = LOAD_CHUNK_BYTES,
): Promise<LoadResult> {
  let fd: number;
  try {
    fd = await fsys.open(file, OPEN_READ);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      return { lines: 0, size: 0, needsNewline: false, rejected: [], exists: false };
    }
    throw new StoreOpenError(`${file}: ${(error as Error).message}`);
  }
  const scanner = new LineScanner();
  const rejected: LoadResult['rejected'] = [];
  /** A malformed line that is torn if nothing but whitespace follows it. */
  let suspect: Pending | undefined;
  let line = 0;
  /** File offset of `buffer[0]`. */
  let base = 0;
  let keptSize = 0;
  let needsNewline = false;
  let carry: Buffer = Buffer.alloc(0);
  try {
    let eof = false;
    while (!eof) {
      // Each chunk gets its own buffer: loaded entities point into it.
      const buffer = Buffer.allocUnsafe(Math.max(chunkBytes, carry.length * 2));
      carry.copy(buffer, 0);
      let filled = carry.length;
      while (filled < buffer.length) {
        const n = await fsys.read(fd, buffer, filled, buffer.length - filled, base + filled);
        if (n === 0) {
          eof = true;
          break;
        }
        filled += n;
      }
      let start = 0;
      for (;;) {
        let end = buffer.indexOf(NEWLINE, start);
        if (end < 0 || end >= filled) {
          if (!eof) break; // the line continues in the next chunk
          if (start >= filled) break;
          end = filled;
        }
        line++;
        const offset = base + start;
        if (scanner.scan(buffer, start, end)) {
          if (suspect) middleLine(suspect);
          suspect = undefined;
          const r = scanner.result;
          if (r.idStart < 0 || r.idEnd === r.idStart) {
            const bytes = Buffer.from(buffer.subarray(start, end));
            const reason = r.idNotString ? 'id must be a string' : 'a line needs a non-empty string id';
            if (!repair) throw new StoreOpenError(`${file}:${line}: ${reason}`);
            rejected.push({ line, bytes, reason });
          } else {
            const id = r.idEscaped
              ? (JSON.parse(`"${buffer.toString('utf8', r.idStart, r.idEnd)}"`) as string)
              : buffer.toString('utf8', r.idStart, r.idEnd);
            if (r.deleted) index.delete(id);
            else index.set(new LoadedEntity(id, buffer, r.objectStart, r.objectEnd, line));
          }
          keptSize = base + end + 1;
          needsNewline = end === filled && eof;
          if (needsNewline) keptSize = base + end;
        } else if (!isBlank(buffer, start, end)) {
          if (suspect) middleLine(suspect);
          suspect = { line, offset, bytes: Buffer.from(buffer.subarray(start, end)) };
        } else if (!suspect) {
          // A blank line keeps its number; it holds nothing to lose.
          keptSize = Math.min(base + end + 1, base + filled);
          needsNewline = false;
        }
        start = end + 1;
      }
      carry = buffer.subarray(start, filled);
      base += start;
    }
  } finally {
    await fsys.close(fd);
  }

  function middleLine(bad: Pending): void {
    const reason = whyMalformed(bad.bytes);
    if (!repair) throw new StoreOpenError(`${file}:${bad.line}: ${reason}`);
    rejected.push({ line: bad.line, bytes: bad.bytes, reason });
  }

  const result: LoadResult = { lines: line, size: keptSize, needsNewline, rejected, exists: true };
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
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? 'malformed JSON'
      : 'a line must be a JSON object';
  } catch (error) {
    return (error as Error).message;
  }
}
