/**
 * Counts the structure of a JSON body as its chunks arrive, so that a body whose shape would cost
 * too much to parse, check and store is refused before `JSON.parse` sees it (docs/conventions.md §8: no request
 * holds the event loop for more than about 10 ms). `JSON.parse` of an object with 100,000 members
 * takes hundreds of milliseconds in one go; this scan costs a few microseconds per 64 KiB chunk and
 * skips string contents with `indexOf`, so a body that is one huge string stays cheap to scan.
 *
 * The counts are exact for every body `JSON.parse` accepts, and for every prefix of one: the scanner
 * tracks only whether it is inside a string (and after a backslash there), the open containers, and
 * whether the next string of an object is a member name. Past the first byte that makes a body
 * invalid the counts mean nothing, but then `JSON.parse` stops there too.
 */

/** What a body may hold; every limit is inclusive. */
export interface BodyShapeLimits {
  /** Values in the whole body: every object, array, string, number, true, false and null, the body's own object included. Member names are not values. */
  readonly values: number;
  /** Members in any one object. */
  readonly members: number;
  /** Open objects and arrays at once; the body's own object is level 1. */
  readonly depth: number;
}

/** The first limit a body broke. */
export interface ShapeViolation {
  readonly limit: keyof BodyShapeLimits;
  readonly max: number;
}

// Byte classes outside strings; anything else (letters of literals, digits after the first,
// a BOM) neither starts nor ends a value.
const OTHER = 0;
const SPACE = 1;
const QUOTE = 2;
const OPEN_OBJECT = 3;
const OPEN_ARRAY = 4;
const CLOSE = 5;
const COMMA = 6;
const COLON = 7;
const SCALAR = 8;

const CLASSES = new Uint8Array(256);
for (const c of ' \t\n\r') CLASSES[c.charCodeAt(0)] = SPACE;
for (const c of '-0123456789tfn') CLASSES[c.charCodeAt(0)] = SCALAR;
CLASSES[0x22] = QUOTE;
CLASSES[0x7b] = OPEN_OBJECT;
CLASSES[0x5b] = OPEN_ARRAY;
CLASSES[0x7d] = CLOSE;
CLASSES[0x5d] = CLOSE;
CLASSES[0x2c] = COMMA;
CLASSES[0x3a] = COLON;

const BACKSLASH = 0x5c;
/** The nesting a scanner makes room for at first. */
const INITIAL_DEPTH_ROOM = 16;
const DOUBLE_QUOTE = 0x22;

/** An incremental counter of a JSON text's values, members per object and depth. */
export class BodyShapeScanner {
  readonly #limits: BodyShapeLimits;
  /** Values seen so far. */
  #values = 0;
  #depth = 0;
  /** Per open container (index = depth): 1 for an object, 0 for an array. */
  #isObject: Uint8Array;
  /** Per open object (index = depth): its members so far. */
  #members: Uint32Array;
  #inString = false;
  /** The last byte of the previous chunk was a backslash inside a string: the next byte is escaped. */
  #escaped = false;
  /** Inside a number or literal, which counts once at its first byte. */
  #inScalar = false;
  /** The next string is a member name: right after `{` or after a `,` in an object. */
  #expectName = false;
  #violation: ShapeViolation | undefined;

  constructor(limits: BodyShapeLimits) {
    this.#limits = limits;
    // The stacks start small and double as a body goes deeper (a scanner is made per request, and
    // almost every body is a few levels deep); depth is refused one level past the limit, so they
    // never need more room than `depth + 2`.
    const room = Math.min(limits.depth + 2, INITIAL_DEPTH_ROOM);
    this.#isObject = new Uint8Array(room);
    this.#members = new Uint32Array(room);
  }

  /** Values counted so far. */
  get values(): number {
    return this.#values;
  }

