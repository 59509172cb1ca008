import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../../domain/errors.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;


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
