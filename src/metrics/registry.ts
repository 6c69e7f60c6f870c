/**
 * Counters, gauges and histograms in the Prometheus data model, with no dependency. Each metric
 * keeps its series in a Map keyed by the label values joined, so that recording one costs a lookup;
 * label values must come from bounded sets (route templates, resource names), never from a request.
 */

/** Label values by label name. */
export type Labels = Readonly<Record<string, string>>;

/** One series: its label values and value(s), as the exposition renders them. */
export interface Sample {
  readonly labels: Labels;
  readonly value: number;
}

export interface HistogramSample {
  readonly labels: Labels;
  /** Cumulative counts per upper bound, in the order of `buckets`. */
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

interface MetricBase {
  readonly name: string;
  readonly help: string;
}

export interface CounterMetric extends MetricBase {
  readonly type: 'counter';
  samples(): readonly Sample[];
}

export interface GaugeMetric extends MetricBase {
  readonly type: 'gauge';
  samples(): readonly Sample[];
}

export interface HistogramMetric extends MetricBase {
  readonly type: 'histogram';
  readonly buckets: readonly number[];
  samples(): readonly HistogramSample[];
}

export type Metric = CounterMetric | GaugeMetric | HistogramMetric;

const key = (values: readonly string[]): string => values.join('\u0000');

const labelsOf = (names: readonly string[], values: readonly string[]): Labels => {
  const labels: Record<string, string> = {};
  names.forEach((name, i) => (labels[name] = values[i] ?? ''));
  return labels;
};

/** A counter: `inc(1, 'GET', '/items')` with values in the order of its label names. */
export class Counter implements CounterMetric {
  readonly type = 'counter';
  readonly name: string;
  readonly help: string;
  readonly #labelNames: readonly string[];
  readonly #series = new Map<string, { values: readonly string[]; value: number }>();

  constructor(name: string, help: string, labelNames: readonly string[] = []) {
    this.name = name;
    this.help = help;
    this.#labelNames = labelNames;
    // A counter without labels has its one series from the start, at 0: a series that appears only
    // at its first increment hides that increment from rate() and increase(), and an alert on it
    // cannot tell "none yet" from "not scraped".
    if (labelNames.length === 0) this.series();
  }

  inc(by = 1, ...values: string[]): void {
    this.series(...values).value += by;
  }

  /** The series of these label values, made on first use; hot paths keep it and add to `value`. */
  series(...values: string[]): { value: number } {
    const k = key(values);
    let series = this.#series.get(k);
    if (series === undefined) this.#series.set(k, (series = { values, value: 0 }));
    return series;
  }

  /** The value of one series (0 when never incremented). */
  get(...values: string[]): number {
    return this.#series.get(key(values))?.value ?? 0;
  }

  samples(): Sample[] {
    return [...this.#series.values()].map((s) => ({ labels: labelsOf(this.#labelNames, s.values), value: s.value }));
  }
}

/** A gauge read when scraped: `collect` returns its series at that moment. */
export class Gauge implements GaugeMetric {
  readonly type = 'gauge';
  readonly name: string;
  readonly help: string;
  readonly #collect: () => readonly Sample[];

  constructor(name: string, help: string, collect: () => readonly Sample[]) {
    this.name = name;
    this.help = help;
    this.#collect = collect;
  }

  samples(): readonly Sample[] {
    return this.#collect();
  }
}

/** One series of a histogram; hot paths keep it and call `observe`. */
export class HistogramSeries {
  readonly values: readonly string[];
  readonly #buckets: readonly number[];
  /** Per bucket, not cumulative: made cumulative when scraped. */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(values: readonly string[], buckets: readonly number[]) {
    this.values = values;
    this.#buckets = buckets;
    this.counts = new Array<number>(buckets.length).fill(0);
  }

  observe(value: number): void {
    // Buckets are few (about ten): a linear scan beats a binary search at this size.
    const buckets = this.#buckets;
    for (let i = 0; i < buckets.length; i++) {
      if (value <= (buckets[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        break;
      }
    }
    this.sum += value;
    this.count++;
  }
}

/** A histogram with fixed upper bounds; `+Inf` is implied. */
export class Histogram implements HistogramMetric {
  readonly type = 'histogram';
  readonly name: string;
  readonly help: string;
  readonly buckets: readonly number[];
  readonly #labelNames: readonly string[];
  readonly #series = new Map<string, HistogramSeries>();

  constructor(name: string, help: string, buckets: readonly number[], labelNames: readonly string[] = []) {
    this.name = name;
    this.help = help;
    this.buckets = buckets;
    this.#labelNames = labelNames;
  }

  observe(value: number, ...values: string[]): void {
    this.series(...values).observe(value);
  }

  /** The series of these label values, made on first use. */
  series(...values: string[]): HistogramSeries {
    const k = key(values);
    let series = this.#series.get(k);
    if (series === undefined) this.#series.set(k, (series = new HistogramSeries(values, this.buckets)));
    return series;
  }

  /** Observations of one series so far. */
  count(...values: string[]): number {
    return this.#series.get(key(values))?.count ?? 0;
  }

  samples(): HistogramSample[] {
    return [...this.#series.values()].map((s) => {
      let running = 0;
      const counts = s.counts.map((n) => (running += n));
      return { labels: labelsOf(this.#labelNames, s.values), counts, sum: s.sum, count: s.count };
    });
  }
}

/** The metrics of one server, in the order they are exposed. */
export class Registry {
  readonly #metrics: Metric[] = [];

  add<M extends Metric>(metric: M): M {
    this.#metrics.push(metric);
    return metric;
  }

  get metrics(): readonly Metric[] {
    return this.#metrics;
  }
}
