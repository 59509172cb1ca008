import { useState } from 'preact/hooks';
import { sessions, type Session } from '../api.js';
import { ErrorNote } from '../components.js';

/** The API key is sent once and exchanged for a session cookie; it is not kept in the browser. */
export function SignIn({ onSignedIn, notice }: { onSignedIn: (session: Session) => void; notice: string | undefined }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const session = await sessions.signIn(key.trim());
      setKey('');
      onSignedIn(session);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="container sign-in">
      <article>
        <header>
          <h1>burrow console</h1>
        </header>
        {notice ? <p role="status">{notice}</p> : null}
        <form onSubmit={submit}>
          <label>
            API key
            <input
              name="api_key"
              type="password"
              autocomplete="off"
              required
              value={key}
              onInput={(event) => setKey((event.target as HTMLInputElement).value)}
            />
          </label>
          <ErrorNote error={error} />
          <button type="submit" aria-busy={busy}>
            Sign in
          </button>
        </form>
        <footer>
          <small>The first start prints an API key; <code>burrow api-keys create</code> makes more.</small>
        </footer>
      </article>
    </main>
  );
}
