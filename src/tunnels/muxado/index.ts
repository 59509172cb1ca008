/** muxado stream multiplexer (server and client side), independent of the agent protocol above it. */
export {
  DEFAULT_WINDOW,
  ErrorCode,
  type ErrorCodeValue,
  errorCodeName,
  Flag,
  type Frame,
  type FrameHeader,
  FrameType,
  HEADER_SIZE,
  MAX_PAYLOAD,
  MuxadoError,
  STREAM_ID_MASK,
  encodeData,
  encodeGoAway,
  encodeHeader,
  encodeRst,
  encodeWndInc,
  readHeader,
  writeHeader,
} from './frame.js';
export { FrameCollector, FrameDecoder, type DecoderOptions, type FrameSink, type ParseResult, parseFrames } from './decode.js';
export { MUXADO_DEFAULTS, muxadoConfig, type MuxadoConfig, type MuxadoOptions } from './config.js';
export { MuxadoSession, type InputLimit } from './session.js';
export { MuxadoStream } from './stream.js';
