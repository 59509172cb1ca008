import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Ngrok } from '@ngrok/ngrok-api';
import { apiError, rejection } from '../helpers/ngrok-client.js';
import { cleanupProcesses, startServer, type ServerProcess } from '../helpers/server-process.js';

/**
 * The TLS edge's tls_termination module (HTTP-POLICY.md §5) through the official npm client's
 * own module class and its edges.edgesTls create/get, against a real `burrow serve` process.
 */

let server: ServerProcess;
let ngrok: Ngrok;

before(async () => {
  server = await startServer();
  ngrok = new Ngrok({ apiToken: server.apiKey, baseUrl: server.baseUrl });
});
after(cleanupProcesses);

/** The client's delete() rejects with the SyntaxError of parsing the empty 204 body; that is success. */
async function deleted(promise: Promise<unknown>): Promise<void> {
  await promise.catch((error: unknown) => assert.ok(error instanceof SyntaxError, String(error)));
}

it('replace (wrapped body), get and delete through tlsEdgeTlsTerminationModule; the edge shows the module', async () => {
  const module = ngrok.edgeModules.tlsEdgeTlsTerminationModule;
  const edge = await ngrok.edges.edgesTls.create({ hostports: ['term.example.com:443'] });
  assert.equal(edge.tlsTermination, null);
  const replaced = await module.replace({ id: edge.id, module: { terminateAt: 'edge', minVersion: '1.2' } });
  assert.deepEqual(replaced, { enabled: true, terminateAt: 'edge', minVersion: '1.2' });
  assert.deepEqual(await module.get(edge.id), replaced);
  assert.deepEqual((await ngrok.edges.edgesTls.get(edge.id)).tlsTermination, replaced);
  await deleted(module.delete(edge.id));
  assert.equal(apiError(await rejection(module.get(edge.id)), 404).statusCode, 404);
  assert.equal((await ngrok.edges.edgesTls.get(edge.id)).tlsTermination, null);
});

it('create and update carry the module; a bad one is refused with ERR_NGROK_215 and changes nothing', async () => {
  const edge = await ngrok.edges.edgesTls.create({ tlsTermination: { terminateAt: 'edge', minVersion: '1.3' } });
  assert.deepEqual(edge.tlsTermination, { enabled: true, terminateAt: 'edge', minVersion: '1.3' });
  const updated = await ngrok.edges.edgesTls.update({ id: edge.id, tlsTermination: { terminateAt: 'upstream', enabled: false } });
  assert.deepEqual(updated.tlsTermination, { enabled: false, terminateAt: 'upstream' });
  const refused = apiError(await rejection(ngrok.edgeModules.tlsEdgeTlsTerminationModule.replace({ id: edge.id, module: { terminateAt: 'upstream', minVersion: '1.2' } })), 400);
  assert.equal(refused.errorCode, 'ERR_NGROK_215');
  assert.deepEqual((await ngrok.edges.edgesTls.get(edge.id)).tlsTermination, { enabled: false, terminateAt: 'upstream' });
});
