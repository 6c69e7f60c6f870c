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

/**
 * The path of the first member name or string of `value` holding U+0000, as a validation message
 * names a field (`tags.2`, `a.b`); undefined when none does. A member name holding it is named
 * itself.
 */
export function nulPath(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return holdsNul(value) ? path : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i], join(path, String(i)));
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, member] of Object.entries(value)) {
    if (holdsNul(key)) return join(path, key);
    const found = nulPath(member, join(path, key));
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The validation message of a linking resource's field holding U+0000, on PostgreSQL. */
export const NUL_REFUSED = 'must not hold U+0000 (\\u0000) in a resource with links, on PostgreSQL';

const join = (path: string, key: string): string => (path === '' ? key : `${path}.${key}`);
