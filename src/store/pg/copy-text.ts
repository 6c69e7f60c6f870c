/**
 * PostgreSQL's COPY text format, read at the byte level (the loader parses a million rows of it):
 * columns are separated by a tab, rows end with a newline, and a backslash escapes the characters
 * a column's text could not hold as they are. Pure functions, no I/O.
 */

export const TAB = 0x09;
export const NEWLINE = 0x0a;
const BACKSLASH = 0x5c;

/** `\b \f \n \r \t \v`: the escapes COPY writes for control characters. */
const ESCAPES: Readonly<Record<number, number>> = { 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09, 0x76: 0x0b };

const isOctal = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x37;
const hexValue = (c: number | undefined): number => {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
};

/**
 * Copies the column `src[start, end)` into `dst` at `at`, undoing COPY's escapes, and returns
 * where the copy ends in `dst` (never further than `at + end - start`: unescaping only shortens).
 */
export function unescapeColumn(src: Uint8Array, start: number, end: number, dst: Uint8Array, at: number): number {
  const first = src.indexOf(BACKSLASH, start);
  if (first === -1 || first >= end) {
    dst.set(src.subarray(start, end), at);
    return at + end - start;
  }
  let out = at;
  let i = start;
  while (i < end) {
    const c = src[i]!;
    if (c !== BACKSLASH || i + 1 >= end) {
      dst[out++] = c;
      i++;
      continue;
    }
    const next = src[i + 1]!;
    const control = ESCAPES[next];
    if (control !== undefined) {
      dst[out++] = control;
      i += 2;
    } else if (isOctal(next)) {
      // \d, \dd or \ddd: a byte in octal.
      let value = 0;
      let j = i + 1;
      while (j < end && j < i + 4 && isOctal(src[j])) value = value * 8 + (src[j++]! - 0x30);
      dst[out++] = value & 0xff;
      i = j;
    } else if (next === 0x78 && i + 2 < end && hexValue(src[i + 2]) >= 0) {
      // \xh or \xhh: a byte in hexadecimal.
      let value = hexValue(src[i + 2]);
      let j = i + 3;
      if (j < end && hexValue(src[j]) >= 0) value = value * 16 + hexValue(src[j++]);
      dst[out++] = value;
      i = j;
    } else {
      // Any other character after a backslash stands for itself (`\\` is a backslash).
      dst[out++] = next;
      i += 2;
    }
  }
  return out;
}

/**
 * The starts of the first `count` columns of the row `src[start, end)` and the end of the last
 * (`bounds[count]`), or false when the row has fewer columns. Column `k` is
 * `[bounds[k], bounds[k + 1] - 1)` for k < count - 1 (the tab excluded), the last ends at `end`.
 */
export function splitColumns(src: Uint8Array, start: number, end: number, bounds: Int32Array, count: number): boolean {
  bounds[0] = start;
  let at = start;
  for (let k = 1; k < count; k++) {
    const tab = src.indexOf(TAB, at);
    if (tab === -1 || tab >= end) return false;
    at = tab + 1;
    bounds[k] = at;
  }
  bounds[count] = end + 1;
  return true;
}

/** A column holding a whole number in decimal (COPY writes `bigint` so). */
export function decimalColumn(src: Uint8Array, start: number, end: number): number {
  let value = 0;
  for (let i = start; i < end; i++) value = value * 10 + (src[i]! - 0x30);
  return value;
}
