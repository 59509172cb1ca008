import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { makeCredential, startDataPlaneServer } from '../helpers/data-plane.js';
import { api, cleanupProcesses } from '../helpers/server-process.js';
import { spawnAgent, type ChildEndpoint, type TrafficServer } from '../helpers/traffic.js';

after(cleanupProcesses);

/**
 * A data plane killed without cleaning up (SIGKILL) and started again on its TLS_DIR takes back
 * what its previous run held at once: before, its rows stayed until the 60 s sweep of dead
 * instances, and an agent binding its own name or port again got 334 until then.
 */
it("a data plane restarted after a crash frees its previous run's sessions, names and ports at once", { timeout: 60_000 }, async () => {
  const server = await startDataPlaneServer();
  const token = (await makeCredential(server, [])).token;
  const agentAt = { agentPort: server.plane.agentPort, caPath: join(server.plane.tlsDir, 'ca.pem') } as TrafficServer;
  const endpoints: ChildEndpoint[] = [
    { kind: 'https', forward: 'http://127.0.0.1:9', domain: 'crash.example.com' },
    { kind: 'tcp', forward: 'tcp://127.0.0.1:9', remoteAddr: `127.0.0.1:${server.plane.tcpPorts.first}` },
  ];
  const first = await spawnAgent(agentAt, token, endpoints);
  assert.equal((await api(server, 'GET', '/tunnel_sessions')).body.tunnel_sessions.length, 1);
  await server.kill();
  await first.kill();

  const restarted = await startDataPlaneServer({ databaseUrl: server.databaseUrl, bootstrapApiKey: server.apiKey, plane: server.plane });
  assert.deepEqual((await api(restarted, 'GET', '/tunnel_sessions')).body.tunnel_sessions, [], 'the crashed run left no session behind');
  assert.deepEqual((await api(restarted, 'GET', '/endpoints')).body.endpoints, []);
  const second = await spawnAgent(agentAt, token, endpoints);
  assert.deepEqual(second.urls, first.urls, 'the same name and port bind again');
  await second.kill();
});
