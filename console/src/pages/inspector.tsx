import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { DataTable, Empty, ErrorNote, useList, useSubmit } from '../components.js';

interface Settings {
  capture: 'off' | 'heads' | 'bodies';
  body_limit_bytes: number;
  redact_secrets: boolean;
}

interface Body {
  data: string;
  length: number;
  truncated: boolean;
}

interface Captured {
  id: string;
  created_at: string;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  client_ip: string;
  request_headers: Record<string, string[]>;
  response_headers: Record<string, string[]>;
  actions: string[];
  request_body?: Body;
  response_body?: Body;
}

function SettingsForm() {
  const [settings, setSettings] = useState<Settings | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState(false);
  useEffect(() => void api.get<Settings>('/traffic_inspection').then(setSettings, setLoadError), []);
  const save = useSubmit(async () => {
    setSettings(await api.patch<Settings>('/traffic_inspection', settings));
    setSaved(true);
  });
  if (!settings) return <ErrorNote error={loadError} />;
  const change = (next: Partial<Settings>) => (setSettings({ ...settings, ...next }), setSaved(false));
  return (
    <form onSubmit={save.onSubmit} aria-label="Capture settings">
      <fieldset class="grid">
        <label>
          Capture
          <select name="capture" value={settings.capture} onChange={(e) => change({ capture: (e.target as HTMLSelectElement).value as Settings['capture'] })}>
            <option value="off">off</option>
            <option value="heads">heads</option>
            <option value="bodies">heads and bodies</option>
          </select>
        </label>
        <label>
          Body limit (bytes)
          <input name="body_limit_bytes" type="number" min={0} value={settings.body_limit_bytes} onInput={(e) => change({ body_limit_bytes: Number((e.target as HTMLInputElement).value) })} />
        </label>
        <label>
          <input type="checkbox" role="switch" checked={settings.redact_secrets} onChange={(e) => change({ redact_secrets: (e.target as HTMLInputElement).checked })} />
          Redact secret headers
        </label>
      </fieldset>
      <ErrorNote error={save.error} />
      {saved ? <p role="status">Settings saved.</p> : null}
      <button type="submit">Save settings</button>
    </form>
  );
}

/** A captured body as text when it decodes as UTF-8, else its size: never as markup. */
function BodyView({ label, body }: { label: string; body: Body | undefined }) {
  if (!body) return null;
  const bytes = Uint8Array.from(atob(body.data), (c) => c.charCodeAt(0));
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    text = `(${bytes.length} bytes of binary data)`;
  }
  return (
    <details>
      <summary>
        {label}: {body.length} bytes{body.truncated ? ' (cut)' : ''}
      </summary>
      <pre>
        <code>{text}</code>
      </pre>
    </details>
  );
}

function Headers({ title, headers }: { title: string; headers: Record<string, string[]> }) {
  return (
    <table>
      <caption>{title}</caption>
      <tbody>
        {Object.entries(headers).flatMap(([name, values]) =>
          values.map((value, i) => (
            <tr key={`${name}-${i}`}>
              <th scope="row">{name}</th>
              <td class="user-text">{value}</td>
            </tr>
          )),
        )}
      </tbody>
    </table>
  );
}

function Requests({ endpointId }: { endpointId: string }) {
  const list = useList<Captured>(`/endpoints/${endpointId}/requests`, 'requests');
  const [open, setOpen] = useState<string | undefined>(undefined);
  useEffect(() => {
    const timer = setInterval(list.reload, 3000);
    return () => clearInterval(timer);
  }, [list.reload]);
  if (list.items.length === 0) return <Empty loading={list.loading} what="captured requests (turn capture on above)" />;
  const toggle = (id: string) => setOpen(open === id ? undefined : id);
  return (
    <DataTable
      items={list.items}
      rowProps={(item) => ({ class: 'clickable', tabIndex: 0, onClick: () => toggle(item.id), onKeyDown: (e: KeyboardEvent) => e.key === 'Enter' && toggle(item.id) })}
      below={(item) =>
        open === item.id ? (
          <>
            <Headers title="Request headers" headers={item.request_headers} />
            <BodyView label="Request body" body={item.request_body} />
            <Headers title="Response headers" headers={item.response_headers} />
            <BodyView label="Response body" body={item.response_body} />
          </>
        ) : null
      }
      columns={[
        { title: 'Time', cell: (item) => item.created_at },
        { title: 'Request', cell: (item) => `${item.method} ${item.path}`, class: 'user-text' },
        { title: 'Status', cell: (item) => item.status },
        { title: 'ms', cell: (item) => item.duration_ms },
        { title: 'Client', cell: (item) => item.client_ip },
        { title: 'Actions', cell: (item) => item.actions.join(', ') },
      ]}
    />
  );
}

/** Traffic inspection: the account's capture settings, and an endpoint's recent requests. */
export function Inspector() {
  const endpoints = useList<{ id: string; url?: string; proto: string }>('/endpoints', 'endpoints');
  const [endpointId, setEndpointId] = useState('');
  const http = endpoints.items.filter((endpoint) => endpoint.proto === 'http' || endpoint.proto === 'https');
  return (
    <section>
      <h2>Traffic inspector</h2>
      <SettingsForm />
      <label>
        Endpoint
        <select name="endpoint" value={endpointId} onChange={(e) => setEndpointId((e.target as HTMLSelectElement).value)}>
          <option value="">choose an HTTP(S) endpoint</option>
          {http.map((endpoint) => (
            <option key={endpoint.id} value={endpoint.id}>
              {endpoint.url ?? endpoint.id}
            </option>
          ))}
        </select>
      </label>
      <ErrorNote error={endpoints.error} />
      {endpointId ? <Requests key={endpointId} endpointId={endpointId} /> : null}
    </section>
  );
}
