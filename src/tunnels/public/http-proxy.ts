// HTTP(S) endpoints: an HTTP/1.1 reverse proxy on node:http. Each public connection gets, per
// endpoint it reaches, one proxy stream kept alive across its requests (the agent dials the local
// service once per stream, so the local service sees the public connection's keep-alive).
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { finished } from 'node:stream';
import { onlyTunnel, type EndpointPool, type HostRoutes, type LiveTunnel, type TunnelChoice } from '../registry.js';
import type { ConnectionSink, PublicConnection } from './connections.js';
import { answerClientError } from './client-errors.js';
import { KINDS, type OpenedStream, type ProxyOpener } from './opener.js';
import { plainIp } from './proxy-proto.js';
import { SOCKET_BUFFER, corkForTurn } from './splice.js';
import { relayUpgrade } from './upgrade.js';
import { MAX_PIPELINED, UpstreamChannel, type ChannelHooks } from './upstream.js';
import { endpointOfPool, type PolicyGate } from './policy-gate.js';
import { ACME_HTTP_PATH, answerHttpChallenge, type AcmeChallenges } from './acme-challenges.js';
import { httpProgram, type ConnectionPolicy } from '../../domain/tunnels/connection-policy.js';
import { answerBytes, hasHttpPhases, readBody, readsBody, withoutFraming, writeAnswer, type HttpPolicy, type RequestOutcome } from './http-policy.js';
import { WEBHOOK_MAX_BODY_BYTES, type PolicyProgram } from '../../domain/policy/index.js';
import { captureExchange, type InspectionSink } from './capture.js';
import { REPLAY_HEADER } from '../../domain/inspection/replay.js';
import { EdgeLogins } from './edge-logins.js';
import type { RouteWaits } from '../../domain/tunnels/route-waits.js';
import { namesServing } from '../../domain/tunnels/moving-names.js';
import { routeOrWait } from './route-or-wait.js';

/** Hop-by-hop headers (RFC 9110 §7.6.1) that are not passed on, beside those Connection names. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'expect']);
/** An answer's body is framed anew by Node, so its Transfer-Encoding goes too. */
const ANSWER_HOP_BY_HOP = new Set([...HOP_BY_HOP, 'transfer-encoding']);
const NOTHING: ReadonlySet<string> = new Set();
const FORWARDED = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host']);
/** Headers of ours that never leave: the replay marker (the console's, CONSOLE.md §2). */
const OURS = new Set([REPLAY_HEADER]);
/** Methods whose bodiless request goes without `Content-Length: 0` (node:http's client's list; the others get it). */
const BODILESS_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);

export interface HttpProxyOptions {
  readonly scheme: 'http' | 'https';
  /** The pools serving hosts (lower-case, no port) for this scheme. */
  readonly routes: HostRoutes;
  readonly opener: ProxyOpener;
  /** Set in a cluster: a request whose endpoint has no usable route waits briefly for one. */
  readonly waits?: RouteWaits | undefined;
  readonly gate: PolicyGate;
  /** Records the sockets the server was not given by `adopt` (the HTTP port's own). */
  readonly sink: ConnectionSink;
  /** With ACME on: http-01 validations are answered before any routing. */
  readonly acme?: AcmeChallenges | undefined;
  /** The endpoints' HTTP phases. */
  readonly httpPolicy: HttpPolicy;
  /** The traffic inspector (CONSOLE.md §2); none: nothing is captured. */
  readonly inspection?: InspectionSink | undefined;
  /** Edge logins (IDENTITY.md §1–§2); none: login actions answer the 302 to /ngrok/login, which is then forwarded. */
  readonly logins?: EdgeLogins | undefined;
}

