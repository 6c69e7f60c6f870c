import { preconditionFailed } from './problem.js';

/**
 * `Last-Modified` and the date conditions (RFC 9110 §8.8.2, §13.1.3, §13.1.4), for an entity's
 * representation: its modification date is its `updatedAt` (Unix seconds, docs/conventions.md §2),
 * never later than the clock's second. Pure: values and the clock in, decisions out.
 *
 * Second granularity, as HTTP dates have: a date names a whole second, and an entity written twice
 * in one second has one date for both versions. The entity tag tells them apart, which is why a
 * request's `If-None-Match` decides over its `If-Modified-Since`, and `If-Match` over
 * `If-Unmodified-Since` (RFC 9110 §13.2.2): the callers evaluate a date only without the tag field.
 */

/**
 * The modification date of an entity whose `updatedAt` is `updatedAt`, at the clock's second `now`:
 * whole seconds, and `now` for a date in the future (RFC 9110 §8.8.2.1: an origin server MUST NOT
 * send a date later than its response's `Date`; a row another process's fast clock wrote, or a line
 * imported with such a date). Undefined when `updatedAt` is not a date (a line written by hand with
 * a string there, or without one): the entity then has no modification date, and its answers no
 * `Last-Modified`.
 */
export function modificationDate(updatedAt: unknown, now: number): number | undefined {
  if (typeof updatedAt !== 'number' || !Number.isFinite(updatedAt) || updatedAt < 0) return undefined;
  return Math.min(Math.floor(updatedAt), now);
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const two = (n: number): string => (n < 10 ? `0${n}` : String(n));

/** The last date formatted: the writes of one second, each answered with its date, format it once. */
let lastSeconds = Number.NaN;
let lastText = '';

/** `seconds` as an IMF-fixdate (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`. */
export function httpDate(seconds: number): string {
  if (seconds === lastSeconds) return lastText;
  const d = new Date(seconds * 1000);
  lastText = `${DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCFullYear()).padStart(4, '0')} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} GMT`;
  lastSeconds = seconds;
  return lastText;
}

const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** `Sun, 06 Nov 1994 08:49:37 GMT` */
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
/** `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete, RFC 850) */
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
/** `Sun Nov  6 08:49:37 1994` (obsolete, ANSI C's asctime) */
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/**
 * An HTTP-date (RFC 9110 §5.6.7: the IMF-fixdate and the two obsolete formats a recipient MUST
 * accept) in Unix seconds; undefined for anything else — another format, a list of dates, a day
 * that is not in its month — which the conditions then ignore (RFC 9110 §13.1.3, §13.1.4).
 */
export function parseHttpDate(value: string): number | undefined {
  const text = value.trim();
  let parts: { day: string; month: string; year: number; time: readonly string[] };
  let match: RegExpExecArray | null;
  if ((match = IMF_FIXDATE.exec(text)) !== null) {
    parts = { day: match[1]!, month: match[2]!, year: Number(match[3]), time: match.slice(4, 7) };
  } else if ((match = RFC850_DATE.exec(text)) !== null) {
    // RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is the latest past year with those digits.
    const thisYear = new Date().getUTCFullYear();
    const year = Math.floor(thisYear / 100) * 100 + Number(match[3]);
    parts = { day: match[1]!, month: match[2]!, year: year > thisYear + 50 ? year - 100 : year, time: match.slice(4, 7) };
  } else if ((match = ASCTIME_DATE.exec(text)) !== null) {
    parts = { day: match[2]!, month: match[1]!, year: Number(match[6]), time: match.slice(3, 6) };
  } else return undefined;
  const month = MONTHS.indexOf(parts.month);
  const day = Number(parts.day.trim());
  const [hour, minute, second] = parts.time.map(Number) as [number, number, number];
  // 60 is a leap second (RFC 9110 §5.6.7): the second after 59.
  if (day < 1 || hour > 23 || minute > 59 || second > 60) return undefined;
  // Date.UTC rolls 31 Feb over to March: a day its month does not have is no date.
  if (new Date(Date.UTC(parts.year, month, day)).getUTCDate() !== day) return undefined;
  return Date.UTC(parts.year, month, day, hour, minute, second) / 1000;
}

/**
 * `If-Modified-Since` on a GET or HEAD without `If-None-Match` (RFC 9110 §13.1.3): true when the
 * answer is a 304, the representation's date (`modified`, see `modificationDate`) being at or before
 * the field's. False, and a 200, when the field is not an HTTP-date, when the entity has no date,
 * or when the field's date is later than the clock's second `now`: such a date was not one this
 * server sent, and an entity changed between now and then would be hidden behind a 304 (RFC 2616
 * §14.25 called it invalid).
 */
export function unmodifiedSince(ifModifiedSince: string, modified: number | undefined, now: number): boolean {
  if (modified === undefined) return false;
  const since = parseHttpDate(ifModifiedSince);
  return since !== undefined && since <= now && modified <= since;
}

/**
 * `If-Unmodified-Since` parsed, for a request that names no `If-Match` (RFC 9110 §13.1.4: a
 * recipient MUST ignore it then): its seconds, or undefined when it is absent or not an HTTP-date
 * (ignored, as the RFC requires).
 */
export function unmodifiedSinceCondition(ifMatch: string | undefined, ifUnmodifiedSince: string | undefined): number | undefined {
  return ifMatch !== undefined || ifUnmodifiedSince === undefined ? undefined : parseHttpDate(ifUnmodifiedSince);
}

/**
 * `If-Unmodified-Since` (RFC 9110 §13.1.4) against a representation's date (`modificationDate`): a
 * 412 problem when it was modified after the field's date, and, on a write, nothing is written. An
 * entity without a date has no condition to fail (the RFC: ignored when none is available).
 */
export function checkIfUnmodifiedSince(since: number | undefined, modified: number | undefined): void {
  if (since === undefined || modified === undefined || modified <= since) return;
  throw preconditionFailed('If-Unmodified-Since is earlier than the entity\'s Last-Modified');
}
