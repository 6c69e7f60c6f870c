import { secretKey } from '../conventions/webhook-signature.js';
import { webhookLabel } from '../conventions/webhook-url.js';
import type { WebhookMetrics } from '../metrics/webhook-metrics.js';
import type { ChangeFeed } from '../store/changes/change-feed.js';
import type { StoreChange } from '../store/store.js';
import type { BackoffPolicy } from './backoff.js';
import { Delivery, realScheduler, type Scheduler } from './delivery.js';
import { soleLease, type Lease } from './lease.js';
import { PositionWriter, type Position, type Positions } from './positions.js';
import { DELIVERY_TIMEOUT_MS, httpSender, type Send } from './send.js';

/** How long a stop waits for deliveries in flight before it drops them (their events stay unacknowledged). */
export const STOP_GRACE_MS = 5_000;

export interface WebhooksOptions {
  /** The URLs, as configured (already checked: webhook-url.ts). */
  readonly urls: readonly string[];
  /** The secret (already checked: webhook-signature.ts). */
  readonly secret: string;
  /** The resources delivered; undefined or empty: all. */
  readonly resources?: readonly string[] | undefined;
  readonly positions: Positions;
  /** Who delivers (default: this process, alone: `soleLease`). */
  readonly lease?: Lease;
  readonly metrics: WebhookMetrics;
  readonly warn: (message: string) => void;
  readonly scheduler?: Scheduler;
  readonly backoff?: BackoffPolicy;
  /** How long an attempt may go without a complete answer (default 10 s). */
  readonly timeoutMs?: number;
  /** How a URL is posted to (tests replace it); default `httpSender`. */
  readonly sender?: (url: URL, timeoutMs: number) => { send: Send; close(): void };
}

/**
 * Every configured URL's delivery (delivery.ts), run while this process holds the lease
 * (lease.ts), with positions loaded from and saved to `positions`. It follows the feed from
 * `start` on, so that a caught-up delivery is woken by each change; it never queues changes itself:
 * each delivery reads them from the feed.
 */
export class Webhooks {
  readonly #o: WebhooksOptions;
  readonly #scheduler: Scheduler;
  readonly #lease: Lease;
  /** Saves the positions of the current lease term: a new one each term, so a save left over from an earlier term never lands after another holder's. */
  #writer: PositionWriter;
  readonly #senders = new Map<string, { send: Send; close(): void }>();
  readonly #labels = new Map<string, string>();
  readonly #stopping = new AbortController();
  readonly #abandon = new AbortController();
  #deliveries: Delivery[] = [];
  #main: Promise<void> | undefined;
  #unfollow: (() => void) | undefined;

  constructor(options: WebhooksOptions) {
    this.#o = options;
    this.#scheduler = options.scheduler ?? realScheduler;
    this.#lease = options.lease ?? soleLease;
    this.#writer = this.#newWriter();
    const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    for (const url of options.urls) {
      const parsed = new URL(url);
      const label = webhookLabel(parsed);
      this.#labels.set(url, label);
      options.metrics.configured(label);
      this.#senders.set(url, (options.sender ?? httpSender)(parsed, timeoutMs));
    }
  }

  #newWriter(): PositionWriter {
    return new PositionWriter(this.#o.positions, (error) => this.#o.warn(`webhook positions could not be saved (${(error as Error).message}); retried with the next one`));
  }

