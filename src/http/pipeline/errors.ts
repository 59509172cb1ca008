import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { newBareId } from '../../domain/ids.js';
import { ApiError, errors } from '../../domain/errors.js';
import { redactSecrets } from '../../domain/secrets.js';
import { BODY_LIMIT_BYTES, closeAfterReadingBody } from './body.js';

/**
 * Renders every error in SPEC §3's shape with the status line and `status_code` agreeing.
 * Serialized by hand so that the field order is exact and no route schema can reshape it.
 */
export function renderError(error: ApiError, operationId: string): string {
  const shown: Record<string, string> = { operation_id: operationId };
  for (const [key, value] of Object.entries(error.details)) shown[key] = redactSecrets(value);
  const code = error.errorCode === undefined ? '' : `"error_code":${JSON.stringify(error.errorCode)},`;
  return `{${code}"status_code":${error.statusCode},"msg":${JSON.stringify(redactSecrets(error.message))},"details":${JSON.stringify(shown)}}`;
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  reply.errorCode = error.errorCode;
  if (error.statusCode === 413) closeAfterReadingBody(reply.request.raw);
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

/**
 * Requests Node's HTTP parser refuses (malformed framing, oversized headers, timeouts) never
 * reach Fastify's hooks: answered here on the socket, in the SPEC shape, and logged.
 */
export function answerClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const message =
    status === 431
      ? 'The request headers are too large.'
      : status === 408
        ? 'The request took too long to arrive. Send it again, faster.'
        : 'The request is not valid HTTP/1.1. Check its framing (headers, Content-Length, Transfer-Encoding).';
  const operationId = newBareId('op');
  const body = renderError(new ApiError(status, undefined, message), operationId);
  this.log.info({ operation_id: operationId, status, client_error: error.code }, 'request completed');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Ngrok-Operation-Id: ${operationId}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * Maps anything thrown while handling a request to the ApiError the caller sees.
 * `isUnavailable` recognises the database errors that mean "unavailable" (storage/errors.ts,
 * passed in by app/): they are answered 503.
 */
export function toApiError(error: unknown, request: FastifyRequest, isUnavailable: (error: unknown) => boolean): ApiError {
  if (error instanceof ApiError) return error;
  // A client that went away mid-body reports ECONNRESET too: that is not the database.
  if (request.raw.readableAborted || (error as Error).message === 'aborted') {
    return new ApiError(400, undefined, 'The request body ended before its announced length. Send the whole body.');
  }
  if (isUnavailable(error)) {
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
