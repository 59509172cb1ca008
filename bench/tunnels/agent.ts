import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import ngrok from '@ngrok/ngrok';
import type { AgentEndpoint } from './burrow.js';

/**
 * The official SDK as the agent, in a process of its own. BENCH_AGENT (JSON) says what to bind:
 * - `endpoints`: one session; each endpoint bound and forwarded (listenAndForward) to a local
 *   server; prints `ready {"urls":{name:url},"errors":{name:message}}`.
 * - `sessions`: that many sessions (16 connecting at a time), each with one http endpoint
 *   forwarding to `idleForward`; prints `ready {"sessions":n}`. Then, for each `heartbeats <ms>`
 *   line on stdin, waits up to ms and prints `heartbeats {"answered":k,"of":n}`: how many sessions
 *   saw a heartbeat answered by the server since the line arrived.
 * Errors print `error <message>` and exit 1. Exits when stdin closes.
 */
interface Config {
  serverAddr: string;
  caPath: string;
  token: string;
  endpoints?: AgentEndpoint[];
  sessions?: number;
  idleForward?: string;
}

const config = JSON.parse(process.env.BENCH_AGENT ?? '{}') as Config;
const ca = readFileSync(config.caPath);
const lastHeartbeat: number[] = [];

function connect(index: number): Promise<ngrok.Session> {
  return new ngrok.SessionBuilder()
    .authtoken(config.token)
    .serverAddr(config.serverAddr)
    .caCert(ca)
    .handleHeartbeat(() => {
      lastHeartbeat[index] = performance.now();
    })
    .connect();
}

async function bind(session: ngrok.Session, endpoint: AgentEndpoint): Promise<string> {
  let listener: ngrok.Listener;
  if (endpoint.kind === 'tcp') {
    const builder = session.tcpEndpoint();
    if (endpoint.policy) builder.trafficPolicy(endpoint.policy);
    listener = await builder.listenAndForward(endpoint.forward);
  } else if (endpoint.kind === 'tls') {
    const builder = session.tlsEndpoint();
    if (endpoint.domain) builder.domain(endpoint.domain);
    listener = await builder.listenAndForward(endpoint.forward);
  } else if (endpoint.kind === 'labeled') {
    const builder = session.labeledListener();
    for (const [key, value] of Object.entries(endpoint.labels ?? {})) builder.label(key, value);
    listener = await builder.listenAndForward(endpoint.forward);
  } else {
    const builder = session.httpEndpoint().scheme('HTTP');
    if (endpoint.domain) builder.domain(endpoint.domain);
    if (endpoint.policy) builder.trafficPolicy(endpoint.policy);
    listener = await builder.listenAndForward(endpoint.forward);
  }
  return listener.url() ?? `labeled:${endpoint.name}`;
}

const sessions: ngrok.Session[] = [];
try {
  if (config.sessions) {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(16, config.sessions) }, async () => {
        while (next < config.sessions!) {
          const index = next++;
          const session = await connect(index);
          sessions.push(session);
          await bind(session, { name: `idle${index}`, kind: 'http', forward: config.idleForward! });
        }
      }),
    );
    process.stdout.write(`ready ${JSON.stringify({ sessions: sessions.length })}\n`);
  } else {
    const session = await connect(0);
    sessions.push(session);
    // One refused bind (a policy, a build without some feature) leaves the others measurable.
    const urls: Record<string, string> = {};
    const errors: Record<string, string> = {};
    for (const endpoint of config.endpoints ?? []) {
      try {
        urls[endpoint.name] = await bind(session, endpoint);
      } catch (error) {
        errors[endpoint.name] = String(error).replace(/\s+/g, ' ');
      }
    }
    process.stdout.write(`ready ${JSON.stringify({ urls, errors })}\n`);
  }
} catch (error) {
  process.stdout.write(`error ${String(error).replace(/\s+/g, ' ')}\n`);
  process.exit(1);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const match = /^heartbeats (\d+)$/.exec(line);
  if (!match) return;
  const since = performance.now();
  const count = () => lastHeartbeat.filter((t) => t !== undefined && t >= since).length;
  const deadline = since + Number(match[1]);
  const poll = setInterval(() => {
    if (count() < sessions.length && performance.now() < deadline) return;
    clearInterval(poll);
    process.stdout.write(`heartbeats ${JSON.stringify({ answered: count(), of: sessions.length })}\n`);
  }, 100);
});
process.stdin.on('end', () => process.exit(0));
