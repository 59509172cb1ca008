/**
 * Counters and histograms in the Prometheus text format, for the per-request metrics. Recording
 * is a map lookup and a few additions: prom-client hashes the label set on every observation,
 * which showed up in request profiles. Process metrics still come from prom-client.
 */
type Labels = Readonly<Record<string, string>>;

function renderLabels(labels: Labels, extra?: [string, string]): string {
  const pairs = Object.entries(labels);
  if (extra) pairs.push(extra);
  if (pairs.length === 0) return '';
  return `{${pairs.map(([name, value]) => `${name}="${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',')}}`;
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
  abstract render(): string;
}

export class Counter extends Family<CounterSeries> {
  protected make(labels: Labels) {
    return new CounterSeries(labels);
  }

  render(): string {
    let text = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} counter\n`;
    for (const series of this.series.values()) text += `${this.name}${renderLabels(series.labels)} ${series.value}\n`;
    return text;
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

  render(): string {
    let text = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} histogram\n`;
    for (const series of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += series.counts[i]!;
        text += `${this.name}_bucket${renderLabels(series.labels, ['le', String(bound)])} ${cumulative}\n`;
      });
      text += `${this.name}_bucket${renderLabels(series.labels, ['le', '+Inf'])} ${series.count}\n`;
      text += `${this.name}_sum${renderLabels(series.labels)} ${series.sum}\n`;
      text += `${this.name}_count${renderLabels(series.labels)} ${series.count}\n`;
    }
    return text;
  }
}

/** A gauge read when the metrics are rendered: `collect` returns each series' labels and value. */
export class CallbackGauge {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly collect: () => Iterable<readonly [Labels, number]>,
  ) {}

  render(): string {
    let text = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} gauge\n`;
    for (const [labels, value] of this.collect()) text += `${this.name}${renderLabels(labels)} ${value}\n`;
    return text;
  }
}
