/**
 * Raw HTTP/1.1 over a socket, for what light-my-request cannot send: repeated headers as a real
 * parser merges them, chunked bodies, malformed framing, aborted bodies.
 */
import net from 'node:net';
import type { LightMyRequestResponse } from 'fastify';

export interface RawAnswer {
  /** Everything the server wrote, as latin1 text. */
  raw: string;
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `bytes`, half-closes, and reads until the server closes (or `timeoutMs` passes). */
export function exchange(port: number, bytes: string | Buffer, options: { timeoutMs?: number; halfClose?: boolean } = {}): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const finish = () => resolve(Buffer.concat(chunks).toString('latin1'));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('close', finish);
    socket.on('error', () => undefined);
    socket.setTimeout(options.timeoutMs ?? 5000, () => socket.destroy());
    socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
    if (options.halfClose !== false) socket.end();
  });
}

/** Parses the first response of a raw exchange (Content-Length or chunked body). */
export function parseAnswer(raw: string): RawAnswer | undefined {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
  if (!match) return undefined;
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  let rest = raw.slice(end + 4);
  let body: string;
  if (headers['content-length'] !== undefined) {
    body = rest.slice(0, Number(headers['content-length']));
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    body = '';
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      const size = parseInt(rest.slice(0, lineEnd), 16);
      if (!Number.isFinite(size) || size === 0) break;
      body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
      rest = rest.slice(lineEnd + 2 + size + 2);
    }
  } else {
    body = rest;
  }
  // The body is UTF-8 on the wire; it was read as latin1 to keep byte offsets.
  return { raw, statusCode: Number(match[1]), headers, body: Buffer.from(body, 'latin1').toString('utf8') };
}

/** The shape World's checks read, from a raw answer. */
export function asInjectResponse(answer: RawAnswer): LightMyRequestResponse {
  return { statusCode: answer.statusCode, headers: answer.headers, body: answer.body, payload: answer.body } as unknown as LightMyRequestResponse;
}
