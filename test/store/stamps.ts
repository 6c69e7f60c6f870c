/** A log's text without its lines' change stamps (src/store/changes/change-stamp.ts): the entities' JSON, as tests compare it. */
export const withoutStamps = (text: string): string => text.replace(/,"_change":"[0-9]+\.[cud]\.[0-9]+"\}/g, '}');

/** A clock for stores under test: ms since the epoch, moved by hand (deletes expire when it passes their retention). */
export function manualClock(start = Date.UTC(2026, 0, 1)): { now: () => number; advance(ms: number): void } {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}
