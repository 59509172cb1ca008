/**
 * Calls to identity providers (IDENTITY.md §1): TLS verified against Node's roots plus
 * NODE_EXTRA_CA_CERTS (Node's default agent), each call bounded in time and in size, no redirects
 * followed. A failure is a ProviderUnavailable naming what failed, never the request's secrets.
 */
import http from 'node:http';
import https from 'node:https';

export const PROVIDER_TIMEOUT_MS = 4000;
export const PROVIDER_MAX_BYTES = 256 * 1024;

export interface ProviderAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface ProviderRequest {
  readonly method?: 'GET' | 'POST';
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** Epoch ms by which the answer must be in (a login's calls share one deadline). */
  readonly deadline?: number;
}

export type ProviderFetch = (url: string, request?: ProviderRequest) => Promise<ProviderAnswer>;

/** The provider could not be reached or answered with something unusable: a 502 for the user. */
export class ProviderUnavailable extends Error {}

/**
 * The provider refused a token it had issued (401 or 403 from user-info, `invalid_grant` to a
 * refresh): a 502 during a login, as before; at a refresh, the end of the session.
 */
export class TokenRefused extends ProviderUnavailable {}

export const providerFetch: ProviderFetch = (url, request = {}) =>
  new Promise((resolve, reject) => {
    const target = new URL(url);
    const timeout = Math.max(1, Math.min(PROVIDER_TIMEOUT_MS, (request.deadline ?? Infinity) - Date.now()));
    const client = target.protocol === 'https:' ? https : http;
    const req = client.request(target, { method: request.method ?? 'GET', headers: { 'user-agent': 'burrow', accept: 'application/json', ...request.headers }, timeout });
    const fail = (message: string) => {
      req.destroy();
      reject(new ProviderUnavailable(`${target.host}: ${message}`));
    };
    const timer = setTimeout(() => fail(`no answer within ${timeout} ms`), timeout);
    req.once('timeout', () => fail(`no answer within ${timeout} ms`));
    req.once('error', (error: NodeJS.ErrnoException) => fail(error.code ?? error.message));
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > PROVIDER_MAX_BYTES) fail(`answer larger than ${PROVIDER_MAX_BYTES} bytes`);
        else chunks.push(chunk);
      });
      res.once('error', () => fail('answer cut short'));
      res.once('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
    });
    req.once('close', () => clearTimeout(timer));
    req.end(request.body);
  });

/** A provider's JSON object answer, or ProviderUnavailable. */
export function jsonObject(answer: ProviderAnswer, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body.toString('utf8'));
  } catch {
    throw new ProviderUnavailable(`its ${what} answer (HTTP ${answer.status}) is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ProviderUnavailable(`its ${what} answer is not a JSON object`);
  return parsed as Record<string, unknown>;
}
