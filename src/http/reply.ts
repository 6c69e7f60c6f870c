import type { IncomingMessage, ServerResponse } from 'node:http';
import { codedTag } from '../conventions/conditional.js';
import { httpDate } from '../conventions/last-modified.js';
import { chooseEncoding, type ContentCoding } from '../conventions/accept-encoding.js';
import { ASYNC_COMPRESSION_BYTES, asyncCompressionFree, COMPRESSION_THRESHOLD_BYTES, encode, encodeAsync } from './encoding.js';
import type { Duplex } from 'node:stream';
import { PROBLEM_MEDIA_TYPE, statusTitle, unparsable, type HttpProblem } from '../conventions/problem.js';

/** What a route handler answers; `send` is the one writer of responses. */
export interface Reply {
  readonly status: number;
  /** Lower-case header names. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  /**
   * `JSON.stringify(headers)`, where the reply's maker wrote it at less cost (answer-headers.ts):
   * what a keyed write records of the answer (idempotent-write.ts). Absent: nobody wrote it.
   */
  readonly headersJson?: string;
  /**
   * A reply that streams (an event stream): its status and headers are sent at once, then this is
   * given the writer of its body (src/http/event-stream.ts), which it ends when it is done.
   */
  readonly stream?: (out: StreamWriter) => void;
  /** A streaming reply's client (its principal's key, or its address), whose open streams are bounded. */
  readonly streamClient?: string;
  /** A streaming reply's credential's last second (`Principal.until`), after which the stream ends; none: it does not expire. */
  readonly streamUntil?: number;
  /**
   * The headers as `writeHead` takes them, `Content-Length` included, for the body sent as it is
   * (`prepared`): a reply made once and sent many times carries it, and `send` writes it without
   * building anything when nothing is to be added to it.
   */
  readonly head?: readonly string[];
  /**
   * The extra headers `head` was made with (`prepared`): `send` writes the head as it is only to a
   * request given this very object (the CORS headers of a request without `Origin`), or none when
   * it was made with none.
   */
  readonly headWith?: Readonly<Record<string, string>>;
  /**
   * For a reply kept and sent again without asking its route (src/http/kept-replies.ts): true
   * while it is still the route's answer (an entity's, while its store serves that version).
   */
  readonly current?: () => boolean;
  /**
   * A 304's: the length of the body the 200 to the same request would carry (`notModifiedReply`),
   * so that `send` gives the 304 that 200's `ETag` and `Vary`, which depend on whether it would be
   * compressed (RFC 9110 §15.4.5).
   */
  readonly representationLength?: number;
  /**
   * `body` already compressed with `coding` (a representation made once and sent many times, as
   * `/openapi.json`): sent as it is to a request whose chosen coding it is, rather than compressed
   * again for every request.
   */
  readonly encoded?: { readonly coding: ContentCoding; readonly body: Buffer };
}

/** A 304 for a representation whose 200 would carry `body`, with the 200's `headers` that a 304 repeats. */
export function notModifiedReply(headers: Readonly<Record<string, string>>, body: string | Buffer): Reply {
  return { status: 304, headers, representationLength: body.length };
}

const CRLF = Buffer.from('\r\n');

/**
 * Text sent on many streams at once: its UTF-8 bytes, and the same framed as one HTTP/1.1 chunk
 * (RFC 9112 §7.1: size in hex, CRLF, the bytes, CRLF), each made once however many sockets get it.
 */
export class SharedText {
  readonly bytes: Buffer;
  #chunk: Buffer | undefined;

  constructor(text: string) {
    this.bytes = Buffer.from(text);
  }

  get chunk(): Buffer {
    this.#chunk ??= Buffer.concat([Buffer.from(`${this.bytes.length.toString(16)}\r\n`, 'latin1'), this.bytes, CRLF]);
    return this.#chunk;
  }
}

/** The body of a streaming reply as its producer sees it. */
export interface StreamWriter {
  /**
   * Sends text now, holding `events` events (default: one when it starts with an `id:` line); a
   * reader still too far behind what was written before is disconnected instead.
   */
  write(text: string | SharedText, events?: number): void;
  /**
   * Resolves once the reader has taken what was written, all but a little (at once when it has, or
   * once the stream has closed): a producer that reads what it sends (a catch-up) goes at the
   * reader's pace instead of queueing it all.
   */
  ready(): Promise<void>;
  /**
   * True while the reader has not taken what was sent, beyond a little: what `ready` would wait
   * for. A live stream then stops queueing batches for it and catches up at its pace instead.
   */
  readonly behind: boolean;
  /** Ends the response (its last chunk sent). */
  end(): void;
  /** True once the response has ended or the client left. */
  readonly closed: boolean;
  /** Runs `cleanup` once, when the response ends for any reason. */
  onClose(cleanup: () => void): void;
}