interface ConnState {
  readonly conn: PublicConnection;
  /** What the HTTP server reads and writes: the socket, or the TLS socket of an https connection. */
  readonly client: Duplex;
  readonly channels: Map<string, UpstreamChannel>;
  /** Endpoints (by URL; `URL tunnel-id` for a pinned tunnel's) whose policy admitted this connection: each is evaluated once per connection. */
  readonly admitted: Set<string>;
  /** The tunnel this connection keeps, per endpoint URL whose tunnels' connection-level policies differ. */
  readonly pinned: Map<string, LiveTunnel>;
  /** The latest request's answer (Node's `_httpMessage`, kept here), or `relayed` once a last request's answer is being relayed as bytes. */
  answer: http.ServerResponse | 'relayed' | undefined;
  /** Set once a request waited for its body (verify-webhook): later requests queue behind it, in order. */
  queue?: Promise<void>;
}

export class HttpProxy {
  readonly server: http.Server;
  private readonly states = new WeakMap<Duplex, ConnState>();

  constructor(private readonly options: HttpProxyOptions) {
    this.server = http.createServer(
      { requestTimeout: 0, headersTimeout: 30_000, keepAliveTimeout: 30_000, highWaterMark: SOCKET_BUFFER },
      (req, res) => this.onRequest(req, res),
    );
    // A client that half-closes after its request still gets the answer in flight, then the close
    // (Node's default ends the socket at the client's FIN, dropping that answer). The property is
    // Node's own switch for this, undocumented but in every version.
    (this.server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    this.server.on('connection', (socket: Socket) => {
      if (!this.states.has(socket)) this.adopt(socket, options.sink.open(options.scheme, socket, this.server));
    });
    this.server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(req, socket, head));
    // Node hands CONNECT over as a bare socket, and would just close it: say why instead.
    this.server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => {
      socket.on('error', () => {});
      socket.end(rawAnswer(405, 'Method Not Allowed', 'CONNECT is not served: burrow is a reverse proxy.\n', { allow: 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS' }));
    });
    this.server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) =>
      answerClientError(error, socket, answerBegun(this.states.get(socket)?.answer)),
    );
  }

  /** Serves a connection whose record is already made (a TLS connection terminated by the TLS port). */
  adopt(socket: Duplex, conn: PublicConnection, admitted?: AdmittedEndpoint): void {
    const state: ConnState = { conn, client: socket, channels: new Map(), admitted: new Set(), pinned: new Map(), answer: undefined };
    if (admitted?.pinned) {
      state.pinned.set(admitted.url, admitted.pinned);
      state.admitted.add(pinnedKey(admitted.url, admitted.pinned));
    } else if (admitted) state.admitted.add(admitted.url);
    this.states.set(socket, state);
    socket.once('close', () => {
      for (const channel of state.channels.values()) channel.destroy();
    });
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const state = this.states.get(req.socket);
    if (!state) {
      res.destroy();
      return;
    }
    // A failure ends its own request only: the requests queued behind it are still served.
    if (state.queue) {
      state.queue = state.queue.then(() => this.serve(state, req, res)).catch(() => void res.destroy());
      return;
    }
    const pending = this.serve(state, req, res);
    if (pending) state.queue = pending.catch(() => void res.destroy());
  }

