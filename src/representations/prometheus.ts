import type { Labels, Metric } from '../metrics/registry.js';

/** The media type of the text exposition format, version 0.0.4 (what promtool and Prometheus read). */
export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

/** Exposition format: backslash, double quote and line feed are escaped in label values. */
const escapeLabel = (value: string): string => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
/** In HELP text only backslash and line feed are escaped. */
const escapeHelp = (value: string): string => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function labelText(labels: Labels, extra?: readonly [string, string]): string {
  const parts = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabel(value)}"`);
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

/** A number as the format writes it: `+Inf`, `-Inf`, `NaN`, or the shortest decimal. */
function numberText(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return Number.isNaN(value) ? 'NaN' : String(value);
}

/** Renders metrics in the Prometheus text exposition format (one `# HELP`, one `# TYPE` each). */
export function prometheusText(metrics: readonly Metric[]): string {
  const lines: string[] = [];
  for (const metric of metrics) {
    lines.push(`# HELP ${metric.name} ${escapeHelp(metric.help)}`, `# TYPE ${metric.name} ${metric.type}`);
    if (metric.type === 'histogram') {
      for (const sample of metric.samples()) {
        metric.buckets.forEach((bound, i) => {
          lines.push(`${metric.name}_bucket${labelText(sample.labels, ['le', numberText(bound)])} ${sample.counts[i] ?? 0}`);
        });
        lines.push(`${metric.name}_bucket${labelText(sample.labels, ['le', '+Inf'])} ${sample.count}`);
        lines.push(`${metric.name}_sum${labelText(sample.labels)} ${numberText(sample.sum)}`);
        lines.push(`${metric.name}_count${labelText(sample.labels)} ${sample.count}`);
      }
    } else {
      for (const sample of metric.samples()) lines.push(`${metric.name}${labelText(sample.labels)} ${numberText(sample.value)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
