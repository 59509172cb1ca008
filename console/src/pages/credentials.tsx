import { useState } from 'preact/hooks';
import { api, type Session } from '../api.js';
import { ConfirmButton, Empty, ErrorNote, ShownOnce, Snippet, lines, useList } from '../components.js';

interface Credential {
  id: string;
  created_at: string;
  description?: string;
  metadata?: string;
  token: string | null;
  acl: string[];
  owner_id: string;
}

function sdkSnippet(token: string, server: Session['server']): string {
  return [
    "import ngrok from '@ngrok/ngrok';",
    "import { readFileSync } from 'node:fs';",
    'const session = await new ngrok.SessionBuilder()',
    `  .authtoken('${token}')`,
    `  .serverAddr('${server.agent_addr}')`,
    ...(server.ca_file ? [`  .caCert(readFileSync('${server.ca_file}'))`] : []),
    '  .connect();',
    "const listener = await session.httpEndpoint().listenAndForward('http://localhost:3000');",
    'console.log(listener.url());',
    'process.stdin.resume();',
  ].join('\n');
}

function agentConfigSnippet(token: string, server: Session['server']): string {
  return [`server_addr: ${server.agent_addr}`, ...(server.ca_file ? [`root_cas: ${server.ca_file}`] : []), `authtoken: ${token}`].join('\n');
}

function CreateCredential({ server, onCreated }: { server: Session['server']; onCreated: () => void }) {
  const [description, setDescription] = useState('');
  const [acl, setAcl] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [made, setMade] = useState<Credential | undefined>(undefined);
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      const credential = await api.post<Credential>('/credentials', { description, acl: lines(acl) });
      setMade(credential);
      setDescription('');
      setAcl('');
      setError(undefined);
      onCreated();
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <>
      <form onSubmit={submit} aria-label="New credential">
        <fieldset class="grid">
          <label>
            Description
            <input name="description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            ACL (one rule a line; empty permits every bind)
            <textarea name="acl" rows={2} value={acl} placeholder="bind:*.example.com" onInput={(e) => setAcl((e.target as HTMLTextAreaElement).value)} />
          </label>
        </fieldset>
        <ErrorNote error={error} />
        <button type="submit">Create credential</button>
      </form>
      {made?.token ? (
        <ShownOnce title={`Authtoken of ${made.id}.`} secret={made.token}>
          {server.agent_addr ? (
            <>
              <Snippet label="SDK (Node.js)" text={sdkSnippet(made.token, server)} />
              <Snippet label="Agent configuration" text={agentConfigSnippet(made.token, server)} />
            </>
          ) : (
            <p class="muted">This server runs no agent port (AGENT_PORT=0): connect agents to an instance that does.</p>
          )}
        </ShownOnce>
      ) : null}
    </>
  );
}

function EditCredential({ credential, onDone }: { credential: Credential; onDone: () => void }) {
  const [description, setDescription] = useState(credential.description ?? '');
  const [metadata, setMetadata] = useState(credential.metadata ?? '');
  const [acl, setAcl] = useState(credential.acl.join('\n'));
  const [error, setError] = useState<unknown>(undefined);
  const save = async (event: Event) => {
    event.preventDefault();
    try {
      await api.patch(`/credentials/${credential.id}`, { description, metadata, acl: lines(acl) });
      onDone();
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <form onSubmit={save} aria-label={`Edit ${credential.id}`}>
      <label>
        Description
        <input name="description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Metadata
        <input name="metadata" value={metadata} onInput={(e) => setMetadata((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        ACL
        <textarea name="acl" rows={3} value={acl} onInput={(e) => setAcl((e.target as HTMLTextAreaElement).value)} />
      </label>
      <ErrorNote error={error} />
      <div role="group">
        <button type="submit">Save</button>
        <button type="button" class="secondary" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function Credentials({ session }: { session: Session }) {
  const list = useList<Credential>('/credentials', 'credentials');
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const remove = (id: string) => api.delete(`/credentials/${id}`).then(list.reload, setError);
  return (
    <section>
      <h2>Tunnel credentials</h2>
      <CreateCredential server={session.server} onCreated={list.reload} />
      <ErrorNote error={list.error ?? error} />
      {list.items.length === 0 ? (
        <Empty loading={list.loading} what="credentials" />
      ) : (
        <div class="overflow-auto">
          <table class="striped">
            <thead>
              <tr>
                <th>Id</th>
                <th>Description</th>
                <th>ACL</th>
                <th>Owner</th>
                <th>Created</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.items.map((credential) =>
                editing === credential.id ? (
                  <tr key={credential.id}>
                    <td colSpan={6}>
                      <EditCredential credential={credential} onDone={() => (setEditing(undefined), list.reload())} />
                    </td>
                  </tr>
                ) : (
                  <tr key={credential.id}>
                    <td>
                      <code>{credential.id}</code>
                    </td>
                    <td class="user-text">{credential.description ?? ''}</td>
                    <td>{credential.acl.length ? credential.acl.join(', ') : 'any bind'}</td>
                    <td>
                      <code>{credential.owner_id}</code>
                    </td>
                    <td>{credential.created_at}</td>
                    <td class="actions">
                      <button type="button" class="outline" onClick={() => setEditing(credential.id)}>
                        Edit
                      </button>{' '}
                      <ConfirmButton label="Delete" name={credential.id} confirm="Delete: its agents disconnect" onConfirm={() => remove(credential.id)} />
                    </td>
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
