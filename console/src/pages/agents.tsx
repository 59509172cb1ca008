import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ConfirmButton, Empty, ErrorNote, useList } from '../components.js';

interface TunnelSession {
  id: string;
  agent_version: string;
  credential: { id: string };
  ip: string;
  metadata?: string;
  os: string;
  region: string;
  started_at: string;
}

interface Tunnel {
  id: string;
  tunnel_session: { id: string };
}

/** Agent sessions (GET /tunnel_sessions), with stop and restart (POST …/stop, …/restart). */
export function Agents() {
  const list = useList<TunnelSession>('/tunnel_sessions', 'tunnel_sessions');
  const tunnels = useList<Tunnel>('/tunnels', 'tunnels');
  const [error, setError] = useState<unknown>(undefined);
  const [notice, setNotice] = useState('');
  const command = (id: string, what: 'stop' | 'restart') =>
    api.post(`/tunnel_sessions/${id}/${what}`).then(
      () => {
        setNotice(`Sent ${what} to ${id}.`);
        setError(undefined);
        setTimeout(() => (list.reload(), tunnels.reload()), 1500);
      },
      setError,
    );
  const countFor = (id: string) => tunnels.items.filter((tunnel) => tunnel.tunnel_session.id === id).length;
  return (
    <section>
      <h2>Agents</h2>
      <button type="button" class="outline" onClick={() => (list.reload(), tunnels.reload())}>
        Refresh
      </button>
      {notice ? <p role="status">{notice}</p> : null}
      <ErrorNote error={list.error ?? error} />
      {list.items.length === 0 ? (
        <Empty loading={list.loading} what="agents online" />
      ) : (
        <div class="overflow-auto">
          <table class="striped">
            <thead>
              <tr>
                <th>Session</th>
                <th>Version</th>
                <th>OS</th>
                <th>Address</th>
                <th>Started</th>
                <th>Tunnels</th>
                <th>Credential</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.items.map((session) => (
                <tr key={session.id} data-session={session.id}>
                  <td>
                    <code>{session.id}</code>
                  </td>
                  <td>{session.agent_version}</td>
                  <td>{session.os}</td>
                  <td>{session.ip}</td>
                  <td>{session.started_at}</td>
                  <td>{countFor(session.id)}</td>
                  <td>
                    <code>{session.credential.id}</code>
                  </td>
                  <td class="actions">
                    <ConfirmButton label="Stop" name={session.id} confirm="Stop the agent" onConfirm={() => command(session.id, 'stop')} />{' '}
                    <ConfirmButton label="Restart" name={session.id} confirm="Restart the agent" onConfirm={() => command(session.id, 'restart')} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
