import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../../domain/errors.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/** After a 413, how much more of the refused body is read (and thrown away) before closing. */
export const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;
/** … and for how long at most. */
const DISCARD_TIMEOUT_MS = 10_000;

/**
 * Body framing of SPEC §2 step 5, in place of Fastify's parsers: every body, whatever its
 * Content-Type, arrives here as bytes so that each framing failure gets the SPEC's answer.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_LIMIT_BYTES }, (request, raw, done) => {
    try {
      done(null, parseBody(request, raw as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

function parseBody(request: FastifyRequest, raw: Buffer): unknown {
  const method = request.method;
  if (method !== 'POST' && method !== 'PATCH' && method !== 'PUT') {
    if (raw.length > 0) throw errors.bodyNotAllowed(method);
    return undefined;
  }
  const contentType = request.headers['content-type'];
  if (raw.length === 0) return {};
  if (contentType === undefined) throw errors.bodyWithoutContentType();
  if (!isJsonMediaType(contentType)) throw errors.unsupportedMediaType(contentType);

  if (!isUtf8(raw)) throw errors.invalidJson('it is not valid UTF-8');
  const text = raw.toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw errors.invalidJson(describeJsonError(error));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw errors.bodyNotObject();
  return value;
}

/**
 * `application/json`, in any letter case, with or without parameters; a charset, if given, must
 * be UTF-8, the only encoding the body is read in.
 */
export function isJsonMediaType(header: string): boolean {
  if (header === 'application/json') return true;
  const [type = '', ...parameters] = header.split(';');
  if (type.trim().toLowerCase() !== 'application/json') return false;
  for (const parameter of parameters) {
    const [name = '', value = ''] = parameter.split('=');
    if (name.trim().toLowerCase() !== 'charset') continue;
    const charset = value.trim().replace(/^"(.*)"$/, '$1').toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8') return false;
  }
  return true;
}

function describeJsonError(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  // V8 says e.g. "Unexpected token } in JSON at position 12": keep the position, drop the rest.
  const position = /position (\d+)/.exec(message)?.[1];
  return position === undefined ? 'it could not be parsed' : `syntax error at character ${position}`;
}

/**
 * A body over the limit is answered 413 with `Connection: close` while the client may still be
 * sending it. Node closes the socket as soon as the answer is written; the client's next write
 * then meets a reset, and a client that reads only after sending (most do) sees EPIPE instead
 * of the 413. So the rest of the body is read and thrown away, up to DISCARD_LIMIT_BYTES and
 * DISCARD_TIMEOUT_MS, and the connection is closed only then: gracefully, after the answer.
 */
export function closeAfterReadingBody(request: IncomingMessage): void {
  const socket = request.socket as IncomingMessage['socket'] & { destroySoon?: () => void };
  if (request.complete || socket.destroyed || typeof socket.destroySoon !== 'function') return;
  const destroySoon = socket.destroySoon.bind(socket);
  let answered = false;
  let read = false;
  let discarded = 0;
  const close = () => {
    clearTimeout(timer);
    request.off('data', onData);
    socket.destroySoon = destroySoon;
    destroySoon();
  };
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_LIMIT_BYTES) {
      clearTimeout(timer);
      socket.destroy();
    }
  };
  const timer = setTimeout(() => socket.destroy(), DISCARD_TIMEOUT_MS);
  timer.unref();
  // Node calls destroySoon once the answer is written: deferred until the body is read too.
  socket.destroySoon = () => {
    answered = true;
    if (read) close();
  };
  request.on('data', onData);
  request.once('end', () => {
    read = true;
    if (answered) close();
  });
  socket.once('close', () => clearTimeout(timer));
  request.resume();
}
