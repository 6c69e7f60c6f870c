import { jsonString } from '../../structures/json-string.js';
import { sharedPrefix } from '../answer-prefix.js';
import type { Remembered, StoredAnswer } from '../idempotency.js';

/**
 * The answers of a batch's keyed writes (`Idempotency-Key`), as one line of the resource's own log,
 * written first in the batch's append (docs/storage.md).
 *
 * ## Why a replayed answer is never separated from its write, and no key writes twice
 *
 * A batch that holds keyed writes is appended as one buffer: its answers line, then the lines of
 * its changes, then one fdatasync. Only when that sync succeeds is any write of the batch
 * acknowledged or its answer put in the in-memory table that replays read; when it fails, the
 * log's lines (the answers line with them) are cut off again and the batch fails. So one file and
 * one sync hold both, and nothing can come between them:
 *
 * - A process that dies (`kill -9`) loses nothing that was written (the page cache keeps it), but it
 *   can die in the middle of the append, leaving a prefix of it: the answers line alone, or with the
 *   first lines of the batch, the last one torn. Start-up drops the torn line and keeps, of that
 *   batch's answers, exactly those whose change's line is in the file (each answer names its
 *   change by sequence number; the line holds the batch's last one): a write that was made replays,
 *   one that was not is processed afresh — never both, never neither. The answers of keyed writes
 *   that wrote nothing (a 404, a 412) are kept only once the whole batch is in the file: whether
 *   such a batch ended cannot be told otherwise, and a retry processed afresh is what an answer
 *   never sent allows.
 * - A machine that loses power keeps an acknowledged batch whole (its sync returned). Of a batch
 *   never acknowledged it keeps what the file system kept of the append: on a file system that
 *   keeps a prefix of an appended file (ext4's default `data=ordered` extends a file's size only
 *   with its data), the same rule applies; one that could keep a later page without an earlier
 *   one could keep a change of that unacknowledged batch without its answers line.
 * - A compaction rewrites the log without its answers lines: before it replaces the log, every
 *   live answer is written to `_idempotency.<name>` (answer-file.ts) and synced, and lines the
 *   log gains during the compaction are copied to the new file as they are.
 *
 * A key cannot write twice: a retry is decided in the write order against every answer already
 * recorded (write-rules.ts), and while a request holds its key no other with that key runs
 * (`AnswerBook.claim`); after a crash, start-up has recovered every answer of a made write.
 *
 * The line is `{"_answers":<ms>,"last":<seq>,"a":[…]}`: the batch's time first, so that start-up
 * skips a line whose answers have all expired without parsing it; `last` the sequence number of the
 * batch's last change (0: it made none). It has no `id`, so it is never taken for an entity, and no
 * stamp: it is no change of the feed, and a cut of the log at a cursor never ends on it
 * (log-prefix.ts).
 */

/**
 * An answer as a line holds it: key, fingerprint, time, status, headers, body; `n` the sequence
 * number of its write's change, if it made one.
 *
 * The body is `b`, whole, or, for the answer of a write that made a change, `bp` and `bx`: the
 * first `bp` characters of that change's own line (the line that follows in the same batch)
 * followed by `bx`. A 201 or 200 answer is the representation of the record the line holds, so
 * it repeats most of the line (`{"id":…,"description":"…"` up to the line's stamp, where the
 * representation's `_links` begin): written whole, the body, escaped, made an answers line nearly
 * three times the size of its change's line, and the log's answers lines outweighed its entities
 * (a compaction each time the entities of a keyed create load grew by about half). By reference,
 * the replay is still the first answer byte for byte: the prefix is taken from the line as
 * written, and start-up joins it again from the line as read (`AnswerLines`). A line's answers are kept only with their
 * change's line in any case (see above), so the reference never outlives what it points to; the
 * answers file (answer-file.ts) holds bodies whole.
 */
export interface AnswerEntry {
  readonly k: string;
  readonly f: string;
  readonly t: number;
  readonly s: number;
  readonly h: Readonly<Record<string, string>>;
  readonly b?: string;
  readonly bp?: number;
  readonly bx?: string;
  readonly n?: number;
}

