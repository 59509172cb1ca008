import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { api, cleanupProcesses, runCli, startServer } from '../helpers/server-process.js';

/**
 * SPEC §8: API keys, tokens and Authorization header values never reach a log line. A whole
 * scenario runs against a real server at the most verbose log level, and every line it wrote is
 * searched for every secret that crossed the wire.
 */
after(cleanupProcesses);

describe('secrets in logs', () => {
  it('no API key, authtoken or Authorization value appears in any line the server wrote', async (t) => {
    const server = await startServer({ env: { LOG_LEVEL: 'trace', RATE_LIMIT_PER_MINUTE: '30' }, context: t });
    const secrets: string[] = [server.apiKey];

    const bot = JSON.parse((await runCli(['bots', 'create', '--name', 'ci', '--json'], { databaseUrl: server.databaseUrl })).stdout) as { id: string };
    const botKey = (JSON.parse((await runCli(['api-keys', 'create', '--owner', bot.id, '--json'], { databaseUrl: server.databaseUrl })).stdout) as { key: string }).key;
    secrets.push(botKey);

    for (const key of [server.apiKey, botKey]) {
      const created = await api(server, 'POST', '/credentials', { key, body: { description: 'd', acl: ['bind:*.example.com'] } });
      assert.equal(created.status, 201);
      secrets.push(created.body.token);
      await api(server, 'GET', `/credentials/${created.body.id}`, { key });
      await api(server, 'PATCH', `/credentials/${created.body.id}`, { key, body: { acl: ['bind:'] } });
      assert.equal((await api(server, 'GET', '/credentials', { key: created.body.token })).body.error_code, 'ERR_NGROK_207');
      await api(server, 'DELETE', `/credentials/${created.body.id}`, { key });
      assert.equal((await api(server, 'GET', '/credentials', { key: created.body.token })).body.error_code, 'ERR_NGROK_203');
    }
    await api(server, 'POST', '/credentials', { key: botKey, body: { owner_id: server.bootstrap?.userId ?? 'usr_x' } });
    const edge = await api(server, 'POST', '/edges/tls', { body: { traffic_policy: { value: 'on_tcp_connect: []' } } });
    await api(server, 'PUT', `/edges/tls/${edge.body.id}/traffic_policy`, { body: { value: 'on_http_request: []' } });

    // Wrong keys that look like keys, and header values that are not keys at all.
    const nearMiss = `${server.apiKey.slice(0, 28)}${'Z'.repeat(21)}`;
    secrets.push(nearMiss);
    assert.equal((await api(server, 'GET', '/credentials', { key: nearMiss })).body.error_code, 'ERR_NGROK_203');
    for (const header of ['Basic c2VjcmV0LXBhc3N3b3JkLXZhbHVl', 'Bearer not-a-key-but-secret-ish-value-123']) {
      const response = await fetch(`${server.baseUrl}/credentials`, { headers: { authorization: header, 'service-version': '2' } });
      assert.equal(response.status, 401);
      secrets.push(header.split(' ')[1]!);
    }
    // Enough requests to be rate limited, so that path logs too.
    let limited = false;
    for (let i = 0; i < 40 && !limited; i++) limited = (await api(server, 'GET', '/credentials', { key: botKey })).status === 429;
    assert.ok(limited);
    await fetch(`${server.baseUrl}/metrics`);

    const revoke = JSON.parse((await runCli(['api-keys', 'list', '--json'], { databaseUrl: server.databaseUrl })).stdout.split('\n')[1]!) as { id: string };
    await runCli(['api-keys', 'revoke', revoke.id], { databaseUrl: server.databaseUrl });
    await server.stop();

    const output = [...server.stdout, ...server.stderr].join('\n');
    assert.ok(server.stdout.length > 20, 'the server logged the scenario');
    for (const secret of secrets) {
      assert.ok(!output.includes(secret), `a secret (${secret.slice(0, 6)}…) reached the log`);
      // Nor any long piece of one: the random half of keys and tokens alone is a secret.
      const tail = secret.slice(-16);
      assert.ok(!output.includes(tail), `a piece of a secret (${secret.slice(0, 6)}…) reached the log`);
    }
    assert.doesNotMatch(output, /authorization/i);
    assert.doesNotMatch(output, /[0-9A-Za-z]{27}_[0-9A-Za-z]{20,22}/, 'nothing key-shaped is logged');
  });
});
