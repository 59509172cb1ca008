import { errors } from '../errors.js';
import { REDACTED } from './recorder.js';
import type { InspectedRequest } from './types.js';

/** The header that marks a replay's request (its value a token from InspectionRecorder.expectReplay); never forwarded. */
export const REPLAY_HEADER = 'burrow-replay';

/** What a replay may change of the captured request (CONSOLE.md §2); absent fields keep it. */
export interface ReplayEdits {
  readonly method?: string | undefined;
  /** With the query; starts with `/`. */
  readonly path?: string | undefined;
  /** Replaces every captured header (name → values), as the item shows them. */
  readonly headers?: Readonly<Record<string, readonly string[]>> | undefined;
  /** UTF-8 text sent as the body instead of the captured one. */
  readonly body?: string | undefined;
}

/** The request to send again through the endpoint's public path. */
export interface ReplayRequest {
  readonly accountId: string;
  readonly endpointId: string;
  /** The endpoint's public URL (its scheme and host). */
  readonly url: string;
  readonly method: string;
  readonly path: string;
  /** Name, value pairs; framing (Content-Length, Transfer-Encoding) and Host are the sender's. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Buffer;
}

/** Sends a replay; resolves with the new request's id, or why it could not be sent. */
export type ReplaySender = (request: ReplayRequest) => Promise<{ id: string } | { refused: string }>;

/** Headers the sender sets itself: the captured ones would frame the body wrongly or name another host. */
const FRAMING = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The request a replay sends: the captured one with the edits. Redacted header values were never
 * stored, so those headers are left out (edited headers can supply them). A body that was not
 * captured whole cannot be sent again unless the edit gives one.
 */
export function replayOf(captured: InspectedRequest, edits: ReplayEdits, url: string): ReplayRequest {
  const method = edits.method ?? captured.method;
  if (!TOKEN.test(method)) throw errors.invalidField('method', 'must be an HTTP method token such as GET or POST');
  const path = edits.path ?? captured.path;
  if (!path.startsWith('/') || /[\s\0-\x1f\x7f]/.test(path)) throw errors.invalidField('path', 'must start with "/" and hold no spaces or control characters');
  const headers: [string, string][] = [];
  for (const [name, values] of Object.entries(edits.headers ?? captured.requestHeaders)) {
    if (!TOKEN.test(name)) throw errors.invalidField('headers', `has a name that is not a header name: ${JSON.stringify(name)}`);
    if (FRAMING.has(name.toLowerCase())) continue;
    for (const value of values) {
      if (/[\r\n\0]/.test(value)) throw errors.invalidField('headers', `has a value with a line break for ${name}`);
      if (edits.headers === undefined && value === REDACTED) continue;
      headers.push([name, value]);
    }
  }
  return { accountId: captured.accountId, endpointId: captured.endpointId, url, method, path, headers, body: bodyOf(captured, edits) };
}

function bodyOf(captured: InspectedRequest, edits: ReplayEdits): Buffer {
  if (edits.body !== undefined) return Buffer.from(edits.body, 'utf8');
  const declared = captured.requestHeaders['content-length']?.[0] ?? (captured.requestHeaders['transfer-encoding'] ? 'chunked' : '0');
  if (declared === '0') return Buffer.alloc(0);
  const body = captured.requestBody;
  if (body === undefined) throw errors.invalidField('body', 'is needed: the request had a body and capture kept none (capture "heads"); send one in "body"');
  if (body.truncated) throw errors.invalidField('body', `is needed: the request's body (${body.length} bytes) was captured only up to ${Buffer.from(body.data, 'base64').length}; send one in "body"`);
  return Buffer.from(body.data, 'base64');
}