  /** One request; a promise when it waits for its body before anything goes to the agent. */
  private serve(state: ConnState, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> | undefined {
    if (res.destroyed) return undefined;
    state.conn.requests++;
    const actions: string[] = [];
    const startedAt = Date.now();
    res.once('close', () => {
      const path = (req.url ?? '').split('?', 1)[0]!;
      this.options.sink.request(state.conn, { method: req.method ?? '', path, status: res.headersSent ? res.statusCode : null, relayed: state.answer === 'relayed', startedAt, actions });
    });
    const previous = state.answer;
    state.answer = res;
    if (this.options.acme && req.url?.startsWith(ACME_HTTP_PATH)) return void answerHttpChallenge(this.options.acme, req, res, state.conn);
    // RFC 9112 §3.2: a request with two Host lines is refused (the local server might read the other)
    if (hostLines(req.rawHeaders) > 1) {
      answerAndClose(res, 400, 'The request has more than one Host header.\n');
      return;
    }
    // an absolute-form target names the host itself (RFC 9112 §3.2.2); Host is then ignored
    const host = hostOf(req.url?.charCodeAt(0) === 47 ? req.headers.host : (targetAuthority(req.url) ?? req.headers.host));
    const pool = this.route(host);
    // an agent moving between instances: its endpoint is served again in a moment (route-or-wait.ts)
    if (pool instanceof Promise) return pool.then((found) => (res.destroyed ? undefined : this.serveRouted(state, req, res, previous, host, found, actions)));
    return this.serveRouted(state, req, res, previous, host, pool, actions);
  }

  /** The pool serving `host`, waited for in a cluster when its agent may be moving (a promise then). */
  private route(host: string | undefined): EndpointPool | undefined | Promise<EndpointPool | undefined> {
    if (host === undefined) return undefined;
    const { routes, opener, waits } = this.options;
    return routeOrWait(waits, opener, () => routes.poolFor(host), (moving) => moving.mayMove(namesServing(host).map((name) => routes.urlOf(name))));
  }

  /** The request once its endpoint is known (undefined: none serves the name). */
  private serveRouted(state: ConnState, req: http.IncomingMessage, res: http.ServerResponse, previous: ConnState['answer'], host: string | undefined, pool: EndpointPool | undefined, actions: string[]): Promise<void> | undefined {
    if (!pool) {
      offline(res, host ?? '');
      return;
    }
    state.conn.endpointId = pool.endpointId;
    const tunnel = this.tunnelFor(state, pool);
    if (tunnel === false) {
      closeAfter(previous, req.socket);
      return;
    }
    const observeBody = this.capture(state, pool, req, res, actions);
    const program = httpProgram(tunnel?.policy ?? pool.policy);
    const policed = hasHttpPhases(program);
    // the login paths of an endpoint with a login action are burrow's, never the agent's (IDENTITY.md §1)
    if (policed && this.options.logins && EdgeLogins.isLoginPath(req.url)) {
      const answered = this.options.logins.answerPath(program, req, res, this.options.scheme);
      if (answered) return answered.catch(() => void res.destroy());
    }
    // The client's last request (Connection: close, or HTTP/1.0): the answer is the rest of the
    // stream, so it is relayed as bytes, not parsed and framed again. A chunked body keeps the
    // parsing path (Node hands it over de-chunked), and so does an endpoint with HTTP phases
    // (its answers are read to be judged).
    // Only when no earlier pipelined answer is still owed: bytes written now would overtake it.
    // A captured request keeps the parsing path too (its answer is read to be recorded).
    if (!policed && observeBody === undefined && !res.shouldKeepAlive && req.headers['transfer-encoding'] === undefined && answered(previous)) {
      this.relayLast(state, pool, tunnel, req, res, host!);
      return;
    }
    if (policed && readsBody(program) && (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined)) {
      return readBody(req, WEBHOOK_MAX_BODY_BYTES).then(
        (body) => {
          if (body !== undefined) return this.forward(state, pool, tunnel, req, res, host!, program, body, actions, observeBody);
          state.conn.outcome = 'body_too_large';
          answerAndClose(res, 413, `The request body is over ${WEBHOOK_MAX_BODY_BYTES} bytes, the most this endpoint reads to verify a webhook or find a token.\n`);
        },
        () => void res.destroy(),
      );
    }
    this.forward(state, pool, tunnel, req, res, host!, policed ? program : undefined, undefined, actions, observeBody);
    return undefined;
  }

  /** The request to the agent (after the request phase, when the endpoint has one); `body` when it was read whole. */
  private forward(state: ConnState, pool: EndpointPool, tunnel: LiveTunnel | undefined, req: http.IncomingMessage, res: http.ServerResponse, host: string, program: PolicyProgram | undefined, body: Buffer | undefined, actions: string[], observeBody: ((chunk: Buffer) => void) | undefined): void {
    const chunked = body === undefined && req.headers['transfer-encoding'] !== undefined;
    let headers = requestHeaders(req, this.options.scheme, state.conn.socket.remoteAddress ?? '', false);
    // A body read whole goes with its length, however the client framed it.
    if (body !== undefined) headers = [...withoutFraming(headers), 'Content-Length', String(body.length)];
    if (!program) return this.send(state, pool, tunnel, req, res, host, { kind: 'forward', headers, target: req.url!, respond: undefined }, chunked, body, observeBody);
    const outcome = this.options.httpPolicy.request(state.conn, pool, program, req, this.options.scheme, headers, body, actions);
    if (!(outcome instanceof Promise)) return this.send(state, pool, tunnel, req, res, host, outcome, chunked, body, observeBody);
    // A jwt-validation waits for its keys (a few seconds at most); the client may have left meanwhile.
    outcome.then((settled) => void (res.destroyed ? undefined : this.send(state, pool, tunnel, req, res, host, settled, chunked, body, observeBody)), () => void res.destroy());
  }

  /** The request as the policy left it to the agent, or the answer the policy made. */
  private send(state: ConnState, pool: EndpointPool, tunnel: LiveTunnel | undefined, req: http.IncomingMessage, res: http.ServerResponse, host: string, outcome: RequestOutcome, chunked: boolean, body: Buffer | undefined, observeBody: ((chunk: Buffer) => void) | undefined): void {
    if (outcome.kind === 'answer') return void writeAnswer(res, outcome.answer);
    if (outcome.kind === 'login') return this.startLogin(req, res, outcome);
    const { headers, target, respond } = outcome;
    // as node:http's client: a POST, PUT, PATCH … without a body says so
    if (body === undefined && !chunked && req.headers['content-length'] === undefined && !BODILESS_METHODS.has(req.method!)) headers.push('Content-Length', '0');
    // a body read whole (verify-webhook) is not streamed: the inspector gets it here
    if (body !== undefined) observeBody?.(body);
    const exchange = { req, res, head: requestHead(req, headers, '1.1', target), chunked, host, observeBody, ...(respond ? { respond } : {}), ...(body ? { body } : {}) };
    if (!this.channelFor(state, pool, tunnel).send(exchange)) {
      // after the answers owed (Node writes them in order); Node's server stops reading once the
      // queued 503s pass the socket's buffer, so what a client pipelines beyond stays bounded
      state.conn.outcome = 'too_many_pipelined';
      answerAndClose(res, 503, `Too many pipelined requests: at most ${MAX_PIPELINED} wait for an answer on one connection.\n`);
    }
  }

  /** A login action found no session: the login starts here (its provider's discovery is asynchronous), or, without edge logins, the 302 to /ngrok/login. */
  private startLogin(req: http.IncomingMessage, res: http.ServerResponse, outcome: Extract<RequestOutcome, { kind: 'login' }>): void {
    if (!this.options.logins) return void writeAnswer(res, outcome.fallback);
    this.options.logins.begin(req, res, this.options.scheme, outcome.login, outcome.redirectPath, outcome.refresh).catch(() => res.destroy());
  }

  /**
   * Taps the request for the traffic inspector when its account captures (one cached lookup
   * otherwise); returns the request body's observer, undefined when nothing is captured.
   */
  private capture(state: ConnState, pool: EndpointPool, req: http.IncomingMessage, res: http.ServerResponse, actions: readonly string[]): ((chunk: Buffer) => void) | undefined {
    const inspection = this.options.inspection;
    const accountId = pool.tunnels[0]?.accountId;
    if (inspection === undefined || accountId === undefined) return undefined;
    const token = req.headers[REPLAY_HEADER];
    const replayId = typeof token === 'string' ? inspection.claimReplay(token, pool.endpointId) : undefined;
    let settings = inspection.settingsFor(accountId);
    // a replay is recorded whatever the capture: the API answers with its id
    if (replayId !== undefined && settings.capture === 'off') settings = { ...settings, capture: 'heads' };
    if (settings.capture === 'off') return undefined;
    return captureExchange(inspection, settings, { accountId, endpointId: pool.endpointId, id: replayId }, state.conn, req, res, actions);
  }

  /**
   * A request after which the connection closes, on a stream of its own: the head goes with
   * `Connection: close`, the body follows (the stream is not half-closed: a local server would take
   * that as the client leaving), and everything the agent sends back until its FIN is the answer.
   * Nothing back before the FIN or a reset: 502, as on the parsing path.
   */
  private relayLast(state: ConnState, pool: EndpointPool, tunnel: LiveTunnel | undefined, req: http.IncomingMessage, res: http.ServerResponse, host: string): void {
    const stream = openStreamTo(this.options, state, tunnel ? onlyTunnel(tunnel) : pool);
    if (!stream) {
      badGateway(res, host);
      return;
    }
    const socket = req.socket;
    const headers = requestHeaders(req, this.options.scheme, state.conn.socket.remoteAddress ?? '', false);
    headers.push('Connection', 'close');
    stream.write(requestHead(req, headers, req.httpVersion));
    req.pipe(stream, { end: false });
    let answered = false;
    state.answer = 'relayed';
    stream.on('data', (chunk: Buffer) => {
      answered = true;
      corkForTurn(socket, chunk);
      if (!socket.write(chunk)) stream.pause();
    });
    socket.on('drain', () => stream.resume());
    // The agent's FIN ends the answer; ours follows, so the stream closes without a reset.
    finished(stream, { writable: false }, (error) => {
      if (!error) {
        req.unpipe(stream);
        stream.end();
      }
      if (answered) {
        if (error) socket.destroy();
        else socket.end();
      } else if (!socket.destroyed) socket.end(rawAnswer(502, 'Bad Gateway', badGatewayText(host), {}));
    });
    socket.once('close', () => stream.destroy());
  }

  /** WebSocket and other upgrades: the request head goes to the agent, then bytes both ways once the local server switched (upgrade.ts). */
  private onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const state = this.states.get(socket);
    if (!state) {
      socket.destroy();
      return;
    }
    socket.on('error', () => {});
    state.conn.requests++;
    const host = hostOf(req.headers.host);
    const pool = this.route(host);
    if (pool instanceof Promise) pool.then((found) => void (socket.destroyed ? undefined : this.upgradeRouted(state, req, socket, head, host, found)), () => void socket.destroy());
    else this.upgradeRouted(state, req, socket, head, host, pool);
  }

