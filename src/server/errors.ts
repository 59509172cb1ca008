import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, errors } from '../domain/errors.js';
import { isUnavailableError } from '../storage/errors.js';
import { BODY_LIMIT_BYTES } from './body.js';

/**
 * Renders every error in SPEC §3's shape with the status line and `status_code` agreeing.
 * Serialized by hand so that the field order is exact and no route schema can reshape it.
 */
export function renderError(error: ApiError, operationId: string): string {
  const details = JSON.stringify({ operation_id: operationId, ...error.details });
  const code = error.errorCode === undefined ? '' : `"error_code":${JSON.stringify(error.errorCode)},`;
  return `{${code}"status_code":${error.statusCode},"msg":${JSON.stringify(error.message)},"details":${details}}`;
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  reply.errorCode = error.errorCode;
  return reply
    .code(error.statusCode)
    .type('application/json')
    .send(renderError(error, String(reply.request.id)));
}

/**
 * For errors the router raises before any hook runs (so no onSend adds the usual headers):
 * written straight to the socket, with every header an answer must carry.
 */
export function sendErrorBeforeRouting(reply: FastifyReply, error: ApiError): void {
  const body = renderError(error, String(reply.request.id));
  reply.raw.writeHead(error.statusCode, {
    ...error.headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'ngrok-operation-id': String(reply.request.id),
    'cache-control': 'no-store',
  });
  reply.raw.end(body);
}

/** Maps anything thrown while handling a request to the ApiError the caller sees. */
export function toApiError(error: unknown, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  if (isUnavailableError(error)) {
    request.log.error({ err: error }, 'database unavailable');
    return errors.unavailable();
  }
  const fastifyError = error as Partial<FastifyError>;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.bodyTooLarge(BODY_LIMIT_BYTES);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(request.headers['content-type'] ?? '');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, undefined, 'The request body does not match its Content-Length header.');
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return errors.notFound();
  }
  // Fastify's own client errors (aborted bodies and the like) keep their 4xx status.
  const status = fastifyError.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new ApiError(status, undefined, 'The request could not be processed. Check its framing and try again.');
  }
  request.log.error({ err: error }, 'unhandled error');
  return errors.internal();
}

declare module 'fastify' {
  interface FastifyReply {
    /** The error_code of the answer, when it is an error with one: logged and counted. */
    errorCode?: string | undefined;
  }
}
