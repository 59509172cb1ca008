import '@picocss/pico/css/pico.min.css';
import 'uplot/dist/uPlot.min.css';
import './app.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { sessions, useSession, whenSignedOut, type Session } from './api.js';
import { Agents } from './pages/agents.js';
import { ApiKeys } from './pages/api-keys.js';
import { Credentials } from './pages/credentials.js';
import { Edges } from './pages/edges.js';
import { Endpoints } from './pages/endpoints.js';
import { Groups } from './pages/groups.js';
import { Inspector } from './pages/inspector.js';
import { Overview } from './pages/overview.js';
import { SignIn } from './pages/sign-in.js';

const PAGES = [
  { path: 'overview', title: 'Overview' },
  { path: 'credentials', title: 'Credentials' },
  { path: 'agents', title: 'Agents' },
  { path: 'endpoints', title: 'Endpoints' },
  { path: 'edges', title: 'TLS edges' },
  { path: 'groups', title: 'Tunnel groups' },
  { path: 'inspector', title: 'Inspector' },
  { path: 'api-keys', title: 'API keys' },
] as const;

type PagePath = (typeof PAGES)[number]['path'];

function currentPage(): PagePath {
  const wanted = location.hash.replace(/^#\/?/, '');
  return PAGES.find((page) => page.path === wanted)?.path ?? 'overview';
}

function Page({ path, session }: { path: PagePath; session: Session }) {
  switch (path) {
    case 'credentials':
      return <Credentials session={session} />;
    case 'agents':
      return <Agents />;
    case 'endpoints':
      return <Endpoints />;
    case 'edges':
      return <Edges />;
    case 'groups':
      return <Groups />;
    case 'inspector':
      return <Inspector />;
    case 'api-keys':
      return <ApiKeys session={session} />;
    default:
      return <Overview />;
  }
}

function App() {
  const [session, setSession] = useState<Session | undefined | null>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [page, setPage] = useState<PagePath>(currentPage());
  const enter = (next: Session | null) => {
    useSession(next ?? undefined);
    setSession(next);
  };
  useEffect(() => {
    whenSignedOut((message) => {
      setNotice(message);
      enter(null);
    });
    sessions.current().then(enter, () => enter(null));
    const onHash = () => setPage(currentPage());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);

  if (session === undefined) return <main class="container" aria-busy="true" />;
  if (session === null) return <SignIn notice={notice} onSignedIn={(next) => (setNotice(undefined), enter(next))} />;
  const signOut = () => sessions.signOut().finally(() => (setNotice('Signed out.'), enter(null)));
  return (
    <>
      <header class="container">
        <nav>
          <ul>
            <li>
              <strong>burrow</strong>
            </li>
          </ul>
          <ul class="pages">
            {PAGES.map((item) => (
              <li key={item.path}>
                <a href={`#/${item.path}`} aria-current={item.path === page ? 'page' : undefined}>
                  {item.title}
                </a>
              </li>
            ))}
          </ul>
          <ul>
            <li>
              <small title={session.principal.id}>{session.principal.name}</small>
            </li>
            <li>
              <button type="button" class="secondary outline" onClick={() => void signOut()}>
                Sign out
              </button>
            </li>
          </ul>
        </nav>
      </header>
      <main class="container">
        <Page path={page} session={session} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
