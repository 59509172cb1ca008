// @test-pass sqlite
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, describe, it } from 'node:test';
import { ProxyHeaderGate, parseProxyHeader, proxiedDestinationOf } from '../../../src/tunnels/public/proxy-header.js';
import { proxyProtocolHeader } from '../../../src/tunnels/public/proxy-proto.js';
import { exchange } from '../../helpers/raw-exchange.js';

const client = { ip: '203.0.113.7', port: 51000 };
const balancer = { ip: '10.0.0.1', port: 443 };

describe('parseProxyHeader', () => {
  it('reads what proxyProtocolHeader writes, v1 and v2, IPv4 and IPv6, and says where the header ends', () => {
    for (const version of [1, 2] as const) {
      for (const [source, destination] of [[client, balancer], [{ ip: '2001:db8::7', port: 1 }, { ip: '2001:db8::1', port: 80 }]] as const) {
        const header = proxyProtocolHeader(version, source, destination);
        const parsed = parseProxyHeader(Buffer.concat([header, Buffer.from('GET / HTTP/1.1\r\n')]));
        assert.deepEqual(parsed, { status: 'done', length: header.length, source, destination }, `v${version} ${source.ip}`);
      }
    }
  });

  it('is incomplete on every prefix of a header, never wrong', () => {
    for (const header of [proxyProtocolHeader(1, client, balancer), proxyProtocolHeader(2, client, balancer)]) {
      for (let n = 1; n < header.length; n++) assert.deepEqual(parseProxyHeader(header.subarray(0, n)), { status: 'incomplete' }, `${n} bytes`);
    }
  });

  it('UNKNOWN and LOCAL name no address: the peer stays the client', () => {
    assert.deepEqual(parseProxyHeader(Buffer.from('PROXY UNKNOWN\r\n')), { status: 'done', length: 15 });
    const local = proxyProtocolHeader(2, client, balancer);
    local[12] = 0x20;
    assert.deepEqual(parseProxyHeader(local), { status: 'done', length: local.length });
  });

  it('refuses what is not a header, as soon as a byte says so', () => {
    const tooLong = proxyProtocolHeader(2, client, balancer);
    tooLong.writeUInt16BE(60_000, 14);
    const badVersion = proxyProtocolHeader(2, client, balancer);
    badVersion[12] = 0x31;
    for (const bad of [
      Buffer.from('GET / HTTP/1.1\r\n'),
      Buffer.from('PROXY TCP4 203.0.113.7 10.0.0.1 51000\r\n'),
      Buffer.from('PROXY TCP4 2001:db8::1 10.0.0.1 1 2\r\n'),
      Buffer.from('PROXY TCP4 203.0.113.7 10.0.0.1 51000 70000\r\n'),
      Buffer.from('PROXY TCP4 203.0.113.7 10.0.0.1 051000 1\r\n'),
      Buffer.from(`PROXY TCP4 ${'1'.repeat(120)}`),
      Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x01]),
      tooLong,
      badVersion,
    ]) {
      assert.equal(parseProxyHeader(bad).status, 'error', JSON.stringify(bad.toString('latin1')));
    }
  });
});

describe('ProxyHeaderGate', () => {
  const servers: net.Server[] = [];
  after(() => servers.forEach((server) => server.close()));

  /** A listener behind the gate that answers with the client address it sees and the first bytes after the header. */
  async function gated(cidrs: string[], timeoutMs?: number): Promise<number> {
    const gate = new ProxyHeaderGate(cidrs, timeoutMs);
    const server = net.createServer({ pauseOnConnect: true }, (socket) =>
      gate.accept(socket, () => {
        socket.once('data', (data) => socket.end(`${socket.remoteAddress}:${socket.remotePort} ${proxiedDestinationOf(socket)?.ip ?? '-'} ${data}`));
        socket.resume();
      }),
    );
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as net.AddressInfo).port;
  }

  it('from a trusted address, the header gives the client; the bytes after it are intact', async () => {
    const port = await gated(['127.0.0.0/8']);
    assert.equal(await exchange(port, Buffer.concat([proxyProtocolHeader(2, client, balancer), Buffer.from('hello')])), '203.0.113.7:51000 10.0.0.1 hello');
    assert.equal(await exchange(port, Buffer.concat([proxyProtocolHeader(1, client, balancer), Buffer.from('hi')])), '203.0.113.7:51000 10.0.0.1 hi');
  });

  it('from a trusted address, a connection without a header is closed without a word', async () => {
    const port = await gated(['127.0.0.1']);
    assert.equal(await exchange(port, Buffer.from('GET / HTTP/1.1\r\n\r\n')), '');
  });

  it('a trusted peer that sends nothing is closed after the timeout', async () => {
    const port = await gated(['127.0.0.1'], 200);
    assert.equal(await exchange(port, Buffer.alloc(0)), '');
  });

  it('from any other address nothing is read: the header is data and the peer is the client', async () => {
    const port = await gated(['127.0.0.1/32']);
    const header = proxyProtocolHeader(1, client, balancer);
    const answer = await exchange(port, header, '127.0.0.2');
    assert.match(answer, /^127\.0\.0\.2:\d+ - PROXY TCP4 203\.0\.113\.7/);
  });
});
