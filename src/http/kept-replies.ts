import type { IncomingMessage } from 'node:http';
import type { ServerMetrics } from '../metrics/server-metrics.js';
import { LruMap } from '../structures/lru-map.js';
import { COMPRESSION_THRESHOLD_BYTES } from './encoding.js';
import type { Reply } from './reply.js';
import type { ScopeRequest } from './route-scopes.js';

/**
 * Replies kept per request target, answered again without routing, negotiation or building a
 * reply: the fast lane of a GET that asks again what was asked before (a popular entity).
 *
 * **What is kept.** Only a reply that says when it stops being the answer (`Reply.current`: an
 * entity's 200, while its store still serves that very version; resource-routes.ts `entityRead`),
 * made by the full path for a request whose answer depends on nothing but its target, its `Accept`
 * and whether its credential may have it: the same bytes for every principal the route lets read
 * it (a HAL-FORMS answer, whose templates depend on the principal, is never kept). It is kept under
 * the target as sent and that `Accept`, with the route's metrics and what the route asked of the
 * request's principal (`ScopeRequest`: the resources it reads; none when the route asked nothing,
 * without authentication).
 *
 * **When it is answered.** A GET whose target and `Accept` are those of a kept reply, that carries
 * only the headers in `SHAPE` (each at most once, Host exactly once), whose `Authorization` the
 * authenticators remember now (`Authentication.known`: a static token's value once checked, a JWT's
 * until its `exp` and the leeway; one not remembered, expired or refused takes the full path, which
 * checks it) and whose principal the route's scope rule lets have it (`scopeAllows`, route-scopes.ts,
 * decided afresh every request: O(1) for an entity), and whose reply is still `current`. So one
 * reply serves every client allowed to have it, however many: keeping it per credential made a hot
 * entity asked by hundreds of clients take the full path for each (bench/NOTES.md, "many clients").
 * Anything else — a conditional or CORS request, a body, an unknown header, an expired token, a
 * changed entity — takes the full path, which keeps its reply again. Conditional requests,
 * `Origin` and compression (a body at or over the compression threshold with `Accept-Encoding`) are
 * not answered here, so the bytes sent are the full path's, header for header (`send`'s prepared
 * branch): a kept reply's head was made with the CORS headers of a request without Origin
 * (`Vary: Origin` for one allowed origin, resource-routes.ts `originless`).
 *
 * **What it saves.** Routing, negotiation, the entity's representation lookup and the reply's
 * headers: the lane reads `rawHeaders` once, finds the reply by the target and its `Accept`, asks
 * the authenticators' remembered values and the scope rule, asks the store whether the entity is
 * the same object, and counts the request in series it looked up when it kept the reply.
 *
 * **Bounds.** At most `MAX_TARGETS` targets, `MAX_VARIANTS` `Accept` values each, and `MAX_BYTES`
 * of bodies (a body is shared with the entity cache while both hold it, and weighed here again);
 * least recently used targets go first (`LruMap`). A variant is replaced in place, never deleted
 * and added again. A variant found stale is dropped from its target's list (the target's weight is
 * set again when a reply is next kept for it), so a replaced or deleted version's bytes are held
 * only until its target is next asked for, or evicted.
 *
 * The server does not use the lane with a rate limit (every request then carries its own
 * rate-limit fields) or with an embedder's authenticator (which may read any header).
 */

/** Most targets kept. */
const MAX_TARGETS = 16_384;
/** Most `Accept` values kept for one target: the oldest is replaced by a new one. */
const MAX_VARIANTS = 4;
/** Most bytes of bodies kept. */
const MAX_BYTES = 16 * 1024 * 1024;

/**
 * The request headers a kept reply may ignore or is kept by (lower case): the answer to a GET of
 * an entity does not depend on the others being absent, but on these it depends only through the
 * key. Any other header sends the request the full way: the conditions among them (`If-None-Match`,
 * `If-Modified-Since`, …), whose answer may be a 304 or a 412 rather than the kept 200.
 */
const SHAPE: ReadonlySet<string> = new Set(['host', 'authorization', 'accept', 'accept-encoding', 'connection', 'user-agent', 'accept-language']);

/** SHAPE's names as clients write them (lower case, Title-Case, upper case), to their lower case: most names are read without making a string. */
const CASINGS: ReadonlyMap<string, string> = new Map(
  [...SHAPE].flatMap((name) => {
    const title = name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
    return [name, title, name.toUpperCase()].map((written) => [written, name] as const);
  }),
);

/** A kept reply that is sent as it is: its head is made, its body is bytes, it says when it is stale. */
interface SendableReply extends Reply {
  readonly head: readonly string[];
  readonly body: Buffer;
  readonly current: () => boolean;
}

interface Variant {
  readonly accept: string | undefined;
  readonly reply: SendableReply;
  /** Counts one more answer of the reply in the request metrics (`ServerMetrics.recorder`), given its seconds. */
  readonly record: (seconds: number) => void;
}

/** What is kept for one target: its replies by `Accept`, and what its route asks of a principal. */
interface Target {
  /** The request the route's scope rule judged; undefined: the route asked nothing of a credential (no authentication). */
  scope: ScopeRequest | undefined;
  readonly variants: Variant[];
}

/**
 * Whether a request with this `Authorization` (undefined: none) may have a reply kept for `scope`
 * now, as the full path would decide it: a principal the authenticators remember for it
 * (`Authentication.known`) that the route's scope rule lets make the request. False whenever only
 * the full path can tell.
 */
