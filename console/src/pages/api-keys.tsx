import { useState } from 'preact/hooks';
import { api, type Session } from '../api.js';
import { ConfirmButton, Empty, ErrorNote, ShownOnce, useList } from '../components.js';

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
  const [error, setError] = useState<unknown>(undefined);
  const create = async (event: Event) => {
    event.preventDefault();
    try {
      setMade(await api.post<ApiKey>('/api_keys', { description }));
      setDescription('');
      setError(undefined);
      list.reload();
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <section>
      <h2>API keys</h2>
      <p class="muted">{session.principal.admin ? 'Every key of the account.' : 'Your own keys.'}</p>
      <form onSubmit={create} aria-label="New API key">
        <label>
          Description
          <input name="description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
        </label>
        <ErrorNote error={error} />
        <button type="submit">Create API key</button>
      </form>
      {made?.token ? <ShownOnce title={`API key ${made.id}.`} secret={made.token} /> : null}
      <ErrorNote error={list.error} />
      {list.items.length === 0 ? (
        <Empty loading={list.loading} what="API keys" />
      ) : (
        <div class="overflow-auto">
          <table class="striped">
            <thead>
              <tr>
                <th>Id</th>
                <th>Description</th>
                <th>Owner</th>
                <th>Created</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.items.map((key) => (
                <tr key={key.id} data-key={key.id}>
                  <td>
                    <code>{key.id}</code>
                  </td>
                  <td class="user-text">{key.description ?? ''}</td>
                  <td>
                    <code>{key.owner_id}</code>
                  </td>
                  <td>{key.created_at}</td>
                  <td class="actions">
                    <ConfirmButton label="Revoke" name={key.id} confirm="Revoke: it stops working" onConfirm={() => api.delete(`/api_keys/${key.id}`).then(list.reload, setError)} />
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