  /** An upgrade once its endpoint is known (undefined: none serves the name). */
  private upgradeRouted(state: ConnState, req: http.IncomingMessage, socket: Duplex, head: Buffer, host: string | undefined, pool: EndpointPool | undefined): void {
    if (!pool) {
      socket.end(rawAnswer(404, 'Not Found', offlineText(host ?? ''), { 'ngrok-error-code': 'ERR_NGROK_3200' }));
      return;
    }
    state.conn.endpointId = pool.endpointId;
    const tunnel = this.tunnelFor(state, pool);
    if (tunnel === false) {
      socket.destroy();
      return;
    }
    const choice = tunnel ? onlyTunnel(tunnel) : pool;
    const headers = requestHeaders(req, this.options.scheme, state.conn.socket.remoteAddress ?? '', true);
    const program = httpProgram(tunnel?.policy ?? pool.policy);
    // The request phase runs on an upgrade's request too (a deny must hold for WebSockets); the
    // answer's bytes are relayed, so the response phase does not see a 101 (docs/DECISIONS.md).
    if (!hasHttpPhases(program)) return this.upgradeTo(state, choice, req, socket, head, host!, { kind: 'forward', headers, target: req.url!, respond: undefined });
    const outcome = this.options.httpPolicy.request(state.conn, pool, program, req, this.options.scheme, headers, undefined, []);
    if (!(outcome instanceof Promise)) return this.upgradeTo(state, choice, req, socket, head, host!, outcome);
    outcome.then((settled) => void (socket.destroyed ? undefined : this.upgradeTo(state, choice, req, socket, head, host!, settled)), () => void socket.destroy());
  }

