/**
 * A URL as a message may quote it: as written, but with what may hold credentials (user-info,
 * everything from the query on) replaced by `[redacted]`. It works on the text, so that a URL too
 * mistyped to parse is quoted the same way.
 */
export function quotableUrl(text: string): string {
  const mark = text.search(/[?#]/);
  const head = mark === -1 ? text : text.slice(0, mark);
  const tail = mark === -1 ? '' : `${text[mark]}[redacted]`;
  // What may be user-info lies between the scheme (and its `//`, or a mistyped `//` alone) and the
  // next `/`; without `//` (`alice:pw@host`, `mailto:a@host`) it is judged the same way: safer.
  const slashes = head.indexOf('//');
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(head)?.[0].length ?? 0;
  const authorityAt = slashes === -1 ? scheme : slashes + 2;
  const slash = head.indexOf('/', authorityAt);
  const authorityEnd = slash === -1 ? head.length : slash;
  const at = head.lastIndexOf('@', authorityEnd - 1);
  const redacted = at < authorityAt ? head : `${head.slice(0, authorityAt)}[redacted]${head.slice(at)}`;
  return redacted + tail;
}
