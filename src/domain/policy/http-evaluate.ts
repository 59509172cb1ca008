/**
 * Runs the HTTP phases of a compiled policy on one request (HTTP-POLICY.md §1–§2): rules in
 * order, a rule whose expressions all hold runs its actions in order, and an action that answers
 * (deny, custom-response, redirect, a failed basic-auth, a rate limit) ends the phase. The result
 * is a decision the data plane applies: the request as it goes to the agent, or the answer to
 * send instead; in on_http_response, the answer's headers or a replacement. Pure, but for the
 * rate-limit buckets handed in.
 */
import { timingSafeEqual } from 'node:crypto';
import type { RE2JS } from 're2js';
import type { PolicyConnection } from './activation.js';
import type { IpAddress } from './cidr.js';
import { build, buildMap, celToString, messageOf, restrictDecision, ruleMismatch, staticMetadata, type EvaluationError } from './evaluate.js';
import {
  connectionVariables,
  emptyHttpResults,
  requestUrl,
  requestVariables,
  responseVariables,
  typedVariable,
  type PolicyHttpRequest,
  type TypedVariable,
  type PolicyHttpResponse,
} from './http-activation.js';
import type { StringTemplate } from './http-program.js';
import type { PhaseName } from './phases.js';
import type { PolicyProgram, ProgramAction, ProgramRule, ValueTemplate } from './program.js';
import type { RateBuckets } from './rate-buckets.js';
import type { BreakerConfig, CircuitBreakers } from './circuit-breakers.js';
import type { CompressionAlgorithm, PolicyValue } from './types.js';
import { MIN_COMPRESSED_BYTES, negotiateEncoding } from './compression.js';
import { verifyWebhook } from './webhooks.js';
import type { LoginConfig } from '../identity/login-config.js';
import { loginHost, type EdgeSession, type SessionCodec, type SessionLookup } from '../identity/session.js';
import { findTokens, type JwtOutcome, type PresentedToken } from '../identity/jwt-verify.js';
import type { JwtValidationConfig } from '../identity/jwt-config.js';
import { PLAIN_VARIABLES } from './fast-cel.js';

/** An answer made by an action instead of the agent's. */
export interface HttpAnswer {
  status: number;
  /** Raw lines: name, value, … */
  headers: string[];
  body: string;
}

/** One action that ran, for the metrics (by type and phase) and the request's log line. */
export interface TakenAction {
  phase: PhaseName;
  rule: number;
  type: string;
}

export interface HttpDecision {
  /** Set when an action answered: nothing goes to the agent (request phase) or the agent's answer is dropped (response phase). */
  answer: HttpAnswer | undefined;
  /** Request phase: the request's header lines as they go to the agent; response phase: the answer's. */
  headers: string[];
  /** The request target as it goes to the agent (url-rewrite). */
  target: string;
  taken: TakenAction[];
  /** The metadata of each `log` action, interpolated. */
  logs: Array<{ [key: string]: PolicyValue }>;
  errors: EvaluationError[];
  /** `vars.*` after the phase: the response phase starts from the request phase's. */
  vars: Map<string, unknown>;
  /** on_http_response: compress the answer's body with this (its headers already say so). */
  compress?: CompressionAlgorithm;
  /** The circuit breakers the request passed: each is told how the agent answered (`recordAnswer`). */
  breakers: BreakerConfig[];
  /** Set-Cookie values for whatever answers the request (an edge login session whose idle clock moved). */
  setCookies: string[];
  /**
   * Set when a login action found no session: the data plane starts the login in place of `answer`
   * (a 302 to /ngrok/login); with `refresh`, a session whose identity is to be read again first.
   */
  login?: { config: LoginConfig; redirectPath: string; refresh?: EdgeSession };
  /**
   * Set when a jwt-validation action waits for its tokens' verification (asynchronous): the
   * phase goes on from that action with `resume(outcome)`; see settleDecision.
   */
  pending?: { config: JwtValidationConfig; tokens: PresentedToken[]; resume: (outcome: JwtOutcome) => HttpDecision };
}

export interface HttpPolicyContext {
  readonly connection: PolicyConnection;
  readonly request: PolicyHttpRequest;
  /** The endpoint's rate-limit counts. */
  readonly buckets: RateBuckets;
  /** The endpoint's circuit breakers (absent: circuit-breaker actions let everything through). */
  readonly breakers?: CircuitBreakers;
  /** Opens edge login sessions (absent: login actions start a login on every request). */
  readonly logins?: SessionCodec;
}

