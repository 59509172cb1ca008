// HTTP-POLICY.md §1: an endpoint's on_http_request phase on each request before anything reaches
// the agent, and its on_http_response phase on each answer before its head reaches the client.
// Thin: the request and answer are described to the domain, which decides; the decision is applied
// here. Rate-limit counts are kept per endpoint (pool), so they survive a policy's replacement.
import http from 'node:http';
import {
  evaluateHttpRequest,
  evaluateHttpResponse,
  settleDecision,
  CircuitBreakers,
  RateBuckets,
  recordAnswer,
  type HttpAnswer,
  type HttpDecision,
  type HttpPolicyContext,
  type PolicyProgram,
} from '../../domain/policy/index.js';
import type { EndpointPool } from '../registry.js';
import type { PublicConnection } from './connections.js';
import { endpointOfPool, policyConnection, type PolicyMetrics } from './policy-gate.js';
import { compressSync, type Compression } from './compress.js';
import type { LoginConfig } from '../../domain/identity/login-config.js';
import { withoutLoginCookies, type EdgeSession, type SessionCodec } from '../../domain/identity/session.js';
import { JwtVerifier } from '../../domain/identity/jwt-verify.js';

/** An answer an action made; its body already compressed (a Buffer) when compress-response said so. */
export type PolicyAnswer = Omit<HttpAnswer, 'body'> & { body: string | Buffer };

/** The request as it goes to the agent, or the answer to send instead (the response phase has run on it). */
export type RequestOutcome =
  | { kind: 'answer'; answer: PolicyAnswer }
  /** A login action found no session: the login starts (edge-logins.ts). */
  | {
      kind: 'login';
      login: LoginConfig;
      redirectPath: string;
      /** A session whose identity is read again (userinfo_refresh_interval) before the request goes on. */
      refresh: EdgeSession | undefined;
      /** The evaluator's 302 to /ngrok/login, where the login cannot start here. */
      fallback: PolicyAnswer;
    }
  | {
      kind: 'forward';
      headers: string[];
      target: string;
      /** The response phase for the agent's answer (undefined when the policy has none). */
      respond: ((status: number, headers: string[]) => { headers: string[]; compress?: Compression | undefined } | HttpAnswer) | undefined;
    };

/** Whether a policy has rules in an HTTP phase (otherwise requests pass untouched and unparsed). */
export function hasHttpPhases(program: PolicyProgram | undefined): program is PolicyProgram {
  return program !== undefined && (program.phases.on_http_request.length > 0 || program.phases.on_http_response.length > 0);
}

export class HttpPolicy {
  private readonly buckets = new WeakMap<EndpointPool, RateBuckets>();
  private readonly breakers = new WeakMap<EndpointPool, CircuitBreakers>();
  /** JWKS cached per URL for every endpoint of the process. */
  private readonly jwt = new JwtVerifier();

  constructor(
    private readonly region: string,
    private readonly metrics: PolicyMetrics | undefined,
    /** Opens edge login sessions; absent, login actions start a login on every request. */
    private readonly logins?: SessionCodec,
  ) {}

  /** Runs the request phase, and the response phase on an answer it made; a promise when a jwt-validation waits for its keys. */
  request(
    conn: PublicConnection,
    pool: EndpointPool,
    program: PolicyProgram,
    req: http.IncomingMessage,
    scheme: 'http' | 'https',
    headers: string[],
    body: Buffer | undefined,
    /** Collects `phase:type` of each action taken on this request (the request's log line). */
    taken: string[],
  ): RequestOutcome | Promise<RequestOutcome> {
    const context = this.context(conn, pool, req, scheme, headers, body);
    const decision = evaluateHttpRequest(program, context);
    if (decision.pending) return settleDecision(decision, (config, tokens) => this.jwt.verify(config, tokens)).then((settled) => this.outcome(conn, program, context, settled, taken));
    return this.outcome(conn, program, context, decision, taken);
  }

  private outcome(conn: PublicConnection, program: PolicyProgram, context: HttpPolicyContext, decision: HttpDecision, taken: string[]): RequestOutcome {
    this.record(conn, decision, taken);
    if (decision.login && decision.answer) return { kind: 'login', login: decision.login.config, redirectPath: decision.login.redirectPath, refresh: decision.login.refresh, fallback: decision.answer };
    // burrow's session and login cookies are its own: the agent never gets them (IDENTITY.md §1)
    const forwarded = hasLoginAction(program) ? withoutLoginCookies(decision.headers) : decision.headers;
    const sent = { headers: forwarded, target: decision.target };
    const judged = program.phases.on_http_response.length > 0;
    // a renewed login session goes back on whatever answers the request
    const cookies = decision.setCookies.flatMap((cookie) => ['Set-Cookie', cookie]);
    const respond = !judged && decision.breakers.length === 0 && cookies.length === 0
      ? undefined
      : (status: number, agentHeaders: string[]) => {
          recordAnswer(context, decision, status, Date.now());
          const answerHeaders = cookies.length === 0 ? agentHeaders : [...agentHeaders, ...cookies];
          if (!judged) return { headers: answerHeaders };
          const after = evaluateHttpResponse(program, context, sent, { status, headers: answerHeaders }, decision.vars);
          this.record(conn, after, taken);
          return after.answer ?? { headers: after.headers, compress: after.compress };
        };
    if (decision.answer) {
      const answer = cookies.length === 0 ? decision.answer : { ...decision.answer, headers: [...decision.answer.headers, ...cookies] };
      const final = judged ? respond!(answer.status, answer.headers) : answer;
      if ('body' in final) return { kind: 'answer', answer: final as HttpAnswer };
      const compress = (final as { compress?: Compression }).compress;
      return { kind: 'answer', answer: { ...answer, headers: final.headers, ...(compress ? { body: compressSync(compress, Buffer.from(answer.body)) } : {}) } };
    }
    return { kind: 'forward', headers: forwarded, target: decision.target, respond };
  }

