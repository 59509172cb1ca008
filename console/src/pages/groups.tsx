import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { ConfirmButton, DataTable, Empty, ErrorNote, Id, lines, useList, useSubmit, LinesField, TextField } from '../components.js';

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

export const labelText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([key, value]) => `${key}=${value}`)
    .join(', ');

export function Groups() {
  const list = useList<TunnelGroup>('/backends/tunnel_group', 'backends');
  const [description, setDescription] = useState('');
  const [labels, setLabels] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const create = useSubmit(async () => {
    await api.post('/backends/tunnel_group', { description, labels: parseLabels(labels) });
    setDescription('');
    setLabels('');
    list.reload();
  });
  return (
    <section>
      <h2>Tunnel groups</h2>
      <form onSubmit={create.onSubmit} aria-label="New tunnel group">
        <fieldset class="grid">
          <TextField label="Description" name="description" value={description} onChange={setDescription} />
          <LinesField label="Labels (key=value, one a line)" name="labels" rows={1} placeholder="app=web" value={labels} onChange={setLabels} />
        </fieldset>
        <ErrorNote error={create.error} />
        <button type="submit">Create group</button>
      </form>
      <ErrorNote error={list.error ?? error} />
      {list.items.length === 0 ? (
        <Empty loading={list.loading} what="tunnel groups" />
      ) : (
        <DataTable
          items={list.items}
          columns={[
            { title: 'Id', cell: (group) => <Id id={group.id} /> },
            { title: 'Description', cell: (group) => group.description ?? '', class: 'user-text' },
            { title: 'Labels', cell: (group) => labelText(group.labels) },
            { title: 'Live tunnels', cell: (group) => group.tunnels?.length ?? 0 },
            {
              title: '',
              class: 'actions',
              cell: (group) => (
                <ConfirmButton label="Delete" name={group.id} confirm="Delete the group" onConfirm={() => api.delete(`/backends/tunnel_group/${group.id}`).then(list.reload, setError)} />
              ),
            },
          ]}
        />
      )}
    </section>
  );
}