  private upgradeTo(state: ConnState, choice: TunnelChoice, req: http.IncomingMessage, socket: Duplex, head: Buffer, host: string, outcome: RequestOutcome): void {
    if (outcome.kind === 'answer') return void socket.end(answerBytes(outcome.answer));
    // an upgrade cannot follow the login's redirects itself: it is sent to the login page
    if (outcome.kind === 'login') return void socket.end(answerBytes(outcome.fallback));
    const { headers, target } = outcome;
    const stream = openStreamTo(this.options, state, choice);
    if (!stream) {
      socket.end(rawAnswer(502, 'Bad Gateway', badGatewayText(host), {}));
      return;
    }
    stream.write(requestHead(req, headers, req.httpVersion, target));
    if (head.length > 0) stream.write(head);
    relayUpgrade(socket, stream, req.method === 'HEAD');
  }

  /**
   * The tunnel a request goes to, picked before its policy runs when the pool's tunnels run
   * different ones (docs/DECISIONS.md "Pooled endpoints with different policies"): per request
   * when only their HTTP phases differ, else once per connection, which keeps it. Undefined: they
   * all run one, the tunnel is picked when a stream opens, as ever. False: the connection-level
   * policy refused the connection.
   */
  private tunnelFor(state: ConnState, pool: EndpointPool): LiveTunnel | undefined | false {
    const mix = pool.mix;
    if (mix === 'same') return this.admit(state, pool.url, pool.policy, pool) ? undefined : false;
    // the tunnels' connection-level policies are alike: the pool's (its oldest tunnel's) stands for them
    if (mix === 'per-request') return this.admit(state, pool.url, pool.policy, pool) ? this.options.opener.pickFirst(pool) : false;
    let tunnel = state.pinned.get(pool.url);
    // a pinned tunnel gone from the pool: the connection moves to another, whose policy then runs
    if (tunnel === undefined || !pool.serves(tunnel)) {
      tunnel = this.options.opener.pickFirst(pool);
      if (tunnel === undefined) return this.admit(state, pool.url, pool.policy, pool) ? undefined : false;
      state.pinned.set(pool.url, tunnel);
    }
    return this.admit(state, pinnedKey(pool.url, tunnel), tunnel.policy, pool) ? tunnel : false;
  }

