/**
 * `POST /traffic_policy/test`: the policy test of HTTP-POLICY.md §6 (the same `testPolicy` as
 * `burrow policy test`) on input given as JSON, each bad field refused by name before anything runs.
 */
import { errors } from '../errors.js';
import type { PolicyConnection } from './activation.js';
import { parseIp } from './cidr.js';
import { httpTestInput, METHOD_TOKEN, type HttpTestInput } from './http-test-input.js';
import { connectionReport, httpReport } from './policy-test-report.js';
import { testPolicy, type HttpTestResult } from './policy-test.js';
import { isTestEndpointHost, parseTestTime, testConnection } from './test-connection.js';
import type { Verdict } from './evaluate.js';

/** Header lists as the inspection API has them: lower-case name → values in order. */
export type HeaderMap = Readonly<Record<string, readonly string[]>>;

export interface PolicyTrialInput {
  policy: string;
  connection?: { client_ip?: string; client_port?: number; server_ip?: string; server_port?: number; endpoint_host?: string; region?: string; time?: string };
  request?: { method?: string; path?: string; headers?: HeaderMap; body?: string; endpoint_url?: string };
  response?: { status: number; headers?: HeaderMap };
}

export interface PolicyTrial {
  connection: PolicyConnection;
  verdict: Verdict;
  http: HttpTestResult | undefined;
  report: string[];
}

export interface TrialSettings {
  maxRules: number;
  region: string;
  /** The caller's address: the client of the connection unless `connection.client_ip` says otherwise. */
  callerIp: string;
  now: number;
}

export async function tryPolicy(input: PolicyTrialInput, settings: TrialSettings): Promise<PolicyTrial> {
  const connection = connectionOf(input.connection ?? {}, settings);
  // An answer implies a request: without one, the request's defaults (GET / to https://<endpoint_host>).
  const http = input.request || input.response ? requestOf(input.request ?? {}, input.response, connection) : undefined;
  const outcome = await testPolicy(input.policy, settings.maxRules, connection, http);
  if (!outcome.ok) throw errors.policy(outcome.error.code, outcome.error.message, 'policy');
  const report = http && outcome.http
    ? httpReport('policy', outcome.program, http, outcome.http)
    : connectionReport('policy', outcome.program.rules, connection, outcome.verdict);
  return { connection, verdict: outcome.verdict, http: outcome.http, report };
}

function connectionOf(given: NonNullable<PolicyTrialInput['connection']>, settings: TrialSettings): PolicyConnection {
  const clientIp = given.client_ip ?? settings.callerIp.replace(/^::ffff:(?=\d+\.)/, '');
  if (parseIp(clientIp) === null) throw errors.invalidField('connection.client_ip', 'must be an IPv4 or IPv6 address');
  const serverIp = given.server_ip ?? '127.0.0.1';
  if (parseIp(serverIp) === null) throw errors.invalidField('connection.server_ip', 'must be an IPv4 or IPv6 address');
  const now = given.time === undefined ? settings.now : parseTestTime(given.time);
  if (now === undefined) throw errors.invalidField('connection.time', 'must be an RFC 3339 time such as 2024-05-01T12:00:00Z');
  const endpointHost = given.endpoint_host ?? '';
  if (!isTestEndpointHost(endpointHost)) throw errors.invalidField('connection.endpoint_host', 'must be a host name');
  const serverPort = given.server_port ?? 443;
  const clientPort = given.client_port ?? 50000;
  if (clientPort < 1) throw errors.invalidField('connection.client_port', 'must be a port from 1 to 65535');
  if (serverPort < 1) throw errors.invalidField('connection.server_port', 'must be a port from 1 to 65535');
  return testConnection({ clientIp, clientPort, serverIp, serverPort, region: given.region ?? settings.region, endpointHost, now });
}

function requestOf(given: NonNullable<PolicyTrialInput['request']>, answer: PolicyTrialInput['response'], connection: PolicyConnection): HttpTestInput {
  const method = given.method ?? 'GET';
  if (!METHOD_TOKEN.test(method)) throw errors.invalidField('request.method', 'must be an HTTP method such as GET');
  const target = given.path ?? '/';
  if (!target.startsWith('/') || /[\s\0]/.test(target)) throw errors.invalidField('request.path', 'must start with "/" and hold no spaces, e.g. /path?q=1');
  let url: URL;
  try {
    url = new URL(given.endpoint_url ?? `https://${connection.endpoint.host || 'app.example.com'}`);
  } catch {
    throw errors.invalidField('request.endpoint_url', 'must be a URL such as https://app.example.com');
  }
  const headers = headerLines('request.headers', given.headers);
  if (answer && answer.status < 100) throw errors.invalidField('response.status', 'must be a status code from 100 to 599');
  const response = answer && { status: answer.status, headers: headerLines('response.headers', answer.headers) };
  const body = given.body === undefined ? undefined : Buffer.from(given.body, 'utf8');
  const input = httpTestInput(connection, url, { method, target, headers, body, response });
  if (typeof input === 'string') throw errors.invalidField('request.endpoint_url', input);
  return input;
}

function headerLines(field: string, map: HeaderMap | undefined): string[] {
  const lines: string[] = [];
  for (const [name, values] of Object.entries(map ?? {})) {
    if (!METHOD_TOKEN.test(name)) throw errors.invalidField(field, `has ${JSON.stringify(name.slice(0, 64))}, which is not a header name`);
    for (const value of values) {
      if (/[\r\n\0]/.test(value)) throw errors.invalidField(field, `has a value of ${name} with a line break or NUL`);
      lines.push(name, value);
    }
  }
  return lines;
}

/** Raw header lines as the API shows them: lower-case name → values in order. */
export function headerMap(lines: readonly string[]): Record<string, string[]> {
  const map: Record<string, string[]> = {};
  for (let i = 0; i + 1 < lines.length; i += 2) (map[lines[i]!.toLowerCase()] ??= []).push(lines[i + 1]!);
  return map;
}
