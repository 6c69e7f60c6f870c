import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Store, StoreObserver } from '../store/store.js';
import { Counter, Gauge, Histogram, Registry, type HistogramSeries, type Sample } from './registry.js';

/** How often the event-loop monitor samples, in milliseconds. */
const LOOP_RESOLUTION_MS = 10;

/**
 * A reading of the event-loop monitor, in nanoseconds, as the delay it means, in seconds: the
 * monitor records each whole interval between its timer's runs, the resolution included, so the
 * delay is what passes beyond it (an idle loop reads 0, not 10 ms).
 */
export function loopDelaySeconds(nanoseconds: number): number {
  return Number.isFinite(nanoseconds) ? Math.max(0, nanoseconds - LOOP_RESOLUTION_MS * 1e6) / 1e9 : 0;
}

/** Seconds: from a cached page (tens of microseconds) to a slow query (seconds). */
const LATENCY_BUCKETS: readonly number[] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** fdatasync on SSDs takes about 0.1 to 10 ms; a slow disk or a full queue, more. */
const FSYNC_BUCKETS: readonly number[] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
/** Lines per group commit: powers of two up to a large burst. */
const BATCH_BUCKETS: readonly number[] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

/**
 * One sampler for the process: the event loop is the process's, not a server's, and each sampler
 * is a timer waking every 10 ms. Made on first use, never stopped (its timer does not keep the
 * process alive).
 */
let loopMonitor: IntervalHistogram | undefined;
function eventLoopMonitor(): IntervalHistogram {
  if (loopMonitor === undefined) {
    // 10 ms resolution: the budget for holding the loop (docs/conventions.md §8); finer costs more wake-ups.
    loopMonitor = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    loopMonitor.enable();
  }
  return loopMonitor;
}

/** What a query does, for `halserve_query_duration_seconds` (docs/queries.md). */
export type QueryKind = 'plain' | 'filter' | 'sort' | 'search';

/**
 * The methods halserve answers, each its own `method` label; any other (Node's parser accepts some
 * thirty: WebDAV's, TRACE…) is counted as `other`, so that a client cannot multiply every route's
 * series by the methods it sends.
 */
const SERVED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const methodLabel = (method: string): string => (SERVED_METHODS.has(method) ? method : 'other');

/**
 * The `route` of a request matched to no route: none matches its path, or it was refused before
 * routing (by the handler: a missing Host, a target that is no path; by the server: a CONNECT, an
 * `Expect` it cannot meet, refusals.ts).
 */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * The `route` of a request Node's parser refused (server.ts): a word, as `unmatched` is, never a
 * template or a path. Its `method` is `other`: none was parsed that halserve could answer.
 */
export const UNPARSED_ROUTE = 'unparsed';

/**
 * Every metric halserve exposes at `/metrics` (docs/conventions.md §4.1). Made per server (STYLE: factory, not
 * singleton); the handler follows every store's changes (`follow`), and the CLI hands
 * `storeObserver` to the file logs for their syncs and compactions.
 */
/** The request series of one method and route: its latency, and a counter per status. */
interface RouteSeries {
  readonly latency: HistogramSeries;
  readonly byStatus: Map<number, { value: number }>;
}

export class ServerMetrics {
  readonly registry = new Registry();
  readonly requests = this.registry.add(
    new Counter('halserve_http_requests_total', 'HTTP requests answered, by method, route template and status code.', ['method', 'route', 'status']),
  );
  readonly latency = this.registry.add(
    new Histogram('halserve_http_request_duration_seconds', 'Time from a request arriving to its response being handed to the socket.', LATENCY_BUCKETS, ['method', 'route']),
  );
  readonly queries = this.registry.add(
    new Histogram('halserve_query_duration_seconds', 'Time to build a collection page that was not cached, by resource and kind (plain, filter, sort, search).', LATENCY_BUCKETS, ['resource', 'kind']),
  );
  readonly pageCache = this.registry.add(
    new Counter('halserve_page_cache_requests_total', 'Collection page requests answered from the page cache (hit) or built (miss).', ['resource', 'result']),
  );
  readonly writes = this.registry.add(
    new Counter('halserve_store_writes_total', "Changes applied to a resource (creates, replaces, patches, deletes), as its store reports them: on PostgreSQL, every process's.", ['resource']),
  );
  readonly fsync = this.registry.add(new Histogram('halserve_store_fsync_seconds', 'Time a group commit took to reach the disk: its synced write (or write and fdatasync).', FSYNC_BUCKETS, ['resource']));
  readonly batches = this.registry.add(new Histogram('halserve_store_batch_lines', 'Lines written per group commit (one fdatasync each).', BATCH_BUCKETS, ['resource']));
  readonly compactions = this.registry.add(
    new Counter('halserve_store_compactions_total', 'Compactions of a resource log, by outcome (ok or failed).', ['resource', 'outcome']),
  );
  readonly answersPushedOut = this.registry.add(
    new Counter(
      'halserve_idempotency_answers_evicted_total',
      'Idempotency-Key answers let go before their 24 hours to keep within --idempotency-answers and --idempotency-memory: a retry with such a key is processed as new.',
      ['resource'],
    ),
  );
  readonly writeFailures = this.registry.add(
    new Counter('halserve_store_write_failures_total', 'Writes refused because the log could not be written, by resource and cause (ENOSPC, EIO, ESTALE, ...; unavailable: the database unreachable).', ['resource', 'cause']),
  );
  readonly rateLimited = this.registry.add(new Counter('halserve_rate_limited_total', 'Requests refused with 429 by the rate limit.'));
  readonly streamEvents = this.registry.add(new Counter('halserve_stream_events_total', 'Events sent on event streams (text/event-stream).'));
  readonly slowReaders = this.registry.add(new Counter('halserve_stream_slow_readers_total', 'Event streams disconnected because their reader fell more than the bound behind, or stalled for two heartbeat intervals.'));
  #openStreams = 0;