/** The agent's answer to a request that passed circuit breakers (a 5xx counts as a failure). */
export function recordAnswer(context: HttpPolicyContext, decision: HttpDecision, status: number, nowMs: number): void {
  for (const breaker of decision.breakers) context.breakers?.record(breaker, status >= 500, nowMs);
}

/** At most this many url-rewrite/redirect rewrites per request: a policy that loops is bounded (HTTP-POLICY.md §7). */
const MAX_REWRITES = 10;

export function evaluateHttpRequest(program: PolicyProgram, context: HttpPolicyContext): HttpDecision {
  const state = new HttpEvaluation('on_http_request', context, [...context.request.headers], context.request.target, undefined, new Map());
  return state.run(program.phases.on_http_request);
}

/** A request phase that waits (`pending`) taken to its end, verifying tokens as its jwt-validation actions ask. */
export async function settleDecision(decision: HttpDecision, verify: (config: JwtValidationConfig, tokens: PresentedToken[]) => Promise<JwtOutcome>): Promise<HttpDecision> {
  while (decision.pending) decision = decision.pending.resume(await verify(decision.pending.config, decision.pending.tokens));
  return decision;
}

/**
 * `request` as it reached the agent (after the request phase), `vars` what that phase set;
 * `response` the agent's answer, or the answer an action made.
 */
export function evaluateHttpResponse(
  program: PolicyProgram,
  context: HttpPolicyContext,
  sent: { headers: readonly string[]; target: string },
  response: PolicyHttpResponse,
  vars: Map<string, unknown>,
): HttpDecision {
  const state = new HttpEvaluation('on_http_response', context, [...response.headers], sent.target, response, new Map(vars), [...sent.headers]);
  return state.run(program.phases.on_http_response);
}

/**
 * The variables as written (`activation`): `req` and `res` made on first read and again after an
 * action changed what they describe; the actions read them here.
 */
class RawVariables {
  constructor(private readonly evaluation: HttpEvaluation) {}

  get conn(): unknown {
    return this.evaluation.base.conn;
  }

  get endpoint(): unknown {
    return this.evaluation.base.endpoint;
  }

  get time(): unknown {
    return this.evaluation.base.time;
  }

  get req(): Record<string, unknown> {
    return this.evaluation.rawReq();
  }

  get res(): Record<string, unknown> | undefined {
    return this.evaluation.rawRes();
  }

  get vars(): Map<string, unknown> {
    return this.evaluation.decision.vars;
  }

  get actions(): unknown {
    return this.evaluation.actionResults;
  }
}

/**
 * What the compiled expressions read: the same variables in cel-js's typed form, each converted
 * once per evaluation (or after an action changed it) rather than by every expression that reads it.
 */
class CelVariables {
  constructor(private readonly evaluation: HttpEvaluation) {}

  /** fast-cel.ts reads simple paths from these, so a variable only such paths read is never converted. */
  get [PLAIN_VARIABLES](): Record<string, unknown> {
    return this.evaluation.activation;
  }

  get conn(): unknown {
    return this.evaluation.typed('conn');
  }

  get endpoint(): unknown {
    return this.evaluation.typed('endpoint');
  }

  get time(): unknown {
    return this.evaluation.typed('time');
  }

  get req(): unknown {
    return this.evaluation.typed('req');
  }

  get res(): unknown {
    return this.evaluation.typed('res');
  }

  get vars(): Map<string, unknown> {
    return this.evaluation.decision.vars;
  }

  get actions(): unknown {
    return this.evaluation.actionResults;
  }
}

class HttpEvaluation {
  /** Reassigned only when a phase resumes after waiting (jwt-validation). */
  base: ReturnType<typeof connectionVariables>['base'];
  private client: IpAddress | null;
  private readonly results = emptyHttpResults();
  readonly actionResults = { ngrok: this.results };
  private req: Record<string, unknown> | undefined;
  private res: Record<string, unknown> | undefined;
  /** The typed variables, and the `req` and `res` they were converted from (a new one is converted anew). */
  private typedConn: unknown;
  private typedEndpoint: unknown;
  private typedTime: unknown;
  private typedReq: unknown;
  private typedReqFrom: unknown;
  private typedRes: unknown;
  private typedResFrom: unknown;
  private rewrites = 0;
  readonly decision: HttpDecision;
  /** The variables as written, for the actions (and for any code that reads a field directly). */
  readonly activation: Record<string, unknown>;
  /** What the compiled expressions are evaluated with. */
  private readonly cel: Record<string, unknown>;

