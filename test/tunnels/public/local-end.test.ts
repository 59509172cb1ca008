// @test-pass sqlite
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { serverEndOf } from '../../../src/tunnels/public/local-end.js';

/** Accepts one connection on a listener bound to `host` and gives the server and the accepted socket. */
async function acceptOne(host: string, connectTo: string): Promise<{ server: net.Server; socket: net.Socket; close: () => Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const client = net.connect((server.address() as net.AddressInfo).port, connectTo);
  const socket = await accepted;
  return {
    server,
    socket,
    close: async () => {
      client.destroy();
      socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test('a listener bound to one address: its address and port, without asking the socket', async () => {
  const { server, socket, close } = await acceptOne('127.0.0.1', '127.0.0.1');
  try {
    const port = (server.address() as net.AddressInfo).port;
    // the socket's own getsockname would be the same; make sure it is not the one consulted
    Object.defineProperty(socket, 'localAddress', { get: () => assert.fail('getsockname asked') });
    assert.deepEqual(serverEndOf(socket, server), { ip: '127.0.0.1', port });
  } finally {
    await close();
  }
});

test('a wildcard listener (0.0.0.0): the address the socket reached', async () => {
  const { server, socket, close } = await acceptOne('0.0.0.0', '127.0.0.1');
  try {
    assert.deepEqual(serverEndOf(socket, server), { ip: '127.0.0.1', port: (server.address() as net.AddressInfo).port });
  } finally {
    await close();
  }
});

test('no listener known: the socket’s own address', async () => {
  const { server, socket, close } = await acceptOne('127.0.0.1', '127.0.0.1');
  try {
    assert.deepEqual(serverEndOf(socket, undefined), { ip: socket.localAddress, port: socket.localPort });
    assert.equal(socket.localPort, (server.address() as net.AddressInfo).port);
  } finally {
    await close();
  }
});
