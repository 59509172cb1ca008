// @test-pass sqlite
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, describe, it, type TestContext } from 'node:test';
import ngrok from '@ngrok/ngrok';
import { ErrorCode, Flag, FrameType, encodeData } from '../../src/tunnels/muxado/index.js';
import { makeCredential, startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { parseExposition } from '../helpers/exposition.js';
import { RawAgent } from '../helpers/raw-agent.js';
import { PROJECT_ROOT, cleanupProcesses, makeTempDir } from '../helpers/server-process.js';
import { hostPort, rssOf } from '../helpers/traffic.js';

/**
 * What a peer of the agent port can make burrow hold or say (issue 29 items 4 and 8), against a
 * real `burrow serve`: TLS handshakes an agent fails (logged once per window, all counted), and
 * the heartbeat amplification attack (many heartbeat streams full of beats, never read, before or
 * after Auth), which must leave burrow's memory and another tenant's latency where they were.
 */

const HEARTBEAT = 0xffffffff;
/** The classic ngrok agent, as @expo/ngrok ships it. */
const CLASSIC_AGENT = join(PROJECT_ROOT, 'node_modules/@expo/ngrok-bin-linux-x64/ngrok');
const KiB = 1024;
const MiB = 1024 * KiB;

describe('bounds of the agent port', () => {
  let server: DataPlaneServer;
  let token: string;
  let good: ngrok.Session;
  let echo: net.Server;
  let tunnelPort: number;

  before(async () => {
    server = await startDataPlaneServer();
    token = (await makeCredential(server, [])).token;
    echo = net.createServer((socket) => socket.pipe(socket)).listen(0, '127.0.0.1');
    await new Promise((resolve) => echo.once('listening', resolve));
    good = await new ngrok.SessionBuilder().authtoken(token).serverAddr(server.plane.serverAddr).caCert(server.caCert()).connect();
    const listener = await good.tcpEndpoint().listenAndForward(`tcp://127.0.0.1:${(echo.address() as net.AddressInfo).port}`);
    tunnelPort = hostPort(listener.url()!).port;
  });

  after(async () => {
    await good?.close().catch(() => undefined);
    echo?.close();
    await cleanupProcesses();
  });

  /** The sum of a family's samples, or of those whose labels include `labels`. */
  async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const family = parseExposition(text, 'prometheus').get(name);
    const matching = (family?.samples ?? []).filter((sample) => Object.entries(labels).every(([k, v]) => sample.labels[k] === v));
    return matching.reduce((sum, sample) => sum + sample.value, 0);
  }

  /** Median round trip of one byte through the good session's TCP tunnel, over `count` echoes. */
  async function tunnelLatencyMs(count = 25): Promise<number> {
    const socket = net.connect(tunnelPort, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const times: number[] = [];
    try {
      for (let i = 0; i < count; i++) {
        const started = performance.now();
        socket.write('x');
        await new Promise<void>((resolve, reject) => {
          socket.once('data', () => resolve());
          socket.once('error', reject);
        });
        times.push(performance.now() - started);
      }
    } finally {
      socket.destroy();
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)]!;
  }

  describe('TLS failures (item 4)', () => {
    it('agents that do not trust the CA (classic agent, SDK, Node): every failure counted, one agent_tls_failed line per window', async () => {
      const failuresBefore = await metric('burrow_agent_tls_failures_total');
      const otherCa = '/etc/ssl/certs/ISRG_Root_X1.pem';
      // the classic agent (Go) with a CA that is not burrow's: "x509: certificate signed by unknown
      // authority", an alert, and a retry every half second or so
      const config = join(makeTempDir('burrow-classic-'), 'ngrok.yml');
      writeFileSync(config, `version: "2"\nauthtoken: ${token}\nserver_addr: localhost:${server.plane.agentPort}\nroot_cas: ${otherCa}\nupdate_check: false\nweb_addr: false\n`);
      const classic = spawn(CLASSIC_AGENT, ['tcp', '9', '--config', config, '--log', 'stdout', '--log-format', 'json'], { stdio: ['ignore', 'pipe', 'ignore'] });
      let classicLog = '';
      classic.stdout.on('data', (chunk: Buffer) => (classicLog += chunk.toString()));
      try {
        await waitFor('the classic agent retried', async () => (await metric('burrow_agent_tls_failures_total', { reason: 'sslv3_alert_bad_certificate' })) >= 3, 15_000);
      } finally {
        const exited = once(classic, 'exit');
        classic.kill();
        await exited;
      }
      assert.match(classicLog, /certificate signed by unknown authority/);

      // the official SDK (rustls) with that CA: it hangs up without an alert
      const beforeSdk = await metric('burrow_agent_tls_failures_total');
      await assert.rejects(new ngrok.SessionBuilder().authtoken(token).serverAddr(server.plane.serverAddr).caCert(readFileSync(otherCa)).connect(), /tls|certificate|handshake/i);
      await waitFor('the SDK failure counted', async () => (await metric('burrow_agent_tls_failures_total')) > beforeSdk);
      const afterSdk = await metric('burrow_agent_tls_failures_total');

      // Node's own roots lack burrow's private CA: Node's client checks after the handshake and hangs up
      const attempts = 5;
      for (let i = 0; i < attempts; i++) {
        const error = await new Promise<Error>((resolve) => {
          const socket = tls.connect({ host: '127.0.0.1', port: server.plane.agentPort, servername: 'localhost' });
          socket.once('error', resolve);
          socket.once('secureConnect', () => resolve(new Error('handshake succeeded')));
        });
        assert.match(error.message, /self-signed|unable to verify|unable to get local issuer/i, error.message);
      }
      await waitFor('the failures counted', async () => (await metric('burrow_agent_tls_failures_total')) - afterSdk >= attempts);
      assert.equal((await metric('burrow_agent_tls_failures_total')) - afterSdk, attempts);

      const lines = server.logs().filter((line) => line.event === 'agent_tls_failed');
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const [line] = lines as [Record<string, unknown>];
      assert.equal(line.level, 40, 'a warning: seen at the default level');
      assert.match(String(line.client_addr), /^127\.0\.0\.1:\d+$/);
      assert.equal(line.reason, 'sslv3_alert_bad_certificate', 'the first failure of the window: the classic agent’s');
      assert.ok((await metric('burrow_agent_tls_failures_total')) - failuresBefore > attempts + 3);
      assert.ok(!JSON.stringify(line).includes(token), 'no secret in the line');
    });
  });

  describe('heartbeat amplification (item 8)', () => {
    /**
     * The attack of the issue: TLS, no Auth (or a successful one), 250 streams of the heartbeat
     * type each carrying 255 KiB of beats, nothing ever read. Resolves with the connection.
     */
    async function heartbeatFlood(authenticate: boolean): Promise<RawAgent> {
      const agent = await RawAgent.connect(server.plane.agentPort, server.caCert());
      if (authenticate) await agent.auth(token);
      agent.socket.pause(); // never read: every echo burrow queues stays queued
      const firstId = authenticate ? 5 : 3;
      const type = Buffer.alloc(4);
      type.writeUInt32BE(HEARTBEAT);
      const beats = Buffer.alloc(255 * KiB, 0x5a);
      for (let i = 0; i < 250 && !agent.isClosed; i++) {
        if (!agent.write(encodeData(firstId + 2 * i, Flag.Syn, Buffer.concat([type, beats])))) {
          await Promise.race([new Promise((resolve) => agent.socket.once('drain', resolve)), agent.closed]);
        }
      }
      return agent;
    }

    /**
     * Runs `attack` while another session's tunnel is timed and burrow's RSS sampled: memory
     * grows by less than `maxGrowth` (over 800 MiB before the bounds) and the tunnel's p50 stays
     * within 10× (or 100 ms of) its baseline from just before. Resolves with the attack's result.
     */
    async function boundedUnder<T>(t: TestContext, maxGrowth: number, attack: () => Promise<T>): Promise<T> {
      const baseline = await tunnelLatencyMs();
      const rssBefore = rssOf(server.child.pid!);
      let rssPeak = rssBefore;
      const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssOf(server.child.pid!))), 50);
      try {
        const attacking = attack();
        const during = await tunnelLatencyMs();
        const result = await attacking;
        await new Promise((resolve) => setTimeout(resolve, 500));
        const growth = rssPeak - rssBefore;
        t.diagnostic(`RSS +${(growth / MiB).toFixed(1)} MiB; tunnel p50 ${baseline.toFixed(2)} ms before, ${during.toFixed(2)} ms during`);
        assert.ok(growth < maxGrowth, `RSS grew by ${(growth / MiB).toFixed(1)} MiB`);
        assert.ok(during < Math.max(10 * baseline, baseline + 100), `latency ${during.toFixed(2)} ms during the attack, ${baseline.toFixed(2)} ms before`);
        return result;
      } finally {
        clearInterval(sampler);
      }
    }

    it('before Auth: the connection is closed at the pre-Auth budget; memory and another session’s latency stay', async (t) => {
      // four connections, as in the issue
      const agents = await boundedUnder(t, 32 * MiB, async () => {
        const flooding = await Promise.all([0, 1, 2, 3].map(() => heartbeatFlood(false)));
        await Promise.all(flooding.map((agent) => Promise.race([agent.closed, new Promise((r) => setTimeout(r, 15_000))])));
        return flooding;
      });
      for (const agent of agents) {
        assert.ok(agent.isClosed, 'burrow closed the flooding connection');
        const goAway = agent.goAway();
        if (goAway) assert.equal(goAway.code, ErrorCode.EnhanceYourCalm, agent.describe());
      }
    });

    it('after Auth: two heartbeat streams served, the rest refused, echoes coalesced; memory and latency stay', async (t) => {
      // all 64 MB are read and decrypted here (the streams are refused once their type is read):
      // measured 20-30 MiB, the TLS buffers Node frees only at its next collections
      const agent = await boundedUnder(t, 48 * MiB, () => heartbeatFlood(true));
      agent.socket.resume();
      await agent.until('the refusals', () => agent.rst(5 + 2 * 249) !== undefined || agent.isClosed, 10_000);
      if (!agent.isClosed) {
        assert.equal(agent.rst(5), undefined, 'the first heartbeat stream is served');
        assert.equal(agent.rst(7), undefined, 'the second too');
        assert.equal(agent.rst(9), ErrorCode.StreamRefused, 'a third is refused');
        // 255 KiB of beats on each served stream (65,280 of them): a handful of echoes back
        const echoes = agent.frames().filter((f) => f.type === FrameType.Data && (f.streamId === 5 || f.streamId === 7) && f.payload.length > 0);
        assert.ok(echoes.length >= 1 && echoes.length < 100, `${echoes.length} echo frames`);
      } else {
        assert.equal(agent.goAway()?.code, ErrorCode.EnhanceYourCalm, agent.describe());
      }
      agent.destroy();
    });

    it('nothing in these attacks made the server log an internal error', () => {
      assert.deepEqual(server.logs().filter((line) => Number(line.level) >= 50), []);
    });
  });
});
