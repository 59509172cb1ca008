/**
 * Proxy streams (AGENT-PROTOCOL.md §6): one per public connection, opened by the server.
 * Preamble = `00 00 00 03` (type Proxy) + header length as int64 little-endian + JSON header,
 * then raw bytes both ways.
 */
import { encodeProxyHeader, type ProxyHeader } from './messages.js';
import type { ProtocolStream, StreamSession } from './stream-session.js';
import { StreamType } from './stream-types.js';

/** The bytes that start a proxy stream. */
export function encodeProxyPreamble(header: ProxyHeader): Buffer {
  const json = Buffer.from(JSON.stringify(encodeProxyHeader(header)), 'utf8');
  const out = Buffer.alloc(4 + 8 + json.length);
  out.writeUInt32BE(StreamType.Proxy, 0);
  out.writeBigInt64LE(BigInt(json.length), 4);
  json.copy(out, 12);
  return out;
}

/**
 * Opens a proxy stream and writes its whole preamble in ONE write (so the SYN frame carries
 * the type, as GO reads it with one Read). The returned stream carries the raw connection.
 */
export function openProxyStream(session: StreamSession, header: ProxyHeader): ProtocolStream {
  const stream = session.open();
  // A reset or a dead session must never crash the process; the caller's own 'error'
  // listeners (pipeline etc.) still see every error.
  stream.on('error', () => {});
  stream.write(encodeProxyPreamble(header));
  return stream;
}
