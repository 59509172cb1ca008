/**
 * Proxy streams (AGENT-PROTOCOL.md §6): one per public connection, opened by the server.
 * Preamble = `00 00 00 03` (type Proxy) + header length as int64 little-endian + JSON header,
 * then raw bytes both ways.
 */
import { type JsonObject, bool, requireObject, str } from './json-fields.js';
import type { ProtocolStream, StreamSession } from './stream-session.js';
import { StreamType } from './stream-types.js';

/** EdgeType as a string: "1" tcp, "2" tls, "3" https, "" none. */
export type EdgeTypeString = '' | '1' | '2' | '3';
export const EdgeType = { None: '', Tcp: '1', Tls: '2', Https: '3' } as const;

export interface ProxyHeader {
  /** The tunnel id. */
  id: string;
  /** `"ip:port"` of the public client. */
  clientAddr: string;
  /** `"tcp"`, `"tls"`, `"http"`, `"https"`. */
  proto: string;
  edgeType: EdgeTypeString;
  passthroughTls: boolean;
}

/** All five fields, always (RS drops the stream when one is missing). */
export function encodeProxyHeader(h: ProxyHeader): JsonObject {
  return {
    Id: h.id,
    ClientAddr: h.clientAddr,
    Proto: h.proto,
    EdgeType: h.edgeType,
    PassthroughTLS: h.passthroughTls,
  };
}

export function decodeProxyHeader(value: unknown): ProxyHeader {
  const o = requireObject(value, 'ProxyHeader');
  const et = str(o, 'EdgeType', '');
  return {
    id: str(o, 'Id', ''),
    clientAddr: str(o, 'ClientAddr', ''),
    proto: str(o, 'Proto', ''),
    edgeType: et === '1' || et === '2' || et === '3' ? et : '',
    passthroughTls: bool(o, 'PassthroughTLS', ''),
  };
}

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
