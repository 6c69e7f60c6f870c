/**
 * What the access log may say about a request target: the path, and the query with the values of
 * credential-like parameters replaced, so that a token a client put in a URL never reaches a log
 * (docs/conventions.md §6: never log tokens).
 */

/** Shown instead of a secret. */
export const REDACTED = '[redacted]';

/**
 * The words that make a query parameter's name a credential's (OAuth 2's `access_token`, RFC 6750
 * §2.3, the usual API-key spellings, and their variants: `x_api_key`, `api-token`, `jwt`,
 * `bearer`). A name is split into words at `_`, `-` and `.`, lower-cased, and judged a credential's
 * when one of its words is one of these, or when it is one of them whole (`apikey`): a field that
 * happens to be named `sort_key` loses its value in the log, which is the safe side to err on.
 */
const CREDENTIAL_WORDS: ReadonlySet<string> = new Set([
  'token',
  'auth',
  'authorization',
  'apikey',
  'key',
  'secret',
  'password',
  'passwd',
  'pwd',
  'session',
  'sessionid',
  'signature',
  'sig',
  'jwt',
  'bearer',
  'credential',
  'credentials',
]);

function isCredentialName(rawName: string): boolean {
  let name = rawName;
  try {
    name = decodeURIComponent(rawName.replaceAll('+', ' '));
  } catch {
    // A malformed escape is judged as written.
  }
  const words = name.trim().toLowerCase();
  return CREDENTIAL_WORDS.has(words) || words.split(/[-_.]+/).some((word) => CREDENTIAL_WORDS.has(word));
}

/** The query string with credential-like values redacted; everything else as the client sent it. */
export function redactQuery(query: string): string {
  if (query === '') return '';
  return query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) return pair;
      return isCredentialName(pair.slice(0, eq)) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
    })
    .join('&');
}

/**
 * What may be a JWT or a piece of one (RFC 7519 §3, RFC 7515 §7.1): base64url parts joined by dots,
 * the first of which decodes to the start of a JSON object (`JWT_HEADER`). `{"` encodes as `eyJ`,
 * but a header that begins with JSON white space (which RFC 8259 allows, and a verifier accepts)
 * does not, so the first part is decoded rather than matched by its text. Base64url characters may
 * stand right before a JWT (`Bearer%20eyJ…`: an escape of white space is not decoded, and its `20`
 * begins the match), so the first part is also read from each character on that can begin an
 * object's encoding (`OBJECT_START`), and only what follows is replaced. A start's bytes are those
 * of the first part decoded from its offset within a block of four characters, so each of the four
 * decodings is made once, whatever the part's length: a request line of such characters costs a
 * pass over it, not a decoding per character.
 */
const DOTTED = /[A-Za-z0-9_-]{3,}(?:\.[A-Za-z0-9_-]*)+/g;
/**
 * A JSON object's first bytes, from `lastIndex`: white space, `{`, white space, then a member's name
 * or the end. The white space is bounded (a header padded further is no JWT a verifier was sent in
 * practice), so that a run of encoded spaces costs each start a few steps, not the rest of the run.
 */
