import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { test } from 'node:test';
import { loopDelaySeconds } from '../../src/metrics/server-metrics.js';

test('a monitor reading (the whole interval between samples) -> the delay beyond the 10 ms resolution, never below 0', () => {
  for (const [nanoseconds, seconds] of [
    [10_200_000, 0.0002],
    [10_000_000, 0],
    [9_224_192, 0],
    [35_000_000, 0.025],
    [Number.NaN, 0],
  ] as const) {
    assert.ok(Math.abs(loopDelaySeconds(nanoseconds) - seconds) < 1e-12, `${nanoseconds} ns -> ${loopDelaySeconds(nanoseconds)} s, not ${seconds}`);
  }
});

test('what Node\'s monitor records -> each interval whole: its smallest reading is near the resolution, not near 0', async () => {
  const monitor = monitorEventLoopDelay({ resolution: 10 });
  monitor.enable();
  await new Promise((resolve) => setTimeout(resolve, 100));
  monitor.disable();
  // However loaded the machine, an interval of a 10 ms timer is never much under 10 ms.
  assert.ok(monitor.min >= 8_000_000, `min ${monitor.min} ns`);
});
