import type { ChangeType } from '../store/store.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from './pagination.js';
import { badRequest } from './problem.js';

/**
 * The change feed's conventions, as pure functions: the query of `GET /changes`, its links, the
 * events' JSON, and which event a filtered stream sends. Cursors are opaque here: the store that
 * hands them out checks them (a malformed one is its `CursorMalformedError`).
 */

/** The feed's path under the base path (also under `/v1`). */
export const CHANGES_PATH = '/changes';
/** `since=now`: start at the latest change. Never a cursor (cursors are never the word `now`). */
export const SINCE_NOW = 'now';
/** RFC 3986 §2.3 unreserved characters, 1 to 255 of them: what every cursor is made of. */
const CURSOR_SYNTAX = /^[A-Za-z0-9._~-]{1,255}$/;
const CHANGES_PARAMS: ReadonlySet<string> = new Set(['since', 'limit', 'resource']);
const INTEGER = /^-?[0-9]+$/;

/** What a `GET /changes` asks for. */
export interface ChangesQuery {
  /** A cursor, `now`, or undefined (from the oldest change held). */
  readonly since: string | undefined;
  readonly limit: number;
  /** The resources asked for, in the order named; undefined: every resource. */
  readonly resources: readonly string[] | undefined;
}

/**
 * Parses the query of `GET /changes`: `since`, `limit` (default 20, at most 200, as pages have)
 * and `resource` (comma-separated names, each one served). Anything else, a repeated parameter, a
 * `since` that cannot be a cursor, an unknown resource → a 400 problem naming it.
 */
export function parseChangesQuery(query: string, known: ReadonlySet<string>): ChangesQuery {
  const params = new URLSearchParams(query);
  for (const name of params.keys()) {
    if (!CHANGES_PARAMS.has(name)) throw badRequest(`Unknown query parameter ${JSON.stringify(name)}: /changes takes since, limit and resource`);
    if (params.getAll(name).length > 1) throw badRequest(`Query parameter ${name} is given more than once`);
  }
  const since = params.get('since') ?? undefined;
  if (since !== undefined && since !== SINCE_NOW && !CURSOR_SYNTAX.test(since)) {
    throw badRequest(`Query parameter since must be a cursor from this server (1 to 255 letters, digits, - . _ ~) or now, not ${JSON.stringify(since)}`);
  }
  const rawLimit = params.get('limit');
  let limit = DEFAULT_LIMIT;
  if (rawLimit !== null) {
    if (!INTEGER.test(rawLimit)) throw badRequest('Query parameter limit must be a base-10 integer');
    limit = Number(rawLimit);
    if (limit < 1) throw badRequest('Query parameter limit must be at least 1');
    limit = Math.min(limit, MAX_LIMIT);
  }
  const rawResources = params.get('resource');
  let resources: string[] | undefined;
  if (rawResources !== null) {
    resources = rawResources.split(',');
    for (const name of resources) {
      if (!known.has(name)) throw badRequest(`Query parameter resource names ${JSON.stringify(name)}, which is not a resource of this server`);
    }
  }
  return { since, limit, resources };
}

/** True for a string that may be a cursor (its syntax only; the store decides whether it is one). */
export const isCursorSyntax = (value: string): boolean => value !== SINCE_NOW && CURSOR_SYNTAX.test(value);

/** `<base>/changes?since=<cursor>&limit=<m>[&resource=a,b]`: a page's `self` and `next`. */
export function changesHref(basePath: string, since: string, limit: number, resources: readonly string[] | undefined): string {
  return `${basePath}${CHANGES_PATH}?since=${since}&limit=${limit}${resources === undefined ? '' : `&resource=${resources.join(',')}`}`;
}

/**
 * The feed's first page, asked for without `since`, as its `self` link names it: the limit the
 * page has (200 for a larger one asked for, as in `next`), and the resources it keeps.
 */
export function feedStartHref(basePath: string, limit: number, resources: readonly string[] | undefined): string {
  return `${basePath}${CHANGES_PATH}?limit=${limit}${resources === undefined ? '' : `&resource=${resources.join(',')}`}`;
}

/** A collection page's `changes` link: `<base>/changes?since=<cursor>&resource=<name>`, whatever the page's query. */
export function collectionChangesHref(basePath: string, cursor: string, name: string): string {
  return `${basePath}${CHANGES_PATH}?since=${cursor}&resource=${name}`;
}

/** An event's type: a write's, or `removed` on a filtered stream. */
export type EventType = ChangeType | 'removed';

/** One event's JSON text on one line; `entityJson` is the entity's representation, or undefined. */
export function eventJson(event: { cursor: string; type: EventType; resource: string; id: string; at: number }, entityJson: string | undefined): string {
  const head = `{"cursor":${JSON.stringify(event.cursor)},"type":"${event.type}","resource":${JSON.stringify(event.resource)},"id":${JSON.stringify(event.id)},"at":${event.at}`;
  return entityJson === undefined ? `${head}}` : `${head},"entity":${entityJson}}`;
}

/** `GET /changes`: the HAL document of one page of events (already serialised). */
export function changesPageJson(page: { count: number; limit: number; cursor: string; self: string; next: string }, events: readonly string[]): string {
  const links = JSON.stringify({ self: { href: page.self }, next: { href: page.next } });
  return `{"count":${page.count},"limit":${page.limit},"cursor":${JSON.stringify(page.cursor)},"_links":${links},"_embedded":{"changes":[${events.join(',')}]}}`;
}

/**
 * Which event a filtered stream sends for a change (a collection URL with filters or `q`): the
 * write's own type when the entity matches after it; `removed` when it does not (a delete, or an
 * update that took it out of the set) — sent even when it never matched, since after a resume the
 * server need not know what a client held. A change of an entity outside the set may be sent as
 * `removed` or not at all; this rule sends it, which keeps it stateless.
 */
export function streamEventType(type: ChangeType, matchesAfter: boolean): EventType {
  return type !== 'deleted' && matchesAfter ? type : 'removed';
}
