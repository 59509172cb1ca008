// Reading a TLS ClientHello off a public connection, to route it by SNI without terminating TLS.
// parseClientHello is a pure function over the bytes received so far; readClientHello drives it
// from a socket and hands back every byte it read so that the caller can replay them.
import type { Socket } from 'node:net';
import { isIP } from 'node:net';
import { canonicalIp, normalizeDnsName } from './names.js';

export const CLIENT_HELLO_MAX_BYTES = 16_384;
export const CLIENT_HELLO_TIMEOUT_MS = 10_000;

const RECORD_HANDSHAKE = 22;
const HANDSHAKE_CLIENT_HELLO = 1;
const EXT_SERVER_NAME = 0;
const EXT_ALPN = 16;
const MAX_RECORD_PAYLOAD = 16_384;

export type ClientHelloErrorCode = 'not_tls' | 'malformed' | 'too_large' | 'invalid_sni';

export type ClientHelloParse =
  | {
      status: 'incomplete';
      /** Parsing again cannot progress before `buffered` has at least this many bytes. */
      needed: number;
    }
  | {
      status: 'done';
      /** server_name host_name, lower-cased; absent when the client sent none. */
      sni?: string;
      /** ALPN protocol names in the client's order (bytes as latin1); empty when none. */
      alpn: string[];
      /** Bytes of `buffered` taken by the records that carried the ClientHello. */
      length: number;
    }
  | { status: 'error'; code: ClientHelloErrorCode; reason: string };

const fail = (code: ClientHelloErrorCode, reason: string): ClientHelloParse => ({ status: 'error', code, reason });

/**
 * Parses the ClientHello at the start of `buffered`. The handshake message may be split over
 * several TLS records; bytes after the last record are ignored. `incomplete` means more bytes are
 * needed; an error is final. The ClientHello message (its 4-byte header included) may take at
 * most `maxBytes`, so the largest one a single record holds passes; the records carrying it, at
 * most twice that (room for record headers, not for a hello cut into crumbs).
 */
export function parseClientHello(buffered: Buffer, maxBytes: number = CLIENT_HELLO_MAX_BYTES): ClientHelloParse {
  const fragments: Buffer[] = [];
  let gathered = 0;
  let helloLength = -1; // handshake body length, once its 4-byte header is in
  let offset = 0;
  // Bytes needed before a parse could get further: the next record's header and, once the hello's
  // length is known, every byte of it still missing. The caller parses again only then, so a hello
  // cut into tiny records costs a few parses, not one per record (each walks from the start).
  const next = () => ({ status: 'incomplete' as const, needed: offset + 5 + (helloLength >= 0 ? helloLength + 4 - gathered : 0) });
  for (;;) {
    if (offset >= buffered.length) return next();
    // Record header: type, version (3.x), 16-bit length. Judge each byte as soon as it arrives.
    if (buffered[offset] !== RECORD_HANDSHAKE) {
      return offset === 0
        ? fail('not_tls', 'not a TLS handshake record')
        : fail('malformed', 'a non-handshake record inside the ClientHello');
    }
    if (offset + 1 < buffered.length && buffered[offset + 1] !== 3) return fail('not_tls', 'not a TLS record version');
    if (offset + 5 > buffered.length) return next();
    const recordLength = buffered.readUInt16BE(offset + 3);
    if (recordLength === 0) return fail('malformed', 'an empty handshake record');
    if (recordLength > MAX_RECORD_PAYLOAD) return fail('malformed', 'a record longer than 16384 bytes');
    const recordEnd = offset + 5 + recordLength;
    if (recordEnd > wireLimit(maxBytes)) return fail('too_large', `ClientHello longer than ${maxBytes} bytes`);
    const available = Math.min(recordEnd, buffered.length);
    fragments.push(buffered.subarray(offset + 5, available));
    gathered += available - (offset + 5);

    if (helloLength < 0 && gathered >= 4) {
      const head = fragments.length === 1 ? fragments[0]! : Buffer.concat(fragments);
      if (head[0] !== HANDSHAKE_CLIENT_HELLO) return fail('malformed', 'the first handshake message is not a ClientHello');
      helloLength = head.readUIntBE(1, 3);
      if (helloLength + 4 > maxBytes) return fail('too_large', `ClientHello longer than ${maxBytes} bytes`);
    } else if (helloLength < 0 && gathered > 0 && fragments[0]![0] !== HANDSHAKE_CLIENT_HELLO) {
      return fail('malformed', 'the first handshake message is not a ClientHello');
    }
    if (helloLength >= 0 && gathered >= helloLength + 4) {
      if (available < recordEnd) return { status: 'incomplete', needed: recordEnd }; // the rest of the record is due
      const message = Buffer.concat(fragments).subarray(4, helloLength + 4);
      const parsed = parseHelloBody(message);
      return parsed.status === 'done' ? { ...parsed, length: recordEnd } : parsed;
    }
    if (available < recordEnd) {
      // the rest of this record, and after it a record header and whatever the hello still lacks
      const lacking = helloLength >= 0 ? helloLength + 4 - (gathered + recordEnd - available) : 0;
      return { status: 'incomplete', needed: recordEnd + (lacking > 0 ? 5 + lacking : 0) };
    }
    offset = recordEnd;
  }
}