  constructor(
    private readonly phase: PhaseName,
    private readonly context: HttpPolicyContext,
    /** The headers this phase edits: the request's, or in on_http_response the answer's. */
    headers: string[],
    target: string,
    private readonly response: PolicyHttpResponse | undefined,
    vars: Map<string, unknown>,
    /** on_http_response: the request's headers as sent (req.* there). */
    private readonly requestHeaders?: string[],
  ) {
    ({ base: this.base, client: this.client } = connectionVariables(context.connection));
    this.decision = { answer: undefined, headers, target, taken: [], logs: [], errors: [], vars, breakers: [], setCookies: [] };
    this.activation = new RawVariables(this) as unknown as Record<string, unknown>;
    this.cel = new CelVariables(this) as unknown as Record<string, unknown>;
  }

  rawReq(): Record<string, unknown> {
    return (this.req ??= requestVariables(this.context.request, this.requestHeaders ?? this.decision.headers, this.decision.target));
  }

  rawRes(): Record<string, unknown> | undefined {
    if (!this.response) return undefined;
    return (this.res ??= responseVariables({ status: this.decision.answer?.status ?? this.response.status, headers: this.decision.headers }));
  }

  typed(name: TypedVariable): unknown {
    switch (name) {
      case 'conn':
        return (this.typedConn ??= typedVariable(this.phase, name)(this.base));
      case 'endpoint':
        return (this.typedEndpoint ??= typedVariable(this.phase, name)(this.base));
      case 'time':
        return (this.typedTime ??= typedVariable(this.phase, name)(this.base));
      case 'req': {
        const req = this.rawReq();
        if (this.typedReqFrom !== req) {
          this.typedReq = typedVariable(this.phase, name)({ req });
          this.typedReqFrom = req;
        }
        return this.typedReq;
      }
      case 'res': {
        const res = this.rawRes();
        if (res === undefined) return undefined;
        if (this.typedResFrom !== res) {
          this.typedRes = typedVariable(this.phase, name)({ res });
          this.typedResFrom = res;
        }
        return this.typedRes;
      }
    }
  }

  /** From rule `r`, action `a` (a resumed phase starts after the action that waited, its rule already matched). */
  run(rules: readonly ProgramRule[], r = 0, a = 0): HttpDecision {
    for (; r < rules.length; r++, a = 0) {
      const rule = rules[r]!;
      const failure = a > 0 ? undefined : ruleMismatch(rule, this.cel);
      if (failure !== undefined) {
        if (failure !== null) this.report(rule, failure.at, failure.message);
        continue;
      }
      for (; a < rule.actions.length; a++) {
        const action = rule.actions[a]!;
        this.decision.taken.push({ phase: this.phase, rule: rule.number, type: action.type });
        if (action.type === 'jwt-validation') {
          const waits = this.jwtValidation(action.config, rules, r, a);
          if (waits) return this.decision;
          continue;
        }
        let ends: boolean;
        try {
          ends = this.runAction(action, rule, a + 1);
        } catch (error) {
          this.report(rule, `action ${a + 1} (${action.type})`, messageOf(error));
          ends = false;
        }
        if (ends) return this.decision;
      }
    }
    return this.decision;
  }

