// @test-pass sqlite
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram } from '../../src/observability/prometheus.js';

describe('Prometheus text rendering', () => {
  it('renders counters with escaped label values', () => {
    const counter = new Counter('c_total', 'A counter.');
    counter.get('a', () => ({ route: '/x', note: 'say "hi"\\\n' })).inc(2);
    assert.equal(counter.render(), '# HELP c_total A counter.\n# TYPE c_total counter\nc_total{route="/x",note="say \\"hi\\"\\\\\\n"} 2\n');
  });

  it('renders histograms with cumulative buckets, +Inf, sum and count', () => {
    const histogram = new Histogram('h_seconds', 'A histogram.', [0.1, 1]);
    const series = histogram.get('k', () => ({ kind: 'select' }));
    for (const value of [0.05, 0.5, 0.5, 3]) series.observe(value);
    assert.equal(
      histogram.render(),
      [
        '# HELP h_seconds A histogram.',
        '# TYPE h_seconds histogram',
        'h_seconds_bucket{kind="select",le="0.1"} 1',
        'h_seconds_bucket{kind="select",le="1"} 3',
        'h_seconds_bucket{kind="select",le="+Inf"} 4',
        'h_seconds_sum{kind="select"} 4.05',
        'h_seconds_count{kind="select"} 4',
        '',
      ].join('\n'),
    );
  });
});
