/**
 * muxado wire format: constants, error codes and frame encoders.
 *
 * Header, 8 bytes, big-endian: bytes 0–2 payload length (24 bits); byte 3 high nibble = type,
 * low nibble = flags; bytes 4–7 stream id (top bit reserved and masked).
 */

export const FrameType = { Rst: 0, Data: 1, WndInc: 2, GoAway: 3 } as const;
export type FrameTypeValue = (typeof FrameType)[keyof typeof FrameType];

/** DATA flags. Other flag bits are ignored on input and never set on output. */
export const Flag = { Fin: 0x1, Syn: 0x2 } as const;

export const ErrorCode = {
  None: 0,
  Protocol: 1,
  Internal: 2,
  FlowControl: 3,
  StreamClosed: 4,
  StreamRefused: 5,
  StreamCancelled: 6,
  StreamReset: 7,
  FrameSize: 8,
  AcceptQueueFull: 9,
  EnhanceYourCalm: 10,
  RemoteGoneAway: 11,
  StreamsExhausted: 12,
  WriteTimeout: 13,
  SessionClosed: 14,
  PeerEOF: 15,
} as const;
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

const codeNames: string[] = [];
for (const [name, value] of Object.entries(ErrorCode)) codeNames[value] = name;

/** The name of an error code ("FlowControl"), or `code <n>` for codes outside the table. */
export function errorCodeName(code: number): string {
  return codeNames[code] ?? `code ${code}`;
}

export class MuxadoError extends Error {
  readonly code: number;
  constructor(code: number, message?: string, options?: { cause?: unknown }) {
    super(message ?? `muxado: ${errorCodeName(code)}`, options);
    this.name = 'MuxadoError';
    this.code = code;
  }
}

export const HEADER_SIZE = 8;
/** Largest payload a 24-bit length field can describe. */
export const MAX_PAYLOAD = 0xffffff;
export const STREAM_ID_MASK = 0x7fffffff;
export const MAX_WNDINC = 0x7fffffff;
/** 256 KiB: the window both ngrok agent families assume, per stream, each direction. */
export const DEFAULT_WINDOW = 0x40000;

export interface FrameHeader {
  type: number;
  flags: number;
  streamId: number;
  length: number;
}

export interface Frame extends FrameHeader {
  payload: Buffer;
}

/**
 * Writes a header into `buf` at `offset`. Refuses a type above 3 (an RS agent's writer stops on
 * one and its session hangs), a length beyond 24 bits and a stream id beyond 31 bits.
 */
export function writeHeader(buf: Buffer, offset: number, type: number, flags: number, streamId: number, length: number): void {
  if (type < 0 || type > 3 || !Number.isInteger(type)) throw new RangeError(`muxado: refusing to send frame type ${type}`);
  if (length < 0 || length > MAX_PAYLOAD) throw new RangeError(`muxado: frame length ${length} out of range`);
  if (streamId < 0 || streamId > STREAM_ID_MASK) throw new RangeError(`muxado: stream id ${streamId} out of range`);
  buf[offset] = (length >>> 16) & 0xff;
  buf[offset + 1] = (length >>> 8) & 0xff;
  buf[offset + 2] = length & 0xff;
  buf[offset + 3] = (type << 4) | (flags & 0x0f);
  buf.writeUInt32BE(streamId, offset + 4);
}

/** Reads the header at `offset` (8 bytes must be there). The stream id's top bit is masked. */
export function readHeader(buf: Buffer, offset = 0): FrameHeader {
  const b3 = buf[offset + 3] as number;
  return {
    length: ((buf[offset] as number) << 16) | ((buf[offset + 1] as number) << 8) | (buf[offset + 2] as number),
    type: b3 >>> 4,
    flags: b3 & 0x0f,
    streamId: buf.readUInt32BE(offset + 4) & STREAM_ID_MASK,
  };
}

export function encodeHeader(type: number, flags: number, streamId: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(HEADER_SIZE);
  writeHeader(buf, 0, type, flags, streamId, length);
  return buf;
}

/** A whole DATA frame in one buffer (copies the payload: for small payloads and tests). */
export function encodeData(streamId: number, flags: number, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  const buf = Buffer.allocUnsafe(HEADER_SIZE + payload.length);
  writeHeader(buf, 0, FrameType.Data, flags, streamId, payload.length);
  buf.set(payload, HEADER_SIZE);
  return buf;
}

export function encodeRst(streamId: number, code: number): Buffer {
  const buf = Buffer.allocUnsafe(HEADER_SIZE + 4);
  writeHeader(buf, 0, FrameType.Rst, 0, streamId, 4);
  buf.writeUInt32BE(code >>> 0, HEADER_SIZE);
  return buf;
}

/** WNDINC. An increment of 0 kills a GO agent's session, so it is refused here. */
export function encodeWndInc(streamId: number, increment: number): Buffer {
  if (!(increment > 0 && increment <= MAX_WNDINC) || !Number.isInteger(increment)) {
    throw new RangeError(`muxado: refusing to send WNDINC ${increment}`);
  }
  const buf = Buffer.allocUnsafe(HEADER_SIZE + 4);
  writeHeader(buf, 0, FrameType.WndInc, 0, streamId, 4);
  buf.writeUInt32BE(increment, HEADER_SIZE);
  return buf;
}

/** GOAWAY with the honest length, 8 + debug (as GO sends it; RS's own GOAWAY lies). */
export function encodeGoAway(lastStreamId: number, code: number, debug: string | Uint8Array = ''): Buffer {
  const text = typeof debug === 'string' ? Buffer.from(debug, 'utf8') : debug;
  const buf = Buffer.allocUnsafe(HEADER_SIZE + 8 + text.length);
  writeHeader(buf, 0, FrameType.GoAway, 0, 0, 8 + text.length);
  buf.writeUInt32BE(lastStreamId & STREAM_ID_MASK, HEADER_SIZE);
  buf.writeUInt32BE(code >>> 0, HEADER_SIZE + 4);
  buf.set(text, HEADER_SIZE + 8);
  return buf;
}
