import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { Empty, ErrorNote, useList } from '../components.js';

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
  const [error, setError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState(false);
  useEffect(() => void api.get<Settings>('/traffic_inspection').then(setSettings, setError), []);
  if (!settings) return <ErrorNote error={error} />;
  const save = async (event: Event) => {
    event.preventDefault();
    try {
      setSettings(await api.patch<Settings>('/traffic_inspection', settings));
      setError(undefined);
      setSaved(true);
    } catch (failure) {
      setError(failure);
      setSaved(false);
    }
  };
  const change = (next: Partial<Settings>) => (setSettings({ ...settings, ...next }), setSaved(false));
  return (
    <form onSubmit={save} aria-label="Capture settings">
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
      <ErrorNote error={error} />
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
  return (
    <div class="overflow-auto">
      <table class="striped">
        <thead>
          <tr>
            <th>Time</th>
            <th>Request</th>
            <th>Status</th>
            <th>ms</th>
            <th>Client</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {list.items.map((item) => [
            <tr key={item.id} class="clickable" tabIndex={0} onClick={() => setOpen(open === item.id ? undefined : item.id)} onKeyDown={(e) => e.key === 'Enter' && setOpen(open === item.id ? undefined : item.id)}>
              <td>{item.created_at}</td>
              <td class="user-text">
                {item.method} {item.path}
              </td>
              <td>{item.status}</td>
              <td>{item.duration_ms}</td>
              <td>{item.client_ip}</td>
              <td>{item.actions.join(', ')}</td>
            </tr>,
            open === item.id ? (
              <tr key={`${item.id}-detail`}>
                <td colSpan={6}>
                  <Headers title="Request headers" headers={item.request_headers} />
                  <BodyView label="Request body" body={item.request_body} />
                  <Headers title="Response headers" headers={item.response_headers} />
                  <BodyView label="Response body" body={item.response_body} />
                </td>
              </tr>
            ) : null,
          ])}
        </tbody>
      </table>
    </div>
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
