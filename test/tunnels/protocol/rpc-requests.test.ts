// @test-pass sqlite
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RPC_REQUESTS, errorReply, type RpcServer } from '../../../src/tunnels/protocol/rpc-requests.js';
import { StreamType } from '../../../src/tunnels/protocol/stream-types.js';

test('the RPC table has one row per request an agent may make, and none for server-opened or unknown types', () => {
  assert.deepEqual(
    [...RPC_REQUESTS.keys()].sort((a, b) => a - b),
    [StreamType.Auth, StreamType.Bind, StreamType.Unbind, StreamType.StartTunnelWithLabel, StreamType.SrvInfo, StreamType.PatchTunnelState],
  );
  for (const type of [StreamType.Proxy, StreamType.Restart, StreamType.Stop, StreamType.Update, StreamType.StopTunnel, 11, StreamType.Heartbeat]) {
    assert.equal(RPC_REQUESTS.has(type), false, `type ${type}`);
  }
});

test('each row decodes its body, calls its own handler and encodes its own answer', async () => {
  const calls: string[] = [];
  const server: RpcServer = {
    authenticate: async () => (calls.push('authenticate'), { version: '3', response: { clientId: 'ts_1' } }),
    bind: async (req) => (calls.push(`bind ${req.proto}`), { id: 'tn_1', url: 'tcp://h:1', proto: req.proto, opts: {}, token: 't' }),
    unbind: async (req) => void calls.push(`unbind ${req.id}`),
    startTunnelWithLabel: async (req) => (calls.push(`label ${req.labels.a}`), { id: 'tn_2' }),
    srvInfo: async () => (calls.push('srvInfo'), { region: 'r' }),
    patchTunnelState: async (req) => void calls.push(`patch ${req.tunnelId}`),
  };
  const serve = async (type: number, body: unknown) => {
    const row = RPC_REQUESTS.get(type)!;
    return row.encode(await row.serve(server, row.decode(body)));
  };
  assert.equal((await serve(StreamType.Auth, { Version: ['3'] })).ClientId, 'ts_1');
  assert.equal((await serve(StreamType.Bind, { Proto: 'tcp' })).URL, 'tcp://h:1');
  assert.deepEqual(await serve(StreamType.Unbind, { Id: 'tn_1' }), {});
  assert.deepEqual(await serve(StreamType.StartTunnelWithLabel, { Labels: { a: 'b' } }), { Id: 'tn_2' });
  assert.deepEqual(await serve(StreamType.SrvInfo, {}), { Region: 'r' });
  assert.deepEqual(await serve(StreamType.PatchTunnelState, { TunnelId: 'tn_1' }), { Error: '' });
  assert.deepEqual(calls, ['authenticate', 'bind tcp', 'unbind tn_1', 'label b', 'srvInfo', 'patch tn_1']);
});

test("error answers carry the response's fields empty, and the bind's own Id, Proto and Opts", () => {
  assert.deepEqual(errorReply(StreamType.Auth, 'e'), { Version: '', ClientId: '', Error: 'e', Extra: {} });
  assert.deepEqual(errorReply(StreamType.Bind, 'e', { id: 'tn_1', proto: 'tcp', opts: { Addr: '' } }), {
    Id: 'tn_1',
    URL: '',
    Proto: 'tcp',
    Opts: { Addr: '' },
    Error: 'e',
    Extra: { Token: '' },
  });
  assert.deepEqual(errorReply(StreamType.SrvInfo, 'e'), { Region: '', Error: 'e' });
  assert.deepEqual(errorReply(StreamType.PatchTunnelState, 'e'), { Error: 'e' });
  assert.deepEqual(errorReply(42, 'e'), { Error: 'e' });
});
