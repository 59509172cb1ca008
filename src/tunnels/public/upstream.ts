// The kept-alive HTTP requests of one public connection to one endpoint. They go to the agent one
// after the other over one proxy stream, kept across requests (the agent dials the local service
// once per stream, so the local service sees the visitor's keep-alive). A request goes out as
// bytes; its answer is read with Node's own parser and written through the request's
// ServerResponse, which frames it for the client.
import type http from 'node:http';
import type { Duplex, Transform } from 'node:stream';
import { responseParser, type NodeHttpParser } from './llhttp.js';
import { corkForTurn } from './splice.js';
import { compressor, type Compression } from './compress.js';

/** An idle stream to the agent is closed before a local server's own idle timeout (Node's is 5 s). */
const IDLE_MS = 4_000;
/**
 * Requests of one connection waiting behind the one in flight. Node's server parses every request
 * a client pipelines, each with its IncomingMessage and ServerResponse, however slow the answers:
 * past this, the client is taken for a hostile one (browsers do not pipeline at all).
 */
export const MAX_PIPELINED = 64;
/**
 * 1xx answers passed on per request; more are read and dropped. Node writes them to the client
 * with no backpressure, so a local server sending them without end would be buffered without
 * bound for a client that does not read (8 heads of at most 16 KiB stay under one muxado window).
 */
const MAX_INFORMATIONAL = 8;
const CRLF = Buffer.from('\r\n', 'latin1');
const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1');
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

/** One request and the answer owed to it. */
export interface Exchange {
  readonly req: http.IncomingMessage;
  readonly res: http.ServerResponse;
  /** The request line and headers, as the local server gets them. */
  readonly head: Buffer;
  /** The body goes chunked (the client sent it so; Node hands it over de-chunked). */
  readonly chunked: boolean;
  /** The host asked for, named in a 502. */
  readonly host: string;
  /**
   * The endpoint's on_http_response phase, when it has one: the answer's status and headers (as
   * the client would get them) → the headers to send, or an answer to send instead (the agent's
   * body is then read and dropped).
   */
  readonly respond?: (status: number, headers: string[]) => { headers: string[]; compress?: Compression | undefined } | { status: number; headers: string[]; body: string };
}

export interface ChannelHooks {
  /** A proxy stream to one of the endpoint's agents, or undefined when none can take it. */
  openStream(): Duplex | undefined;
  /** Answers a request no answer came for (502); `broken`: what came was no HTTP answer. */
  badGateway(res: http.ServerResponse, host: string, broken?: boolean): void;
  /** 1xx answers before the final one (RFC 9110 §15.2: a proxy forwards them). */
  information(res: http.ServerResponse, status: number, headers: string[]): void;
  /** The answer's headers as the client gets them. */
  answerHeaders(raw: string[]): string[];
  /** An idle stream failed (its agent went away): the public connection it served is the agent's no more. */
  idleStreamFailed(): void;
}

export class UpstreamChannel {
  destroyed = false;
  private leg: Leg | undefined;
  private readonly waiting: Exchange[] = [];

  constructor(readonly hooks: ChannelHooks) {}

  /** Sends the request now, or after those before it (pipelined) are answered; false when too many wait already. */
  send(exchange: Exchange): boolean {
    if (this.waiting.length >= MAX_PIPELINED) return false;
    this.waiting.push(exchange);
    if (this.leg?.exchange === undefined) this.next();
    return true;
  }

  destroy(): void {
    this.destroyed = true;
    this.waiting.length = 0;
    this.leg?.destroy();
    this.leg = undefined;
  }

  /** @internal A leg is done with its exchange (answered, or failed). */
  next(): void {
    let exchange: Exchange | undefined;
    while (!this.destroyed && (exchange = this.waiting.shift()) !== undefined) {
      if (exchange.res.destroyed) continue;
      let leg = this.leg;
      if (leg === undefined || !leg.usable) {
        leg?.destroy();
        const stream = this.hooks.openStream();
        if (stream === undefined) {
          this.leg = undefined;
          this.hooks.badGateway(exchange.res, exchange.host);
          continue;
        }
        leg = this.leg = new Leg(stream, this);
      }
      leg.begin(exchange);
      return;
    }
    // nothing to send: a stream that can carry no other request (the answer said close, or came
    // before the request's body was all sent) is let go now rather than when the client leaves
    if (this.leg?.usable) this.leg.idle();
    else this.leg?.destroy();
  }

  /** @internal */
  gone(leg: Leg): void {
    if (this.leg === leg) this.leg = undefined;
  }
}

