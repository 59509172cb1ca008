import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ngrok } from '@ngrok/ngrok-api';
import { apiError, rejection } from '../helpers/ngrok-client.js';
import { cleanupProcesses, runCli, startServer, type ServerProcess } from '../helpers/server-process.js';

/** The official npm client's `apiKeys` service against a real `burrow serve` (CONSOLE.md §2). */

let server: ServerProcess;
let ngrok: Ngrok;

before(async () => {
  server = await startServer();
  ngrok = new Ngrok({ apiToken: server.apiKey, baseUrl: server.baseUrl });
});

after(cleanupProcesses);

describe('@ngrok/ngrok-api apiKeys against a burrow process', () => {
  it('creates, gets, lists, updates and deletes; the created token works as the client’s key', async () => {
    const made = await ngrok.apiKeys.create({ description: 'deploy bot', metadata: '{"team":"infra"}' });
    assert.match(made.id, /^ak_[0-9A-Za-z]{27}$/);
    assert.equal(made.uri, `${server.baseUrl}/api_keys/${made.id}`);
    assert.match(made.token!, /^[0-9A-Za-z]{27}_[0-9A-Za-z]{21}$/);
    assert.equal(made.ownerId, server.bootstrap?.userId);

    const withNewKey = new Ngrok({ apiToken: made.token!, baseUrl: server.baseUrl });
    assert.ok(Array.isArray(await withNewKey.credentials.list()));

    const got = await ngrok.apiKeys.get(made.id);
    assert.equal(got.description, 'deploy bot');
    assert.equal(got.token, null);

    const updated = await ngrok.apiKeys.update({ id: made.id, description: 'renamed' });
    assert.equal(updated.description, 'renamed');
    assert.equal(updated.metadata, '{"team":"infra"}');

    const all = await ngrok.apiKeys.list();
    assert.ok(all.some((key) => key.id === made.id));
    assert.ok(all.some((key) => key.description === 'bootstrap admin key'));

    // The client parses the empty 204 as JSON and rejects with that SyntaxError (as for credentials).
    const deleted = await ngrok.apiKeys.delete(made.id).then(() => 'resolved', (error: unknown) => error);
    assert.ok(deleted === 'resolved' || deleted instanceof SyntaxError, `delete failed: ${JSON.stringify(deleted)}`);
    apiError(await rejection(ngrok.apiKeys.get(made.id)), 404);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    apiError(await rejection(withNewKey.credentials.list()), 401);
  });

  it('pages through more keys than one page', async () => {
    for (let i = 0; i < 3; i++) await ngrok.apiKeys.create({ description: `page ${i}` });
    const ids = (await ngrok.apiKeys.list(undefined, '2')).map((key) => key.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.length >= 4);
  });

  it('the CLI sees and revokes keys made through the API', async () => {
    const made = await ngrok.apiKeys.create({ description: 'for the cli' });
    const listed = await runCli(['api-keys', 'list', '--json'], { databaseUrl: server.databaseUrl });
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(listed.stdout.includes(made.id));
    const revoked = await runCli(['api-keys', 'revoke', made.id], { databaseUrl: server.databaseUrl });
    assert.equal(revoked.code, 0, revoked.stderr);
    apiError(await rejection(ngrok.apiKeys.get(made.id)), 404);
  });
});
