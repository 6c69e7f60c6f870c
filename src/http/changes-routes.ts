import { changesHref, changesPageJson, eventJson, feedStartHref, isCursorSyntax, parseChangesQuery, SINCE_NOW, CHANGES_PATH } from '../conventions/changes.js';
import { wantsEventStream } from '../conventions/event-stream.js';
import { clientKey } from './auth.js';
import { streamChanges } from './change-stream.js';
import type { Streams } from './event-stream.js';
import { mapMaybe } from './maybe-promise.js';
import { badRequest, HttpProblem } from '../conventions/problem.js';
import { CursorExpiredError, CursorMalformedError, type ChangeFeed, type FeedPage } from '../store/changes/change-feed.js';
import type { MaybePromise, StoreChange } from '../store/store.js';
import type { RouteHandler } from './context.js';
import { jsonReply, type Reply } from './reply.js';
import { accepted } from './request.js';
import type { Resource } from './resource.js';
import type { Router } from './router.js';

export interface ChangesRouteOptions {
  readonly basePath: string;
  readonly resources: ReadonlyMap<string, Resource>;
  readonly feed: ChangeFeed;
  readonly streams: Streams;
}

/** RFC 9110-style header names are case-insensitive; Node lower-cases them. HTML §9.2.4: the id a reconnecting client sends. */
export const LAST_EVENT_ID = 'last-event-id';

/** The id a reconnecting client sent; an empty one is none (HTML §9.2.4 sends it only when not empty). */
export function lastEventId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && header !== '' ? header : undefined;
}

/** RFC 9110 §15.5.11: a cursor whose changes are no longer all known. */
const GONE = 410;

/** The problem a feed's cursor error is answered with; other errors pass through. */
export function cursorProblem(error: unknown, name: string): unknown {
  if (error instanceof CursorMalformedError) return badRequest(`${name}: ${error.message}`);
  if (error instanceof CursorExpiredError) return new HttpProblem(GONE, `${error.message}: list the collection again and follow its changes link`);
  return error;
}

/** Checks that a stream may start after `cursor` (a 400 or 410 problem before any byte is sent). */
export function startsAt(feed: ChangeFeed, cursor: string, name: string): MaybePromise<void> {
  if (!isCursorSyntax(cursor)) throw badRequest(`${name} must be a cursor from this server (1 to 255 letters, digits, - . _ ~), not ${JSON.stringify(cursor)}`);
  try {
    const checked = feed.check(cursor);
    return checked instanceof Promise ? checked.catch((error: unknown) => Promise.reject(cursorProblem(error, name))) : checked;
  } catch (error) {
    throw cursorProblem(error, name);
  }
}

/** An event's JSON, its entity shown as the entity's own representation (with its links). */
export function changeJson(resources: ReadonlyMap<string, Resource>, change: StoreChange, type = change.type as string): string {
  const resource = resources.get(change.resource);
  const entity = change.entity === undefined || resource === undefined ? undefined : resource.json(change.entity);
  return eventJson({ cursor: change.cursor, type: type as StoreChange['type'], resource: change.resource, id: change.id, at: change.at }, entity);
}

/** `GET /changes` (and `/v1/changes`): one page of the data set's changes, a HAL document. */
export function addChangesRoutes(router: Router<RouteHandler>, options: ChangesRouteOptions): void {
  const { basePath, resources, feed, streams } = options;
  const names: ReadonlySet<string> = new Set(resources.keys());
  // One function for every stream of the route: streams of the same resources share their text (change-stream.ts).
  const json = (change: StoreChange): string => changeJson(resources, change);
  const select = (change: StoreChange): StoreChange['type'] => change.type;
  router.add('GET', CHANGES_PATH, ({ req, query, principal }) => {
    const asked = parseChangesQuery(query, names);
    // A token limited to some resources follows only theirs (the scope check has already refused
    // a `resource` it may not read); the links keep the query as the client wrote it. Without
    // either, the resources this server serves: a data set's feed may hold others (a database some
    // other process also serves, with resources this one was not started with), whose events this
    // server could neither render nor link to.
    const limited = principal !== undefined && principal.access === undefined;
    const followed: ReadonlySet<string> =
      asked.resources !== undefined ? new Set(asked.resources) : limited ? new Set([...names].filter((name) => principal.grants?.has(name))) : names;
    if (wantsEventStream(req.headers.accept)) {
      // Last-Event-ID wins over since; neither: from now on.
      const lastId = lastEventId(req.headers[LAST_EVENT_ID]);
      const from = typeof lastId === 'string' ? lastId : asked.since === undefined || asked.since === SINCE_NOW ? feed.latest : asked.since;
      return mapMaybe(startsAt(feed, from, typeof lastId === 'string' ? 'Last-Event-ID' : 'Query parameter since'), () =>
        streams.reply({}, (out) =>
          streamChanges(out, { feed, after: from, resources: followed, select, json, shared: followed === names ? '*' : [...followed].sort().join(',') }),
          clientKey(req, principal),
          principal?.until,
        ),
      );
    }
    const mediaType = accepted(req);
    const since = asked.since === SINCE_NOW ? feed.latest : asked.since;
    const answer = (page: FeedPage): Reply => {
      const events = page.changes.map((change) => changeJson(resources, change));
      const body = changesPageJson(
        {
          count: events.length,
          limit: asked.limit,
          cursor: page.cursor,
          self: since === undefined ? feedStartHref(basePath, asked.limit, asked.resources) : changesHref(basePath, since, asked.limit, asked.resources),
          next: changesHref(basePath, page.cursor, asked.limit, asked.resources),
        },
        events,
      );
      // A feed page grows as changes arrive: never reused without asking.
      return jsonReply(200, mediaType, body, { 'cache-control': 'no-cache' });
    };
    if (asked.since === SINCE_NOW) return answer({ changes: [], cursor: feed.latest });
    let page: MaybePromise<FeedPage>;
    try {
      page = feed.read(since, asked.limit, followed);
    } catch (error) {
      throw cursorProblem(error, 'Query parameter since');
    }
    return page instanceof Promise ? page.then(answer, (error: unknown) => Promise.reject(cursorProblem(error, 'Query parameter since'))) : answer(page);
  });
}