/** What the records carrying a hello of at most `maxBytes` may take on the wire. */
export function wireLimit(maxBytes: number): number {
  return 2 * maxBytes;
}

class Reader {
  offset = 0;
  constructor(readonly buf: Buffer) {}
  get left(): number {
    return this.buf.length - this.offset;
  }
  u8(): number {
    if (this.left < 1) throw new RangeError('truncated');
    return this.buf[this.offset++]!;
  }
  u16(): number {
    if (this.left < 2) throw new RangeError('truncated');
    const v = this.buf.readUInt16BE(this.offset);
    this.offset += 2;
    return v;
  }
  bytes(n: number): Buffer {
    if (this.left < n) throw new RangeError('truncated');
    const v = this.buf.subarray(this.offset, this.offset + n);
    this.offset += n;
    return v;
  }
}

function parseHelloBody(body: Buffer): ClientHelloParse {
  const r = new Reader(body);
  let sni: string | undefined;
  let alpn: string[] = [];
  try {
    const major = r.u8();
    r.u8();
    if (major !== 3) return fail('malformed', 'ClientHello version is not 3.x');
    r.bytes(32); // random
    const sessionId = r.u8();
    if (sessionId > 32) return fail('malformed', 'session id longer than 32 bytes');
    r.bytes(sessionId);
    const suites = r.u16();
    if (suites === 0 || suites % 2 !== 0) return fail('malformed', 'bad cipher_suites length');
    r.bytes(suites);
    const compressions = r.u8();
    if (compressions === 0) return fail('malformed', 'no compression methods');
    r.bytes(compressions);
    if (r.left === 0) return { status: 'done', alpn, length: 0 }; // no extensions at all
    const extensionsLength = r.u16();
    if (extensionsLength !== r.left) return fail('malformed', 'extensions length does not match the ClientHello');
    const seen = new Set<number>();
    while (r.left > 0) {
      const type = r.u16();
      const data = r.bytes(r.u16());
      if (seen.has(type)) return fail('malformed', `extension ${type} appears twice`);
      seen.add(type);
      if (type === EXT_SERVER_NAME) {
        const result = parseServerName(data);
        if (typeof result !== 'string' && result !== undefined) return result;
        sni = result;
      } else if (type === EXT_ALPN) {
        const result = parseAlpn(data);
        if (!Array.isArray(result)) return result;
        alpn = result;
      }
    }
  } catch (err) {
    if (err instanceof RangeError) return fail('malformed', 'ClientHello truncated');
    throw err;
  }
  return sni === undefined ? { status: 'done', alpn, length: 0 } : { status: 'done', sni, alpn, length: 0 };
}

