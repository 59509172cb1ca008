import { useEffect, useState } from 'preact/hooks';
import { api, ApiError } from './api.js';
import { ErrorNote, lines, LinesField, TextField, useSubmit } from './components.js';

/** POST /traffic_policy/test's answer: the console shows its `report` (text) and verdict. */
interface PolicyTestResult {
  allowed: boolean;
  report: string[];
}

const VALIDATE_AFTER_MS = 400;

/**
 * Validation as you type: the policy is sent to POST /traffic_policy/test (a TLS edge's module:
 * the connection phase only) a moment after the last keystroke; the server's error is the answer.
 */
export function usePolicyCheck(policy: string): { error: unknown; valid: boolean } {
  const [state, setState] = useState<{ error: unknown; valid: boolean }>({ error: undefined, valid: false });
  useEffect(() => {
    let current = true;
    // An earlier document's verdict is not this one's.
    setState({ error: undefined, valid: false });
    const timer = setTimeout(() => {
      api.post<PolicyTestResult>('/traffic_policy/test', { policy }).then(
        () => current && setState({ error: undefined, valid: true }),
        (failure: unknown) => current && setState({ error: failure instanceof ApiError && failure.status === 400 ? failure : undefined, valid: false }),
      );
    }, VALIDATE_AFTER_MS);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [policy]);
  return state;
}

/** "Name: value" lines as the API's name → values. */
function headerMap(text: string): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  for (const line of lines(text)) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : line;
    (map[name] ??= []).push(colon > 0 ? line.slice(colon + 1).trim() : '');
  }
  return map;
}

/**
 * "Try it" (HTTP-POLICY.md §6): the policy being edited, run on one connection, and optionally an
 * HTTP request and the agent's answer, by the server's engine. The result is the server's report,
 * shown as text.
 */
export function PolicyTry({ policy, host, label }: { policy: string; host: string; label: string }) {
  const [clientIp, setClientIp] = useState('');
  const [endpointHost, setEndpointHost] = useState(host);
  const [time, setTime] = useState('');
  const [requestLine, setRequestLine] = useState('');
  const [headers, setHeaders] = useState('');
  const [status, setStatus] = useState('');
  const [result, setResult] = useState<PolicyTestResult | undefined>(undefined);
  const run = useSubmit(async () => {
    setResult(undefined);
    const [method, path] = requestLine.trim().split(/\s+/, 2);
    const body: Record<string, unknown> = {
      policy,
      connection: { client_ip: clientIp.trim() || null, endpoint_host: endpointHost.trim() || null, time: time.trim() || null },
    };
    if (requestLine.trim() !== '') {
      body.request = { method, path: path ?? '/', headers: headerMap(headers), endpoint_url: endpointHost.trim() ? `https://${endpointHost.trim()}` : null };
      if (status.trim() !== '') body.response = { status: Number(status) };
    }
    setResult(await api.post<PolicyTestResult>('/traffic_policy/test', body));
  });
  return (
    <form onSubmit={run.onSubmit} aria-label={`Try ${label}`}>
      <fieldset>
        <legend>Try it: one connection (and optionally an HTTP request) through this policy</legend>
        <div class="grid">
          <TextField label="Client IP (empty: yours)" name="client_ip" value={clientIp} onChange={setClientIp} />
          <TextField label="Host reached" name="endpoint_host" value={endpointHost} onChange={setEndpointHost} />
          <TextField label="Time (RFC 3339, empty: now)" name="time" value={time} onChange={setTime} />
        </div>
        <div class="grid">
          <TextField label="HTTP request (optional), e.g. GET /path?q=1" name="request" value={requestLine} onChange={setRequestLine} />
          <TextField label="Agent's answer status (optional)" name="response_status" value={status} onChange={setStatus} />
        </div>
        <LinesField label="Request headers (Name: value, one a line)" name="request_headers" rows={2} value={headers} onChange={setHeaders} />
      </fieldset>
      <ErrorNote error={run.error} />
      <button type="submit" class="secondary">
        Try it
      </button>
      {result ? (
        <output data-testid="policy-try-result">
          <p role="status">{result.allowed ? 'Allowed: it reaches the agent.' : 'Refused: the policy closed the connection or answered.'}</p>
          <pre class="policy-report">{result.report.join('\n')}</pre>
        </output>
      ) : null}
    </form>
  );
}