  /** What the event streams report (`Streams`). */
  readonly streamCounters = {
    opened: (): void => {
      this.#openStreams++;
    },
    closed: (): void => {
      this.#openStreams--;
    },
    sent: (events: number): void => this.streamEvents.inc(events),
    slowReader: (): void => this.slowReaders.inc(),
  };

  readonly #sizes = new Map<string, () => number>();
  /** Series of the request metrics by method, route and status: every request records into them, with no string built. */
  readonly #routes = new Map<string, Map<string, RouteSeries>>();

  constructor() {
    this.registry.add(
      new Gauge('halserve_entities', 'Live entities per resource.', () => [...this.#sizes].map(([resource, size]): Sample => ({ labels: { resource }, value: size() }))),
    );
    this.registry.add(new Gauge('halserve_streams_open', 'Event streams open now.', () => [{ labels: {}, value: this.#openStreams }]));
    const loop = eventLoopMonitor();
    const seconds = loopDelaySeconds;
    this.registry.add(
      new Gauge('halserve_event_loop_delay_seconds', 'Event-loop delay of the process since start, beyond the 10 ms between samples: mean, p50, p99 and max.', () =>
        loop.count === 0
          ? []
          : [
              { labels: { stat: 'mean' }, value: seconds(loop.mean) },
              { labels: { stat: 'p50' }, value: seconds(loop.percentile(50)) },
              { labels: { stat: 'p99' }, value: seconds(loop.percentile(99)) },
              { labels: { stat: 'max' }, value: seconds(loop.max) },
            ],
      ),
    );
  }

  /** Counts one answered request and its latency. */
  request(method: string, route: string, status: number, seconds: number): void {
    const entry = this.#entry(method, route);
    this.#counter(entry, method, route, status).value++;
    entry.latency.observe(seconds);
  }

  /**
   * Counts a request Node's parser refused and the server answered itself (server.ts), with the
   * requests it answered: a flood of malformed requests shows in every error ratio taken over
   * `halserve_http_requests_total`. No latency is observed: nothing says when such a request began.
   */
  refused(status: number): void {
    this.requests.inc(1, 'other', UNPARSED_ROUTE, String(status));
  }

  /** `request` for one method, route and status, its series looked up once: for a reply answered many times (kept-replies.ts). */
  recorder(method: string, route: string, status: number): (seconds: number) => void {
    const entry = this.#entry(method, route);
    const counter = this.#counter(entry, method, route, status);
    return (seconds) => {
      counter.value++;
      entry.latency.observe(seconds);
    };
  }

  #entry(method: string, route: string): RouteSeries {
    const label = methodLabel(method);
    let byRoute = this.#routes.get(label);
    if (byRoute === undefined) this.#routes.set(label, (byRoute = new Map()));
    let entry = byRoute.get(route);
    if (entry === undefined) byRoute.set(route, (entry = { latency: this.latency.series(label, route), byStatus: new Map() }));
    return entry;
  }

  #counter(entry: RouteSeries, method: string, route: string, status: number): { value: number } {
    let counter = entry.byStatus.get(status);
    if (counter === undefined) entry.byStatus.set(status, (counter = this.requests.series(methodLabel(method), route, String(status))));
    return counter;
  }

  /** Makes `halserve_entities` report this resource's size when scraped. */
  track(resource: string, size: () => number): void {
    this.#sizes.set(resource, size);
  }

  /**
   * Makes the page-cache series of a resource served exist from now on, at 0 (README, "Prometheus
   * metrics"): a series that appears only at its first increment hides that increment from
   * `rate()` and `increase()`, which have no sample before it. Its labels are all known now: the
   * resource and the two results.
   */
  served(resource: string): void {
    this.pageCache.series(resource, 'hit');
    this.pageCache.series(resource, 'miss');
  }

  /** Counts the changes `store` reports (`Store.follow`); returns the unsubscribe. Its series is at 0 from now on, as `served`'s are. */
  follow(resource: string, store: Store): () => void {
    const writes = this.writes.series(resource);
    return store.follow(() => {
      writes.value++;
    });
  }

  /**
   * The hooks a resource's file log calls: durable batches, compactions and Idempotency-Key answers
   * let go. Its counters exist from now on, at 0, as `served`'s do: the first compaction that fails
   * and the first answer let go then show in `increase()`. Only a file log is given these hooks, so
   * a resource on PostgreSQL, which never compacts nor lets an answer go, has no such series.
   */
  storeObserver(resource: string): StoreObserver {
    const compacted = this.compactions.series(resource, 'ok');
    const failed = this.compactions.series(resource, 'failed');
    const pushedOut = this.answersPushedOut.series(resource);
    return {
      committed: (lines, syncSeconds) => {
        this.batches.observe(lines, resource);
        if (syncSeconds > 0) this.fsync.observe(syncSeconds, resource);
      },
      compacted: (ok) => {
        (ok ? compacted : failed).value++;
      },
      answersPushedOut: (count) => {
        pushedOut.value += count;
      },
    };
  }
}
