import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ConfirmButton, DataTable, Empty, ErrorNote, Id, useList } from '../components.js';

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
  const reload = () => (list.reload(), tunnels.reload());
  const command = (id: string, what: 'stop' | 'restart') =>
    api.post(`/tunnel_sessions/${id}/${what}`).then(
      () => {
        setNotice(`Sent ${what} to ${id}.`);
        setError(undefined);
        setTimeout(reload, 1500);
      },
      setError,
    );
  const countFor = (id: string) => tunnels.items.filter((tunnel) => tunnel.tunnel_session.id === id).length;
  return (
    <section>
      <h2>Agents</h2>
      <button type="button" class="outline" onClick={reload}>
        Refresh
      </button>
      {notice ? <p role="status">{notice}</p> : null}
      <ErrorNote error={list.error ?? error} />
      {list.items.length === 0 ? (
        <Empty loading={list.loading} what="agents online" />
      ) : (
        <DataTable
          items={list.items}
          rowProps={(session) => ({ 'data-session': session.id })}
          columns={[
            { title: 'Session', cell: (session) => <Id id={session.id} /> },
            { title: 'Version', cell: (session) => session.agent_version },
            { title: 'OS', cell: (session) => session.os },
            { title: 'Address', cell: (session) => session.ip },
            { title: 'Started', cell: (session) => session.started_at },
            { title: 'Tunnels', cell: (session) => countFor(session.id) },
            { title: 'Credential', cell: (session) => <Id id={session.credential.id} /> },
            {
              title: '',
              class: 'actions',
              cell: (session) => (
                <>
                  <ConfirmButton label="Stop" name={session.id} confirm="Stop the agent" onConfirm={() => command(session.id, 'stop')} />{' '}
                  <ConfirmButton label="Restart" name={session.id} confirm="Restart the agent" onConfirm={() => command(session.id, 'restart')} />
                </>
              ),
            },
          ]}
        />
      )}
    </section>
  );
}
