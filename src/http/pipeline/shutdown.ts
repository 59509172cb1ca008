import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * While the server shuts down, each keep-alive connection is closed after the last answer it
 * owes, not the first: Node parses pipelined requests as they arrive, and once an answer says
 * `Connection: close` it destroys the socket, resetting the requests queued behind it (whose
 * handlers may already have written). So only the answer to the latest request received on a
 * connection carries `Connection: close`; Node sends answers in request order, so it goes last.
 */
export function registerShutdownClose(app: FastifyInstance, isClosing: () => boolean): void {
  const latest = new WeakMap<Socket, IncomingMessage>();
  // Before Fastify's own 'request' listener: a handler that answers synchronously (readyz while
  // closing) would otherwise reach onSend before its request was recorded.
  app.server.prependListener('request', (request: IncomingMessage) => latest.set(request.socket, request));
  app.addHook('onSend', (request, reply, payload, done) => {
    if (isClosing() && request.raw.httpVersionMajor === 1) {
      if (latest.get(request.raw.socket) === request.raw) reply.header('Connection', 'close');
      else {
        // Fastify sets it on the raw response itself once its own close has begun.
        reply.removeHeader('connection');
        reply.raw.removeHeader('connection');
      }
    }
    done(null, payload);
  });
}
