/**
 * Every call the console makes goes to burrow's public REST API (CONSOLE.md §1), authenticated by
 * the session cookie; changes carry the session's CSRF token. A 401 means the session has ended.
 */

export interface Session {
  csrf_token: string;
  principal: { id: string; kind: string; name: string; admin: boolean };
  server: { agent_addr: string | null; ca_file: string | null };
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
    readonly param: string | undefined,
  ) {
    super(message);
  }
}

let csrfToken = '';
let onSignedOut: (message: string) => void = () => {};

export function whenSignedOut(listener: (message: string) => void): void {
  onSignedOut = listener;
}

export function useSession(session: Session | undefined): void {
  csrfToken = session?.csrf_token ?? '';
}

async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { 'Ngrok-Version': '2' };
  if (method !== 'GET') headers['X-CSRF-Token'] = csrfToken;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  const data = text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>);
  if (response.ok) return data as T;
  const details = (data?.details ?? {}) as Record<string, string>;
  const error = new ApiError(String(data?.msg ?? response.statusText), response.status, data?.error_code as string | undefined, details.param);
  if (response.status === 401 && !path.startsWith('/console/session')) onSignedOut(error.message);
  throw error;
}

export const api = {
  get: <T>(path: string) => send<T>('GET', path),
  post: <T>(path: string, body: unknown = {}) => send<T>('POST', path, body),
  patch: <T>(path: string, body: unknown) => send<T>('PATCH', path, body),
  put: <T>(path: string, body: unknown) => send<T>('PUT', path, body),
  delete: (path: string) => send<void>('DELETE', path),
};

export const sessions = {
  current: () => api.get<Session>('/console/session'),
  signIn: (apiKey: string) => api.post<Session>('/console/session', { api_key: apiKey }),
  signOut: () => api.delete('/console/session'),
};
