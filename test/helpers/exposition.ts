/**
 * A strict reader of the two exposition formats a Prometheus server scrapes, for tests: the
 * Prometheus text format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats) and
 * OpenMetrics 1.0 text. No npm package that validates them strictly is installed, so the rules
 * are written here from the specifications; each failure throws with the line number and why.
 *
 * Checked: line grammar (names, label sets and their escapes, values as Go/OpenMetrics floats
 * spelled exactly: NaN, +Inf, -Inf), HELP and TYPE at most once per family and before its
 * samples, every sample belonging to the family it follows, no series (name + label set) twice,
 * no label name twice in a set, histograms with increasing `le`, cumulative counts that never
 * decrease, a `+Inf` bucket equal to `_count`; for OpenMetrics also `# EOF` last and only once,
 * no blank line, counter families named without `_total` and their samples with it.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const FLOAT = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
const TYPES = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];
const OM_TYPES = ['counter', 'gauge', 'histogram', 'gaugehistogram', 'stateset', 'info', 'summary', 'unknown'];

export function parseExposition(text: string, format: 'prometheus' | 'openmetrics'): Map<string, Family> {
  const om = format === 'openmetrics';
  const families = new Map<string, Family>();
  const seriesSeen = new Set<string>();
  let current: Family | undefined;
  const lines = text.split('\n');
  const fail = (index: number, why: string): never => {
    throw new Error(`line ${index + 1} ${JSON.stringify(lines[index])}: ${why}`);
  };
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a line feed');
  lines.pop(); // after the final \n
  if (om && lines.at(-1) !== '# EOF') throw new Error('OpenMetrics must end with "# EOF"');

  const familyOf = (index: number, name: string, declare: boolean): Family => {
    let family = families.get(name);
    if (!family) {
      if (!declare) fail(index, `a sample of ${name} outside its family`);
      family = { name, type: om ? 'unknown' : 'untyped', samples: [] };
      families.set(name, family);
    } else if (declare && family !== current) fail(index, `the family ${name} appears twice (its lines must be together)`);
    if (declare && family.samples.length > 0) fail(index, `HELP or TYPE of ${name} after its samples`);
    current = family;
    return family;
  };

  lines.forEach((line, index) => {
    if (line === '') {
      if (om) fail(index, 'OpenMetrics has no blank lines');
      return;
    }
    if (line.startsWith('#')) {
      if (line === '# EOF') {
        if (!om || index !== lines.length - 1) fail(index, '# EOF only as the last line of OpenMetrics');
        return;
      }
      const match = /^# (HELP|TYPE|UNIT) (\S+)(?: (.*))?$/.exec(line);
      if (!match) {
        if (om) fail(index, 'OpenMetrics comments are only HELP, TYPE, UNIT and EOF');
        return; // a plain comment in the Prometheus format
      }
      const [, keyword, name, rest = ''] = match as unknown as [string, string, string, string | undefined];
      if (!METRIC_NAME.test(name)) fail(index, `bad metric name ${name}`);
      const family = familyOf(index, name, true);
      if (keyword === 'HELP') {
        if (family.help !== undefined) fail(index, `a second HELP for ${name}`);
        checkEscapes(rest, om ? /\\[\\n"]/g : /\\[\\n]/g, index, fail);
        family.help = rest;
      } else if (keyword === 'TYPE') {
        if (!(om ? OM_TYPES : TYPES).includes(rest)) fail(index, `unknown type ${rest}`);
        if ((family as Family & { typed?: boolean }).typed) fail(index, `a second TYPE for ${name}`);
        (family as Family & { typed?: boolean }).typed = true;
        if (om && rest === 'counter' && name.endsWith('_total')) fail(index, 'an OpenMetrics counter family is named without _total');
        family.type = rest;
      } else if (!om) fail(index, 'UNIT is OpenMetrics only');
      return;
    }

    const sample = parseSample(line, index, fail, om);
    if (!current || !belongs(sample.name, current, om)) {
      // A sample with no HELP or TYPE of its own starts an untyped family.
      if (families.has(sample.name)) fail(index, `${sample.name} away from its family: a family's lines must be together`);
      current = { name: sample.name, type: om ? 'unknown' : 'untyped', samples: [] };
      families.set(sample.name, current);
    }
    const key = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (seriesSeen.has(key)) fail(index, `the series ${sample.name}${JSON.stringify(sample.labels)} appears twice`);
    seriesSeen.add(key);
    current.samples.push(sample);
  });

  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

/** Whether a sample name is one of the family's: its own, or its type's suffixes. */
function belongs(name: string, family: Family, om: boolean): boolean {
  const suffixes: Record<string, string[]> = om
    ? { counter: ['_total', '_created'], histogram: ['_bucket', '_sum', '_count', '_created'], summary: ['', '_sum', '_count', '_created'], info: ['_info'] }
    : { histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };
  return (suffixes[family.type] ?? ['']).some((suffix) => name === family.name + suffix);
}

