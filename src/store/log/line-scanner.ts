/**
 * A validating scanner for one JSON-lines record, working on the file's bytes.
 *
 * Start-up must check every line of a store (a malformed line refuses start-up), but `JSON.parse`
 * builds an object per line and needs the file decoded to strings first: at a million lines that
 * alone takes longer than the start-up budget. This scanner checks the JSON grammar (RFC 8259) in
 * one allocation-free pass over the bytes and picks out what the index needs: the span of the
 * top-level object, its `id` and whether it is a tombstone. Only a line it rejects is handed to
 * `JSON.parse`, for the standard error message.
 */

/** What a successful scan found; fields are valid until the next scan. */
export interface ScanResult {
  /** Byte offset of the object's `{`. */
  objectStart: number;
  /** Byte offset just past the object's `}`. */
  objectEnd: number;
  /** Byte span of the top-level `id` string's contents, or -1 when there is no string id. */
  idStart: number;
  idEnd: number;
  /** The `id` string contains an escape sequence: decode it with `JSON.parse`. */
  idEscaped: boolean;
  /** The top-level `id` member exists but is not a string. */
  idNotString: boolean;
  /** The top-level `_deleted` member is the literal `true`. */
  deleted: boolean;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

const isWhitespace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
const isDigit = (c: number): boolean => c >= ZERO && c <= NINE;
const isHex = (c: number): boolean =>
  (c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** Scans records; reuses its result object so that a million lines allocate nothing. */
export class LineScanner {
  readonly result: ScanResult = {
    objectStart: 0,
    objectEnd: 0,
    idStart: -1,
    idEnd: -1,
    idEscaped: false,
    idNotString: false,
    deleted: false,
  };
  /** Container kinds of the open arrays/objects: 1 object, 2 array. */
  #stack = new Uint8Array(64);
  #buf: Uint8Array = new Uint8Array(0);
  #end = 0;
  /** Set by `#string` when the string it read held a backslash escape. */
  #escaped = false;

  /**
   * Checks that `buf[start, end)` is exactly one JSON object, optionally surrounded by whitespace.
   * Returns false for anything else (the caller asks `JSON.parse` why).
   */
  scan(buf: Uint8Array, start: number, end: number): boolean {
    this.#buf = buf;
    this.#end = end;
    const r = this.result;
    r.idStart = -1;
    r.idEnd = -1;
    r.idEscaped = false;
    r.idNotString = false;
    r.deleted = false;
    let i = this.#skipWhitespace(start);
    if (i >= end || buf[i] !== OPEN_BRACE) return false;
    r.objectStart = i;
    i = this.#object(i);
    if (i < 0) return false;
    r.objectEnd = i;
    return this.#skipWhitespace(i) === end;
  }

  #skipWhitespace(i: number): number {
    const buf = this.#buf;
    while (i < this.#end && isWhitespace(buf[i]!)) i++;
    return i;
  }

  /** The top-level object: like `#value`, but watches for the `id` and `_deleted` members. */
  #object(i: number): number {
    const buf = this.#buf;
    const r = this.result;
    i = this.#skipWhitespace(i + 1);
    if (buf[i] === CLOSE_BRACE) return i + 1;
    for (;;) {
      if (i >= this.#end || buf[i] !== QUOTE) return -1;
      const keyStart = i + 1;
      i = this.#string(i);
      if (i < 0) return -1;
      const keyLength = i - 1 - keyStart;
      const keyEscaped = this.#escaped;
      i = this.#skipWhitespace(i);
      if (buf[i] !== COLON) return -1;
      i = this.#skipWhitespace(i + 1);
      const valueStart = i;
      i = this.#value(i);
      if (i < 0) return -1;
      if (!keyEscaped && keyLength === 2 && buf[keyStart] === 0x69 && buf[keyStart + 1] === 0x64) {
        // "id" — the last occurrence wins, as in JSON.parse.
        if (buf[valueStart] === QUOTE) {
          r.idStart = valueStart + 1;
          r.idEnd = i - 1;
          r.idEscaped = this.#escaped;
          r.idNotString = false;
        } else {
          r.idStart = -1;
          r.idEnd = -1;
          r.idNotString = true;
        }
      } else if (!keyEscaped && keyLength === 8 && isDeletedKey(buf, keyStart)) {
        r.deleted = i - valueStart === 4 && buf[valueStart] === 0x74; // the literal `true`
      }
      i = this.#skipWhitespace(i);
      const c = buf[i];
      if (c === CLOSE_BRACE) return i + 1;
      if (c !== COMMA) return -1;
      i = this.#skipWhitespace(i + 1);
    }
  }

  /** Any JSON value starting at `i` (not whitespace); returns the offset past it, or -1. */
  #value(i: number): number {
    const buf = this.#buf;
    const end = this.#end;
    let depth = 0;
    let stack = this.#stack;
    // Iterative, so that deep nesting cannot overflow the call stack.
    for (;;) {
      if (i >= end) return -1;
      let c = buf[i]!;
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (depth === stack.length) {
          const grown = new Uint8Array(stack.length * 2);
          grown.set(stack);
          stack = this.#stack = grown;
        }
        const isObject = c === OPEN_BRACE;
        stack[depth++] = isObject ? 1 : 2;
        i = this.#skipWhitespace(i + 1);
        if (i >= end) return -1;
        c = buf[i]!;
        if (c === (isObject ? CLOSE_BRACE : CLOSE_BRACKET)) {
          depth--;
          i++;
        } else {
          if (isObject) {
            if (c !== QUOTE) return -1;
            i = this.#string(i);
            if (i < 0) return -1;
            i = this.#skipWhitespace(i);
            if (buf[i] !== COLON) return -1;
            i = this.#skipWhitespace(i + 1);
          }
          continue; // read the first member's value
        }
      } else if (c === QUOTE) {
        i = this.#string(i);
      } else if (c === MINUS || isDigit(c)) {
        i = this.#number(i);
      } else if (c === 0x74) {
        i = this.#literal(i, TRUE);
      } else if (c === 0x66) {
        i = this.#literal(i, FALSE);
      } else if (c === 0x6e) {
        i = this.#literal(i, NULL);
      } else {
        return -1;
      }
      if (i < 0) return -1;
      // After a value: close containers or move to the next member.
      for (;;) {
        if (depth === 0) return i;
        i = this.#skipWhitespace(i);
        if (i >= end) return -1;
        c = buf[i]!;
        const kind = stack[depth - 1];
        if (c === COMMA) {
          i = this.#skipWhitespace(i + 1);
          if (kind === 1) {
            if (buf[i] !== QUOTE) return -1;
            i = this.#string(i);
            if (i < 0) return -1;
            i = this.#skipWhitespace(i);
            if (buf[i] !== COLON) return -1;
            i = this.#skipWhitespace(i + 1);
          }
          break;
        }
        if (c === (kind === 1 ? CLOSE_BRACE : CLOSE_BRACKET)) {
          depth--;
          i++;
          continue;
        }
        return -1;
      }
    }
  }

