/**
 * Expected operational failures (a full disk) as one line each, at most one per kind every
 * `intervalMs`: a server refusing writes for an hour should say so, not print thousands of lines.
 * Lines held back are counted and the count is said with the next line of that kind.
 */
export function createOperationalLog(warn: (message: string) => void, intervalMs = 10_000, now: () => number = Date.now): (kind: string, message: string) => void {
  const last = new Map<string, { at: number; held: number }>();
  return (kind, message) => {
    const t = now();
    const seen = last.get(kind);
    if (seen !== undefined && t - seen.at < intervalMs) {
      seen.held++;
      return;
    }
    const held = seen?.held ?? 0;
    // Kinds come from a bounded set (resource × errno code), so this map stays small.
    last.set(kind, { at: t, held: 0 });
    warn(held > 0 ? `${message} (${held} more like it since the last report)` : message);
  };
}

/** The errno code in a failure's message (`ENOSPC`, `EIO`, `EDQUOT`…), or `unknown`. */
export function failureCause(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) return code;
  const match = /\b(E[A-Z][A-Z0-9]+)\b/.exec(error instanceof Error ? error.message : String(error));
  return match?.[1] ?? 'unknown';
}