function parseSample(line: string, index: number, fail: (index: number, why: string) => never, om: boolean): Sample {
  const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
  if (!nameMatch) return fail(index, 'a sample must start with a metric name');
  const name = nameMatch[0];
  let rest = line.slice(name.length);
  const labels: Record<string, string> = {};
  if (rest.startsWith('{')) {
    let i = 1;
    while (rest[i] !== '}') {
      const labelMatch = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(rest.slice(i));
      if (!labelMatch || !LABEL_NAME.test(labelMatch[0])) fail(index, 'bad label name');
      const label = labelMatch![0];
      i += label.length;
      if (rest.slice(i, i + 2) !== '="') fail(index, `label ${label} must be followed by ="`);
      i += 2;
      let value = '';
      for (;;) {
        const c = rest[i];
        if (c === undefined) fail(index, 'unterminated label value');
        if (c === '"') break;
        if (c === '\\') {
          const next = rest[i + 1];
          if (next === 'n') value += '\n';
          else if (next === '\\' || next === '"') value += next;
          else fail(index, `bad escape \\${next ?? ''} in a label value`);
          i += 2;
          continue;
        }
        if (c === '\n') fail(index, 'a raw line feed in a label value');
        value += c;
        i++;
      }
      i++; // closing quote
      if (Object.hasOwn(labels, label)) fail(index, `label ${label} twice`);
      labels[label] = value;
      if (rest[i] === ',') {
        i++;
        if (om && rest[i] === '}') fail(index, 'OpenMetrics has no trailing comma in a label set');
      } else if (rest[i] !== '}') fail(index, 'labels are separated by ","');
    }
    rest = rest.slice(i + 1);
  }
  if (!rest.startsWith(' ')) fail(index, 'one space between the series and its value');
  const parts = rest.slice(1).split(' ');
  if (parts.length > 2 || parts.some((part) => part === '')) fail(index, 'a value and at most a timestamp, single spaces');
  const value = parseValue(parts[0]!, index, fail);
  if (parts[1] !== undefined && !(om ? FLOAT : /^-?[0-9]+$/).test(parts[1])) fail(index, 'bad timestamp');
  return { name, labels, value };
}

function parseValue(text: string, index: number, fail: (index: number, why: string) => never): number {
  if (text === 'NaN') return Number.NaN;
  if (text === '+Inf' || text === 'Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  if (!FLOAT.test(text)) fail(index, `the value ${text} is not a float (NaN, +Inf and -Inf are spelled so)`);
  return Number(text);
}

function checkEscapes(text: string, allowed: RegExp, index: number, fail: (index: number, why: string) => never): void {
  const stripped = text.replace(allowed, '');
  if (stripped.includes('\\')) fail(index, 'a backslash that is not an allowed escape');
  if (allowed.source.includes('"') && stripped.includes('"')) fail(index, 'OpenMetrics escapes " in HELP');
}

function checkHistogram(family: Family): void {
  const series = new Map<string, { buckets: [number, number][]; count?: number }>();
  for (const sample of family.samples) {
    const { le, ...rest } = sample.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (sample.name === `${family.name}_bucket`) {
      if (le === undefined) throw new Error(`${family.name}: a bucket without le`);
      entry.buckets.push([le === '+Inf' ? Infinity : Number(le), sample.value]);
    } else if (sample.name === `${family.name}_count`) entry.count = sample.value;
  }
  for (const [key, { buckets, count }] of series) {
    const where = `${family.name}${key}`;
    if (buckets.at(-1)?.[0] !== Infinity) throw new Error(`${where}: no +Inf bucket last`);
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i]![0] > buckets[i - 1]![0])) throw new Error(`${where}: le not increasing`);
      if (buckets[i]![1] < buckets[i - 1]![1]) throw new Error(`${where}: bucket counts decrease`);
    }
    if (count !== undefined && count !== buckets.at(-1)![1]) throw new Error(`${where}: _count differs from the +Inf bucket`);
  }
}
