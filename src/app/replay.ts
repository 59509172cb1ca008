// Replay (CONSOLE.md §2): a captured request sent again through the endpoint's normal public path.
// The instance makes the request to its own public listener, so the endpoint's traffic policy,
// its agent and its local service see it as they saw the first one; the Burrow-Replay header's
// token tells the proxy which id to record it under (and is never forwarded).
import http from 'node:http';
import https from 'node:https';
import type { TunnelConfig } from '../config.js';
import type { InspectionRecorder } from '../domain/inspection/recorder.js';
import { REPLAY_HEADER, type ReplaySender } from '../domain/inspection/replay.js';

const REPLAY_TIMEOUT_MS = 30_000;

export function replaySender(recorder: Pick<InspectionRecorder, 'expectReplay' | 'replayPending'>, tunnels: TunnelConfig): ReplaySender {
  return (request) =>
    new Promise((resolve) => {
      const url = new URL(request.url);
      const secure = url.protocol === 'https:';
      if (!secure && url.protocol !== 'http:') return resolve({ refused: 'only HTTP(S) endpoints are inspected' });
      const port = secure ? tunnels.edgeTlsPort : tunnels.edgeHttpPort;
      if (port === 0) return resolve({ refused: `this instance serves no ${secure ? 'HTTPS (EDGE_TLS_PORT=0)' : 'HTTP (EDGE_HTTP_PORT=0)'}` });
      const { token, id } = recorder.expectReplay(request.endpointId);
      const headers: Record<string, string[]> = {};
      for (const [name, value] of request.headers) (headers[name] ??= []).push(value);
      const options: https.RequestOptions = {
        host: loopbackFor(tunnels.edgeHost),
        port,
        method: request.method,
        path: request.path,
        headers: { ...headers, host: url.host, 'content-length': String(request.body.length), [REPLAY_HEADER]: token },
        agent: false,
        timeout: REPLAY_TIMEOUT_MS,
        // our own listener over loopback: its certificate names the endpoint, not the address dialled
        ...(secure ? { servername: url.hostname, rejectUnauthorized: false } : {}),
      };
      const req = (secure ? https : http).request(options, (res) => {
        // the proxy claimed the token at the request's head, if the endpoint is served here
        if (recorder.replayPending(token)) resolve({ refused: 'the endpoint is not served by this instance (its agent is connected to another one)' });
        else resolve({ id });
        // the answer is recorded by the proxy; here it is only read to its end
        res.resume();
        res.on('error', () => {});
      });
      req.on('error', (error) => resolve({ refused: `the endpoint's public listener did not answer (${error.message})` }));
      req.on('timeout', () => req.destroy(new Error(`no answer within ${REPLAY_TIMEOUT_MS / 1000} s`)));
      req.end(request.body);
    });
}

/** Where to reach a listener bound to `host`: the loopback address for an unspecified one. */
function loopbackFor(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host;
}
