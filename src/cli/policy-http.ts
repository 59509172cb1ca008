/**
 * `burrow policy test --request …` (HTTP-POLICY.md §6): the flags describing one HTTP request, and
 * optionally the agent's answer. The test itself is domain/policy/policy-test.ts (also behind
 * `POST /traffic_policy/test`). Exit 0 when the request reaches the agent, 1 when the policy
 * closed the connection or answered instead, 2 when the test could not run.
 */
import type { PolicyConnection } from '../domain/policy/index.js';
import { httpTestInput, METHOD_TOKEN, type HttpTestInput } from '../domain/policy/http-test-input.js';

export interface HttpTestFlags {
  request: string;
  header: string[];
  endpointUrl?: string;
  responseStatus?: string;
  responseHeader: string[];
}

/** The request the flags describe (and the endpoint it reaches, set on `connection`), or the one-line reason they do not describe one. */
export function readHttpFlags(flags: HttpTestFlags, connection: PolicyConnection, body: Buffer | undefined): HttpTestInput | string {
  const match = /^(\S+) (\S+)$/.exec(flags.request.trim());
  if (!match || !METHOD_TOKEN.test(match[1]!) || !(match[2]!.startsWith('/') || /^https?:\/\//i.test(match[2]!))) {
    return `--request ${JSON.stringify(flags.request)} must be a method and a target, e.g. 'GET /path?q=1'.`;
  }
  let url: URL;
  try {
    url = new URL(flags.endpointUrl ?? `https://${connection.endpoint.host || 'app.example.com'}`);
  } catch {
    return `--endpoint-url ${JSON.stringify(flags.endpointUrl)} is not a URL such as https://app.example.com.`;
  }
  const headers = lines('--header', flags.header);
  if (typeof headers === 'string') return headers;
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
  const input = httpTestInput(connection, url, { method: match[1]!, target: match[2]!, headers, body, response });
  return typeof input === 'string' ? `--endpoint-url ${JSON.stringify(flags.endpointUrl)} ${input}.` : input;
}

function lines(flag: string, values: readonly string[]): string[] | string {
  const out: string[] = [];
  for (const value of values) {
    const colon = value.indexOf(':');
    const name = colon > 0 ? value.slice(0, colon).trim() : '';
    if (!METHOD_TOKEN.test(name) || /[\r\n\0]/.test(value)) return `${flag} ${JSON.stringify(value)} must be 'Name: value'.`;
    out.push(name, value.slice(colon + 1).trim());
  }
  return out;
}
