// @test-pass sqlite
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import ngrok from '@ngrok/ngrok';
import { ErrorCode, Flag, FrameType, encodeData, encodeHeader, encodeWndInc } from '../../src/tunnels/muxado/index.js';
import { makeCredential, startDataPlaneServer, type DataPlaneServer } from '../helpers/data-plane.js';
import { RawAgent } from '../helpers/raw-agent.js';
import { cleanupProcesses } from '../helpers/server-process.js';

/**
 * Hostile and broken agents against a real `burrow serve` (TUNNELS.md §2, issue 11): malformed
 * frames, unknown stream types, oversized RPC bodies, truncated JSON, floods of SYNs and
 * heartbeats, silence. After each, the process is alive and a well-behaved SDK session on the
 * same server still binds (its round trip is timed), and the bad connection got the
 * protocol's error: GOAWAY with the muxado code, or RST on the stream, or an RPC error reply.
 */

const AUTH = 0;
const BIND = 1;
const HEARTBEAT = 0xffffffff;

describe('robustness of the agent port', () => {
  let server: DataPlaneServer;
  let token: string;
  let good: ngrok.Session;
  let silentTcp: Promise<number>;

  before(async () => {
    server = await startDataPlaneServer();
    token = (await makeCredential(server, [])).token;
    good = await new ngrok.SessionBuilder().authtoken(token).serverAddr(server.plane.serverAddr).caCert(server.caCert()).connect();
    silentTcp = silentTcpConnection(server.plane.agentPort);
  });

  after(async () => {
    await good?.close().catch(() => undefined);
    await cleanupProcesses();
  });

  /** The server is up and the good session's RPCs are answered promptly. */
  async function goodSessionWorks(): Promise<void> {
    assert.equal(server.child.exitCode, null, 'burrow serve is still running');
    const started = Date.now();
    const listener = await good.tcpEndpoint().listen(false);
    await listener.close();
    const took = Date.now() - started;
    assert.ok(took < 2_000, `a bind round trip on the good session took ${took} ms`);
  }

  async function raw(): Promise<RawAgent> {
    return RawAgent.connect(server.plane.agentPort, server.caCert());
  }

  async function authenticated(): Promise<RawAgent> {
    const agent = await raw();
    const reply = await agent.auth(token);
    assert.match(String(reply.ClientId), /^ts_/, JSON.stringify(reply));
    return agent;
  }

  it('a DATA frame on stream 0 → GOAWAY Protocol, closed', async () => {
    const agent = await raw();
    agent.write(encodeHeader(FrameType.Data, 0, 0, 0));
    await agent.closed;
    assert.equal(agent.goAway()?.code, ErrorCode.Protocol);
    await goodSessionWorks();
  });

  it('an unknown frame type → GOAWAY Protocol; a WNDINC of the wrong length → GOAWAY FrameSize', async () => {
    const unknown = await raw();
    const header = encodeHeader(FrameType.Data, 0, 3, 0);
    header[3] = 0x70; // type 7
    unknown.write(header);
    const short = await raw();
    const wnd = encodeWndInc(3, 1);
    wnd[2] = 3; // length 3 for a 4-byte frame
    short.write(wnd.subarray(0, 11));
    await Promise.all([unknown.closed, short.closed]);
    assert.equal(unknown.goAway()?.code, ErrorCode.Protocol);
    assert.equal(short.goAway()?.code, ErrorCode.FrameSize);
    await goodSessionWorks();
  });

  it('a SYN with the server’s parity or a reused id → GOAWAY Protocol', async () => {
    const even = await raw();
    even.write(encodeData(2, Flag.Syn, Buffer.from([0, 0, 0, 0])));
    const reused = await authenticated();
    reused.open(3, HEARTBEAT, Buffer.alloc(4));
    await Promise.all([even.closed, reused.closed]);
    assert.equal(even.goAway()?.code, ErrorCode.Protocol);
    assert.equal(reused.goAway()?.code, ErrorCode.Protocol);
    await goodSessionWorks();
  });

  it('an unknown stream type: before Auth the connection is closed (RST + GOAWAY Protocol); after Auth only the stream is refused', async () => {
    const early = await raw();
    early.open(3, 0x42, '{}');
    await early.closed;
    assert.equal(early.rst(3), ErrorCode.Protocol);
    assert.equal(early.goAway()?.code, ErrorCode.Protocol);

    const later = await authenticated();
    later.open(5, 0x42, '{}');
    later.open(7, 3, 'proxy streams are opened by the server'); // a server-opened type
    await later.until('both RSTs', () => later.rst(5) !== undefined && later.rst(7) !== undefined);
    assert.equal(later.rst(5), ErrorCode.StreamRefused);
    assert.equal(later.rst(7), ErrorCode.StreamRefused);
    assert.equal(later.isClosed, false, 'the session stays');
    later.open(9, BIND, JSON.stringify({ Id: '', Proto: 'tcp', Opts: { Addr: '' }, Extra: {} }));
    const bound = await later.reply(9);
    assert.match(String(bound.URL), /^tcp:\/\//, JSON.stringify(bound));
    later.destroy();
    await goodSessionWorks();
  });

  it('an RPC body over 1 MiB → an error reply, then RST FrameSize; the session stays when authenticated', async () => {
    const agent = await authenticated();
    const huge = `{"Id":"","Proto":"tcp","Opts":{"Addr":""},"Extra":{"Metadata":"${'x'.repeat(1024 * 1024 + 10)}"}}`;
    agent.open(5, BIND, '');
    await agent.sendWithinWindow(5, Buffer.from(huge), 15_000);
    await agent.until('the RST', () => agent.rst(5) !== undefined, 5_000);
    assert.equal(agent.rst(5), ErrorCode.FrameSize);
    const reply = agent.data(5);
    assert.match(reply.bytes.toString(), /"Error":"The bind payload you specified is not valid\.\\ninvalid Bind request: request larger than 1048576 bytes\\n\\nERR_NGROK_301"/);
    assert.equal(agent.isClosed, false);
    agent.destroy();

    // The same before Auth: the Auth error, then the connection is closed.
    const early = await raw();
    early.open(3, AUTH, '');
    await early.sendWithinWindow(3, Buffer.from(`{"Version":["3"],"Extra":{"Metadata":"${'y'.repeat(1100 * 1024)}"}}`), 15_000);
    await early.closed;
    assert.match(early.data(3).bytes.toString(), /ERR_NGROK_109/);
    await goodSessionWorks();
  });

  it('truncated or invalid JSON → an error reply with the RPC error; a failed Auth closes the connection', async () => {
    const agent = await authenticated();
    agent.open(5, BIND, '{"Id":"","Proto":"tc', true);
    const reply = await agent.reply(5);
    assert.match(String(reply.Error), /invalid Bind request[^]*ERR_NGROK_301$/);
    agent.open(7, BIND, '[1,2,3]', true);
    assert.match(String((await agent.reply(7)).Error), /invalid Bind request[^]*ERR_NGROK_301$/);
    assert.equal(agent.isClosed, false);
    agent.destroy();

    const early = await raw();
    early.open(3, AUTH, '{"Version":["3"],"Extra":{"Authtoken":', true);
    await early.closed;
    assert.match(early.data(3).bytes.toString(), /ERR_NGROK_109/);
    await goodSessionWorks();
  });

  it('a flood of SYNs is answered with RSTs or GOAWAY, never a stall', async () => {
    const agent = await authenticated();
    const frames: Buffer[] = [];
    for (let id = 5; id < 5 + 2 * 3000; id += 2) frames.push(encodeData(id, Flag.Syn, Buffer.from([0xff, 0xff, 0xff, 0xff])));
    agent.write(Buffer.concat(frames));
    await goodSessionWorks();
    // Heartbeat streams the flood left open are fine; past the accept limit burrow refuses.
    await agent.until('a refusal', () => agent.frames().some((f) => f.type === FrameType.Rst) || agent.isClosed, 5_000);
    const codes = new Set(agent.frames().filter((f) => f.type === FrameType.Rst).map((f) => f.payload.readUInt32BE(0)));
    assert.ok(agent.isClosed || codes.has(ErrorCode.AcceptQueueFull), `RST codes ${[...codes]}`);
    agent.destroy();
  });

  it('a flood of heartbeats on one stream, never read back: echoes coalesced, the others unaffected', async () => {
    const agent = await authenticated();
    agent.socket.pause(); // read nothing: burrow's echoes would pile up
    agent.open(5, HEARTBEAT, Buffer.alloc(4));
    const beats = Buffer.concat(Array.from({ length: 4096 }, () => encodeData(5, 0, Buffer.alloc(60, 7))));
    const started = Date.now();
    for (let i = 0; i < 40 && !agent.isClosed && Date.now() - started < 5_000; i++) {
      agent.write(beats);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await goodSessionWorks();
    // Read again: burrow echoed the latest beat each time the one before had left, never one
    // echo per beat; a stream the agent overran (past the window burrow granted) is reset, and a
    // connection that kept sending while a megabyte of ours sat unread is closed.
    agent.socket.resume();
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (agent.isClosed) {
      assert.ok([ErrorCode.EnhanceYourCalm, ErrorCode.FlowControl].includes(agent.goAway()?.code as 10), agent.describe());
    } else if (agent.rst(5) !== undefined) {
      assert.equal(agent.rst(5), ErrorCode.FlowControl);
    } else {
      const echoes = agent.frames().filter((f) => f.type === FrameType.Data && f.streamId === 5 && f.payload.length > 0);
      const beatsSent = (4096 * 40 * 60) / 4;
      assert.ok(echoes.length < beatsSent / 100, `${echoes.length} echoes for up to ${beatsSent} beats`);
      assert.deepEqual([...echoes.at(-1)!.payload.subarray(-4)], [7, 7, 7, 7], 'the latest beat echoed');
    }
    agent.destroy();
  });

  it('random bytes after the TLS handshake never crash or stall the server (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 512 }), async (bytes) => {
        const agent = await raw();
        agent.write(bytes);
        // Either burrow closes it (protocol error) or it waits for more; both are fine.
        await Promise.race([agent.closed, new Promise((resolve) => setTimeout(resolve, 30))]);
        agent.destroy();
      }),
      { numRuns: 60 },
    );
    await goodSessionWorks();
  });

  it('well-formed frames in random order with random payloads (property): a GOAWAY, if any, carries a muxado code', async () => {
    const frame = fc.oneof(
      fc.record({ kind: fc.constant('data' as const), id: fc.integer({ min: 1, max: 40 }), flags: fc.integer({ min: 0, max: 15 }), body: fc.uint8Array({ maxLength: 64 }) }),
      fc.record({ kind: fc.constant('rst' as const), id: fc.integer({ min: 1, max: 40 }), code: fc.integer({ min: 0, max: 20 }) }),
      fc.record({ kind: fc.constant('wnd' as const), id: fc.integer({ min: 1, max: 40 }), inc: fc.integer({ min: 0, max: 0x7fffffff }) }),
      fc.record({ kind: fc.constant('auth' as const), id: fc.integer({ min: 1, max: 40 }), json: fc.json() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 12 }), async (frames) => {
        const agent = await raw();
        for (const f of frames) {
          if (f.kind === 'data') agent.write(encodeData(f.id, f.flags, f.body));
          else if (f.kind === 'rst') agent.write(Buffer.concat([encodeHeader(FrameType.Rst, 0, f.id, 4), u32(f.code)]));
          else if (f.kind === 'wnd') agent.write(Buffer.concat([encodeHeader(FrameType.WndInc, 0, f.id, 4), u32(f.inc)]));
          else agent.write(encodeData(f.id, Flag.Syn, Buffer.concat([u32(AUTH), Buffer.from(f.json)])));
        }
        await Promise.race([agent.closed, new Promise((resolve) => setTimeout(resolve, 50))]);
        const goAway = agent.goAway();
        if (goAway) assert.ok(goAway.code <= ErrorCode.PeerEOF, `GOAWAY code ${goAway.code}`);
        agent.destroy();
      }),
      { numRuns: 60 },
    );
    await goodSessionWorks();
  });

  it('no agent input made the server log an internal error', () => {
    const errors = server.logs().filter((line) => Number(line.level) >= 50);
    assert.deepEqual(errors, []);
  });

  it('a TCP connection that never starts TLS is dropped after the 10 s handshake timeout', async () => {
    const after = await silentTcp;
    assert.ok(after >= 9_000 && after < 13_000, `closed after ${after} ms`);
    await goodSessionWorks();
  });
});

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value >>> 0);
  return b;
}

/** A plain TCP connection to the agent port that sends nothing; resolves with ms until burrow closed it. */
async function silentTcpConnection(port: number): Promise<number> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.resume();
  const opened = Date.now();
  await new Promise((resolve) => socket.once('close', resolve));
  return Date.now() - opened;
}
