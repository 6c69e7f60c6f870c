import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';

/** The value of one series in a Prometheus text scrape (`name{labels}` exactly), or undefined. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const PROMTOOL = '/usr/bin/promtool';

/**
 * `promtool check metrics` passes over a scrape, without a word (Debian package prometheus; .ci/run
 * installs it). Where promtool is missing, the check is skipped with a diagnostic.
 */
export function promtoolAccepts(t: TestContext, text: string): void {
  if (!existsSync(PROMTOOL)) {
    t.diagnostic('promtool is missing (Debian package prometheus; .ci/run installs it): check skipped');
    return;
  }
  const checked = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(checked.status, 0, `promtool: ${checked.stdout}${checked.stderr}`);
  assert.equal(`${checked.stdout}${checked.stderr}`.trim(), '');
}