  /** Scans the next chunk; returns the first limit broken so far, if any (and keeps returning it). */
  write(chunk: Uint8Array): ShapeViolation | undefined {
    if (this.#violation) return this.#violation;
    const length = chunk.length;
    let i = 0;
    /** Position of the next backslash at or after `i` in this chunk (`length` when none), found lazily. */
    let backslash = -1;
    while (i < length) {
      if (this.#inString) {
        if (this.#escaped) {
          // The byte after a backslash is never the end of the string (`\"`, `\\`, the `u` of `\u`).
          this.#escaped = false;
          i++;
          continue;
        }
        if (backslash < i) {
          backslash = chunk.indexOf(BACKSLASH, i);
          if (backslash === -1) backslash = length;
        }
        let quote = chunk.indexOf(DOUBLE_QUOTE, i);
        if (quote === -1) quote = length;
        if (backslash < quote) {
          // Skip the backslash and the byte it escapes, which may be in the next chunk.
          if (backslash + 1 < length) i = backslash + 2;
          else {
            this.#escaped = true;
            i = length;
          }
        } else if (quote < length) {
          this.#inString = false;
          i = quote + 1;
        } else {
          i = length;
        }
        continue;
      }
      const kind = CLASSES[chunk[i] as number] as number;
      i++;
      if (kind === OTHER) continue;
      if (kind === SCALAR) {
        if (!this.#inScalar) {
          this.#inScalar = true;
          if (!this.#value()) return this.#violation;
        }
        continue;
      }
      this.#inScalar = false;
      switch (kind) {
        case QUOTE:
          this.#inString = true;
          if (this.#expectName) {
            this.#expectName = false;
            const members = (this.#members[this.#depth] ?? 0) + 1;
            this.#members[this.#depth] = members;
            if (members > this.#limits.members) return this.#refuse('members');
          } else if (!this.#value()) return this.#violation;
          break;
        case OPEN_OBJECT:
        case OPEN_ARRAY:
          if (!this.#value()) return this.#violation;
          if (++this.#depth > this.#limits.depth) return this.#refuse('depth');
          if (this.#depth >= this.#isObject.length) this.#grow();
          this.#isObject[this.#depth] = kind === OPEN_OBJECT ? 1 : 0;
          this.#members[this.#depth] = 0;
          this.#expectName = kind === OPEN_OBJECT;
          break;
        case CLOSE:
          if (this.#depth > 0) this.#depth--;
          this.#expectName = false;
          break;
        case COMMA:
          this.#expectName = this.#isObject[this.#depth] === 1;
          break;
        default: // SPACE, COLON
          break;
      }
    }
    return undefined;
  }

  /** Doubles the stacks' room (up to what the depth limit can need), keeping what they hold. */
  #grow(): void {
    const room = Math.min(this.#isObject.length * 2, this.#limits.depth + 2);
    const isObject = new Uint8Array(room);
    isObject.set(this.#isObject);
    const members = new Uint32Array(room);
    members.set(this.#members);
    this.#isObject = isObject;
    this.#members = members;
  }

  /** Counts one value; false once the body holds too many. */
  #value(): boolean {
    if (++this.#values <= this.#limits.values) return true;
    this.#refuse('values');
    return false;
  }

  #refuse(limit: keyof BodyShapeLimits): ShapeViolation {
    this.#violation = { limit, max: this.#limits[limit] };
    return this.#violation;
  }
}

/** Counts a whole JSON text at once: the first limit it breaks, or undefined. */
export function checkBodyShape(text: Uint8Array, limits: BodyShapeLimits): ShapeViolation | undefined {
  return new BodyShapeScanner(limits).write(text);
}

/**
 * Counts a parsed value like the scanner counts its text (depth aside): the first of `values` and
 * `members` it breaks, or undefined. For what a body alone does not bound: a merge patch adds its
 * members to the entity's, so an entity could otherwise grow past the limits one PATCH at a time.
 * Stops as soon as a limit is broken, so it costs no more than a body within the limits.
 */
export function checkValueShape(root: unknown, limits: Pick<BodyShapeLimits, 'values' | 'members'>): ShapeViolation | undefined {
  let values = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (++values > limits.values) return { limit: 'values', max: limits.values };
    if (typeof value !== 'object' || value === null) continue;
    // No array of children per object: this runs on every merge patch's result.
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) stack.push(value[i]);
      continue;
    }
    let members = 0;
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      if (++members > limits.members) return { limit: 'members', max: limits.members };
      stack.push((value as Record<string, unknown>)[key]);
    }
  }
  return undefined;
}