  /** Starts delivering `feed`'s events, each as `json` gives it; resolves at once. */
  start(feed: ChangeFeed, json: (change: StoreChange) => string): void {
    if (this.#main) throw new Error('webhooks already started');
    if (this.#o.urls.length === 0) return;
    this.#unfollow = feed.follow((change) => {
      for (const delivery of this.#deliveries) delivery.heard(change);
    });
    // A URL not delivered to before starts after the latest event now, when it is first configured.
    const latest = feed.latest;
    this.#main = this.#run(feed, json, latest).catch((error: unknown) => this.#o.warn(`webhooks stopped: ${(error as Error)?.stack ?? String(error)}`));
  }

  async #run(feed: ChangeFeed, json: (change: StoreChange) => string, latest: string): Promise<void> {
    const { metrics, warn } = this.#o;
    const stopping = this.#stopping.signal;
    const resources = this.#o.resources === undefined || this.#o.resources.length === 0 ? undefined : new Set(this.#o.resources);
    const key = secretKey(this.#o.secret);
    while (!stopping.aborted) {
      const lost = await this.#lease.acquire(stopping);
      if (lost === undefined) break;
      let stored: Map<string, Position>;
      try {
        stored = await this.#o.positions.load();
      } catch (error) {
        warn(`webhook positions cannot be read (${(error as Error).message}); trying again`);
        await this.#lease.release();
        await this.#scheduler.sleep(1_000, stopping);
        continue;
      }
      metrics.delivering = true;
      this.#writer = this.#newWriter();
      for (const url of this.#o.urls) {
        if (stored.has(url)) continue;
        const position = { cursor: latest, at: this.#scheduler.now() };
        stored.set(url, position);
        this.#writer.set(url, position);
      }
      await this.#writer.flush();
      const ended = anyOf(stopping, lost);
      const abandon = anyOf(this.#abandon.signal, lost);
      this.#deliveries = this.#o.urls.map((url) => {
        const label = this.#labels.get(url)!;
        const delivery = new Delivery(
          {
            url,
            label,
            feed,
            resources,
            json,
            key,
            send: this.#send(this.#senders.get(url)!.send),
            scheduler: this.#scheduler,
            ...(this.#o.backoff === undefined ? {} : { backoff: this.#o.backoff }),
            acknowledged: (position) => this.#writer.set(url, position),
            failed: (cause) => metrics.failures.inc(1, label, cause),
            delivered: () => metrics.deliveries.inc(1, label),
            missed: (why) => {
              metrics.missed.inc(1, label);
              warn(`webhook ${label}: events were missed: its position cannot be resumed (${why}); delivery goes on from the oldest event held`);
            },
            warn,
          },
          stored.get(url)!,
        );
        metrics.track(url, label, { pending: () => delivery.pending, lagSeconds: () => delivery.lagSeconds(), positionAgeSeconds: () => delivery.positionAgeSeconds() });
        return delivery;
      });
      await Promise.all(this.#deliveries.map((delivery) => delivery.run(ended, abandon)));
      // Out of the term: changes are no longer counted here, and the URLs' gauges are the next deliverer's.
      this.#deliveries = [];
      for (const url of this.#o.urls) metrics.untrack(url);
      metrics.delivering = false;
      await this.#writer.flush();
      if (!stopping.aborted) await this.#lease.release();
    }
    await this.#lease.release();
  }

  /**
   * `send`, made only while this process holds the lease by its clock (lease.ts `holds`): when it no
   * longer does, the term's signal has aborted and the attempt is dropped unsent, as one in flight is.
   */
  #send(send: Send): Send {
    return (body, headers, signal) => (this.#lease.holds() ? send(body, headers, signal) : Promise.resolve({ ok: false, cause: 'connection', detail: 'the webhook lease is lost' }));
  }

  /**
   * Stops: no attempt starts from now on; one in flight has `graceMs` to be answered (a 2xx then
   * moves its position), after which it is dropped. Resolves once every position is saved and the
   * lease given up.
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.#stopping.abort();
    const timeout = new AbortController();
    await Promise.race([this.#main, this.#scheduler.sleep(graceMs, timeout.signal)]);
    timeout.abort();
    this.#abandon.abort();
    await this.#main;
    this.#unfollow?.();
    for (const sender of this.#senders.values()) sender.close();
  }
}

/** A signal that aborts when any of `signals` does (AbortSignal.any is Node ≥ 20.3). */
function anyOf(...signals: AbortSignal[]): AbortSignal {
  const any = new AbortController();
  for (const signal of signals) {
    if (signal.aborted) any.abort();
    else signal.addEventListener('abort', () => any.abort(), { once: true });
  }
  return any.signal;
}