/** A JSON body in `mediaType`, which depended on `Accept`. */
export function jsonReply(status: number, mediaType: string, body: string | Buffer, headers: Readonly<Record<string, string>> = {}): Reply {
  return { status, headers: { 'content-type': mediaType, vary: 'Accept', ...headers }, body };
}

/**
 * The problem document of an error (docs/conventions.md §7), with the headers that belong to it: the one writer
 * of error responses, whether they leave through the handler's boundary, the server's `417`, or a
 * raw socket after a parse error.
 */
export function problemReply(problem: HttpProblem): Reply {
  const headers: Record<string, string> = { 'content-type': PROBLEM_MEDIA_TYPE, ...problem.headers };
  // An oversized body may still be arriving: close the connection rather than read it.
  if (problem.status === 413) headers['connection'] = 'close';
  return { status: problem.status, headers, body: JSON.stringify(problem) };
}

/** True when a request announces a body (RFC 9112 §6.1, §6.2). */
function declaresBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** The second `dateNow` last formatted. */
let dateSecond = Number.NaN;
let dateText = '';

/** `Date` as the clock reads now, formatted once a second (not via `httpDate`'s one date, which a 304's older `Last-Modified` takes turns with). */
function dateNow(): string {
  const second = Math.floor(Date.now() / 1000);
  if (second !== dateSecond) {
    dateText = httpDate(second);
    dateSecond = second;
  }
  return dateText;
}

/**
 * Writes a reply: `extra` headers (CORS) merged in, the body compressed when the client asks and
 * it is large enough (docs/conventions.md §5), `Content-Length` always set. Returns the bytes of body sent,
 * later for a body so large that it is compressed off the event loop.
 *
 * Headers go to `writeHead` as a flat `[name, value, …]` list, which it takes without copying or
 * re-reading an object: this runs for every response.
 */
export function send(req: IncomingMessage, res: ServerResponse, reply: Reply, extra?: Readonly<Record<string, string>>): number | Promise<number> {
  if (res.headersSent) {
    res.destroy();
    return 0;
  }
  const head = reply.head;
  // A prepared reply, and nothing to add but what it was made with (the CORS fields of a request
  // without Origin; no rate-limit fields), no unread body to close the connection on, and the body
  // goes out uncompressed. The same bytes as the general path.
  if (head !== undefined && extra === reply.headWith && (req.complete || !declaresBody(req)) && (reply.body === undefined || reply.body.length < COMPRESSION_THRESHOLD_BYTES || chooseEncoding(req.headers['accept-encoding']) === undefined)) {
    res.writeHead(reply.status, head as string[]);
    const body = reply.body;
    if (body === undefined) {
      res.end();
      return 0;
    }
    res.end(req.method === 'HEAD' ? undefined : body);
    return typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  }
  const list: string[] = [];
  // Vary and ETag may still change below; they are written last.
  let vary: string | undefined;
  let etag: string | undefined;
  const own = reply.headers;
  for (const name in own) {
    const value = own[name] as string;
    if (name === 'vary') vary = value;
    else if (name === 'etag') etag = value;
    else {
      list.push(name, value);
      // Its own `Date`, read now: Node's is formatted once a second and let go by a timer, so in a
      // turn of the loop held across a second it names the second before, and a write's
      // `Last-Modified` (its `updatedAt`, read in this turn) was later than its `Date` (RFC 9110
      // §8.8.2.1). The date was made no later than the clock's second when the reply was made
      // (`modificationDate`), which this one is not before.
      if (name === 'last-modified') list.push('date', dateNow());
    }
  }
  for (const name in extra) {
    const value = extra[name] as string;
    // Vary lists every header the response depends on (RFC 9110 §12.5.5).
    if (name === 'vary') vary = vary === undefined ? value : `${vary}, ${value}`;
    else list.push(name, value);
  }
  // A body the request declared but nobody read would be read and thrown away up to the
  // request timeout: close the connection instead (RFC 9112 §9.6).
  // A 413 says so already: one `Connection: close` is enough.
  if (!req.complete && declaresBody(req) && own?.['connection'] === undefined) list.push('connection', 'close');
  const body = reply.body;
  const unsent = reply.representationLength;
  if (unsent !== undefined && unsent >= COMPRESSION_THRESHOLD_BYTES) {
    // A 304 of what would be sent compressed: the compressed representation's tag, as its 200's.
    vary = vary === undefined ? 'Accept-Encoding' : `${vary}, Accept-Encoding`;
    const coding = chooseEncoding(req.headers['accept-encoding']);
    if (coding && etag !== undefined) etag = codedTag(etag, coding);
  }
  if (body !== undefined && body.length >= COMPRESSION_THRESHOLD_BYTES) {
    vary = vary === undefined ? 'Accept-Encoding' : `${vary}, Accept-Encoding`;
    const coding = chooseEncoding(req.headers['accept-encoding']);
    // A large body is compressed off the loop, unless enough are already (`asyncCompressionFree`).
    const large = body.length >= ASYNC_COMPRESSION_BYTES;
    const ready = coding !== undefined && reply.encoded?.coding === coding ? reply.encoded.body : undefined;
    if (coding && (ready !== undefined || !large || asyncCompressionFree())) {
      list.push('content-encoding', coding);
      // A compressed representation has its own strong tag (RFC 9110 §8.8.3).
      const tags = closeList(list, vary, etag === undefined ? undefined : codedTag(etag, coding));
      // HEAD: the headers of the compressed GET, without compressing what is never sent; the
      // length is known only by compressing, so it is left out (RFC 9110 §9.3.2 allows that).
      if (req.method === 'HEAD') return writeOut(req, res, reply.status, tags, undefined);
      if (ready !== undefined) return writeOut(req, res, reply.status, tags, ready);
      if (!large) return writeOut(req, res, reply.status, tags, encode(body, coding));
      return encodeAsync(body, coding).then(
        (encoded) => writeOut(req, res, reply.status, tags, encoded),
        () => {
          res.destroy();
          return 0;
        },
      );
    }
  }
  return writeOut(req, res, reply.status, closeList(list, vary, etag), body);
}