  /**
   * A connection-level policy, once per connection: on the HTTP port the endpoint is known only
   * from the first request's Host, so that is when it runs (HTTPS connections ran it at the TLS port).
   */
  private admit(state: ConnState, key: string, policy: ConnectionPolicy, pool: EndpointPool): boolean {
    if (state.admitted.has(key)) return true;
    if (!this.options.gate.admit(state.conn, policy, endpointOfPool(pool))) return false;
    state.admitted.add(key);
    return true;
  }

  /** The kept-alive requests of one public connection towards one endpoint's pool (or one tunnel of it, picked first). */
  private channelFor(state: ConnState, pool: EndpointPool, tunnel: LiveTunnel | undefined): UpstreamChannel {
    const key = tunnel ? pinnedKey(pool.url, tunnel) : pool.url;
    let channel = state.channels.get(key);
    if (channel && !channel.destroyed) return channel;
    channel = new UpstreamChannel(new PoolChannelHooks(this.options, state, tunnel ? onlyTunnel(tunnel) : pool));
    state.channels.set(key, channel);
    return channel;
  }
}

/** A proxy stream to one of the choice's tunnels, recorded on the connection; undefined when none can take it. */
function openStreamTo(options: HttpProxyOptions, state: ConnState, choice: TunnelChoice): OpenedStream['stream'] | undefined {
  const opened = options.opener.open(choice, KINDS[options.scheme], state.conn.socket);
  if (!opened) {
    state.conn.outcome ??= 'no_tunnel';
    return undefined;
  }
  state.conn.verdict = 'allowed';
  state.conn.tunnelId = opened.tunnel.id;
  return opened.stream;
}

