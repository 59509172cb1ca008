// Edge logins (IDENTITY.md §1–§2) on the HTTP proxy: /ngrok/login, /ngrok/logout and
// /ngrok/callback on an endpoint whose policy has a login action are answered here, never
// forwarded; a request that needs a login gets the redirect to its provider. The flow itself is
// in domain/identity; this file reads the request and writes the answer, and logs failures
// (provider and reason only: never a code, token, secret or cookie).
import type http from 'node:http';
import { EdgeLoginFlow, type LoginAnswer, type LoginEndpoint } from '../../domain/identity/login-flow.js';
import type { LoginConfig } from '../../domain/identity/login-config.js';
import { loginHost, SessionCodec, type EdgeSession } from '../../domain/identity/session.js';
import type { ProviderFetch } from '../../domain/identity/provider-fetch.js';
import type { PolicyProgram } from '../../domain/policy/index.js';
import type { Logger } from '../../observability/logger.js';

const LOGIN_PATHS = new Set(['/ngrok/login', '/ngrok/logout', '/ngrok/callback']);

export class EdgeLogins {
  readonly codec: SessionCodec;
  private readonly flow: EdgeLoginFlow;

  constructor(
    secret: Uint8Array,
    private readonly logger: Logger,
    fetch?: ProviderFetch,
  ) {
    this.codec = new SessionCodec(secret);
    this.flow = new EdgeLoginFlow(this.codec, fetch);
  }

  /** The path of a request burrow answers itself on an endpoint with a login action. */
  static isLoginPath(target: string | undefined): boolean {
    return target !== undefined && LOGIN_PATHS.has(target.split('?', 1)[0]!);
  }

  /** Answers /ngrok/login, /ngrok/logout or /ngrok/callback; false when the endpoint's policy has no login action (the request goes on). */
  answerPath(program: PolicyProgram, req: http.IncomingMessage, res: http.ServerResponse, scheme: 'http' | 'https'): Promise<void> | false {
    const logins = loginActions(program);
    if (logins.length === 0) return false;
    const url = new URL(req.url ?? '/', 'http://x');
    const endpoint = endpointOf(req, scheme);
    const authId = url.searchParams.get('auth_id');
    const chosen = authId === null ? logins[0] : logins.find((login) => login.key === authId);
    const respond = (answer: LoginAnswer) => this.write(res, answer, endpoint.host, url.pathname);
    if (url.pathname === '/ngrok/callback') return this.flow.callback(logins, endpoint, url.searchParams, cookieHeaders(req)).then(respond);
    if (!chosen) {
      respond({ status: 404, headers: ['Content-Type', 'text/plain; charset=utf-8'], body: `404 Not Found: this endpoint has no login with auth_id ${JSON.stringify(authId!.slice(0, 64))}.\n` });
      return Promise.resolve();
    }
    const redirectPath = url.searchParams.get('redirect_path');
    if (url.pathname === '/ngrok/logout') {
      respond(this.flow.logout(chosen, endpoint, redirectPath, cookieHeaders(req)));
      return Promise.resolve();
    }
    return this.flow.begin(chosen, endpoint, redirectPath ?? '/', true, cookieHeaders(req)).then(respond);
  }

  /**
   * A request a login action stopped: to the provider, then back to `redirectPath`; or, for a
   * session due a refresh, the user read again and the same request asked again (a 307).
   */
  begin(req: http.IncomingMessage, res: http.ServerResponse, scheme: 'http' | 'https', login: LoginConfig, redirectPath: string, refresh?: EdgeSession): Promise<void> {
    const endpoint = endpointOf(req, scheme);
    const answer = refresh ? this.flow.refresh(login, endpoint, refresh, req.url ?? '/', cookieHeaders(req)) : this.flow.begin(login, endpoint, redirectPath, false, cookieHeaders(req));
    return answer.then((done) => this.write(res, done, endpoint.host, refresh ? 'refresh' : 'login'));
  }

  private write(res: http.ServerResponse, answer: LoginAnswer, host: string, path: string): void {
    if (answer.problem) this.logger.warn({ host, path, provider: answer.problem.provider || undefined, reason: answer.problem.reason, status: answer.status }, 'edge login failed');
    if (res.destroyed || res.headersSent) return;
    const body = Buffer.from(answer.body, 'utf8');
    res.writeHead(answer.status, [...answer.headers, 'Content-Length', String(body.length)]);
    res.end(body);
  }
}

/** The distinct login actions of a policy's request phase, in order. */
export function loginActions(program: PolicyProgram): LoginConfig[] {
  const out = new Map<string, LoginConfig>();
  for (const rule of program.phases.on_http_request) {
    for (const action of rule.actions) if ((action.type === 'openid-connect' || action.type === 'oauth') && !out.has(action.login.key)) out.set(action.login.key, action.login);
  }
  return [...out.values()];
}

function endpointOf(req: http.IncomingMessage, scheme: 'http' | 'https'): LoginEndpoint {
  const hostHeader = req.headers.host ?? '';
  return { host: loginHost(hostHeader), origin: `${scheme}://${hostHeader}`, secure: scheme === 'https' };
}

function cookieHeaders(req: http.IncomingMessage): string[] {
  const out: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'cookie') out.push(req.rawHeaders[i + 1]!);
  return out;
}
