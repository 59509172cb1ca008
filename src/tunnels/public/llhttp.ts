// Node's own HTTP/1 parser (llhttp), as node:http's client drives it. `_http_common` is one of
// node:http's own modules: undocumented but loadable in every Node version, with no deprecation.
// Using the parser alone spares, per answer, the ClientRequest, http.Agent bookkeeping and
// IncomingMessage stream that node:http builds around it (DECISIONS "HTTP answers").
import { createRequire } from 'node:module';

export interface NodeHttpParser {
  initialize(type: number, resource: object, maxHeaderSize?: number, lenient?: number): void;
  /** Bytes parsed, or the parse error (with `code`, e.g. HPE_INVALID_CONSTANT). */
  execute(data: Buffer): number | Error;
  /** The end of input: completes an answer delimited by the connection's close. */
  finish(): Error | undefined;
  /** Frees the native parser; never from inside one of its callbacks. */
  close(): void;
  [callback: number]: unknown;
}

interface HttpParserClass {
  new (): NodeHttpParser;
  readonly RESPONSE: number;
  readonly kOnHeaders: number;
  readonly kOnHeadersComplete: number;
  readonly kOnBody: number;
  readonly kOnMessageComplete: number;
}

const { HTTPParser } = createRequire(import.meta.url)('_http_common') as { HTTPParser: HttpParserClass };

/** What the parser calls, as node:http's client receives it. */
export interface ResponseCallbacks {
  /** Header lines flushed before the head ends (more than 32 of them). */
  onHeaders(headers: string[]): void;
  /** The answer's head; returns 1 to skip a body (an answer to HEAD, a 1xx), else 0. */
  onHeadersComplete(headers: string[] | undefined, status: number, statusMessage: string, upgrade: boolean, keepAlive: boolean): number;
  /** A piece of the body, de-chunked, in a buffer of its own. */
  onBody(chunk: Buffer): void;
  onMessageComplete(): void;
}

/** A response parser calling `callbacks` (each answer in turn on a kept-alive connection). */
export function responseParser(callbacks: ResponseCallbacks): NodeHttpParser {
  const parser = new HTTPParser();
  parser.initialize(HTTPParser.RESPONSE, {}, 0, 0);
  parser[HTTPParser.kOnHeaders] = (headers: string[]) => callbacks.onHeaders(headers);
  parser[HTTPParser.kOnHeadersComplete] = (
    _major: number,
    _minor: number,
    headers: string[] | undefined,
    _method: unknown,
    _url: unknown,
    status: number,
    statusMessage: string,
    upgrade: boolean,
    keepAlive: boolean,
  ) => callbacks.onHeadersComplete(headers, status, statusMessage, upgrade, keepAlive);
  parser[HTTPParser.kOnBody] = (chunk: Buffer) => callbacks.onBody(chunk);
  parser[HTTPParser.kOnMessageComplete] = () => callbacks.onMessageComplete();
  return parser;
}