  /**
   * Finds the tokens: a missing one answers 401 at once; otherwise the decision waits
   * (`pending`) for their verification, and resuming applies it and goes on after this action.
   * True when the phase stops here (an answer, or the wait).
   */
  private jwtValidation(config: JwtValidationConfig, rules: readonly ProgramRule[], r: number, a: number): boolean {
    const req = this.activation.req as { headers: Map<string, string[]>; method: string };
    const found = findTokens(config, { method: req.method, headers: req.headers, body: this.context.request.body });
    const results = this.results.jwt_validation!;
    if (found.missing) {
      Object.assign(results, { tokens: [], error: { code: 'ERR_NGROK_7179', message: `no token in the ${found.missing.method} field ${JSON.stringify(found.missing.name)}` } });
      return this.answer(401, ['WWW-Authenticate', 'Bearer', 'Content-Type', 'text/plain; charset=utf-8'], '401 Unauthorized: this endpoint needs a JSON Web Token.\n');
    }
    this.decision.pending = {
      config,
      tokens: found.tokens,
      resume: (outcome) => {
        delete this.decision.pending;
        // Another request may have run meanwhile: the shared conn/endpoint variables are this one's again.
        ({ base: this.base, client: this.client } = connectionVariables(this.context.connection));
        this.typedConn = this.typedEndpoint = this.typedTime = undefined;
        Object.assign(results, { tokens: outcome.tokens, error: outcome.error });
        if (outcome.keysProblem) this.report(rules[r]!, `action ${a + 1} (jwt-validation)`, outcome.keysProblem);
        if (!outcome.verified) {
          return this.answer(401, ['WWW-Authenticate', 'Bearer error="invalid_token"', 'Content-Type', 'text/plain; charset=utf-8'], `401 Unauthorized: ${outcome.error.message}.\n`) && this.decision;
        }
        return this.run(rules, r, a + 1);
      },
    };
    return true;
  }

  private report(rule: ProgramRule, at: string, message: string): void {
    this.decision.errors.push({ rule: rule.number, name: rule.name, at, message });
  }

  private text(template: StringTemplate | ValueTemplate, rule: ProgramRule, at: string): string {
    const errors: string[] = [];
    const value = template.kind === 'static' ? template.value : build(template as ValueTemplate, this.cel, errors);
    for (const error of errors) this.report(rule, at, error);
    return typeof value === 'string' ? value : celToString(value);
  }

  private headerList(headers: Array<[string, StringTemplate]>, rule: ProgramRule, at: string): string[] {
    const out: string[] = [];
    for (const [name, template] of headers) out.push(name, sanitize(this.text(template, rule, at)));
    return out;
  }

  private answer(status: number, headers: string[], body: string): true {
    this.decision.answer = { status, headers, body };
    if (this.phase === 'on_http_response') {
      // A new answer: an earlier compress-response spoke of the one it replaces.
      delete this.decision.compress;
      // The answer replaces the agent's: its headers are the ones later rules edit.
      this.decision.headers = headers;
      this.res = undefined;
    }
    return true;
  }

  private changed(): void {
    if (this.phase === 'on_http_request') this.req = undefined;
    else this.res = undefined;
  }

