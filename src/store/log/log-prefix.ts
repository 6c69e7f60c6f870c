import { findStamp, readStamp } from '../changes/change-stamp.js';
import { isAnswersLine } from './answer-lines.js';

/** How much of a log's tail is read at a time, looking back for the cut. */
const WINDOW_BYTES = 64 * 1024;

/** Reads `length` bytes at `position` of a file into `buffer`; resolves with the count read. */
export type ReadAt = (buffer: Buffer, length: number, position: number) => Promise<number>;

/**
 * Where a log of `size` acknowledged bytes ends as of sequence number `seq`: the end of its last
 * line whose change is at or before `seq`, or of its last line without a stamp.
 *
 * Why the lines after `seq` are a suffix of the file: a store appends its batches in the order it
 * numbered them, so its stamped lines rise in number along the file, except the part a compaction
 * wrote (remembered deletes, then live entities in creation order), whose changes were all
 * published before the compaction began, and so lie at or below any cursor handed out later. A
 * line without a stamp was read at start-up, before any number was handed out. So looking back
 * from the end, the first line at or below `seq` ends the prefix, and it is usually the last line
 * or one batch before it: the lines above `seq` are the batches durable but not yet published
 * when `seq` was read (local-feed.ts). An answers line (answer-lines.ts) is never where the
 * prefix ends: it precedes its batch's changes, so it belongs with them, and one that made no
 * change (the answers of refused writes alone) holds nothing a copy must have.
 */
export async function prefixThrough(read: ReadAt, size: number, seq: number): Promise<number> {
  let end = size;
  let window = WINDOW_BYTES;
  while (end > 0) {
    const from = Math.max(0, end - window);
    const buffer = Buffer.alloc(end - from);
    const got = await read(buffer, buffer.length, from);
    if (got !== buffer.length) throw new Error(`the log ended at byte ${from + got}, before its acknowledged ${size} bytes`);
    // Lines of [from, end), last first; each ends at `last`, without its newline.
    let last = buffer.length;
    let whole = false;
    for (;;) {
      if (last > 0 && buffer[last - 1] === 0x0a) last--;
      const newline = last === 0 ? -1 : buffer.lastIndexOf(0x0a, last - 1);
      // The window's first line may have begun before it: read again in the next window.
      if (newline < 0 && from > 0) break;
      whole = true;
      const start = newline + 1;
      const comma = findStamp(buffer, start, last);
      const stamp = comma < 0 ? undefined : readStamp(buffer, comma, last);
      if (!isAnswersLine(buffer, start, last) && (stamp === undefined || stamp.seq <= seq)) return from + (last < buffer.length && buffer[last] === 0x0a ? last + 1 : last);
      end = from + start;
      if (start === 0) break;
      last = start;
    }
    // A line longer than the window: look further back at once.
    if (!whole) window *= 2;
  }
  return 0;
}
