/** Small pure helpers for the figures: medians and paired ratios. */

/** The median of the finite values (NaN when there are none). */
export function median(values: readonly number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The median of per-round ratios `a[i] / b[i]`. Rounds are interleaved, so a round's two figures
 * were taken under the same background load; pairing them cancels much of the noise of a shared machine.
 */
export function pairedRatio(a: readonly number[], b: readonly number[]): number {
  const ratios: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i++) ratios.push(a[i]! / b[i]!);
  return median(ratios);
}

/** A number for a table: `digits` decimals, thousands separated. */
export function fmt(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return '–';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A share as a whole percentage ('–' for none). */
export function percent(share: number): string {
  return Number.isFinite(share) ? `${fmt(share * 100)}%` : '–';
}