  /** Runs one action; true when it ended the phase. */
  private runAction(action: ProgramAction, rule: ProgramRule, number: number): boolean {
    const at = `action ${number} (${action.type})`;
    const results = this.results;
    switch (action.type) {
      case 'close-connection':
        throw new Error('internal: close-connection runs in on_tcp_connect only');
      case 'deny': {
        const status = action.status ?? 403;
        return this.answer(status, ['Content-Type', 'text/plain; charset=utf-8'], `${status} ${statusText(status)}: denied by the endpoint's traffic policy.\n`);
      }
      case 'log': {
        const errors: string[] = [];
        const metadata = action.fixed ? staticMetadata(action.metadata) : buildMap(action.metadata, this.cel, errors);
        for (const error of errors) this.report(rule, at, error);
        results.log!.metadata = metadata;
        this.decision.logs.push(metadata);
        return false;
      }
      case 'restrict-ips': {
        const { decision, matched, errors } = restrictDecision(action, this.client, this.base.conn.client_ip, this.cel);
        for (const error of errors) this.report(rule, at, error);
        Object.assign(results.restrict_ips!, { action: decision, matched_cidr: matched, error: { code: errors.length > 0 ? 'ERR_NGROK_2217' : '', message: errors.join('; ') } });
        if (decision === 'deny' && action.enforce) return this.answer(403, ['Content-Type', 'text/plain; charset=utf-8'], `403 Forbidden: the client address is not allowed by the endpoint's traffic policy.\n`);
        return false;
      }
      case 'add-headers': {
        const added = this.headerList(action.headers, rule, at);
        // The reference adds a header; a value the client (or agent) sent under the same name stays beside it.
        this.decision.headers.push(...added);
        const map = new Map<string, string>();
        for (let i = 0; i < added.length; i += 2) map.set(added[i]!.toLowerCase(), added[i + 1]!);
        results.add_headers!.headers_added = map;
        this.changed();
        return false;
      }
      case 'remove-headers': {
        const drop = nameSet(action.headers);
        const kept: string[] = [];
        const headers = this.decision.headers;
        for (let i = 0; i < headers.length; i += 2) if (!drop.has(headers[i]!.toLowerCase())) kept.push(headers[i]!, headers[i + 1]!);
        results.remove_headers!.headers_removed = [...action.headers];
        // Nothing removed: what later rules read of the request stays as it is.
        if (kept.length !== headers.length) {
          this.decision.headers = kept;
          this.changed();
        }
        return false;
      }
      case 'custom-response': {
        const headers = this.headerList(action.headers, rule, at);
        results.custom_response!.status_code = BigInt(action.status);
        return this.answer(action.status, headers, this.text(action.body, rule, at));
      }
      case 'redirect': {
        const url = this.rewritten(action.from, action.to, rule, at);
        if (url === undefined) return false;
        results.redirect!.url = url;
        return this.answer(action.status, ['Location', sanitize(url), ...this.headerList(action.headers, rule, at)], '');
      }
      case 'url-rewrite': {
        const url = this.rewritten(action.from, action.to, rule, at);
        if (url === undefined) return false;
        results.url_rewrite!.url = url;
        this.decision.target = originForm(url);
        this.changed();
        return false;
      }
      case 'set-vars': {
        for (const [name, template] of action.vars) {
          const value = template.kind === 'static' ? template.value : this.text(template, rule, at);
          this.decision.vars.set(name, typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : value);
        }
        return false;
      }
      case 'basic-auth':
        return this.basicAuth(action);
      case 'verify-webhook':
        return this.verifyWebhook(action, rule, at);
      case 'compress-response':
        this.compress(action.algorithms);
        return false;
      case 'circuit-breaker': {
        const breakers = this.context.breakers;
        if (breakers && !breakers.allows(action.breaker, Number(this.context.connection.now))) {
          return this.answer(503, ['Content-Type', 'text/plain; charset=utf-8'], "503 Service Unavailable: the endpoint's circuit breaker is open.\n");
        }
        this.decision.breakers.push(action.breaker);
        return false;
      }
      case 'rate-limit': {
        const keys = action.keys;
        const key = keys.length === 0 ? this.base.conn.client_ip : keys.length === 1 ? this.text(keys[0]!, rule, at) : keys.map((k) => this.text(k, rule, at)).join('\u0000');
        const verdict = this.context.buckets.take(`${action.bucket}\u0001${key}`, action.capacity, action.windowMs, Number(this.context.connection.now));
        Object.assign(results.rate_limit!, { bucket_key: key, limited: verdict.limited });
        if (!verdict.limited) return false;
        return this.answer(
          429,
          ['Content-Type', 'text/plain; charset=utf-8', 'Retry-After', String(verdict.retryAfterSeconds)],
          `429 Too Many Requests: the endpoint's rate limit was reached; retry in ${verdict.retryAfterSeconds} s.\n`,
        );
      }
      case 'terminate-tls':
        return false; // on_tcp_connect only: validation never puts it in an HTTP phase
      case 'openid-connect':
      case 'oauth':
        return this.edgeLogin(action.login);
      case 'jwt-validation':
        throw new Error('internal: jwt-validation runs from run(), which can wait');
    }
  }