/** Below this many characters shared with its change's line, a body is written whole: the reference would save little. */
const MIN_SHARED = 32;

/**
 * `sharedPrefix(body, line)`, where `json` (if given) is the text the line was made from: the line
 * must begin with all of it but its last character (a stamped line does, change-stamp.ts; an
 * unstamped one is `json` itself). Compared with `json`, one flat string
 * already, rather than with the line, which is joined from parts and would be copied whole to be
 * compared; the line itself is compared only when the body goes on matching to the end of that part.
 */
export function sharedWithLine(body: string, line: string, json?: string): number {
  if (json === undefined) return sharedPrefix(body, line);
  const whole = json.length - 1;
  if (whole > 0 && body.length > whole && body.slice(0, whole) === json.slice(0, whole)) {
    // The usual case, in one comparison: the body is the record's JSON up to its closing brace,
    // then its links. The line begins so too; the few characters after that (its stamp, ASCII)
    // are compared one by one. No half of a surrogate pair ends the shared part: the last
    // character is ASCII, or the one that ends the record's last value.
    const max = Math.min(body.length, line.length);
    let shared = whole;
    while (shared < max && body.charCodeAt(shared) === line.charCodeAt(shared)) shared++;
    return shared;
  }
  const shared = sharedPrefix(body, json);
  return shared < whole ? shared : sharedPrefix(body, line);
}

/** What begins every answers line. */
const PREFIX = '{"_answers":';
const PREFIX_BYTES = Buffer.from(PREFIX, 'latin1');

/**
 * The entry of an answer (`n`: its change's sequence number, if it made one; `line`: that change's
 * line as the log gets it, to take the body's start from).
 */
export function entryOf(key: string, remembered: Remembered, n?: number, line?: string, json?: string): AnswerEntry {
  const { answer } = remembered;
  const body = answer.body;
  if (n === undefined) return { k: key, f: remembered.fingerprint, t: remembered.at, s: answer.status, h: answer.headers, b: body };
  const shared = line === undefined ? 0 : sharedWithLine(body, line, json);
  return shared < MIN_SHARED
    ? { k: key, f: remembered.fingerprint, t: remembered.at, s: answer.status, h: answer.headers, b: body, n }
    : { k: key, f: remembered.fingerprint, t: remembered.at, s: answer.status, h: answer.headers, bp: shared, bx: body.slice(shared), n };
}

/**
 * `JSON.stringify(e)`, written out member by member: the same text (the members in the same order;
 * the numbers are integers), without the generic walk over an object of two shapes (with `n` and
 * without): 3.0 µs a one-answer line against 4.3 µs, measured alone in a loop.
 */
export function entryText(e: AnswerEntry): string {
  return entryHead(e) + entryBody(e);
}

/**
 * The members before the body, the comma after them included (`keyJson`: `JSON.stringify(e.k)`,
 * `headersJson`: `JSON.stringify(e.h)`, if the caller has them).
 */
function entryHead(e: AnswerEntry, keyJson = JSON.stringify(e.k), headersJson = JSON.stringify(e.h)): string {
  return `{"k":${keyJson},"f":${jsonString(e.f)},"t":${e.t},"s":${e.s},"h":${headersJson},`;
}

/** The body's members and what follows them, to the closing brace. */
function entryBody(e: AnswerEntry): string {
  return `${bodyMembers(e)}${numberMember(e)}}`;
}

/** The body's members: `"b"`, or `"bp"` and `"bx"`. */
function bodyMembers(e: AnswerEntry): string {
  return e.bp === undefined ? `"b":${JSON.stringify(e.b)}` : `"bp":${e.bp},"bx":${JSON.stringify(e.bx)}`;
}

/** The change's sequence number, as the member that follows the body ('' for none). */
function numberMember(e: AnswerEntry): string {
  return e.n === undefined ? '' : `,"n":${e.n}`;
}

/** What a body given by reference was taken from: a change's line, or what gives it again (the entity that wrote it). */
export type LineSource = string | { line(): string };