const JWT_HEADER = /[\t\n\r ]{0,22}\{[\t\n\r ]{0,22}["}]/y;
/** The first base64url characters of `{` (`e`), a space (`I`), a tab or line feed (`C`), a carriage return (`D`). */
const OBJECT_START = 'eICD';

function redactDotted(candidate: string): string {
  const first = candidate.slice(0, candidate.indexOf('.'));
  /** `first` decoded from character `offset` (0 to 3), made when first needed. */
  const decoded: (string | undefined)[] = [];
  /** Whether the bytes encoded from character `i` on open a JSON object. */
  const opensAt = (i: number): boolean => {
    const offset = i % 4;
    JWT_HEADER.lastIndex = ((i - offset) / 4) * 3;
    return JWT_HEADER.test((decoded[offset] ??= Buffer.from(first.slice(offset), 'base64url').toString('latin1')));
  };
  if (opensAt(0)) return REDACTED;
  for (let i = 1; i < first.length; i++) {
    if (OBJECT_START.includes(first[i]!) && opensAt(i)) return `${candidate.slice(0, i)}${REDACTED}`;
  }
  return candidate;
}

/** `text` with everything that looks like a JWT replaced, wherever a client put it. */
export function redactJwts(text: string): string {
  return text.includes('.') ? text.replace(DOTTED, redactDotted) : text;
}

/**
 * A percent-encoded visible ASCII character, in either case of hex (`%2E` is `.`, RFC 3986 §2.3;
 * `%2B` and `%2b` are `+`), which a client may send in place of any character of a token: a token
 * holds only visible ASCII (credential-forms.ts), and its reserved characters (`+`, `/`, `=` of a
 * base64 token) are encoded by some clients and not by others, in upper or lower case.
 */
const ENCODED_VISIBLE = /%(?:2[1-9A-Fa-f]|[3-6][0-9A-Fa-f]|7[0-9A-Ea-e])/g;
const decodeVisible = (text: string): string => text.replace(ENCODED_VISIBLE, (escape) => String.fromCharCode(parseInt(escape.slice(1), 16)));

/** Up to this many secrets, each is searched for in turn; beyond, they are found in one pass (`occursIn`). */
const FEW_SECRETS = 8;
/** Characters of a secret's start that index it, at most. */
const INDEX_WIDTH = 8;

/**
 * A test of whether any of `secrets` occurs in a text, in one pass over the text whatever their
 * number: each secret is indexed by its first `width` characters (the shortest secret's length, at
 * most `INDEX_WIDTH`), and each position of the text is looked up once, then the secrets indexed
 * there compared. Searching a logged path and query for each of 1,000 tokens in turn cost ~10 µs a
 * request, more than the rest of a cached GET (bench/NOTES.md, "many clients").
 */
function occurrenceTest(secrets: readonly string[]): (text: string) => boolean {
  if (secrets.length <= FEW_SECRETS) return (text) => secrets.some((secret) => text.includes(secret));
  const width = Math.min(INDEX_WIDTH, ...secrets.map((secret) => secret.length));
  const byStart = new Map<string, string[]>();
  for (const secret of secrets) {
    const start = secret.slice(0, width);
    const list = byStart.get(start);
    if (list === undefined) byStart.set(start, [secret]);
    else list.push(secret);
  }
  return (text) => {
    for (let i = 0; i + width <= text.length; i++) {
      const list = byStart.get(text.slice(i, i + width));
      if (list !== undefined && list.some((secret) => text.startsWith(secret, i))) return true;
    }
    return false;
  };
}

/**
 * Replaces every configured token, as written or percent-encoded, and everything that looks like a
 * JWT, wherever it appears in `text` (a token sent as a path segment or under an unforeseen
 * parameter name). This runs once per logged request, over the path and over the query: a text
 * that holds no token (nearly every one) costs one pass over it however many tokens are configured
 * (`occurrenceTest`); one that holds some has them replaced, the longest first. Text is logged as the
 * client sent it, unless a secret was found only once its percent-encoded characters are decoded:
 * then it is logged decoded, with the secret replaced.
 */
export function createTokenScrubber(tokens: readonly string[]): (text: string) => string {
  const secrets = [...new Set(tokens.flatMap((raw) => {
    const token = raw.startsWith('read:') ? raw.slice('read:'.length) : raw;
    return token === '' ? [] : [token, encodeURIComponent(token)];
  }))].sort((a, b) => b.length - a.length);
  const holdsSecret = occurrenceTest(secrets);
  const redact = (text: string): string => {
    let out = redactJwts(text);
    if (!holdsSecret(out)) return out;
    for (const secret of secrets) if (out.includes(secret)) out = out.replaceAll(secret, REDACTED);
    return out;
  };
  return (text) => {
    const out = redact(text);
    if (!text.includes('%')) return out;
    const decoded = decodeVisible(text);
    if (decoded === text) return out;
    const cleaned = redact(decoded);
    return cleaned === decoded ? out : cleaned;
  };
}
