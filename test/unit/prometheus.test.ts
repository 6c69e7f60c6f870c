import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Counter, Gauge, Histogram } from '../../src/metrics/registry.js';
import { prometheusText } from '../../src/representations/prometheus.js';

describe('prometheusText', () => {
  test('counter, gauge and histogram -> the text exposition format, label values escaped', () => {
    const counter = new Counter('x_total', 'Things.\nCounted \\ here.', ['method', 'route']);
    counter.inc(1, 'GET', '/a"b');
    counter.inc(2, 'GET', '/a"b');
    const gauge = new Gauge('y', 'A level.', () => [{ labels: {}, value: 1.5 }]);
    const histogram = new Histogram('z_seconds', 'Times.', [0.1, 1], ['kind']);
    histogram.observe(0.05, 'plain');
    histogram.observe(0.5, 'plain');
    histogram.observe(5, 'plain');
    assert.equal(
      prometheusText([counter, gauge, histogram]),
      [
        '# HELP x_total Things.\\nCounted \\\\ here.',
        '# TYPE x_total counter',
        'x_total{method="GET",route="/a\\"b"} 3',
        '# HELP y A level.',
        '# TYPE y gauge',
        'y 1.5',
        '# HELP z_seconds Times.',
        '# TYPE z_seconds histogram',
        'z_seconds_bucket{kind="plain",le="0.1"} 1',
        'z_seconds_bucket{kind="plain",le="1"} 2',
        'z_seconds_bucket{kind="plain",le="+Inf"} 3',
        'z_seconds_sum{kind="plain"} 5.55',
        'z_seconds_count{kind="plain"} 3',
        '',
      ].join('\n'),
    );
    assert.equal(counter.get('GET', '/a"b'), 3);
    assert.equal(histogram.count('plain'), 3);
  });

  test('a counter without labels, never incremented -> its series at 0 (so rate() sees the first increment); one with labels -> no series yet', () => {
    const plain = new Counter('refused_total', 'Refused.');
    const labelled = new Counter('by_total', 'By cause.', ['cause']);
    assert.equal(prometheusText([plain, labelled]), ['# HELP refused_total Refused.', '# TYPE refused_total counter', 'refused_total 0', '# HELP by_total By cause.', '# TYPE by_total counter', ''].join('\n'));
    plain.inc();
    assert.match(prometheusText([plain]), /^refused_total 1$/m);
  });

  test('a gauge of Infinity and NaN -> +Inf and NaN', () => {
    const text = prometheusText([new Gauge('g', 'G.', () => [{ labels: { a: '1' }, value: Infinity }, { labels: { a: '2' }, value: NaN }, { labels: { a: '3' }, value: -Infinity }])]);
    assert.match(text, /g\{a="1"\} \+Inf\ng\{a="2"\} NaN\ng\{a="3"\} -Inf\n$/);
  });
});
