import { useState } from 'preact/hooks';
import { api, type Session } from '../api.js';
import { ConfirmButton, DataTable, Empty, ErrorNote, Id, ShownOnce, useList, useSubmit, TextField } from '../components.js';

interface ApiKey {
  id: string;
  description?: string;
  metadata?: string;
  created_at: string;
  token: string | null;
  owner_id: string;
}

/** GET/POST/DELETE /api_keys. Revoking the key this session was made with signs it out. */
export function ApiKeys({ session }: { session: Session }) {
  const list = useList<ApiKey>('/api_keys', 'keys');
  const [description, setDescription] = useState('');
  const [made, setMade] = useState<ApiKey | undefined>(undefined);
  const create = useSubmit(async () => {
    setMade(await api.post<ApiKey>('/api_keys', { description }));
    setDescription('');
    list.reload();
  });
  const [error, setError] = useState<unknown>(undefined);
  return (
    <section>
      <h2>API keys</h2>
      <p class="muted">{session.principal.admin ? 'Every key of the account.' : 'Your own keys.'}</p>
      <form onSubmit={create.onSubmit} aria-label="New API key">
        <TextField label="Description" name="description" value={description} onChange={setDescription} />
        <ErrorNote error={create.error} />
        <button type="submit">Create API key</button>
      </form>
      {made?.token ? <ShownOnce title={`API key ${made.id}.`} secret={made.token} /> : null}
      <ErrorNote error={list.error ?? error} />
      {list.items.length === 0 ? (
        <Empty loading={list.loading} what="API keys" />
      ) : (
        <DataTable
          items={list.items}
          rowProps={(key) => ({ 'data-key': key.id })}
          columns={[
            { title: 'Id', cell: (key) => <Id id={key.id} /> },
            { title: 'Description', cell: (key) => key.description ?? '', class: 'user-text' },
            { title: 'Owner', cell: (key) => <Id id={key.owner_id} /> },
            { title: 'Created', cell: (key) => key.created_at },
            {
              title: '',
              class: 'actions',
              cell: (key) => <ConfirmButton label="Revoke" name={key.id} confirm="Revoke: it stops working" onConfirm={() => api.delete(`/api_keys/${key.id}`).then(list.reload, setError)} />,
            },
          ]}
        />
      )}
    </section>
  );
}