  /** A string starting at the quote `i`; returns the offset past its closing quote, or -1. */
  #string(i: number): number {
    const buf = this.#buf;
    const end = this.#end;
    this.#escaped = false;
    i++;
    for (;;) {
      if (i >= end) return -1;
      const c = buf[i]!;
      if (c === QUOTE) return i + 1;
      if (c < 0x20) return -1; // RFC 8259 §7: control characters must be escaped
      if (c === BACKSLASH) {
        this.#escaped = true;
        const e = buf[i + 1];
        if (e === 0x75) {
          if (i + 5 >= end) return -1;
          for (let k = 2; k <= 5; k++) if (!isHex(buf[i + k]!)) return -1;
          i += 6;
          continue;
        }
        if (
          e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 ||
          e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74
        ) {
          i += 2;
          continue;
        }
        return -1;
      }
      i++;
    }
  }

  /** RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` */
  #number(i: number): number {
    const buf = this.#buf;
    const end = this.#end;
    if (buf[i] === MINUS) i++;
    if (i >= end) return -1;
    if (buf[i] === ZERO) i++;
    else if (isDigit(buf[i]!)) while (i < end && isDigit(buf[i]!)) i++;
    else return -1;
    if (i < end && buf[i] === DOT) {
      i++;
      if (i >= end || !isDigit(buf[i]!)) return -1;
      while (i < end && isDigit(buf[i]!)) i++;
    }
    if (i < end && (buf[i] === 0x65 || buf[i] === 0x45)) {
      i++;
      if (i < end && (buf[i] === PLUS || buf[i] === MINUS)) i++;
      if (i >= end || !isDigit(buf[i]!)) return -1;
      while (i < end && isDigit(buf[i]!)) i++;
    }
    return i;
  }

  #literal(i: number, bytes: readonly number[]): number {
    if (i + bytes.length > this.#end) return -1;
    for (let k = 0; k < bytes.length; k++) if (this.#buf[i + k] !== bytes[k]) return -1;
    return i + bytes.length;
  }
}

const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];
const DELETED_KEY = [0x5f, 0x64, 0x65, 0x6c, 0x65, 0x74, 0x65, 0x64]; // "_deleted"

function isDeletedKey(buf: Uint8Array, start: number): boolean {
  for (let k = 0; k < 8; k++) if (buf[start + k] !== DELETED_KEY[k]) return false;
  return true;
}
