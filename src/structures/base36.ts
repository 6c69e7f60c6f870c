/** 36^5: below it a number is a small integer, whose `toString(36)` is quick. */
const SPLIT = 60_466_176;

/**
 * `n.toString(36)` for an integer 0 ≤ n < 2^53, the same digits, about ten times sooner for the
 * large ones: V8 writes a double above 2^31 in another radix digit by digit through its general
 * double-to-radix path (1.6–2 µs for a 53-bit hash, measured on Node 20), while two small integers
 * take ~0.15 µs. Every entity version (jsonl-entity.ts `versionOf`) ends in such a hash.
 */
export function base36(n: number): string {
  if (n < SPLIT) return n.toString(36);
  const high = Math.floor(n / SPLIT);
  return high.toString(36) + (n - high * SPLIT).toString(36).padStart(5, '0');
}
