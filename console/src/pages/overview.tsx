import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { api } from '../api.js';
import { ErrorNote } from '../components.js';

/** The server writes each instance's counts every 10 s: reading more often shows nothing new. */
const REFRESH_EVERY_MS = 10_000;
const COLOURS = ['#1e88e5', '#43a047', '#e53935', '#8e24aa', '#fb8c00', '#00897b'];

/** GET /traffic_history: the last hour per minute, summed over every instance. */
interface TrafficHistory {
  times: number[];
  connections: number[];
  requests: number[];
  bytes_in: number[];
  bytes_out: number[];
  denials: Record<string, number[]>;
  instances: number;
}

interface Line {
  label: string;
  values: number[];
}

interface Snapshot {
  agents: number;
  endpointsByKind: Record<string, number>;
  history: TrafficHistory;
}

async function load(): Promise<Snapshot> {
  const [sessions, endpoints, history] = await Promise.all([
    api.get<{ tunnel_sessions: unknown[] }>('/tunnel_sessions?limit=100'),
    api.get<{ endpoints: { proto: string }[] }>('/endpoints?limit=100'),
    api.get<TrafficHistory>('/traffic_history'),
  ]);
  const endpointsByKind: Record<string, number> = {};
  for (const endpoint of endpoints.endpoints) endpointsByKind[endpoint.proto] = (endpointsByKind[endpoint.proto] ?? 0) + 1;
  return { agents: sessions.tunnel_sessions.length, endpointsByKind, history };
}

/** One uPlot chart; made again when its lines change (a new denial action), else given new data. */
function Chart({ title, times, lines }: { title: string; times: number[]; lines: Line[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const data: uPlot.AlignedData = [times, ...lines.map((line) => line.values)];
  const shape = lines.map((line) => line.label).join('\n');
  useEffect(() => {
    const width = Math.max(280, box.current!.clientWidth);
    plot.current = new uPlot(
      {
        title,
        width,
        height: 180,
        series: [{}, ...lines.map((line, i) => ({ label: line.label, stroke: COLOURS[i % COLOURS.length]!, width: 2 }))],
        axes: [{}, { size: 60 }],
      },
      data,
      box.current!,
    );
    // Follow the page's width (a phone turned, a window resized).
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(280, box.current!.clientWidth), height: 180 }));
    resize.observe(box.current!);
    return () => (resize.disconnect(), plot.current?.destroy());
  }, [shape]);
  useEffect(() => plot.current?.setData(data), [times, lines]);
  return <div class="chart" ref={box} role="img" aria-label={`${title}: ${lines.map((line) => `${line.label} ${sum(line.values)}`).join(', ')} in the last hour`} />;
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

export function Overview() {
  const [snapshot, setSnapshot] = useState<Snapshot | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    let stopped = false;
    const tick = () =>
      load().then(
        (result) => {
          if (stopped) return;
          setSnapshot(result);
          setError(undefined);
        },
        (failure: unknown) => !stopped && setError(failure),
      );
    void tick();
    const timer = setInterval(tick, REFRESH_EVERY_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);
  const history = snapshot?.history;
  const denials = Object.entries(history?.denials ?? {}).map(([action, values]) => ({ label: action, values }));
  return (
    <section>
      <h2>Overview</h2>
      <ErrorNote error={error} />
      <div class="grid stats">
        <article>
          <small>Agents online</small>
          <p class="stat" data-testid="agents-online">{snapshot?.agents ?? '…'}</p>
        </article>
        <article>
          <small>Endpoints</small>
          <p class="stat">{snapshot ? sum(Object.values(snapshot.endpointsByKind)) : '…'}</p>
          <small>{Object.entries(snapshot?.endpointsByKind ?? {}).map(([kind, count]) => `${kind} ${count}`).join(' · ') || 'none'}</small>
        </article>
        <article>
          <small>Requests in the last hour</small>
          <p class="stat" data-testid="requests-hour">{history ? sum(history.requests) : '…'}</p>
        </article>
      </div>
      <p class="muted">
        The last hour, per minute, summed over {history?.instances ?? '…'} instance{history?.instances === 1 ? '' : 's'}; refreshed every 10 s. These are the
        server’s counts (as /metrics has them), every account’s traffic together.
      </p>
      {history ? (
        <>
          <Chart
            title="Connections and requests per minute"
            times={history.times}
            lines={[
              { label: 'connections', values: history.connections },
              { label: 'HTTP requests', values: history.requests },
            ]}
          />
          <Chart
            title="Bytes per minute"
            times={history.times}
            lines={[
              { label: 'in (from clients)', values: history.bytes_in },
              { label: 'out (to clients)', values: history.bytes_out },
            ]}
          />
          <Chart title="Denials per minute, by action" times={history.times} lines={denials.length > 0 ? denials : [{ label: 'none', values: history.times.map(() => 0) }]} />
        </>
      ) : null}
    </section>
  );
}