/** What the kept-alive requests of one public connection towards one pool (or tunnel) do at each turn (upstream.ts). */
class PoolChannelHooks implements ChannelHooks {
  readonly badGateway = badGateway;
  readonly information = forwardInformation;
  readonly answerHeaders = responseHeaders;

  constructor(
    private readonly options: HttpProxyOptions,
    private readonly state: ConnState,
    private readonly choice: TunnelChoice,
  ) {}

  openStream(): Duplex | undefined {
    const stream = openStreamTo(this.options, this.state, this.choice);
    if (stream) stream.on('error', () => {});
    return stream;
  }

  /**
   * TUNNELS.md §4: an agent that disconnects closes its connections, idle keep-alive ones too
   * (one in the middle of a request gets its 502 or is cut where it stands, as before).
   */
  idleStreamFailed(): void {
    const answer = this.state.answer;
    if (answer === undefined || (answer !== 'relayed' && answer.writableFinished)) this.state.client.destroy();
  }
}

/** An endpoint the TLS port admitted the connection to, and the tunnel it keeps there (when one is picked first). */
export interface AdmittedEndpoint {
  readonly url: string;
  readonly pinned: LiveTunnel | undefined;
}

function pinnedKey(url: string, tunnel: LiveTunnel): string {
  return `${url} ${tunnel.id}`;
}

/**
 * A policy's denial closes the connection, but only once the answer owed to an earlier request
 * pipelined before it has left: the client's allowed request is not cut short by its next one.
 */
function closeAfter(previous: http.ServerResponse | 'relayed' | undefined, socket: Duplex): void {
  if (previous === undefined || previous === 'relayed' || previous.writableFinished || previous.destroyed) return void socket.destroy();
  const close = () => socket.destroy();
  previous.once('finish', close).once('close', close);
}

/** Whether the previous answer on the connection is all written (or there is none). */
function answered(previous: http.ServerResponse | 'relayed' | undefined): boolean {
  return previous === undefined || (previous !== 'relayed' && previous.writableFinished);
}

/** How many Host lines a request has (Node keeps only the first in `headers`). */
function hostLines(raw: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') count++;
  return count;
}