/**
 * A remembered answer as the JSON-lines store records it: its entry's text, as the answers line
 * has it, and (for a body given by reference) what holds the line the body begins as. Held as a
 * `Remembered` of its parts (an object for the answer, one for its headers, strings for each
 * header, the body as a tree of its parts, the fingerprint), each answer was a dozen objects that
 * every collection of the young generation copied and every full one marked (bench/NOTES.md,
 * "2026-11-28, morning"); the store's table of answers (answer-ring.ts) keeps this text as bytes
 * outside the JavaScript heap, and gives a `HeldAnswer` back, from its parts (`HeldParts`), when
 * one is asked for. The fingerprint and the answer, read only by a retry, are parsed from the text
 * when asked for; the answers file gets the entry with its body whole (`wholeText`) by joining
 * text, without a parse.
 */
export class HeldAnswer implements Remembered {
  readonly at: number;
  /** The entry as the log's answers line holds it (`entryText`). */
  readonly text: string;
  /** Where the body's members begin in `text` (`"bp":` or `"b":`). */
  readonly cut: number;
  /** Where the text's closing brace is, or its `,"n":…` before it. */
  readonly end: number;
  /** Characters of the line the body begins as (0: the body is whole in `text`). */
  readonly shared: number;
  readonly #source: LineSource | undefined;
  /**
   * A buffer that holds `text` at `textAt`, and the body's start at `prefixAt`, as bytes one for
   * one character (ASCII): the store's append (`locateAnswers`), from which the table of answers
   * copies them rather than encode the strings again. Undefined: not located.
   */
  bytes: Buffer | undefined;
  textAt = 0;
  prefixAt = 0;

  /**
   * From an entry (`keyJson`, `headersJson`: `JSON.stringify` of its key and of its headers, if the
   * caller has them), or from the parts of one already held (`HeldParts`: `source` then is the
   * body's start itself).
   *
   * The text is left as V8 joined it, a tree of its parts: it is read once, where the log's
   * answers line is joined, and the table of answers keeps its bytes, not the string (an earlier
   * version made it one flat string here, for a table that kept the strings).
   */
  constructor(e: AnswerEntry | HeldParts, source?: LineSource, keyJson?: string, headersJson?: string) {
    if ('text' in e) {
      this.at = e.at;
      this.text = e.text;
      this.cut = e.cut;
      this.end = e.end;
      this.shared = e.shared;
      this.#source = e.shared === 0 ? undefined : source;
      return;
    }
    const head = entryHead(e, keyJson, headersJson);
    const body = bodyMembers(e);
    this.at = e.t;
    this.text = `${head}${body}${numberMember(e)}}`;
    this.cut = head.length;
    this.end = head.length + body.length;
    this.shared = e.bp ?? 0;
    this.#source = e.bp === undefined ? undefined : source;
  }

  get fingerprint(): string {
    return this.#entry().f;
  }

  get answer(): StoredAnswer {
    const e = this.#entry();
    return { status: e.s, headers: e.h, body: e.bp === undefined ? (e.b ?? '') : this.prefix() + (e.bx ?? '') };
  }

  /** The body's first `shared` characters, from the line they were taken from ('' for a body whole in the text). */
  prefix(): string {
    if (this.shared === 0) return '';
    const source = this.#source!;
    return (typeof source === 'string' ? source : source.line()).slice(0, this.shared);
  }

  /** Whether this is the answer of ledger key `key` (its text begins with the key's member). */
  isOf(key: string): boolean {
    const k = JSON.stringify(key);
    return this.text.startsWith(k, 5) && this.text.startsWith(',"f":', 5 + k.length);
  }

  /**
   * The entry with its body whole (`"b"`), as `entryText` writes an entry without `n`: the text
   * before the body, the line's shared characters escaped, then the rest of the body as the text
   * has it escaped already. Escaping is character by character, and the shared part never ends
   * inside a surrogate pair (`sharedPrefix`), so the halves join as one string literal would.
   */
  wholeText(): string {
    const text = this.text;
    if (this.shared === 0) return `${text.slice(0, this.end)}}`;
    const literal = this.cut + `"bp":${this.shared},"bx":`.length;
    return `${text.slice(0, this.cut)}"b":${JSON.stringify(this.prefix()).slice(0, -1)}${text.slice(literal + 1, this.end)}}`;
  }

