/**
 * `burrow policy test --request …` (HTTP-POLICY.md §6): one HTTP request, and optionally the
 * agent's answer, through every phase of an http/https endpoint's policy with the engine the data
 * plane runs. Prints each rule and action as it ran, the request as it would reach the agent and
 * the answer the client would get. Exit 0 when the request reaches the agent, 1 when the policy
 * closed the connection or answered instead, 2 when the test could not run.
 */
import { publicUrl } from '../domain/tunnels/binds.js';
import type { HttpDecision, PolicyConnection, PolicyProgram, ProgramRule } from '../domain/policy/index.js';

export interface HttpTestInput {
  method: string;
  target: string;
  scheme: 'http' | 'https';
  headers: string[];
  body: Buffer | undefined;
  response: { status: number; headers: string[] } | undefined;
}

export interface HttpTestFlags {
  request: string;
  header: string[];
  endpointUrl?: string;
  responseStatus?: string;
  responseHeader: string[];
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The request the flags describe (and the endpoint it reaches, set on `connection`), or the one-line reason they do not describe one. */
export function readHttpFlags(flags: HttpTestFlags, connection: PolicyConnection, body: Buffer | undefined): HttpTestInput | string {
  const match = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\S+)$/.exec(flags.request.trim());
  if (!match || !(match[2]!.startsWith('/') || /^https?:\/\//i.test(match[2]!))) {
    return `--request ${JSON.stringify(flags.request)} must be a method and a target, e.g. 'GET /path?q=1'.`;
  }
  let url: URL;
  try {
    url = new URL(flags.endpointUrl ?? `https://${connection.endpoint.host || 'app.example.com'}`);
  } catch {
    return `--endpoint-url ${JSON.stringify(flags.endpointUrl)} is not a URL such as https://app.example.com.`;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || (url.pathname !== '/' && url.pathname !== '') || url.search !== '') {
    return `--endpoint-url ${JSON.stringify(flags.endpointUrl)} must be http:// or https:// and a host, without a path.`;
  }
  const scheme = url.protocol === 'http:' ? 'http' : 'https';
  const headers = lines('--header', flags.header);
  if (typeof headers === 'string') return headers;
  const port = url.port === '' ? (scheme === 'http' ? 80 : 443) : Number(url.port);
  connection.serverPort = port;
  connection.endpoint = { host: url.hostname, port, addr: `${url.hostname}:${port}`, url: publicUrl(scheme, url.hostname, port), protocol: scheme };
  if (!headers.some((_, i) => i % 2 === 0 && headers[i]!.toLowerCase() === 'host')) headers.unshift('Host', url.host);
  if (body !== undefined && !headers.some((_, i) => i % 2 === 0 && /^(content-length|transfer-encoding)$/i.test(headers[i]!))) headers.push('Content-Length', String(body.length));
  let response: HttpTestInput['response'];
  if (flags.responseStatus !== undefined) {
    const status = /^\d{3}$/.test(flags.responseStatus) ? Number(flags.responseStatus) : 0;
    if (status < 100 || status > 599) return `--response-status ${JSON.stringify(flags.responseStatus)} must be a status code from 100 to 599.`;
    const answerHeaders = lines('--response-header', flags.responseHeader);
    if (typeof answerHeaders === 'string') return answerHeaders;
    response = { status, headers: answerHeaders };
  } else if (flags.responseHeader.length > 0) {
    return '--response-header needs --response-status.';
  }
  return { method: match[1]!, target: match[2]!, scheme, headers, body, response };
}

function lines(flag: string, values: readonly string[]): string[] | string {
  const out: string[] = [];
  for (const value of values) {
    const colon = value.indexOf(':');
    const name = colon > 0 ? value.slice(0, colon).trim() : '';
    if (!TOKEN.test(name) || /[\r\n\0]/.test(value)) return `${flag} ${JSON.stringify(value)} must be 'Name: value'.`;
    out.push(name, value.slice(colon + 1).trim());
  }
  return out;
}

export interface HttpTestResult {
  /** True when the request reaches the agent. */
  allowed: boolean;
  request: HttpDecision;
  response: HttpDecision | undefined;
  /** The request as the agent gets it, or undefined when it never reaches it. */
  forwarded: { method: string; target: string; headers: string[] } | undefined;
  answer: { status: number; headers: string[]; body?: string; compressed?: string } | undefined;
}

/** Runs the HTTP phases as the data plane does (http-policy.ts), with fresh rate-limit and breaker state. */
export async function runHttpTest(program: PolicyProgram, connection: PolicyConnection, input: HttpTestInput): Promise<HttpTestResult> {
  const { evaluateHttpRequest, evaluateHttpResponse, settleDecision, RateBuckets, CircuitBreakers } = await import('../domain/policy/index.js');
  const { JwtVerifier } = await import('../domain/identity/jwt-verify.js');
  const jwt = new JwtVerifier();
  const now = Number(connection.now);
  const context = {
    connection,
    request: { method: input.method, target: input.target, version: '1.1', scheme: input.scheme, headers: input.headers, receivedAt: now, ...(input.body ? { body: input.body } : {}) },
    buckets: new RateBuckets(),
    breakers: new CircuitBreakers(),
  };
  // jwt-validation fetches its key sets as the data plane does.
  const request = await settleDecision(evaluateHttpRequest(program, context), (config, tokens) => jwt.verify(config, tokens));
  const forwarded = request.answer ? undefined : { method: input.method, target: request.target, headers: request.headers };
  const made = request.answer;
  const given = made ?? input.response;
  if (!given) return { allowed: true, request, response: undefined, forwarded, answer: undefined };
  const response = evaluateHttpResponse(program, context, { headers: request.headers, target: request.target }, { status: given.status, headers: given.headers }, request.vars);
  const final = response.answer ?? { status: given.status, headers: response.headers, body: made?.body };
  const answer = { status: final.status, headers: final.headers, ...(final.body !== undefined ? { body: final.body } : {}), ...(response.compress ? { compressed: response.compress } : {}) };
  return { allowed: made === undefined, request, response, forwarded, answer };
}

/** The result for a person: each phase's rules and actions, the request to the agent, the answer. */
export function httpReport(file: string, program: PolicyProgram, input: HttpTestInput, result: HttpTestResult): string[] {
  const out = [`${file}: ${input.method} ${input.target} to ${input.scheme}://${headerOf(input.headers, 'host')}`];
  out.push(...phaseLines('on_http_request', program.phases.on_http_request, result.request));
  if (result.forwarded) {
    out.push('Request to the agent:', `  ${result.forwarded.method} ${result.forwarded.target} HTTP/1.1`, ...headerLines(result.forwarded.headers));
    if (input.body) out.push(`  (body: ${input.body.length} bytes)`);
  } else out.push('Request to the agent: none (the policy answered)');
  if (result.response) out.push(...phaseLines('on_http_response', program.phases.on_http_response, result.response));
  if (result.answer) {
    out.push(`Answer to the client: ${result.answer.status}`, ...headerLines(result.answer.headers));
    if (result.answer.compressed) out.push(`  (body compressed with ${result.answer.compressed})`);
    if (result.answer.body) out.push(`  body: ${JSON.stringify(result.answer.body)}`);
  } else out.push("Answer to the client: the agent's (give --response-status to run on_http_response)");
  out.push(result.allowed ? 'Verdict: reaches the agent' : 'Verdict: answered by the policy');
  return out;
}

function phaseLines(phase: string, rules: readonly ProgramRule[], decision: HttpDecision): string[] {
  if (rules.length === 0) return [`${phase}: no rules`];
  const out = [`${phase}:`];
  const last = decision.taken.at(-1);
  for (const rule of rules) {
    const title = rule.name === null ? `  Rule ${rule.number}` : `  Rule ${rule.number} (${JSON.stringify(rule.name)})`;
    const taken = decision.taken.filter((t) => t.rule === rule.number);
    const errors = decision.errors.filter((e) => e.rule === rule.number);
    if (taken.length === 0) {
      const after = decision.answer !== undefined && last !== undefined && rule.number > last.rule;
      out.push(after ? `${title}: not evaluated (the policy already answered)` : `${title}: not matched${errors.length > 0 ? `: run-time error, counted as false: ${errors[0]!.message}` : ''}`);
      continue;
    }
    out.push(`${title}: matched${rule.expressions.length === 0 ? ' (no expressions)' : ''}`);
    taken.forEach((action, i) => {
      const answered = decision.answer !== undefined && action === last ? `: answered ${decision.answer.status}` : '';
      out.push(`    action ${i + 1} ${action.type}${answered}`);
    });
    for (const error of errors) out.push(`    error in ${error.at}: ${error.message}`);
  }
  for (const metadata of decision.logs) out.push(`  log: ${JSON.stringify(metadata)}`);
  return out;
}

function headerLines(headers: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < headers.length; i += 2) out.push(`  ${headers[i]}: ${headers[i + 1]}`);
  return out;
}

function headerOf(headers: readonly string[], name: string): string {
  for (let i = 0; i + 1 < headers.length; i += 2) if (headers[i]!.toLowerCase() === name) return headers[i + 1]!;
  return '';
}