export type Admission = (authorization: string | undefined, scope: ScopeRequest) => boolean;

/** The headers of a request that the lane reads, or why it may not answer it. */
interface Shape {
  ok: boolean;
  authorization: string | undefined;
  accept: string | undefined;
  acceptEncoding: boolean;
}

/** What the lane answers: the reply to write, and how to count it. */
export interface KeptAnswer {
  readonly reply: Reply & { readonly head: readonly string[]; readonly body: Buffer };
  readonly record: (seconds: number) => void;
}

/** The headers of `raw` (`rawHeaders`) the lane reads; `ok` false when one it does not know, or a repeat, is there. */
export function requestShape(raw: readonly string[], into: Shape = { ok: false, authorization: undefined, accept: undefined, acceptEncoding: false }): Shape {
  into.ok = false;
  into.authorization = undefined;
  into.accept = undefined;
  into.acceptEncoding = false;
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const written = raw[i] as string;
    const name = CASINGS.get(written) ?? written.toLowerCase();
    if (!SHAPE.has(name)) return into;
    if (name === 'host') hosts++;
    else if (name === 'authorization') {
      if (into.authorization !== undefined) return into;
      into.authorization = raw[i + 1];
    } else if (name === 'accept') {
      if (into.accept !== undefined) return into;
      into.accept = raw[i + 1];
    } else if (name === 'accept-encoding') {
      if (into.acceptEncoding) return into;
      into.acceptEncoding = true;
    }
  }
  into.ok = hosts === 1;
  return into;
}

/** See the rules above. */
export class KeptReplies {
  readonly #targets = new LruMap<Target>({ maxEntries: MAX_TARGETS, maxWeight: MAX_BYTES });
  /** Whether a credential may have a kept reply (app.ts: the authenticators and the scope rule). */
  readonly #admits: Admission;
  /** Where each kept reply's answers are counted (`ServerMetrics.recorder`). */
  readonly #metrics: Pick<ServerMetrics, 'recorder'>;
  /** One shape, read again by every request: the lane runs to its end before another can. */
  readonly #shape: Shape = { ok: false, authorization: undefined, accept: undefined, acceptEncoding: false };

  constructor(admits: Admission, metrics: Pick<ServerMetrics, 'recorder'>) {
    this.#admits = admits;
    this.#metrics = metrics;
  }

  /** Targets kept now. */
  get size(): number {
    return this.#targets.size;
  }

  /** The kept reply that answers `req` now, or undefined: the full path answers it. */
  answer(req: IncomingMessage): KeptAnswer | undefined {
    // Another major version goes the full way, to its 505 (app.ts).
    if (req.method !== 'GET' || req.httpVersionMajor !== 1) return undefined;
    const target = this.#targets.get(req.url ?? '');
    if (target === undefined) return undefined;
    const shape = requestShape(req.rawHeaders, this.#shape);
    if (!shape.ok) return undefined;
    const { variants } = target;
    let found: Variant | undefined;
    for (const variant of variants) {
      if (variant.accept === shape.accept) {
        found = variant;
        break;
      }
    }
    if (found === undefined) return undefined;
    if (shape.acceptEncoding && found.reply.body.length >= COMPRESSION_THRESHOLD_BYTES) return undefined;
    if (target.scope !== undefined && !this.#admits(shape.authorization, target.scope)) return undefined;
    if (!found.reply.current()) {
      // Its version was replaced or deleted: let go of its bytes now (the target stays, holding no variant).
      variants.splice(variants.indexOf(found), 1);
      return undefined;
    }
    return found;
  }

  /**
   * Keeps the full path's `reply` to `req` (a GET counted under `route`, whose principal the route's
   * scope rule judged as `scope`; undefined: it had none to judge) when it may be answered again as
   * it is: see the rules above.
   */
  keep(req: IncomingMessage, scope: ScopeRequest | undefined, route: string, reply: Reply): void {
    const { head, body, current } = reply;
    if (req.method !== 'GET' || reply.status !== 200 || head === undefined || current === undefined || !(body instanceof Buffer)) return;
    const shape = requestShape(req.rawHeaders, this.#shape);
    if (!shape.ok || (shape.acceptEncoding && body.length >= COMPRESSION_THRESHOLD_BYTES)) return;
    const url = req.url ?? '';
    const variant: Variant = { accept: shape.accept, reply: reply as SendableReply, record: this.#metrics.recorder('GET', route, 200) };
    // Changed in place: a hot target kept again by each new client is not copied each time.
    let target = this.#targets.peek(url);
    if (target === undefined) target = { scope, variants: [] };
    // The same target reaches the same route: the latest judgement stands for all its variants.
    else target.scope = scope;
    const { variants } = target;
    const same = variants.findIndex((v) => v.accept === variant.accept);
    if (same !== -1) variants[same] = variant;
    else {
      if (variants.length >= MAX_VARIANTS) variants.shift();
      variants.push(variant);
    }
    // Weighed with the Accept each variant is kept under: a client's long Accept is held as long as
    // the reply, and thousands of them would pass the bound unseen.
    let bytes = url.length;
    for (const v of variants) bytes += v.reply.body.length + (v.accept?.length ?? 0);
    this.#targets.set(url, target, bytes);
  }
}
