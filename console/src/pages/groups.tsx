import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ConfirmButton, Empty, ErrorNote, lines, useList } from '../components.js';

interface TunnelGroup {
  id: string;
  description?: string;
  labels: Record<string, string>;
  tunnels: { id: string }[];
  created_at: string;
}

/** "key=value" lines into a labels object (a line without "=" is sent as a key, for the server to refuse). */
function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const line of lines(text)) {
    const at = line.indexOf('=');
    labels[at < 0 ? line : line.slice(0, at).trim()] = at < 0 ? '' : line.slice(at + 1).trim();
  }
  return labels;
}

export function Groups() {
  const list = useList<TunnelGroup>('/backends/tunnel_group', 'backends');
  const [description, setDescription] = useState('');
  const [labels, setLabels] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const create = async (event: Event) => {
    event.preventDefault();
    try {
      await api.post('/backends/tunnel_group', { description, labels: parseLabels(labels) });
      setDescription('');
      setLabels('');
      setError(undefined);
      list.reload();
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <section>
      <h2>Tunnel groups</h2>
      <form onSubmit={create} aria-label="New tunnel group">
        <fieldset class="grid">
          <label>
            Description
            <input name="description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Labels (key=value, one a line)
            <textarea name="labels" rows={1} placeholder="app=web" value={labels} onInput={(e) => setLabels((e.target as HTMLTextAreaElement).value)} />
          </label>
        </fieldset>
        <ErrorNote error={error} />
        <button type="submit">Create group</button>
      </form>
      <ErrorNote error={list.error} />
      {list.items.length === 0 ? (
        <Empty loading={list.loading} what="tunnel groups" />
      ) : (
        <div class="overflow-auto">
          <table class="striped">
            <thead>
              <tr>
                <th>Id</th>
                <th>Description</th>
                <th>Labels</th>
                <th>Live tunnels</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.items.map((group) => (
                <tr key={group.id}>
                  <td>
                    <code>{group.id}</code>
                  </td>
                  <td class="user-text">{group.description ?? ''}</td>
                  <td>{Object.entries(group.labels).map(([k, v]) => `${k}=${v}`).join(', ')}</td>
                  <td>{group.tunnels?.length ?? 0}</td>
                  <td class="actions">
                    <ConfirmButton label="Delete" name={group.id} confirm="Delete the group" onConfirm={() => api.delete(`/backends/tunnel_group/${group.id}`).then(list.reload, setError)} />
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