  /**
   * A login action: a valid session fills its result variables and the request goes on; none (or
   * one past its lifetimes) ends the phase with a login to start. A CORS preflight passes when allowed.
   */
  private edgeLogin(login: LoginConfig): boolean {
    const req = this.activation.req as { headers: Map<string, string[]>; method: string; host: string };
    const results = (login.kind === 'oauth' ? this.results.oauth : this.results.oidc)!;
    if (login.allowCorsPreflight && this.context.request.method === 'OPTIONS' && req.headers.has('access-control-request-method')) return false;
    const secure = this.context.request.scheme === 'https';
    const lookup: SessionLookup = this.context.logins
      ? this.context.logins.lookup(login, loginHost(req.host), req.headers.get('cookie') ?? [], Math.floor(Number(this.context.connection.now) / 1000), secure)
      : { ok: false, timedOut: false, maxReached: false };
    if (!lookup.ok || lookup.stale) {
      if (!lookup.ok) Object.assign(results, { session_timed_out: lookup.timedOut, session_max_duration_reached: lookup.maxReached });
      this.decision.login = { config: login, redirectPath: this.decision.target, ...(lookup.ok ? { refresh: lookup.session } : {}) };
      // what a client gets where the login cannot start at once (an upgrade, an offline test): the login page
      const query = new URLSearchParams({ auth_id: login.key, redirect_path: this.decision.target });
      return this.answer(302, ['Location', `/ngrok/login?${query}`, 'Cache-Control', 'no-store'], '');
    }
    const { session } = lookup;
    results.identity = {
      id: session.id,
      email: session.email,
      name: session.name,
      provider_user_id: session.providerUserId,
      [login.kind === 'oauth' ? 'current_provider_session_id' : 'current_session_id']: session.sessionId,
    };
    results.access_token = session.accessToken ?? '';
    results.refresh_token = session.refreshToken ?? '';
    results.userinfo_refreshed = session.refreshed === true;
    if (login.kind === 'openid-connect') Object.assign(this.results.oidc!, { identity_token: session.idToken ?? '', user_info_refreshed: session.refreshed === true });
    results.expires_at = new Date(lookup.expiresAt * 1000).toISOString();
    this.decision.setCookies.push(...lookup.renewed);
    return false;
  }

  /** The request URL with `from` replaced by `to` ($1… refer to groups), or `to` when there is no `from`; undefined when `from` does not match. */
  private rewritten(from: RE2JS | null, to: StringTemplate, rule: ProgramRule, at: string): string | undefined {
    if (++this.rewrites > MAX_REWRITES) throw new Error(`more than ${MAX_REWRITES} rewrites or redirects in one request`);
    const replacement = this.text(to, rule, at);
    if (from === null) return replacement;
    const url = String((this.activation.req as { url: { raw: string } }).url.raw);
    const matcher = from.matcher(url);
    if (!matcher.find()) return undefined;
    return from.matcher(url).replaceFirst(replacement);
  }

  /** Negotiates, and on success edits the answer's headers for a compressed body the data plane streams. */
  private compress(algorithms: readonly CompressionAlgorithm[]): void {
    const result = this.results.compress!;
    const res = this.activation.res as { headers: Map<string, string[]>; content_length: bigint; status_code: bigint } | undefined;
    if (!res || this.decision.compress !== undefined) return;
    const encoding = res.headers.get('content-encoding')?.[0]?.trim().toLowerCase();
    result.already_compressed = encoding !== undefined && encoding !== '' && encoding !== 'identity';
    const status = Number(res.status_code);
    if (result.already_compressed || status < 200 || status === 204 || status === 304 || this.context.request.method === 'HEAD') return;
    if (res.content_length >= 0n && res.content_length < BigInt(MIN_COMPRESSED_BYTES)) return;
    const accepted = (this.activation.req as { headers: Map<string, string[]> }).headers.get('accept-encoding') ?? [];
    const algorithm = negotiateEncoding(accepted, algorithms);
    if (algorithm === undefined) return;
    result.negotiated_algorithm = algorithm;
    this.decision.compress = algorithm;
    const kept: string[] = [];
    const headers = this.decision.headers;
    let vary = false;
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i]!.toLowerCase();
      if (name === 'content-length' || name === 'content-encoding') continue;
      if (name === 'vary') vary ||= /(^|,)\s*(accept-encoding|\*)\s*(,|$)/i.test(headers[i + 1]!);
      kept.push(headers[i]!, headers[i + 1]!);
    }
    kept.push('Content-Encoding', algorithm);
    if (!vary) kept.push('Vary', 'Accept-Encoding');
    this.decision.headers = kept;
    this.res = undefined;
  }

  /** The secret is never reported: only whether the signature held, and why not. */
  private verifyWebhook(action: Extract<ProgramAction, { type: 'verify-webhook' }>, rule: ProgramRule, at: string): boolean {
    const req = this.activation.req as { headers: Map<string, string[]> };
    const host = req.headers.get('host')?.[0] ?? '';
    const target = this.context.request.target;
    const url = /^https?:\/\//i.test(target) ? target : `${this.context.request.scheme}://${host}${target}`;
    const request = { method: this.context.request.method, url, headers: req.headers, body: this.context.request.body ?? Buffer.alloc(0) };
    const verdict = verifyWebhook(action.provider, this.text(action.secret, rule, at), request, Number(this.context.connection.now));
    Object.assign(this.results.verify_webhook!, {
      verified: verdict.verified,
      provider: action.provider,
      error: verdict.verified ? { code: '', message: '' } : { code: '', message: verdict.message },
    });
    if (verdict.verified || !action.enforce) return false;
    return this.answer(403, ['Content-Type', 'text/plain; charset=utf-8'], `403 Forbidden: the webhook signature could not be verified (${action.provider}: ${verdict.message}).\n`);
  }

  private basicAuth(action: Extract<ProgramAction, { type: 'basic-auth' }>): boolean {
    const header = (this.activation.req as { headers: Map<string, string[]> }).headers.get('authorization')?.[0] ?? '';
    const presented = basicCredentials(header);
    let authorized = false;
    let username = '';
    if (presented) {
      for (const credential of action.credentials) {
        // Every credential is compared, in constant time for equal lengths, so timing tells nothing.
        const equal = presented.length === credential.secret.length && timingSafeEqual(presented, credential.secret);
        if (equal && !authorized) {
          authorized = true;
          username = credential.username;
        }
      }
    }
    Object.assign(this.results.basic_auth!, {
      authorized,
      credentials: { presented: presented !== undefined, username: authorized ? username : '' },
      error: authorized ? { code: '', message: '' } : { code: 'ERR_NGROK_3502', message: presented ? 'the credentials do not match' : 'no credentials were presented' },
    });
    if (authorized || !action.enforce) return false;
    return this.answer(401, ['WWW-Authenticate', `Basic realm="${action.realm}"`, 'Content-Type', 'text/plain; charset=utf-8'], '401 Unauthorized\n');
  }
}

