import { FAILURE_CAUSES } from '../webhooks/send.js';
import { Counter, Gauge, type Registry, type Sample } from './registry.js';

/** What `/metrics` reads of one URL's delivery when scraped. */
export interface DeliveryGauges {
  /** Events after the position, as far as this process knows (an upper bound while changes coalesce). */
  pending(): number;
  /** Seconds since the oldest event not yet acknowledged was written; 0 when none waits. */
  lagSeconds(): number;
  /** Seconds since the position last moved (a 2xx, or the URL first configured). */
  positionAgeSeconds(): number;
}

/**
 * The webhooks' metrics (docs/webhooks.md): per URL, labelled `scheme://host:port/path` (no
 * user-info, no query: they may hold credentials), a bounded set — the URLs configured. URLs that
 * differ only in user-info or query share a label, and its series: counters add up, the pending
 * events are their sum, the lag and the position's age the largest, so that a dead URL is not
 * hidden by a healthy one.
 */
export class WebhookMetrics {
  readonly deliveries: Counter;
  readonly failures: Counter;
  readonly missed: Counter;
  /** Each URL's gauges and label, by the URL as configured. */
  readonly #gauges = new Map<string, { readonly label: string; readonly gauges: DeliveryGauges }>();
  #delivering = false;

  constructor(registry: Registry) {
    this.deliveries = registry.add(new Counter('halserve_webhook_deliveries_total', 'Webhook deliveries acknowledged with a 2xx, by URL.', ['url']));
    this.failures = registry.add(
      new Counter('halserve_webhook_failures_total', 'Webhook delivery attempts that failed, by URL and cause (status: not a 2xx; timeout: no complete answer within 10 s; connection).', ['url', 'cause']),
    );
    this.missed = registry.add(
      new Counter('halserve_webhook_missed_total', "Times a URL's position could no longer be resumed (older than the change feed's retention) and delivery went on from the oldest event held.", ['url']),
    );
    const each =
      (read: (gauges: DeliveryGauges) => number, combine: (a: number, b: number) => number) =>
      (): Sample[] => {
        const byLabel = new Map<string, number>();
        for (const { label, gauges } of this.#gauges.values()) {
          const value = read(gauges);
          const other = byLabel.get(label);
          byLabel.set(label, other === undefined ? value : combine(other, value));
        }
        return [...byLabel].map(([url, value]) => ({ labels: { url }, value }));
      };
    const sum = (a: number, b: number): number => a + b;
    registry.add(new Gauge('halserve_webhook_pending_events', 'Events not yet acknowledged by the URL.', each((g) => g.pending(), sum)));
    registry.add(new Gauge('halserve_webhook_lag_seconds', 'Seconds since the oldest event the URL has not acknowledged was written (0: caught up).', each((g) => g.lagSeconds(), Math.max)));
    registry.add(new Gauge('halserve_webhook_position_age_seconds', 'Seconds since the URL last acknowledged an event (or was first configured).', each((g) => g.positionAgeSeconds(), Math.max)));
    registry.add(new Gauge('halserve_webhook_delivering', 'Whether this process delivers the webhooks (1) or another process of the database does (0).', () => [{ labels: {}, value: this.#delivering ? 1 : 0 }]));
  }

  /**
   * Makes the counters of a configured URL's `label` exist from now on, at 0, every cause of failure
   * included (README, "Prometheus metrics"): the first failure, or the first delivery, then shows in
   * `increase()`. On PostgreSQL every process has them, whether or not it delivers: a process that
   * never did counts 0, and a sum over the processes stays right.
   */
  configured(label: string): void {
    this.deliveries.series(label);
    this.missed.series(label);
    for (const cause of FAILURE_CAUSES) this.failures.series(label, cause);
  }

  /** `url` as configured (a new lease term tracks it anew), `label` as the series name it. */
  track(url: string, label: string, gauges: DeliveryGauges): void {
    this.#gauges.set(url, { label, gauges });
  }

  /**
   * `url` no longer delivered here (the lease lost: another process delivers now): its gauges are
   * gone, as on a process that never delivered, rather than frozen, or growing with the clock (lag,
   * position age), beside the deliverer's. Its counters stay.
   */
  untrack(url: string): void {
    this.#gauges.delete(url);
  }

  set delivering(value: boolean) {
    this.#delivering = value;
  }
}