/** One proxy stream, its answer parser and the exchange it carries. */
class Leg {
  exchange: Exchange | undefined;
  /** Whether another request may go on this stream. */
  usable = true;
  private readonly parser: NodeHttpParser;
  private headers: string[] = [];
  private informational = false;
  /** 1xx answers passed on for the current request. */
  private informationals = 0;
  private keepAlive = true;
  private answered = false;
  private bodySent = true;
  /** The latest body piece, held so that a small answer leaves with its end in one call. */
  private held: Buffer | undefined;
  /** An answer made by the response phase replaced this one: its body is read and dropped. */
  private discarding = false;
  /** compress-response: the answer's body goes through this on its way to the client. */
  private compressing: Transform | undefined;
  /** Between answers: the next bytes begin a head. */
  private awaitingHead = true;
  /** The head being parsed ends in the bytes given to the parser (so the body may bypass it). */
  private headEndsHere = false;
  /** Part of the head went to the parser with an earlier read: its end cannot be told by a search (it may straddle the two). */
  private headBegun = false;
  /** Bytes of a Content-Length body still to pass on as they come, without the parser. */
  private rawLeft = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    readonly stream: Duplex,
    private readonly channel: UpstreamChannel,
  ) {
    this.parser = responseParser(this);
    stream.on('data', (chunk: Buffer) => this.onData(chunk));
    stream.on('end', () => this.onEnd());
    stream.on('error', () => {}); // 'close' follows
    stream.on('close', () => this.onClose());
    stream.on('drain', () => this.exchange?.req.resume());
  }

  begin(exchange: Exchange): void {
    this.exchange = exchange;
    this.answered = false;
    this.discarding = false;
    this.compressing = undefined;
    this.informationals = 0;
    this.stream.write(exchange.head);
    const { req } = exchange;
    this.bodySent = req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined;
    if (!this.bodySent) this.sendBody(exchange);
  }

  idle(): void {
    if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(() => this.exchange === undefined && this.destroy(), IDLE_MS).unref();
  }

  destroy(): void {
    this.usable = false;
    this.stream.destroy();
  }

  // ---- the request body ----

  private sendBody(exchange: Exchange): void {
    const { req, chunked } = exchange;
    const stream = this.stream;
    const onData = (chunk: Buffer) => {
      if (chunk.length === 0 || this.exchange !== exchange) return;
      if (chunked) {
        stream.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
        stream.write(chunk);
      }
      if (!stream.write(chunked ? CRLF : chunk)) req.pause();
    };
    req.on('data', onData);
    req.once('end', () => {
      req.off('data', onData);
      if (this.exchange !== exchange) return;
      if (chunked) stream.write(LAST_CHUNK);
      this.bodySent = true;
      if (this.answered) this.done();
    });
  }

  // ---- the answer (parser callbacks) ----

  onHeaders(headers: string[]): void {
    for (const value of headers) this.headers.push(value);
  }

  onHeadersComplete(flushed: string[] | undefined, status: number, statusMessage: string, upgrade: boolean, keepAlive: boolean): number {
    const headers = flushed ?? this.headers;
    this.headers = [];
    this.awaitingHead = false;
    this.headBegun = false;
    const exchange = this.exchange;
    // an answer nobody asked for, or a protocol switch on a plain request: the stream is spoilt
    if (exchange === undefined || this.answered || upgrade) {
      this.spoil();
      return 1;
    }
    if (status < 200) {
      this.informational = true;
      this.awaitingHead = true;
      if (++this.informationals <= MAX_INFORMATIONAL) this.channel.hooks.information(exchange.res, status, headers);
      return 1;
    }
    this.keepAlive = keepAlive;
    const { req, res } = exchange;
    // answered before the client's body was all read: close after the answer (RFC 9112 §9.6),
    // the client may still be sending a body nobody reads
    if (!req.complete) res.shouldKeepAlive = false;
    try {
      const answerHeaders = this.channel.hooks.answerHeaders(headers);
      const edited = exchange.respond?.(status, answerHeaders);
      if (edited && 'body' in edited) {
        res.writeHead(edited.status, edited.headers);
        res.end(edited.body);
        this.discarding = true;
      } else {
        res.writeHead(status, statusMessage, edited?.headers ?? answerHeaders);
        if (edited?.compress !== undefined) {
          this.compressing = compressor(edited.compress);
          this.compressing.on('error', () => res.destroy());
          this.compressing.pipe(res);
        }
      }
    } catch {
      // a status or header Node will not write (RFC 9110 allows less than llhttp reads)
      this.spoil();
      return 1;
    }
    if (req.method === 'HEAD') return 1;
    const length = this.headEndsHere && status !== 204 && status !== 304 ? plainLength(headers) : 0;
    if (length > 0) {
      this.rawLeft = length;
      return 1;
    }
    return 0;
  }

  onBody(chunk: Buffer): void {
    if (this.held !== undefined) this.writeBody(this.held);
    this.held = chunk;
  }

  onMessageComplete(): void {
    this.awaitingHead = true;
    // the lines flushed since the head are a chunked body's trailers: not passed on (Node frames
    // the answer anew), and not the next answer's headers either
    this.headers = [];
    if (this.informational) {
      this.informational = false;
      return;
    }
    // the head of an answer whose body comes by `onData`
    if (this.rawLeft > 0) return;
    this.answerComplete();
  }

  private answerComplete(): void {
    const exchange = this.exchange;
    if (exchange === undefined || this.answered) return;
    const held = this.held;
    this.held = undefined;
    this.answered = true;
    if (!this.keepAlive) this.usable = false;
    if (this.discarding) this.discarding = false;
    else if (this.compressing) {
      // the compressor ends the answer once it has flushed (pipe)
      this.compressing.end(held);
      this.compressing = undefined;
    } else {
      if (held !== undefined) corkForTurn(exchange.req.socket, held);
      exchange.res.end(held);
    }
    if (this.bodySent) this.done();
    else {
      // the rest of the body would be taken for the next request: this stream carries no other
      this.usable = false;
      this.done();
    }
  }

  private writeBody(chunk: Buffer): void {
    if (this.discarding) return;
    const compressing = this.compressing;
    if (compressing) {
      if (!compressing.write(chunk)) {
        this.stream.pause();
        compressing.once('drain', () => this.stream.resume());
      }
      return;
    }
    const res = this.exchange!.res;
    corkForTurn(this.exchange!.req.socket, chunk);
    if (!res.write(chunk)) {
      this.stream.pause();
      res.once('drain', () => this.stream.resume());
    }
  }

  // ---- the stream ----

  /**
   * Heads and chunked or close-delimited bodies go through the parser. A body of known length
   * is passed on as slices of what the stream gave (the parser would copy it into buffers of its
   * own): the parser is given the head alone, told to skip the body, and the body's bytes are
   * counted here.
   */
  private onData(chunk: Buffer): void {
    let rest = chunk;
    while (rest.length > 0 && !this.stream.destroyed) {
      if (this.rawLeft > 0) {
        const piece = rest.length <= this.rawLeft ? rest : rest.subarray(0, this.rawLeft);
        rest = rest.subarray(piece.length);
        this.rawLeft -= piece.length;
        this.onBody(piece);
        if (this.rawLeft === 0) this.answerComplete();
        continue;
      }
      let piece = rest;
      this.headEndsHere = false;
      if (this.awaitingHead && !this.headBegun) {
        const end = rest.indexOf(HEAD_END);
        if (end !== -1) {
          piece = rest.subarray(0, end + HEAD_END.length);
          this.headEndsHere = true;
        } else this.headBegun = true; // a head split over reads (rare): its body goes by the parser
      }
      rest = rest.subarray(piece.length);
      if (typeof this.parser.execute(piece) !== 'number') return this.spoil();
    }
    const held = this.held;
    if (held !== undefined && this.exchange !== undefined) {
      this.held = undefined;
      this.writeBody(held);
    }
  }

  /** The agent's FIN: an answer delimited by it is complete; ours follows. */
  private onEnd(): void {
    this.usable = false;
    if (this.exchange !== undefined && !this.answered) this.parser.finish();
    if (this.exchange !== undefined && !this.answered) this.fail();
    if (!this.stream.writableEnded) this.stream.end();
  }

  private onClose(): void {
    this.usable = false;
    if (this.exchange !== undefined && !this.answered) this.fail();
    else if (this.exchange === undefined && this.stream.errored) this.channel.hooks.idleStreamFailed();
    clearTimeout(this.idleTimer);
    this.channel.gone(this);
    if (!this.closed) {
      this.closed = true;
      // not from inside the parser's own callback (this may be one)
      setImmediate(() => this.parser.close());
    }
  }

  /** A broken answer: the client gets a 502 if nothing of it was written, else its connection closes. */
  private spoil(): void {
    this.usable = false;
    if (this.exchange !== undefined && !this.answered) this.fail(true);
    this.stream.destroy();
  }

  /** No answer (`broken`: a broken one) to the exchange in flight. */
  private fail(broken = false): void {
    const exchange = this.exchange!;
    this.answered = true;
    this.rawLeft = 0;
    this.held = undefined;
    if (this.channel.destroyed || exchange.res.destroyed || this.discarding) {
      // the client has gone (nobody to answer), or got the response phase's answer already
    } else if (exchange.res.headersSent) exchange.res.destroy();
    else this.channel.hooks.badGateway(exchange.res, exchange.host, broken);
    this.done();
  }

  private done(): void {
    this.exchange = undefined;
    this.channel.next();
  }
}

/** The body length of an answer framed by one Content-Length alone (llhttp has checked its digits), else 0. */
function plainLength(headers: string[]): number {
  let length = 0;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!;
    if (name.length === 14 && name.toLowerCase() === 'content-length') {
      if (length !== 0) return 0;
      length = Number(headers[i + 1]);
    } else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') return 0;
  }
  return Number.isSafeInteger(length) ? length : 0;
}
