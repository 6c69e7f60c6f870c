/**
 * Reads the values at a few paths out of one JSON object's UTF-8 bytes without parsing the rest:
 * building an index over a million loaded lines would otherwise parse a million whole records
 * (2 µs each) to keep one field of each. The bytes were checked as JSON when the log was loaded,
 * so the walk trusts their shape. Values are what `JSON.parse` gives for the same text, duplicate
 * members included (the last wins); a path through anything but objects reaches `undefined`.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** Wanted paths as a tree of member names, each name as UTF-8 bytes. */
interface Wanted {
  readonly name: Uint8Array;
  /** Indexes in the output of the paths ending here. */
  readonly leaves: number[];
  readonly children: Wanted[];
}

const encoder = new TextEncoder();

const compiled = new WeakMap<readonly (readonly string[])[], Wanted[]>();

/** Paths compiled once per list, for the many records one index build reads. */
export function wantedPaths(paths: readonly (readonly string[])[]): Wanted[] {
  let root = compiled.get(paths);
  if (root === undefined) {
    root = compile(paths);
    compiled.set(paths, root);
  }
  return root;
}

function compile(paths: readonly (readonly string[])[]): Wanted[] {
  const root: Wanted[] = [];
  paths.forEach((path, index) => {
    let level = root;
    path.forEach((segment, depth) => {
      const name = encoder.encode(segment);
      let node = level.find((n) => n.name.length === name.length && n.name.every((b, i) => b === name[i]));
      if (node === undefined) {
        node = { name, leaves: [], children: [] };
        level.push(node);
      }
      if (depth === path.length - 1) node.leaves.push(index);
      level = node.children;
    });
  });
  return root;
}

/** The values at `paths` of the object at `bytes[start, end)`. */
export function valuesAt(bytes: Buffer, start: number, end: number, paths: readonly (readonly string[])[]): unknown[] {
  const out = new Array<unknown>(paths.length).fill(undefined);
  readObject(bytes, start, end, wantedPaths(paths), out);
  return out;
}

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** Walks the object starting at `i` (`{`); returns the position after its `}`. */
function readObject(bytes: Buffer, i: number, end: number, wanted: readonly Wanted[], out: unknown[]): number {
  while (i < end && isSpace(bytes[i]!)) i++;
  i++; // {
  for (;;) {
    while (i < end && (isSpace(bytes[i]!) || bytes[i] === COMMA)) i++;
    if (i >= end || bytes[i] === CLOSE_OBJECT) return i + 1;
    const keyStart = i + 1;
    const keyEnd = skipString(bytes, i, end) - 1;
    i = keyEnd + 1;
    while (i < end && (isSpace(bytes[i]!) || bytes[i] === COLON)) i++;
    const node = match(bytes, keyStart, keyEnd, wanted);
    const valueStart = i;
    // A later duplicate member replaces an earlier one whole, as in JSON.parse.
    if (node !== undefined) clearBelow(node.children, out);
    if (node !== undefined && node.children.length > 0 && bytes[i] === OPEN_OBJECT) {
      // Members of a nested object are read in place; paths that stop here still need its value.
      i = readObject(bytes, i, end, node.children, out);
    } else {
      i = skipValue(bytes, i, end);
    }
    if (node !== undefined && node.leaves.length > 0) {
      const value = decode(bytes, valueStart, i);
      for (const leaf of node.leaves) out[leaf] = value;
    }
  }
}

/** Forgets what the paths below these members found in an earlier duplicate. */
function clearBelow(nodes: readonly Wanted[], out: unknown[]): void {
  for (const node of nodes) {
    for (const leaf of node.leaves) out[leaf] = undefined;
    clearBelow(node.children, out);
  }
}