  private context(conn: PublicConnection, pool: EndpointPool, req: http.IncomingMessage, scheme: 'http' | 'https', headers: string[], body: Buffer | undefined): HttpPolicyContext {
    let buckets = this.buckets.get(pool);
    if (!buckets) this.buckets.set(pool, (buckets = new RateBuckets()));
    let breakers = this.breakers.get(pool);
    if (!breakers) this.breakers.set(pool, (breakers = new CircuitBreakers()));
    const now = Date.now();
    return {
      connection: policyConnection(conn, this.region, endpointOfPool(pool), now),
      request: { method: req.method ?? 'GET', target: req.url ?? '/', version: req.httpVersion, scheme, headers, receivedAt: now, ...(body ? { body } : {}) },
      buckets,
      breakers,
      ...(this.logins ? { logins: this.logins } : {}),
    };
  }

  /** Each action taken: counted by type and phase, listed in the connection's and the request's log lines; logs and errors too. */
  private record(conn: PublicConnection, decision: HttpDecision, actions: string[]): void {
    for (const taken of decision.taken) {
      this.metrics?.observePolicyAction(taken.type, taken.phase);
      const label = `${taken.phase}:${taken.type}`;
      conn.listPolicy(conn.policyActions, label);
      actions.push(label);
    }
    for (const metadata of decision.logs) conn.listPolicy(conn.policyLogs, metadata);
    for (const error of decision.errors) conn.listPolicy(conn.policyErrors, `rule ${error.rule} ${error.at}: ${error.message}`);
  }
}

const loginPrograms = new WeakMap<PolicyProgram, boolean>();

/** Whether the request phase has an openid-connect or oauth action (found once per program). */
function hasLoginAction(program: PolicyProgram): boolean {
  let has = loginPrograms.get(program);
  if (has === undefined) {
    has = program.phases.on_http_request.some((rule) => rule.actions.some((action) => action.type === 'openid-connect' || action.type === 'oauth'));
    loginPrograms.set(program, has);
  }
  return has;
}

const bodyReaders = new WeakMap<PolicyProgram, boolean>();

/** Whether the request phase verifies webhooks or reads a JWT from the body, which needs each request's whole body before it runs (found once per program). */
export function readsBody(program: PolicyProgram): boolean {
  let reads = bodyReaders.get(program);
  if (reads === undefined) {
    reads = program.phases.on_http_request.some((rule) =>
      rule.actions.some((action) => action.type === 'verify-webhook' || (action.type === 'jwt-validation' && action.config.tokens.some((t) => t.method === 'body'))),
    );
    bodyReaders.set(program, reads);
  }
  return reads;
}

/** The request's whole body, or undefined (and the request left unread) once it passes `max` bytes. */
export function readBody(req: http.IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.off('data', onData);
        req.pause();
        chunks.length = 0;
        resolve(undefined);
      } else chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
    req.once('close', () => reject(new Error('the client went away before its body was read')));
  });
}

/** Header lines without Content-Length and Transfer-Encoding (a body read whole is framed anew). */
export function withoutFraming(headers: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) {
    if (!/^(content-length|transfer-encoding)$/i.test(headers[i]!)) kept.push(headers[i]!, headers[i + 1]!);
  }
  return kept;
}

/** An answer an action made, framed by Node (its own Content-Length). */
export function writeAnswer(res: http.ServerResponse, answer: PolicyAnswer): void {
  const body = typeof answer.body === 'string' ? Buffer.from(answer.body, 'utf8') : answer.body;
  const headers = [...answer.headers, 'Content-Length', String(body.length)];
  try {
    res.writeHead(answer.status, headers);
  } catch {
    // A header value Node refuses (validation keeps them clean; interpolation is sanitized): answer without them.
    res.writeHead(answer.status, ['Content-Length', String(body.length)]);
  }
  res.end(body);
}

/** An answer an action made, as bytes for a socket an upgrade took over (then closed). */
export function answerBytes(answer: PolicyAnswer): Buffer {
  const body = typeof answer.body === 'string' ? Buffer.from(answer.body, 'utf8') : answer.body;
  let head = `HTTP/1.1 ${answer.status} ${http.STATUS_CODES[answer.status] ?? 'Status'}\r\n`;
  for (let i = 0; i + 1 < answer.headers.length; i += 2) {
    const name = answer.headers[i]!;
    if (/^(content-length|connection|transfer-encoding)$/i.test(name) || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) continue;
    head += `${name}: ${answer.headers[i + 1]!.replace(/[\r\n\0]+/g, ' ')}\r\n`;
  }
  head += `content-length: ${body.length}\r\nconnection: close\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}
