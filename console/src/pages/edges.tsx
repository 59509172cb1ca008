import { useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { ConfirmButton, Empty, ErrorNote, lines, useList, useSubmit, LinesField, TextField } from '../components.js';
import { labelText } from './groups.js';
import { PolicyTry, usePolicyCheck } from '../policy-try.js';

interface PolicyModule {
  enabled: boolean;
  value: string;
}

interface TlsEdge {
  id: string;
  description?: string;
  hostports: string[];
  backend: { enabled: boolean; backend: { id: string } } | null;
  traffic_policy: PolicyModule | null;
  created_at: string;
}

interface TunnelGroup {
  id: string;
  labels: Record<string, string>;
}

const EXAMPLE_POLICY = `on_tcp_connect:
  - name: Only our office
    actions:
      - type: restrict-ips
        config:
          allow: ["203.0.113.0/24"]
`;

/** The traffic policy module: the server validates as you type and on save, its error shown in place; then try it. */
function PolicyEditor({ edge, onSaved }: { edge: TlsEdge; onSaved: () => void }) {
  const [value, setValue] = useState(edge.traffic_policy?.value ?? EXAMPLE_POLICY);
  const [enabled, setEnabled] = useState(edge.traffic_policy?.enabled ?? true);
  const [error, setError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState(false);
  const check = usePolicyCheck(value);
  const save = async (event: Event) => {
    event.preventDefault();
    try {
      await api.put(`/edges/tls/${edge.id}/traffic_policy`, { enabled, value });
      setError(undefined);
      setSaved(true);
      onSaved();
    } catch (failure) {
      setSaved(false);
      setError(failure);
    }
  };
  const remove = () => api.delete(`/edges/tls/${edge.id}/traffic_policy`).then(onSaved, setError);
  const host = (edge.hostports[0] ?? '').replace(/:\d+$/, '');
  return (
    <>
      <form onSubmit={save} aria-label={`Traffic policy of ${edge.id}`}>
        <label>
          Traffic policy (YAML or JSON)
          <textarea
            name="policy"
            class="policy"
            rows={10}
            spellcheck={false}
            value={value}
            aria-invalid={error instanceof ApiError || check.error ? true : check.valid ? false : undefined}
            aria-describedby={`policy-check-${edge.id}`}
            onInput={(e) => (setValue((e.target as HTMLTextAreaElement).value), setSaved(false), setError(undefined))}
          />
        </label>
        <label>
          <input type="checkbox" role="switch" checked={enabled} onChange={(e) => setEnabled((e.target as HTMLInputElement).checked)} />
          Enabled
        </label>
        <div id={`policy-check-${edge.id}`} data-testid="policy-check">
          {error !== undefined ? null : check.error ? <ErrorNote error={check.error} /> : check.valid ? <p class="muted">Valid.</p> : null}
        </div>
        <ErrorNote error={error} />
        {saved ? <p role="status">Policy saved.</p> : null}
        <div role="group">
          <button type="submit">Save policy</button>
          {edge.traffic_policy ? <ConfirmButton label="Remove policy" confirm="Remove the policy" onConfirm={remove} /> : null}
        </div>
      </form>
      <PolicyTry policy={value} host={host} label={`the policy of ${edge.id}`} />
    </>
  );
}

function BackendPicker({ edge, groups, onSaved }: { edge: TlsEdge; groups: TunnelGroup[]; onSaved: () => void }) {
  const [error, setError] = useState<unknown>(undefined);
  const current = edge.backend?.backend.id ?? '';
  const pick = (id: string) =>
    (id === '' ? api.delete(`/edges/tls/${edge.id}/backend`) : api.put(`/edges/tls/${edge.id}/backend`, { backend_id: id })).then(onSaved, setError);
  return (
    <>
      <select aria-label={`Backend of ${edge.id}`} value={current} onChange={(e) => void pick((e.target as HTMLSelectElement).value)}>
        <option value="">no backend</option>
        {groups.map((group) => (
          <option key={group.id} value={group.id}>
            {group.id} ({labelText(group.labels)})
          </option>
        ))}
      </select>
      <ErrorNote error={error} />
    </>
  );
}

export function Edges() {
  const list = useList<TlsEdge>('/edges/tls', 'tls_edges');
  const groups = useList<TunnelGroup>('/backends/tunnel_group', 'backends');
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [description, setDescription] = useState('');
  const [hostports, setHostports] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const create = useSubmit(async () => {
    await api.post('/edges/tls', { description, hostports: lines(hostports) });
    setDescription('');
    setHostports('');
    list.reload();
  });
  return (
    <section>
      <h2>TLS edges</h2>
      <form onSubmit={create.onSubmit} aria-label="New TLS edge">
        <fieldset class="grid">
          <TextField label="Description" name="description" value={description} onChange={setDescription} />
          <LinesField label="Hostports (one a line)" name="hostports" rows={1} placeholder="app.example.com:443" value={hostports} onChange={setHostports} />
        </fieldset>
        <ErrorNote error={create.error} />
        <button type="submit">Create edge</button>
      </form>
      <ErrorNote error={list.error ?? error} />
      {list.items.length === 0 ? <Empty loading={list.loading} what="TLS edges" /> : null}
      {list.items.map((edge) => (
        <article key={edge.id} data-edge={edge.id}>
          <header>
            <code>{edge.id}</code> <span class="user-text">{edge.description ?? ''}</span>
          </header>
          <p>
            Hostports: {edge.hostports.length ? edge.hostports.join(', ') : 'none'} · Policy:{' '}
            {edge.traffic_policy ? (edge.traffic_policy.enabled ? 'on' : 'off') : 'none'}
          </p>
          <BackendPicker edge={edge} groups={groups.items} onSaved={list.reload} />
          <div role="group">
            <button type="button" class="outline" onClick={() => setOpen(open === edge.id ? undefined : edge.id)}>
              {open === edge.id ? 'Close policy' : 'Edit policy'}
            </button>
            <ConfirmButton label="Delete edge" name={edge.id} confirm="Delete the edge" onConfirm={() => api.delete(`/edges/tls/${edge.id}`).then(list.reload, setError)} />
          </div>
          {open === edge.id ? <PolicyEditor edge={edge} onSaved={list.reload} /> : null}
        </article>
      ))}
    </section>
  );
}