/**
 * `reply` with its `head`: the header list `send` writes for it given `extra` (the CORS headers of
 * a request without Origin, `Cors.headers(undefined)`) and no coding, made now so that a reply kept
 * and sent again costs no header work. `extra` is merged as `send` merges it.
 */
export function prepared(reply: Reply, extra?: Readonly<Record<string, string>>): Reply {
  const list: string[] = [];
  let vary: string | undefined;
  let etag: string | undefined;
  for (const name in reply.headers) {
    const value = reply.headers[name] as string;
    if (name === 'vary') vary = value;
    else if (name === 'etag') etag = value;
    else list.push(name, value);
  }
  for (const name in extra) {
    const value = extra[name] as string;
    if (name === 'vary') vary = vary === undefined ? value : `${vary}, ${value}`;
    else list.push(name, value);
  }
  const body = reply.body;
  if (body !== undefined && body.length >= COMPRESSION_THRESHOLD_BYTES) vary = vary === undefined ? 'Accept-Encoding' : `${vary}, Accept-Encoding`;
  closeList(list, vary, etag);
  if (body !== undefined) list.push('content-length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.length));
  return extra === undefined ? { ...reply, head: list } : { ...reply, head: list, headWith: extra };
}

function closeList(list: string[], vary: string | undefined, etag: string | undefined): string[] {
  if (vary !== undefined) list.push('vary', vary);
  if (etag !== undefined) list.push('etag', etag);
  return list;
}

function writeOut(req: IncomingMessage, res: ServerResponse, status: number, list: string[], body: string | Buffer | undefined): number {
  const bytes = body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  if (body !== undefined) list.push('content-length', String(bytes));
  res.writeHead(status, list);
  // HEAD gets the headers a GET would get, and no body.
  res.end(req.method === 'HEAD' ? undefined : body);
  return bytes;
}

/** An error of Node's parser, as the server's `clientError` event gives it. */
export interface ParserError extends Error {
  readonly code?: string;
  /** The chunk being parsed when it failed. */
  readonly rawPacket?: Buffer;
  /** How far into `rawPacket` the parser had got. */
  readonly bytesParsed?: number;
}

/** What a request with a method this server does not implement is told (RFC 9110 §9.1: a 501). */
export const METHOD_NOT_IMPLEMENTED = 'The request method is not implemented: this server takes GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS';

/** A method token (RFC 9110 §5.6.2) and the space after it: the start of a request line. */
const METHOD_START = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ /;

/**
 * The status and detail of a request Node's parser refused: 408 (RFC 9110 §15.5.9), 414, 431
 * (RFC 6585 §5), 501 for a method it does not know, else 400.
 */
export function refusal(error: ParserError): { readonly status: number; readonly detail: string } {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, detail: 'The request took too long to arrive' };
  if (error.code === 'HPE_INVALID_METHOD' && unknownMethod(error)) return { status: 501, detail: METHOD_NOT_IMPLEMENTED };
  if (error.code !== 'HPE_HEADER_OVERFLOW') return { status: 400, detail: 'The request is not valid HTTP/1.1' };
  // Node counts the request line with the headers: past the limit before the line ended, it is the
  // target that is too long, which RFC 9112 §3 makes a 414. (A header split across packets so that
  // the overflowing one holds no line end looks the same, and is called a 414 too.) The request
  // begins after the last blank line the parser passed: one pipelined behind others in the same
  // packet follows their line ends.
  const packet = error.rawPacket;
  const parsed = error.bytesParsed;
  if (packet !== undefined && parsed !== undefined) {
    const head = packet.subarray(0, parsed);
    const blank = head.lastIndexOf('\n\r\n');
    if (!head.subarray(blank < 0 ? 0 : blank + 3).includes(0x0a)) return { status: 414, detail: 'The request target is too long' };
  }
  return { status: 431, detail: 'The request headers are too large' };
}