  #entry(): AnswerEntry {
    return JSON.parse(this.text) as AnswerEntry;
  }
}

/** A `HeldAnswer` as its parts: what the table of answers keeps of one (answer-ring.ts). */
export interface HeldParts {
  readonly at: number;
  readonly text: string;
  readonly cut: number;
  readonly end: number;
  readonly shared: number;
}

/** The remembered answer an entry holds (its body whole: `AnswerLines` joins one given by reference). */
export function rememberedOf(e: AnswerEntry): Remembered {
  return { fingerprint: e.f, at: e.t, answer: { status: e.s, headers: e.h, body: e.b ?? '' } };
}

/** The answers line of a batch whose last change has sequence number `last` (0: none). */
export function answersLine(entries: readonly AnswerEntry[], last: number): string {
  return heldLine(entries.map((e) => new HeldAnswer(e)), last);
}

/** The answers line of held answers (`HeldAnswer`), of a batch whose last change has sequence number `last` (0: none). */
export function heldLine(answers: readonly HeldAnswer[], last: number): string {
  let at = 0;
  let list = '';
  for (const a of answers) {
    if (a.at > at) at = a.at;
    list += list === '' ? a.text : `,${a.text}`;
  }
  return `${PREFIX}${at},"last":${last},"a":[${list}]}`;
}

/**
 * Tells each of `held` where `bytes` holds its text and its body's start (`HeldAnswer.bytes`), so
 * that the table of answers copies bytes already encoded rather than encode the strings again.
 * `lines` are an append's lines, the answers line of `held` first (`heldLine`), and `bytes` their
 * UTF-8, each line followed by a newline; `lineOf(i)` is the index in `lines` of the line the body
 * of `held[i]` begins as (undefined: the body is whole in its text). Only when `bytes` are as many
 * as the lines' characters (ASCII, the usual case), so that a character's place is its byte's:
 * otherwise nothing is located, and the table encodes the strings. Returns whether they were.
 */
export function locateAnswers(held: readonly HeldAnswer[], lines: readonly string[], bytes: Buffer, lineOf: (i: number) => number | undefined): boolean {
  let chars = 0;
  for (const line of lines) chars += line.length + 1;
  if (chars !== bytes.length || held.length === 0) return false;
  const answersLine = lines[0]!;
  let listed = held.length - 1;
  for (const a of held) listed += a.text.length;
  // The list of texts ends before the line's closing `]}`.
  let at = answersLine.length - 2 - listed;
  let starts: number[] | undefined;
  for (let i = 0; i < held.length; i++) {
    const a = held[i]!;
    const textAt = at;
    at += a.text.length + 1;
    const line = a.shared === 0 ? undefined : lineOf(i);
    // A body's start in no line of the append (none given for it) leaves that answer to be encoded.
    if (a.shared > 0 && line === undefined) continue;
    a.bytes = bytes;
    a.textAt = textAt;
    if (line === undefined) continue;
    starts ??= lineStarts(lines);
    a.prefixAt = starts[line]!;
  }
  return true;
}

/** Where each of `lines` begins when they are joined, each followed by a newline. */
function lineStarts(lines: readonly string[]): number[] {
  const starts: number[] = [];
  let at = 0;
  for (const line of lines) {
    starts.push(at);
    at += line.length + 1;
  }
  return starts;
}

/** True when the JSON object `buf[start, end)` is an answers line (it starts as only they do). */
export function isAnswersLine(buf: Uint8Array, start: number, end: number): boolean {
  if (end - start < PREFIX_BYTES.length) return false;
  for (let i = 0; i < PREFIX_BYTES.length; i++) if (buf[start + i] !== PREFIX_BYTES[i]) return false;
  return true;
}

