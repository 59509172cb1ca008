// A plain-HTTP "browser" for edge login tests: a cookie jar per host, redirects followed by hand,
// and oidc-provider's development login and consent forms posted (IDENTITY.md §4). Every host
// is reached on 127.0.0.1 at the URL's port, with the URL's Host.
import http from 'node:http';
import net from 'node:net';
import Provider from 'oidc-provider';

export interface Page {
  url: string;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export class LoginBrowser {
  /** host → cookie name → value. */
  readonly jar = new Map<string, Map<string, string>>();

  constructor(private readonly user: string) {}

  cookie(host: string, name: string): string | undefined {
    return this.jar.get(host)?.get(name);
  }

  setCookie(host: string, name: string, value: string): void {
    let cookies = this.jar.get(host);
    if (!cookies) this.jar.set(host, (cookies = new Map()));
    cookies.set(name, value);
  }

  /** One request, cookies sent and kept; no redirect followed. `extra`: more request headers. */
  request(url: string, method = 'GET', form?: Record<string, string>, extra: Record<string, string> = {}): Promise<Page> {
    const target = new URL(url);
    const body = form ? new URLSearchParams(form).toString() : undefined;
    const cookies = [...(this.jar.get(target.host)?.entries() ?? [])].map(([n, v]) => `${n}=${v}`).join('; ');
    const headers: Record<string, string> = { host: target.host, ...(cookies ? { cookie: cookies } : {}), ...(body ? { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) } : {}), ...extra };
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: Number(target.port), path: target.pathname + target.search, method, headers, agent: false, timeout: 15_000 });
      req.once('response', (res) => {
        for (const line of res.headers['set-cookie'] ?? []) {
          const [pair, ...attributes] = line.split(';');
          const eq = pair!.indexOf('=');
          const name = pair!.slice(0, eq).trim();
          const value = pair!.slice(eq + 1).trim();
          if (attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || /expires=thu, 01 jan 1970/i.test(line)) this.jar.get(target.host)?.delete(name);
          else this.setCookie(target.host, name, value);
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('end', () => resolve({ url, status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      });
      req.once('timeout', () => req.destroy(new Error(`timeout: ${method} ${url}`)));
      req.once('error', reject);
      req.end(body);
    });
  }

  /**
   * Follows redirects and posts the provider's login (as this browser's user) and consent forms,
   * until a page that is neither: the last one. `stopAt` ends the walk before requesting a URL it matches.
   */
  async browse(url: string, stopAt?: (url: string) => boolean): Promise<Page & { visited: string[] }> {
    const visited: string[] = [];
    let page = await this.request(url);
    visited.push(url);
    for (let hops = 0; hops < 20; hops++) {
      if (page.status >= 300 && page.status < 400 && page.headers.location) {
        const next = new URL(page.headers.location, page.url).toString();
        if (stopAt?.(next)) return { ...page, visited: [...visited, next] };
        page = await this.request(next);
        visited.push(next);
        continue;
      }
      const form = /<form[^>]*action="([^"]+)"[^>]*method="post"/i.exec(page.body);
      const prompt = /name="prompt" value="(\w+)"/.exec(page.body)?.[1];
      if (page.status === 200 && form && prompt) {
        const action = new URL(form[1]!.replace(/&amp;/g, '&'), page.url).toString();
        const fields: Record<string, string> = prompt === 'login' ? { prompt, login: this.user, password: 'any' } : { prompt };
        page = await this.request(action, 'POST', fields);
        visited.push(action);
        continue;
      }
      return { ...page, visited };
    }
    throw new Error(`too many hops from ${url}`);
  }
}

export interface TestProvider {
  readonly issuer: string;
  /**
   * Claims that replace a user's own (email <login>@example.com, name <LOGIN>) from now on, read
   * at each token and user-info call; `null`: the user is gone (the provider refuses their tokens).
   */
  readonly accounts: Map<string, { email?: string; name?: string } | null>;
  close(): Promise<void>;
  /** Serves again on the same port after close(). */
  listen(): Promise<void>;
}

/** panva's oidc-provider on loopback (http), with one client and users named by their login; it issues refresh tokens too. */
export async function startOidcProvider(client: { id: string; secret: string; redirectUris: string[] }): Promise<TestProvider> {
  const port = await freeLoopbackPort();
  const issuer = `http://127.0.0.1:${port}`;
  const accounts: TestProvider['accounts'] = new Map();
  const provider = new Provider(issuer, {
    clients: [{ client_id: client.id, client_secret: client.secret, redirect_uris: client.redirectUris, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['edge-login-test-cookie-key'] },
    issueRefreshToken: async (_ctx: unknown, registered: { grantTypeAllowed(type: string): boolean }) => registered.grantTypeAllowed('refresh_token'),
    findAccount: (_ctx: unknown, id: string) => {
      const changed = accounts.get(id);
      if (changed === null) return undefined;
      return { accountId: id, claims: () => ({ sub: id, email: `${id}@example.com`, email_verified: true, name: id.toUpperCase(), ...changed }) };
    },
  });
  const server = http.createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    issuer,
    accounts,
    listen: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
