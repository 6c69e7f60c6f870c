/**
 * U+0000 and PostgreSQL (docs/storage.md §2). Its `text` cannot hold the character: an id or a link
 * target holding one is refused as a parameter ("invalid byte sequence for encoding UTF8: 0x00"),
 * which fails the whole statement, so the other writes of its batch with it. No row can have such an
 * id, so the stores answer as for any id without a row instead of asking. A body is stored as JSON
 * text, where the character is the escape `\u0000` and reads back as written; but PostgreSQL's
 * `json` operators, which the link fields' indexes apply to a linking resource's bodies
 * (link-layout.ts), refuse that escape anywhere in the document, not only in the field they read.
 */

/** True when `text` holds U+0000: PostgreSQL has no row with it as an id. */
export const holdsNul = (text: string): boolean => text.includes('\u0000');

/** The path of the first member name or string of `value` that `bad` names something in, and what. */
function firstPath(value: unknown, bad: (text: string) => string | undefined, path = ''): { path: string; what: string } | undefined {
  if (typeof value === 'string') {
    const what = bad(value);
    return what === undefined ? undefined : { path, what };
  }
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstPath(value[i], bad, join(path, String(i)));
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, member] of Object.entries(value)) {
    const what = bad(key);
    if (what !== undefined) return { path: join(path, key), what };
    const found = firstPath(member, bad, join(path, key));
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * A lone surrogate (`"\ud800"` in JSON text): PostgreSQL's `json` operators refuse its escape as they
 * refuse `\u0000`, so the link fields' indexes cannot read a body holding one either.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What of `text` PostgreSQL's `json` operators cannot read: U+0000, a lone surrogate, or undefined. */
export function unreadableIn(text: string): string | undefined {
  if (holdsNul(text)) return 'U+0000';
  return LONE_SURROGATE.test(text) ? 'a lone surrogate' : undefined;
}

/**
 * The first entity of `entities` whose body the link fields' indexes cannot read (`unreadableIn`),
 * with the path of the member that holds it and how many more there are; undefined when none. Only
 * a body whose JSON text holds an escape of U+0000 or a surrogate is parsed (JSON.stringify and the
 * file store write those characters as escapes): this runs when an index build has failed, or on
 * what `halserve import` sends, never on a request.
 */
export function unreadableEntity(
  entities: Iterable<{ readonly id: string; readonly json: string }>,
): { id: string; path: string; what: string; more: number } | undefined {
  let first: { id: string; path: string; what: string } | undefined;
  let more = 0;
  for (const { id, json } of entities) {
    if (!mayBeUnreadable(json)) continue;
    const found = firstPath(JSON.parse(json) as unknown, unreadableIn);
    if (found === undefined) continue;
    if (first === undefined) first = { id, ...found };
    else more++;
  }
  return first === undefined ? undefined : { ...first, more };
}

/**
 * Whether the JSON text of a body may hold what the link fields' indexes cannot read: an escape of
 * U+0000 or of a surrogate. JSON.stringify escapes exactly those (a well-formed pair is written as
 * itself), so the text of nearly every body is ruled out by this one search; a match may still be a
 * literal backslash, which `unreadablePath` then tells apart.
 */
export const mayBeUnreadable = (json: string): boolean => UNREADABLE_ESCAPE.test(json);
const UNREADABLE_ESCAPE = /\\u(?:0000|d[89a-f])/i;

/**
 * The path of the first member name or string of `value` that PostgreSQL's `json` cannot read
 * (`unreadableIn`), as a validation message names a field (`tags.2`, `a.b`; a member name holding
 * it is named itself); undefined when none does.
 */
export const unreadablePath = (value: unknown): string | undefined => firstPath(value, unreadableIn)?.path;

/** The validation message of a linking resource's field holding U+0000 or a lone surrogate, on PostgreSQL. */
export const NUL_REFUSED = 'must not hold U+0000 (\\u0000) or a lone surrogate in a resource with links, on PostgreSQL';

const join = (path: string, key: string): string => (path === '' ? key : `${path}.${key}`);