/** Decoded Authorization values: a client sends the same one on every request. Bounded; long values are not kept. */
const BASIC_CACHE_SIZE = 64;
const BASIC_CACHE_VALUE_MAX = 512;
const basicCache = new Map<string, Buffer | undefined>();

/** The `user:password` bytes of a Basic Authorization value, or undefined when it is not one. */
function basicCredentials(header: string): Buffer | undefined {
  const cached = basicCache.get(header);
  if (cached !== undefined || basicCache.has(header)) return cached;
  const match = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  const presented = match ? Buffer.from(match[1]!, 'base64') : undefined;
  if (header.length <= BASIC_CACHE_VALUE_MAX) {
    if (basicCache.size >= BASIC_CACHE_SIZE) basicCache.delete(basicCache.keys().next().value!);
    basicCache.set(header, presented);
  }
  return presented;
}

const nameSets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** remove-headers' names (lower-case since validation) as a set, made once per compiled action. */
function nameSet(names: readonly string[]): ReadonlySet<string> {
  let set = nameSets.get(names);
  if (set === undefined) nameSets.set(names, (set = new Set(names)));
  return set;
}

/** A value placed in a header line: no line breaks or NUL (an interpolation could produce them). */
/** What HTTP allows in a header value (RFC 9110 field-value; Node's own check): tab, visible ASCII, obs-text. */
const INVALID_HEADER_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * A value an action writes into a header: control characters (line breaks first of all: no header
 * injection) become spaces, and a value with characters past Latin-1 (an interpolated `€` of a
 * decoded path, say) is sent as its UTF-8 bytes, as the client sent them.
 */
function sanitize(value: string): string {
  if (!INVALID_HEADER_CHAR.test(value)) return value;
  const text = value.replace(/[\x00-\x08\x0a-\x1f\x7f]+/g, ' ');
  return /[^\x00-\xff]/.test(text) ? Buffer.from(text, 'utf8').toString('latin1') : text;
}

/** The origin-form of a rewritten URL (`/path?query`); a path alone stays as it is. */
function originForm(url: string): string {
  if (url.startsWith('/')) return url;
  const parsed = requestUrl(url, '', 'http');
  const query = String(parsed.query);
  return `${String(parsed.raw_path) || '/'}${query ? `?${query}` : ''}`;
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 429: 'Too Many Requests', 503: 'Service Unavailable' };

function statusText(status: number): string {
  return STATUS_TEXT[status] ?? 'Denied';
}

