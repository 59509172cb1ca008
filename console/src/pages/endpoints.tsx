import { DataTable, Empty, ErrorNote, Id, UrlLink, useList } from '../components.js';
import { labelText } from './groups.js';

interface Endpoint {
  id: string;
  url?: string;
  public_url?: string;
  proto: string;
  type: string;
  traffic_policy?: string;
  tunnel?: { id: string };
  created_at: string;
}

interface Tunnel {
  id: string;
  public_url?: string;
  proto?: string;
  labels?: Record<string, string>;
  forwards_to: string;
  tunnel_session: { id: string };
  started_at: string;
}

/** Endpoints (GET /endpoints) and the tunnels behind them (GET /tunnels). */
export function Endpoints() {
  const endpoints = useList<Endpoint>('/endpoints', 'endpoints');
  const tunnels = useList<Tunnel>('/tunnels', 'tunnels');
  const sessionOf = (tunnelId: string | undefined) => tunnels.items.find((tunnel) => tunnel.id === tunnelId)?.tunnel_session.id;
  return (
    <section>
      <h2>Endpoints</h2>
      <button type="button" class="outline" onClick={() => (endpoints.reload(), tunnels.reload())}>
        Refresh
      </button>
      <ErrorNote error={endpoints.error ?? tunnels.error} />
      {endpoints.items.length === 0 ? (
        <Empty loading={endpoints.loading} what="endpoints" />
      ) : (
        <DataTable
          items={endpoints.items}
          columns={[
            { title: 'URL', cell: (endpoint) => <UrlLink url={endpoint.url ?? endpoint.public_url} /> },
            { title: 'Kind', cell: (endpoint) => endpoint.proto },
            { title: 'Policy', cell: (endpoint) => (endpoint.traffic_policy ? <pre class="inline-policy">{endpoint.traffic_policy}</pre> : 'none') },
            { title: 'Agent', cell: (endpoint) => <Id id={sessionOf(endpoint.tunnel?.id) ?? '—'} /> },
            { title: 'Created', cell: (endpoint) => endpoint.created_at },
          ]}
        />
      )}
      <h2>Tunnels</h2>
      {tunnels.items.length === 0 ? (
        <Empty loading={tunnels.loading} what="tunnels" />
      ) : (
        <DataTable
          items={tunnels.items}
          columns={[
            { title: 'Tunnel', cell: (tunnel) => <Id id={tunnel.id} /> },
            { title: 'URL or labels', cell: (tunnel) => (tunnel.public_url ? <UrlLink url={tunnel.public_url} /> : labelText(tunnel.labels ?? {})) },
            { title: 'Forwards to', cell: (tunnel) => tunnel.forwards_to },
            { title: 'Agent', cell: (tunnel) => <Id id={tunnel.tunnel_session.id} /> },
            { title: 'Started', cell: (tunnel) => tunnel.started_at },
          ]}
        />
      )}
    </section>
  );
}
