import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { api, metricTotals } from '../api.js';
import { ErrorNote } from '../components.js';

const SAMPLE_EVERY_MS = 5000;
const HOUR_OF_SAMPLES = 3600_000 / SAMPLE_EVERY_MS;
const COUNTERS = ['burrow_http_requests_total', 'burrow_public_connections_total', 'burrow_public_bytes_total', 'burrow_public_connections_denied_total'] as const;

interface Sample {
  at: number;
  agents: number;
  endpoints: number;
  apiRequests: number;
  connections: number;
  bytes: number;
  denials: number;
}

/** Samples live across page changes (not across reloads): the last hour, one every 5 s. */
const samples: Sample[] = [];
let previous: { at: number; totals: Record<string, number> } | undefined;

async function sample(): Promise<{ endpointsByKind: Record<string, number> }> {
  const [sessions, endpoints, totals] = await Promise.all([
    api.get<{ tunnel_sessions: unknown[] }>('/tunnel_sessions?limit=100'),
    api.get<{ endpoints: { proto: string }[] }>('/endpoints?limit=100'),
    metricTotals(COUNTERS),
  ]);
  const at = Date.now();
  const rate = (name: string) => (previous ? Math.max(0, (totals[name]! - previous.totals[name]!) / ((at - previous.at) / 1000)) : 0);
  samples.push({
    at,
    agents: sessions.tunnel_sessions.length,
    endpoints: endpoints.endpoints.length,
    apiRequests: rate('burrow_http_requests_total'),
    connections: rate('burrow_public_connections_total'),
    bytes: rate('burrow_public_bytes_total'),
    denials: rate('burrow_public_connections_denied_total'),
  });
  previous = { at, totals };
  if (samples.length > HOUR_OF_SAMPLES) samples.splice(0, samples.length - HOUR_OF_SAMPLES);
  const endpointsByKind: Record<string, number> = {};
  for (const endpoint of endpoints.endpoints) endpointsByKind[endpoint.proto] = (endpointsByKind[endpoint.proto] ?? 0) + 1;
  return { endpointsByKind };
}

function Chart({ title, series, version }: { title: string; series: { label: string; pick: (s: Sample) => number }[]; version: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const data = (): uPlot.AlignedData => [samples.map((s) => s.at / 1000), ...series.map((line) => samples.map(line.pick))];
  useEffect(() => {
    const width = Math.max(280, box.current!.clientWidth);
    plot.current = new uPlot(
      {
        title,
        width,
        height: 180,
        series: [{}, ...series.map((line, i) => ({ label: line.label, stroke: ['#1e88e5', '#43a047', '#e53935', '#8e24aa'][i % 4]!, width: 2 }))],
        axes: [{}, { size: 60 }],
      },
      data(),
      box.current!,
    );
    // Follow the page's width (a phone turned, a window resized).
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(280, box.current!.clientWidth), height: 180 }));
    resize.observe(box.current!);
    return () => (resize.disconnect(), plot.current?.destroy());
  }, []);
  useEffect(() => plot.current?.setData(data()), [version]);
  return <div class="chart" ref={box} />;
}

export function Overview() {
  const [version, setVersion] = useState(0);
  const [kinds, setKinds] = useState<Record<string, number>>({});
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    let stopped = false;
    const tick = () =>
      sample().then(
        (result) => {
          if (stopped) return;
          setKinds(result.endpointsByKind);
          setError(undefined);
          setVersion((v) => v + 1);
        },
        (failure: unknown) => !stopped && setError(failure),
      );
    void tick();
    const timer = setInterval(tick, SAMPLE_EVERY_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);
  const last = samples.at(-1);
  return (
    <section>
      <h2>Overview</h2>
      <ErrorNote error={error} />
      <div class="grid stats">
        <article>
          <small>Agents online</small>
          <p class="stat" data-testid="agents-online">{last?.agents ?? '…'}</p>
        </article>
        <article>
          <small>Endpoints</small>
          <p class="stat">{last?.endpoints ?? '…'}</p>
          <small>{Object.entries(kinds).map(([kind, count]) => `${kind} ${count}`).join(' · ') || 'none'}</small>
        </article>
      </div>
      <p class="muted">Live since this page opened (a sample every 5 s, the last hour kept); rates are this instance’s counters.</p>
      <Chart title="Agents and endpoints" version={version} series={[{ label: 'agents', pick: (s) => s.agents }, { label: 'endpoints', pick: (s) => s.endpoints }]} />
      <Chart
        title="Per second"
        version={version}
        series={[
          { label: 'API requests', pick: (s) => s.apiRequests },
          { label: 'public connections', pick: (s) => s.connections },
          { label: 'denials', pick: (s) => s.denials },
        ]}
      />
      <Chart title="Public bytes per second" version={version} series={[{ label: 'bytes', pick: (s) => s.bytes }]} />
    </section>
  );
}
