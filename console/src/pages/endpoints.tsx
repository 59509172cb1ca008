import { Empty, ErrorNote, UrlLink, useList } from '../components.js';

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
        <div class="overflow-auto">
          <table class="striped">
            <thead>
              <tr>
                <th>URL</th>
                <th>Kind</th>
                <th>Policy</th>
                <th>Agent</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {endpoints.items.map((endpoint) => (
                <tr key={endpoint.id}>
                  <td>
                    <UrlLink url={endpoint.url ?? endpoint.public_url} />
                  </td>
                  <td>{endpoint.proto}</td>
                  <td>{endpoint.traffic_policy ? <pre class="inline-policy">{endpoint.traffic_policy}</pre> : 'none'}</td>
                  <td>
                    <code>{sessionOf(endpoint.tunnel?.id) ?? '—'}</code>
                  </td>
                  <td>{endpoint.created_at}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>Tunnels</h2>
      {tunnels.items.length === 0 ? (
        <Empty loading={tunnels.loading} what="tunnels" />
      ) : (
        <div class="overflow-auto">
          <table class="striped">
            <thead>
              <tr>
                <th>Tunnel</th>
                <th>URL or labels</th>
                <th>Forwards to</th>
                <th>Agent</th>
                <th>Started</th>
              </tr>
            </thead>
            <tbody>
              {tunnels.items.map((tunnel) => (
                <tr key={tunnel.id}>
                  <td>
                    <code>{tunnel.id}</code>
                  </td>
                  <td>
                    {tunnel.public_url ? (
                      <UrlLink url={tunnel.public_url} />
                    ) : (
                      Object.entries(tunnel.labels ?? {})
                        .map(([key, value]) => `${key}=${value}`)
                        .join(', ')
                    )}
                  </td>
                  <td>{tunnel.forwards_to}</td>
                  <td>
                    <code>{tunnel.tunnel_session.id}</code>
                  </td>
                  <td>{tunnel.started_at}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
