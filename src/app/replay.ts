// Replay (CONSOLE.md §2): a captured request sent again through the endpoint's normal public path.
// The instance makes the request to its own public listener, so the endpoint's traffic policy,
// its agent and its local service see it as they saw the first one; the Burrow-Replay header's
// token tells the proxy which id to record it under (and is never forwarded to the agent). When the
// agent is on another instance, the connection is forwarded there and that instance's proxy records
// it (the token is signed with a key derived from CLUSTER_SECRET): nothing here assumes the
// instance that captured the request, nor the one that sends the replay, holds the agent.
import http from 'node:http';
import https from 'node:https';
import type { TunnelConfig } from '../config.js';
import type { InspectionRecorder } from '../domain/inspection/recorder.js';
import { REPLAY_HEADER, type ReplaySender } from '../domain/inspection/replay.js';

const REPLAY_TIMEOUT_MS = 30_000;
/** How long a replay carried by another instance may take to be listed (CONSOLE.md §2: within 2 s), then a poll's pause. */
const RECORDED_WITHIN_MS = 2500;
const POLL_MS = 100;

export function replaySender(recorder: Pick<InspectionRecorder, 'expectReplay' | 'replayPending' | 'recorded'>, tunnels: TunnelConfig): ReplaySender {
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
        // the answer is recorded by the proxy; here it is only read to its end
        res.resume();
        res.on('error', () => {});
        // this instance's proxy claimed the token at the request's head; another's (forwarded) writes the row
        if (!recorder.replayPending(token)) return resolve({ id });
        void recordedElsewhere(recorder, request.accountId, request.endpointId, id).then((found) =>
          resolve(found ? { id } : { refused: 'the request reached no agent of the endpoint (its agent is on an instance this one cannot forward to)' }),
        );
      });
      req.on('error', (error) => resolve({ refused: `the endpoint's public listener did not answer (${error.message})` }));
      req.on('timeout', () => req.destroy(new Error(`no answer within ${REPLAY_TIMEOUT_MS / 1000} s`)));
      req.end(request.body);
    });
}

async function recordedElsewhere(recorder: Pick<InspectionRecorder, 'recorded'>, accountId: string, endpointId: string, id: string): Promise<boolean> {
  const until = Date.now() + RECORDED_WITHIN_MS;
  for (;;) {
    if (await recorder.recorded(accountId, endpointId, id).catch(() => false)) return true;
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Where to reach a listener bound to `host`: the loopback address for an unspecified one. */
function loopbackFor(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '::1';
  return host;
}
