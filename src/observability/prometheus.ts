/**
 * Counters and histograms, and the one renderer of every metric family (ours and prom-client's
 * process metrics) in the two formats a Prometheus server scrapes: the text format 0.0.4 and
 * OpenMetrics 1.0. Recording is a map lookup and a few additions: prom-client hashes the label
 * set on every observation, which showed up in request profiles. prom-client still measures the
 * process; its own text writer is not used, since it spells NaN "Nan", which no parser accepts.
 */
type Labels = Readonly<Record<string, string>>;

export type ExpositionFormat = 'prometheus' | 'openmetrics';

export const CONTENT_TYPES: Readonly<Record<ExpositionFormat, string>> = {
  prometheus: 'text/plain; version=0.0.4; charset=utf-8',
  openmetrics: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
};

export interface FamilySnapshot {
  name: string;
  help: string;
  type: string;
  samples: { name: string; labels: Labels; value: number }[];
}

export class CounterSeries {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(by = 1): void {
    this.value += by;
  }
}

export class HistogramSeries {
  count = 0;
  sum = 0;
  readonly counts: number[];

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Array<number>(bounds.length).fill(0);
  }

  observe(value: number): void {
    this.count++;
    this.sum += value;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

abstract class Family<S> {
  protected readonly series = new Map<string, S>();

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  /** The series for a label set, made on first use; `key` must identify the labels. */
  get(key: string, labels: () => Labels): S {
    let series = this.series.get(key);
    if (series === undefined) this.series.set(key, (series = this.make(labels())));
    return series;
  }

  protected abstract make(labels: Labels): S;
  abstract snapshot(): FamilySnapshot;

  render(format: ExpositionFormat = 'prometheus'): string {
    return renderFamily(this.snapshot(), format);
  }
}

export class Counter extends Family<CounterSeries> {
  protected make(labels: Labels) {
    return new CounterSeries(labels);
  }

  snapshot(): FamilySnapshot {
    const samples = [...this.series.values()].map((series) => ({ name: this.name, labels: series.labels, value: series.value }));
    return { name: this.name, help: this.help, type: 'counter', samples };
  }
}

export class Histogram extends Family<HistogramSeries> {
  constructor(
    name: string,
    help: string,
    private readonly bounds: readonly number[],
  ) {
    super(name, help);
  }

  protected make(labels: Labels) {
    return new HistogramSeries(labels, this.bounds);
  }

  snapshot(): FamilySnapshot {
    const samples: FamilySnapshot['samples'] = [];
    for (const series of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += series.counts[i]!;
        samples.push({ name: `${this.name}_bucket`, labels: { ...series.labels, le: String(bound) }, value: cumulative });
      });
      samples.push({ name: `${this.name}_bucket`, labels: { ...series.labels, le: '+Inf' }, value: series.count });
      samples.push({ name: `${this.name}_sum`, labels: series.labels, value: series.sum });
      samples.push({ name: `${this.name}_count`, labels: series.labels, value: series.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', samples };
  }
}

/** Families in order, then OpenMetrics' end marker. */
export function renderFamilies(families: readonly FamilySnapshot[], format: ExpositionFormat): string {
  const text = families.map((family) => renderFamily(family, format)).join('');
  return format === 'openmetrics' ? `${text}# EOF\n` : text;
}

/**
 * One family. OpenMetrics names a counter family without `_total` and its samples with it, and
 * calls an untyped family `unknown`. A sample whose value is NaN (a gauge with nothing measured
 * yet, such as the event loop's mean lag right after the previous scrape) is left out: a family
 * may have no sample, and a NaN would only break graphs and alerts.
 */
function renderFamily(family: FamilySnapshot, format: ExpositionFormat): string {
  const openMetrics = format === 'openmetrics';
  let name = family.name;
  let type = family.type;
  let sampleName = (sample: string) => sample;
  if (openMetrics && type === 'counter') {
    name = name.replace(/_total$/, '');
    sampleName = () => `${name}_total`;
  }
  if (openMetrics && type === 'untyped') type = 'unknown';
  let text = `# HELP ${name} ${escapeHelp(family.help, openMetrics)}\n# TYPE ${name} ${type}\n`;
  for (const sample of family.samples) {
    if (Number.isNaN(sample.value)) continue;
    text += `${sampleName(sample.name)}${renderLabels(sample.labels)} ${renderValue(sample.value)}\n`;
  }
  return text;
}

function renderLabels(labels: Labels): string {
  const pairs = Object.entries(labels);
  if (pairs.length === 0) return '';
  return `{${pairs.map(([name, value]) => `${name}="${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',')}}`;
}

function escapeHelp(help: string, openMetrics: boolean): string {
  const escaped = help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
  return openMetrics ? escaped.replace(/"/g, '\\"') : escaped;
}

function renderValue(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/** A gauge read when the metrics are rendered: `collect` returns each series' labels and value. */
export class CallbackGauge {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly collect: () => Iterable<readonly [Labels, number]>,
  ) {}

  snapshot(): FamilySnapshot {
    const samples = [...this.collect()].map(([labels, value]) => ({ name: this.name, labels, value }));
    return { name: this.name, help: this.help, type: 'gauge', samples };
  }
}