/** The batch's time of the answers line `buf[start, end)` (the latest of its answers), read without parsing the line. */
function timeOf(buf: Uint8Array, start: number, end: number): number {
  let t = 0;
  for (let i = start + PREFIX_BYTES.length; i < end; i++) {
    const c = buf[i]!;
    if (c < 0x30 || c > 0x39) break;
    t = t * 10 + (c - 0x30);
  }
  return t;
}

/**
 * Collects the answers of a log's answers lines as start-up reads it, keeping of each batch what
 * the rule above keeps. Feed it every line in file order: `answers` for an answers line, `change`
 * for each stamped line; then `end()`. Each answer kept goes to `keep` as soon as its batch is
 * settled, in file order, its body whole (joined from its change's line where the entry gives it
 * by reference), so that start-up holds no more of them than the in-memory table keeps.
 */
export class AnswerLines {
  /** Lines whose answers are all older than this (ms) are skipped unparsed. */
  readonly #since: number;
  readonly #keep: (entry: AnswerEntry) => void;
  /**
   * The batch whose lines are being read: its answers, its last change, the latest change seen
   * since, and the text of each line an answer's body refers to (`wanted`: their sequence numbers;
   * `lines`: those read).
   */
  #open: { entries: readonly AnswerEntry[]; last: number; seen: number; wanted: Set<number> | undefined; lines: Map<number, string> } | undefined;

  constructor(keep: (entry: AnswerEntry) => void, since = -Infinity) {
    this.#keep = keep;
    this.#since = since;
  }

  /**
   * Takes the answers line `buf[start, end)` (a valid JSON object). Returns false when it is not
   * an answers line after all (no `a` array, no `last`): the caller treats it as any line without
   * an id.
   */
  answers(buf: Buffer, start: number, end: number): boolean {
    this.#close();
    if (timeOf(buf, start, end) <= this.#since) return true;
    let parsed: unknown;
    try {
      parsed = JSON.parse(buf.toString('utf8', start, end));
    } catch {
      return false;
    }
    const line = parsed as { last?: unknown; a?: unknown };
    if (typeof line.last !== 'number' || !Array.isArray(line.a)) return false;
    const entries = (line.a as AnswerEntry[]).filter((e) => e.t > this.#since);
    let wanted: Set<number> | undefined;
    for (const e of entries) if (e.bp !== undefined && typeof e.n === 'number') (wanted ??= new Set()).add(e.n);
    if (line.last === 0) entries.forEach((e) => this.#settle(e, undefined));
    else this.#open = { entries, last: line.last, seen: 0, wanted, lines: new Map() };
    return true;
  }

  /** Takes the line `buf[start, end)`, stamped with sequence number `seq`. */
  change(seq: number, buf: Buffer, start: number, end: number): void {
    const open = this.#open;
    if (open === undefined) return;
    if (seq > open.last) return this.#close();
    open.seen = Math.max(open.seen, seq);
    if (open.wanted?.has(seq)) open.lines.set(seq, buf.toString('utf8', start, end));
  }

  /** The log has been read: the batch still open (its last) is settled. */
  end(): void {
    this.#close();
  }

  /** The open batch ends: its answers of made writes are kept; all of them if all its lines were read. */
  #close(): void {
    const open = this.#open;
    if (open === undefined) return;
    this.#open = undefined;
    const whole = open.seen === open.last;
    for (const e of open.entries) if (e.n === undefined ? whole : e.n <= open.seen) this.#settle(e, open.lines);
  }

  /**
   * Keeps `e` with its body whole. One given by reference to a line not read (a line a repair
   * dropped), or malformed, is not kept: its write is then not in the log either.
   */
  #settle(e: AnswerEntry, lines: Map<number, string> | undefined): void {
    if (e.bp === undefined) {
      if (typeof e.b === 'string') this.#keep(e);
      return;
    }
    const line = e.n === undefined ? undefined : lines?.get(e.n);
    if (line === undefined || typeof e.bx !== 'string' || !Number.isInteger(e.bp) || e.bp < 0 || e.bp > line.length) return;
    const { bp: _bp, bx: _bx, ...rest } = e;
    this.#keep({ ...rest, b: line.slice(0, e.bp) + e.bx });
  }
}
