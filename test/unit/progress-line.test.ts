import assert from 'node:assert/strict';
import { test } from 'node:test';
import { count, fraction, ProgressLine } from '../../src/progress-line.js';

/** A stream that records what is written to it; `isTTY` as a terminal or a pipe would say. */
function output(isTTY: boolean): { isTTY: boolean; written: string[]; write(text: string): boolean } {
  const written: string[] = [];
  return { isTTY, written, write: (text) => written.push(text) > 0 };
}

test('a terminal -> each update rewrites the line in place (CR, erase), at most once per interval; clear erases it', () => {
  let now = 0;
  const out = output(true);
  const line = new ProgressLine(out, 100, () => now);
  line.update('a');
  now = 50;
  line.update('b');
  line.update('c', true);
  now = 200;
  line.update('d');
  line.clear();
  line.clear();
  assert.deepEqual(out.written, ['\r\x1b[Ka', '\r\x1b[Kc', '\r\x1b[Kd', '\r\x1b[K']);
});

test('not a terminal -> nothing written, clear writes nothing either', () => {
  const out = output(false);
  const line = new ProgressLine(out);
  line.update('a', true);
  line.clear();
  assert.deepEqual(out.written, []);
});

test('count and fraction -> thousands separators and a whole percentage', () => {
  assert.equal(count(1_234_567), '1,234,567');
  assert.equal(fraction(412_000, 1_000_000), '412,000 / 1,000,000 (41%)');
  assert.equal(fraction(0, 0), '0 / 0 (100%)');
});
