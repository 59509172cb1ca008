// What the HTTP port answers to bytes its parser cannot take as a request.
import http from 'node:http';
import type { Duplex } from 'node:stream';

/** Node's own answers by parser error (anything else is 400). */
const STATUS_BY_CODE: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

/**
 * Bytes after a request that closed the connection are not an error: the server reads no further
 * request (RFC 9112 §9.6) and the answer in flight completes. Node's default would write a 400 in
 * front of that answer and cut the connection. Anything else gets Node's answer (unless an answer
 * has begun, when one more would corrupt it) and the connection is closed.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, answerBegun: boolean): void {
  if (error.code === 'HPE_CLOSED_CONNECTION') return;
  if (socket.writable && !answerBegun) {
    const status = STATUS_BY_CODE[error.code ?? ''] ?? 400;
    socket.write(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\n\r\n`);
  }
  socket.destroy();
}
