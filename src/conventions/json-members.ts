/**
 * The members of a JSON object's text, read without parsing it into values: each member's name
 * and where its key and value lie, so that a member can be left out or replaced while every other
 * byte stays as written (numbers past 2^53, `-0`, escapes, key order, which `JSON.parse` and
 * `JSON.stringify` would change). Pure; the text is valid JSON (a stored entity's).
 */

/** One member: `text.slice(start, keyEnd)` is its key as written, `text.slice(valueStart, end)` its value. */
export interface JsonMember {
  readonly name: string;
  readonly start: number;
  readonly keyEnd: number;
  readonly valueStart: number;
  readonly end: number;
}

/** The members of the object `json` holds, in order (repeats included); undefined when it is not an object. */
export function objectMembers(json: string): JsonMember[] | undefined {
  const n = json.length;
  let i = skipSpace(json, 0);
  if (json[i] !== '{') return undefined;
  const members: JsonMember[] = [];
  for (i = skipSpace(json, i + 1); i < n && json[i] !== '}'; i = skipSpace(json, i)) {
    if (json[i] === ',') {
      i = skipSpace(json, i + 1);
      continue;
    }
    if (json[i] !== '"') return undefined;
    const start = i;
    const keyEnd = afterString(json, i);
    const key = json.slice(start, keyEnd);
    const name = key.includes('\\') ? (JSON.parse(key) as string) : key.slice(1, -1);
    i = skipSpace(json, keyEnd);
    if (json[i] !== ':') return undefined;
    const valueStart = skipSpace(json, i + 1);
    // The value runs to the first comma or closing brace outside strings, arrays and objects.
    let depth = 0;
    for (i = valueStart; i < n; i++) {
      const c = json[i];
      if (c === '"') i = afterString(json, i) - 1;
      else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        if (depth === 0) break;
        depth--;
      } else if (c === ',' && depth === 0) break;
    }
    let end = i;
    while (end > valueStart && isSpace(json[end - 1]!)) end--;
    members.push({ name, start, keyEnd, valueStart, end });
  }
  return members;
}

const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';

function skipSpace(json: string, i: number): number {
  while (i < json.length && isSpace(json[i]!)) i++;
  return i;
}

/** The index after the string that starts at `i` (its opening quote). */
function afterString(json: string, i: number): number {
  for (let j = i + 1; j < json.length; j++) {
    if (json[j] === '\\') j++;
    else if (json[j] === '"') return j + 1;
  }
  return json.length;
}