/**
 * True when the refused request begins with a method token and a space (`FOO /items`, `get /`):
 * a method Node's parser does not know, which RFC 9110 §9.1 answers with a 501. Bytes that are no
 * request line at all (`GARBAGE`, a TLS handshake) stay a 400. The request begins after the last
 * line end the parser passed (a request pipelined behind others).
 */
function unknownMethod(error: ParserError): boolean {
  const packet = error.rawPacket;
  if (packet === undefined) return false;
  const start = packet.lastIndexOf(0x0a, Math.max(0, (error.bytesParsed ?? 0) - 1)) + 1;
  return METHOD_START.test(packet.subarray(start, start + 64).toString('latin1'));
}

/**
 * Writes a reply outside the handler (the server's own events), with `Content-Length`; no
 * negotiation or compression: these are short problem documents.
 */
export function writeReply(res: ServerResponse, reply: Reply): void {
  const body = reply.body ?? '';
  res.writeHead(reply.status, { ...reply.headers, 'content-length': Buffer.byteLength(body) }).end(body);
}

/** A reply as the bytes of an HTTP/1.1 response, for a socket that has no response object. */
export function rawReply(reply: Reply): string {
  const body = reply.body === undefined ? '' : reply.body.toString();
  const headers = Object.entries(reply.headers ?? {})
    .map(([name, value]) => `${name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase())}: ${value}\r\n`)
    .join('');
  return `HTTP/1.1 ${reply.status} ${statusTitle(reply.status)}\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/**
 * Answers a request Node's parser refused (the server's `clientError` event) with a problem
 * document (docs/conventions.md §7), then closes the connection: after a parse error nothing more on it can
 * be trusted. `answered` is told the status and body bytes of each answer handed to the socket
 * (refusals.ts); a connection that is closed without one (gone, or already answering) tells nothing.
 */
export function answerClientError(error: ParserError, socket: Duplex, answered?: (status: number, bytes: number) => void): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const { status, detail } = refusal(error);
  const reply = problemReply(unparsable(status, detail));
  const bytes = reply.body === undefined ? 0 : Buffer.byteLength(reply.body);
  const { _httpMessage: response } = socket as { _httpMessage?: ServerResponse | null };
  if (response && response.req.complete) {
    // The bad bytes are a later request's, pipelined behind one still being answered (a write
    // waiting for its sync): that answer goes first (RFC 9112 §9.3.2), then this one, and the
    // connection closes. Answered through that response instead, a write made would be told it failed.
    const answerAfter = (): void => {
      if (!socket.writable) return;
      socket.end(rawReply(reply));
      answered?.(status, bytes);
    };
    response.once('finish', answerAfter);
    response.once('close', () => {
      if (!response.writableFinished) socket.destroy();
    });
    return;
  }
  // A request whose headers were fine but whose body is not (a bad chunk) already has a response:
  // answer through it while nothing has been sent, else just close (Node's own 'clientError' advice).
  // Its handler, still reading the body, is never told (Node errors no request whose response has
  // finished): this answer is the request's one, counted and logged once, here.
  if (response) {
    if (response.headersSent) socket.destroy();
    else {
      writeReply(response, reply);
      answered?.(status, bytes);
    }
    return;
  }
  socket.end(rawReply(reply));
  answered?.(status, bytes);
}
