/**
 * The HTTP request of a policy test (HTTP-POLICY.md §6), completed as a client sends it. Kept apart
 * from policy-test.ts, which loads the expression engine: the CLI reads its flags without it.
 */
import type { PolicyConnection } from './activation.js';
import { publicUrl } from '../tunnels/binds.js';

export interface HttpTestInput {
  method: string;
  target: string;
  scheme: 'http' | 'https';
  /** Raw lines: name, value, … (Host and Content-Length completed by `httpTestInput`). */
  headers: string[];
  body: Buffer | undefined;
  response: { status: number; headers: string[] } | undefined;
}

/** A method token, as HTTP/1.1 has it. */
export const METHOD_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The endpoint `url` (http:// or https://, a host, no path) as the connection reaches it, set on
 * `connection`; then the request with its Host and Content-Length completed as a client sends them.
 * Returns the reason when `url` is not such an endpoint.
 */
export function httpTestInput(
  connection: PolicyConnection,
  url: URL,
  request: { method: string; target: string; headers: string[]; body: Buffer | undefined; response: HttpTestInput['response'] },
): HttpTestInput | string {
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || (url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    return 'must be http:// or https:// and a host, without a path';
  }
  const scheme = url.protocol === 'http:' ? 'http' : 'https';
  const port = url.port === '' ? (scheme === 'http' ? 80 : 443) : Number(url.port);
  connection.serverPort = port;
  connection.endpoint = { host: url.hostname, port, addr: `${url.hostname}:${port}`, url: publicUrl(scheme, url.hostname, port), protocol: scheme };
  const headers = [...request.headers];
  const has = (pattern: RegExp) => headers.some((_, i) => i % 2 === 0 && pattern.test(headers[i]!));
  if (!has(/^host$/i)) headers.unshift('Host', url.host);
  if (request.body !== undefined && !has(/^(content-length|transfer-encoding)$/i)) headers.push('Content-Length', String(request.body.length));
  return { method: request.method, target: request.target, scheme, headers, body: request.body, response: request.response };
}