function match(bytes: Buffer, start: number, end: number, wanted: readonly Wanted[]): Wanted | undefined {
  const length = end - start;
  outer: for (const node of wanted) {
    const name = node.name;
    if (name.length !== length) continue;
    for (let k = 0; k < length; k++) if (bytes[start + k] !== name[k]) continue outer;
    return node;
  }
  // A key with escapes may still name a wanted member: compare decoded text.
  let escaped = false;
  for (let k = start; k < end && !escaped; k++) escaped = bytes[k] === BACKSLASH;
  if (escaped) {
    const key = JSON.parse(utf8.decode(bytes.subarray(start - 1, end + 1))) as string;
    const encoded = encoder.encode(key);
    return wanted.find((n) => n.name.length === encoded.length && n.name.every((b, k) => b === encoded[k]));
  }
  return undefined;
}

const utf8 = new TextDecoder();

/** The value at `bytes[start, end)`: plain strings and numbers without `JSON.parse`. */
function decode(bytes: Buffer, start: number, end: number): unknown {
  const first = bytes[start]!;
  if (first === QUOTE) {
    let plain = true;
    for (let k = start + 1; k < end - 1; k++) {
      if (bytes[k] === BACKSLASH) {
        plain = false;
        break;
      }
    }
    if (plain) return bytes.toString('utf8', start + 1, end - 1);
  } else if (first === 0x2d || (first >= 0x30 && first <= 0x39)) {
    const whole = wholeNumber(bytes, start, end);
    if (whole !== undefined) return whole;
    // JSON's number grammar is a subset of what Number() reads, with the same values.
    return Number(bytes.toString('latin1', start, end));
  }
  return JSON.parse(utf8.decode(bytes.subarray(start, end)));
}

/**
 * The value of `bytes[start, end)` when it is an integer of at most 15 digits (an optional minus,
 * digits only): read digit by digit, exact below 2^53, the value `Number()` gives for the same
 * text, without the string made for it (an index build reads one field of every loaded line);
 * undefined for any other number. `-0` is left to `Number()`, which keeps its sign.
 */
function wholeNumber(bytes: Buffer, start: number, end: number): number | undefined {
  const negative = bytes[start] === 0x2d;
  const from = negative ? start + 1 : start;
  if (end - from < 1 || end - from > 15) return undefined;
  let n = 0;
  for (let i = from; i < end; i++) {
    const digit = bytes[i]! - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    n = n * 10 + digit;
  }
  if (negative && n === 0) return undefined;
  return negative ? -n : n;
}

/** Bytes looked at one by one before a string is searched natively: short strings are the common case. */
const SHORT_STRING = 24;

/** Position after the string starting at `i` (`"`). */
function skipString(bytes: Buffer, i: number, end: number): number {
  const near = Math.min(end, i + SHORT_STRING);
  for (i++; i < near; i++) {
    const b = bytes[i];
    if (b === BACKSLASH) i++;
    else if (b === QUOTE) return i + 1;
  }
  // A long string: find each quote with memchr, and keep the first one not escaped.
  for (;;) {
    const quote = bytes.indexOf(QUOTE, i);
    if (quote === -1 || quote >= end) return end;
    let backslashes = 0;
    while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    i = quote + 1;
  }
}

/** Position after the value starting at `i`. */
function skipValue(bytes: Buffer, i: number, end: number): number {
  const first = bytes[i];
  if (first === QUOTE) return skipString(bytes, i, end);
  if (first === OPEN_OBJECT || first === OPEN_ARRAY) {
    let depth = 0;
    for (; i < end; i++) {
      const b = bytes[i];
      if (b === QUOTE) i = skipString(bytes, i, end) - 1;
      else if (b === OPEN_OBJECT || b === OPEN_ARRAY) depth++;
      else if ((b === CLOSE_OBJECT || b === CLOSE_ARRAY) && --depth === 0) return i + 1;
    }
    return end;
  }
  while (i < end) {
    const b = bytes[i]!;
    if (b === COMMA || b === CLOSE_OBJECT || b === CLOSE_ARRAY || isSpace(b)) break;
    i++;
  }
  return i;
}