/** The authority of an absolute-form target (`http://host:port/path`), or undefined. */
function targetAuthority(target: string | undefined): string | undefined {
  const match = target === undefined ? null : /^https?:\/\/([^/?#]*)/i.exec(target);
  if (!match) return undefined;
  const authority = match[1]!;
  return authority.slice(authority.lastIndexOf('@') + 1);
}

/**
 * A 1xx the local server sent before its answer (RFC 9110 §15.2: a proxy forwards them): 103
 * Early Hints and 102 Processing; a 100 Continue was already answered by Node to an Expect.
 */
function forwardInformation(res: http.ServerResponse, status: number, rawHeaders: string[]): void {
  if (res.headersSent) return;
  if (status === 102) res.writeProcessing();
  else if (status === 103) {
    const hints: Record<string, string[]> = {};
    for (let i = 0; i < rawHeaders.length; i += 2) (hints[rawHeaders[i]!.toLowerCase()] ??= []).push(rawHeaders[i + 1]!);
    if (hints.link) res.writeEarlyHints(hints);
  }
}

function answerAndClose(res: http.ServerResponse, status: number, body: string): void {
  res.shouldKeepAlive = false;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Whether an answer is under way to the client (a canned one written now would corrupt it). */
function answerBegun(answer: http.ServerResponse | 'relayed' | undefined): boolean {
  return answer === 'relayed' || (answer !== undefined && answer.headersSent && !answer.writableFinished);
}

/** The Host header's host: lower-case, without port or trailing dot; undefined when absent or bad. */
export function hostOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  let host = header.trim().toLowerCase();
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    if (close === -1) return undefined;
    host = host.slice(1, close);
  } else {
    const colon = host.lastIndexOf(':');
    if (colon !== -1) {
      if (!/^\d*$/.test(host.slice(colon + 1))) return undefined;
      host = host.slice(0, colon);
    }
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  return host === '' || host.length > 253 ? undefined : host;
}

/** The request's headers as sent to the agent: hop-by-hop ones dropped (kept for an upgrade), X-Forwarded-* set. */
export function requestHeaders(req: http.IncomingMessage, scheme: string, clientIp: string, upgrade: boolean): string[] {
  const drop = upgrade ? NOTHING : withConnectionTokens(HOP_BY_HOP, req.headers.connection);
  const out: string[] = [];
  let forwardedFor: string | undefined;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (drop.has(lower) || OURS.has(lower)) continue;
    if (FORWARDED.has(lower)) {
      if (lower === 'x-forwarded-for') forwardedFor = forwardedFor === undefined ? raw[i + 1]! : `${forwardedFor}, ${raw[i + 1]!}`;
      continue;
    }
    out.push(name, raw[i + 1]!);
  }
  const ip = plainIp(clientIp);
  out.push('X-Forwarded-For', forwardedFor ? `${forwardedFor}, ${ip}` : ip, 'X-Forwarded-Proto', scheme);
  if (req.headers.host) out.push('X-Forwarded-Host', req.headers.host);
  return out;
}

/** The agent's answer headers for the client: hop-by-hop ones dropped; Node frames the body anew. */
function responseHeaders(raw: string[]): string[] {
  const drop = withConnectionTokens(ANSWER_HOP_BY_HOP, connectionHeader(raw));
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (!drop.has(raw[i]!.toLowerCase())) out.push(raw[i]!, raw[i + 1]!);
  return out;
}

/** The Connection header's tokens of raw header lines, several lines joined (RFC 9110 §5.3). */
function connectionHeader(raw: string[]): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === 'connection') value = value === undefined ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`;
  }
  return value;
}

/** `base` plus the headers a Connection header names (the shared set when it names none beyond, as for `keep-alive`). */
function withConnectionTokens(base: ReadonlySet<string>, connection: string | undefined): ReadonlySet<string> {
  if (!connection) return base;
  const tokens = connection.split(',').map((token) => token.trim().toLowerCase()).filter((token) => token !== '' && !base.has(token));
  return tokens.length === 0 ? base : new Set([...base, ...tokens]);
}

function offlineText(host: string): string {
  return `The endpoint ${host} is offline.\n\nERR_NGROK_3200\n`;
}

function badGatewayText(host: string): string {
  return `The endpoint ${host} could not be reached: its agent did not take the connection.\n`;
}

function offline(res: http.ServerResponse, host: string): void {
  const body = offlineText(host);
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), 'ngrok-error-code': 'ERR_NGROK_3200' });
  res.end(body);
}

function badGateway(res: http.ServerResponse, host: string, broken = false): void {
  const body = broken ? `The endpoint ${host} answered with something that is not a valid HTTP answer.\n` : badGatewayText(host);
  res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** The request line and `headers` (name, value, name, value …), as the agent's side reads them. */
function requestHead(req: http.IncomingMessage, headers: string[], version: string, target = req.url): Buffer {
  let text = `${req.method} ${target} HTTP/${version}\r\n`;
  for (let i = 0; i < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
  return Buffer.from(text + '\r\n', 'latin1');
}

/** A whole answer written on a socket taken over by an upgrade (no ServerResponse there). */
function rawAnswer(status: number, reason: string, body: string, headers: Record<string, string>): Buffer {
  let text = `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n`;
  for (const [name, value] of Object.entries(headers)) text += `${name}: ${value}\r\n`;
  return Buffer.concat([Buffer.from(text + '\r\n', 'latin1'), Buffer.from(body, 'utf8')]);
}