function parseServerName(data: Buffer): string | undefined | ClientHelloParse {
  // Servers send an empty server_name extension back; a client's must hold a list.
  const r = new Reader(data);
  const listLength = r.u16();
  if (listLength !== r.left || listLength === 0) return fail('malformed', 'bad server_name list length');
  let host: string | undefined;
  while (r.left > 0) {
    const nameType = r.u8();
    const name = r.bytes(r.u16());
    if (nameType !== 0) continue; // other name types: none defined; skip them
    if (host !== undefined) return fail('malformed', 'two host_names in server_name');
    // ASCII only (RFC 6066: A-labels); anything else is not a name we could route.
    for (const byte of name) if (byte < 0x21 || byte > 0x7e) return fail('invalid_sni', 'server_name is not an ASCII host name');
    // RFC 6066 names no IP literal, yet clients told to (openssl -servername, Node) send one: an
    // IPv4 hostname can be bound, and a TLS edge's hostport can name one (SPEC §7.1)
    const text = name.toString('latin1');
    const normal = isIP(text) === 4 ? canonicalIp(text) : normalizeDnsName(text, { wildcard: false });
    if (normal === undefined) return fail('invalid_sni', `invalid server_name ${JSON.stringify(text)}`);
    host = normal;
  }
  return host;
}

function parseAlpn(data: Buffer): string[] | ClientHelloParse {
  const r = new Reader(data);
  const listLength = r.u16();
  if (listLength !== r.left || listLength === 0) return fail('malformed', 'bad ALPN list length');
  const protocols: string[] = [];
  while (r.left > 0) {
    const length = r.u8();
    if (length === 0) return fail('malformed', 'empty ALPN protocol name');
    protocols.push(r.bytes(length).toString('latin1'));
  }
  return protocols;
}

export type ReadClientHelloResult =
  | { status: 'done'; sni?: string; alpn: string[]; length: number; buffered: Buffer }
  | { status: 'error'; code: ClientHelloErrorCode | 'timeout' | 'closed' | 'socket_error'; reason: string; buffered: Buffer };

export interface ReadClientHelloOptions {
  maxBytes?: number;
  timeoutMs?: number;
}

/**
 * Reads from `socket` until a whole ClientHello is in (or an error, the time limit, or the end of
 * the connection). The socket is left paused with no listener of ours; `buffered` holds every
 * byte read, including any after the ClientHello, to be replayed: written to a passthrough
 * stream, or `socket.unshift(buffered)` before `new tls.TLSSocket(socket, …)` (which reads what
 * the socket has buffered first). Errors on the socket after this returns are the caller's.
 */
export function readClientHello(socket: Socket, options: ReadClientHelloOptions = {}): Promise<ReadClientHelloResult> {
  const maxBytes = options.maxBytes ?? CLIENT_HELLO_MAX_BYTES;
  const timeoutMs = options.timeoutMs ?? CLIENT_HELLO_TIMEOUT_MS;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let needed = 1;
    let settled = false;
    const collected = () => (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    const finish = (result: ReadClientHelloResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.pause();
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      socket.off('error', onError);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size < needed) return; // a client dribbling bytes costs no parsing
      const buffered = collected();
      chunks.length = 0;
      chunks.push(buffered);
      const parsed = parseClientHello(buffered, maxBytes);
      if (parsed.status === 'done') finish({ ...parsed, buffered });
      else if (parsed.status === 'error') finish({ ...parsed, buffered });
      else if (parsed.needed > wireLimit(maxBytes)) finish({ status: 'error', code: 'too_large', reason: `ClientHello longer than ${maxBytes} bytes`, buffered });
      else needed = parsed.needed;
    };
    const onEnd = () => finish({ status: 'error', code: 'closed', reason: 'connection closed before the ClientHello was complete', buffered: collected() });
    const onError = (err: Error) => finish({ status: 'error', code: 'socket_error', reason: err.message, buffered: collected() });
    const timer = setTimeout(
      () => finish({ status: 'error', code: 'timeout', reason: `no complete ClientHello within ${timeoutMs} ms`, buffered: collected() }),
      timeoutMs,
    );
    if (socket.destroyed || socket.readableEnded) {
      finish({ status: 'error', code: 'closed', reason: 'connection closed before the ClientHello was complete', buffered: collected() });
      return;
    }
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('close', onEnd);
    socket.on('error', onError);
    socket.resume();
  });
}

/** A fatal TLS alert record, unrecognized_name (112): write it, then end the connection. */
export function unrecognizedNameAlert(): Buffer {
  return Buffer.from([21, 3, 3, 0, 2, 2, 112]);
}
