import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from './auth.js';
import type { Reply } from './reply.js';
import type { Params } from './router.js';

/** What a route handler is given: the request, its path parameters and query, and who sent it. */
export interface Context {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly params: Params;
  /** The raw query string, without `?`. */
  readonly query: string;
  /** The valid token's principal; undefined without authentication or on the routes that need none. */
  readonly principal: Principal | undefined;
}

export type RouteHandler = (context: Context) => Reply | Promise<Reply>;

/**
 * What the boundary learns of a request while it is dispatched, for the log and the metrics: a
 * bounded route label, the resource, and headers every response to it carries (rate limits).
 */
export interface Exchange {
  /** The route template (`/products/{id}`), or `unmatched`: never a raw path. */
  route: string;
  resource: string | undefined;
  headers: Record<string, string> | undefined;
  /**
   * True when a GET or HEAD could have been answered with the browser's shell (docs/conventions.md
   * §4.1): whatever it gets instead was chosen by its `Accept`, a problem too, and says so in `Vary`.
   */
  negotiated: boolean;
}
