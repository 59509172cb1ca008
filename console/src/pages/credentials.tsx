import { useState } from 'preact/hooks';
import { api, type Session } from '../api.js';
import { ConfirmButton, DataTable, Empty, ErrorNote, Id, ShownOnce, Snippet, lines, useList, useSubmit, LinesField, TextField } from '../components.js';

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
  const [made, setMade] = useState<Credential | undefined>(undefined);
  const create = useSubmit(async () => {
    setMade(await api.post<Credential>('/credentials', { description, acl: lines(acl) }));
    setDescription('');
    setAcl('');
    onCreated();
  });
  return (
    <>
      <form onSubmit={create.onSubmit} aria-label="New credential">
        <fieldset class="grid">
          <TextField label="Description" name="description" value={description} onChange={setDescription} />
          <LinesField label="ACL (one rule a line; empty permits every bind)" name="acl" rows={2} placeholder="bind:*.example.com" value={acl} onChange={setAcl} />
        </fieldset>
        <ErrorNote error={create.error} />
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
  const save = useSubmit(async () => {
    await api.patch(`/credentials/${credential.id}`, { description, metadata, acl: lines(acl) });
    onDone();
  });
  return (
    <form onSubmit={save.onSubmit} aria-label={`Edit ${credential.id}`}>
      <TextField label="Description" name="description" value={description} onChange={setDescription} />
      <TextField label="Metadata" name="metadata" value={metadata} onChange={setMetadata} />
      <LinesField label="ACL" name="acl" rows={3} value={acl} onChange={setAcl} />
      <ErrorNote error={save.error} />
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
        <DataTable
          items={list.items}
          below={(credential) => (editing === credential.id ? <EditCredential credential={credential} onDone={() => (setEditing(undefined), list.reload())} /> : null)}
          columns={[
            { title: 'Id', cell: (credential) => <Id id={credential.id} /> },
            { title: 'Description', cell: (credential) => credential.description ?? '', class: 'user-text' },
            { title: 'ACL', cell: (credential) => (credential.acl.length ? credential.acl.join(', ') : 'any bind') },
            { title: 'Owner', cell: (credential) => <Id id={credential.owner_id} /> },
            { title: 'Created', cell: (credential) => credential.created_at },
            {
              title: '',
              class: 'actions',
              cell: (credential) => (
                <>
                  <button type="button" class="outline" onClick={() => setEditing(editing === credential.id ? undefined : credential.id)}>
                    Edit
                  </button>{' '}
                  <ConfirmButton label="Delete" name={credential.id} confirm="Delete: its agents disconnect" onConfirm={() => remove(credential.id)} />
                </>
              ),
            },
          ]}
        />
      )}
    </section>
  );
}
