import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import ngrok from '@ngrok/ngrok';
import { parse } from 'yaml';
import { ngrokCode, startDataPlaneServer, type DataPlaneServer } from '../helpers/data-plane.js';
import { api, cleanupProcesses, makeTempDir, PROJECT_ROOT, runCli, type CliResult } from '../helpers/server-process.js';
import { onSqlitePassOnly } from '../helpers/stores.js';

/**
 * `burrow credentials …` and `burrow agent-config` as processes beside a running data plane: what
 * the CLI writes the REST API and the agents see, what it refuses it refuses as the API does, and
 * the configuration it prints connects a real SDK agent.
 */

after(cleanupProcesses);

let server: DataPlaneServer;
before(async () => {
  server = await startDataPlaneServer();
});

/** `burrow <args>` with the server's database and data-plane variables. */
function burrow(...args: string[]): Promise<CliResult> {
  return runCli(args, { databaseUrl: server.databaseUrl, env: server.plane.env });
}

function ok(result: CliResult, what: string): CliResult {
  assert.equal(result.code, 0, `${what} failed (code ${result.code}):\n${result.stderr}${result.stdout}`);
  return result;
}

async function credentialCount(): Promise<number> {
  return (await api(server, 'GET', '/credentials?limit=100')).body.credentials.length;
}

describe('burrow credentials', () => {
  it('create prints the authtoken alone on stdout, once; the token connects an agent and binds what its ACL permits', async () => {
    const created = ok(await burrow('credentials', 'create', '--description', 'laptop', '--acl', 'bind:*.burrow.localhost'), 'create');
    const token = created.stdout.trim();
    assert.equal(created.stdout, `${token}\n`, 'stdout is the token and nothing else');
    const id = /Created credential (cr_\w+)/.exec(created.stderr)?.[1];
    assert.ok(id, created.stderr);
    assert.ok(!created.stderr.includes(token), 'the token is printed once');

    const shown = ok(await burrow('credentials', 'get', id, '--json'), 'get');
    assert.ok(!shown.stdout.includes(token), 'get never shows the token');

    const session = await new ngrok.SessionBuilder().authtoken(token).serverAddr(server.plane.serverAddr).caCert(server.caCert()).connect();
    try {
      const listener = await session.httpEndpoint().listenAndForward('http://127.0.0.1:9');
      assert.match(listener.url()!, /^https:\/\/[^.]+\.burrow\.localhost:/);
      await assert.rejects(session.httpEndpoint().domain('app.example.com').listenAndForward('http://127.0.0.1:9'), (error) => {
        assert.equal(ngrokCode(error).code, 'ERR_NGROK_316');
        return true;
      });
    } finally {
      await session.close();
    }
  });

  it('reads and writes the same credentials as the REST API', async () => {
    const viaApi = await api(server, 'POST', '/credentials', { body: { description: 'from the API', acl: ['bind:a.example.com'] } });
    assert.equal(viaApi.status, 201);
    const listed = ok(await burrow('credentials', 'list', '--json'), 'list')
      .stdout.trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; acl: string[] });
    assert.deepEqual(listed.find((c) => c.id === viaApi.body.id)?.acl, ['bind:a.example.com']);
    assert.ok(!JSON.stringify(listed).includes(viaApi.body.token), 'list never shows tokens');
    const table = ok(await burrow('credentials', 'list'), 'list as a table').stdout;
    assert.match(table, /^id +account_id +owner_id +description/);
    assert.ok(table.includes(viaApi.body.id));

    const created = JSON.parse(ok(await burrow('credentials', 'create', '--json', '--metadata', 'm', '--acl', 'bind:x.example.com', '--acl', 'bind:env=prod'), 'create').stdout);
    const fetched = await api(server, 'GET', `/credentials/${created.id}`);
    assert.equal(fetched.status, 200);
    // (the API leaves an empty description out, as the reference API does)
    for (const field of ['id', 'description', 'metadata', 'acl', 'owner_id', 'created_at'] as const) assert.deepEqual(fetched.body[field] ?? '', created[field], field);
    assert.equal(created.owner_id, server.bootstrap?.userId, 'owned by the only admin user');
    assert.match(created.token, /^\S{40,}$/);

    ok(await burrow('credentials', 'update', created.id, '--acl', 'bind:y.example.com', '--description', 'renamed'), 'update');
    const updated = (await api(server, 'GET', `/credentials/${created.id}`)).body;
    assert.deepEqual([updated.description, updated.metadata, updated.acl], ['renamed', 'm', ['bind:y.example.com']]);
    ok(await burrow('credentials', 'update', created.id, '--no-acl'), 'update --no-acl');
    assert.deepEqual((await api(server, 'GET', `/credentials/${created.id}`)).body.acl, []);

    assert.equal(ok(await burrow('credentials', 'delete', created.id), 'delete').stdout, `Deleted credential ${created.id}.\n`);
    assert.equal((await api(server, 'GET', `/credentials/${created.id}`)).status, 404);
    const again = await burrow('credentials', 'delete', created.id);
    assert.equal(again.code, 1);
    assert.equal(again.stderr, `burrow: No credential ${created.id} in this account.\n`);
  });

  it('refuses what the API refuses, with its code and message, and changes nothing', async () => {
    const before = await credentialCount();
    const apiAnswer = await api(server, 'POST', '/credentials', { body: { acl: ['bind:'] } });
    assert.equal(apiAnswer.status, 400);
    const badAcl = await burrow('credentials', 'create', '--acl', 'bind:');
    assert.equal(badAcl.code, 2);
    assert.equal(badAcl.stderr, `burrow: ${apiAnswer.body.error_code}: ${apiAnswer.body.msg}\n`);
    assert.equal(badAcl.stdout, '');

    const stranger = await burrow('credentials', 'create', '--owner', 'usr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ');
    assert.equal(stranger.code, 2);
    assert.match(stranger.stderr, /^burrow: ERR_NGROK_634: /);
    const long = await burrow('credentials', 'create', '--description', 'x'.repeat(256));
    assert.equal(long.code, 2);
    assert.match(long.stderr, /^burrow: ERR_NGROK_\d+: /);
    const nothing = await burrow('credentials', 'update', 'cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ');
    assert.equal(nothing.code, 2);
    assert.match(nothing.stderr, /say what to change/);
    const unknown = await burrow('credentials', 'get', 'cr_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ');
    assert.equal(unknown.code, 1);
    const unknownAccount = await burrow('credentials', 'list', '--account', 'acct_2NqzB6YjgDSQ5Y3cJZ8aU8ltsDQ');
    assert.equal(unknownAccount.code, 1);
    assert.match(unknownAccount.stderr, /No active account/);
    assert.equal(await credentialCount(), before);
  });
});

describe('burrow agent-config', { skip: onSqlitePassOnly }, () => {
  it('prints an ngrok agent configuration for this server: address, absolute CA path, token, no update check', async () => {
    const config = parse(ok(await burrow('agent-config', '--token', 'tok_123'), 'agent-config').stdout) as Record<string, unknown>;
    assert.deepEqual(config, {
      version: '2',
      authtoken: 'tok_123',
      server_addr: `localhost:${server.plane.agentPort}`,
      root_cas: join(server.plane.tlsDir, 'ca.pem'),
      update_check: false,
    });
    const placeholder = parse(ok(await burrow('agent-config'), 'agent-config without a token').stdout) as Record<string, unknown>;
    assert.match(String(placeholder.authtoken), /burrow credentials create/);
    const relayed = parse(ok(await burrow('agent-config', '--server-addr', 'relay.example.com:443'), 'agent-config --server-addr').stdout) as Record<string, unknown>;
    assert.equal(relayed.server_addr, 'relay.example.com:443');
    for (const bad of ['relay.example.com', 'relay.example.com:443 x', '::1:443']) {
      const refused = await burrow('agent-config', '--server-addr', bad);
      assert.equal(refused.code, 2, bad);
      assert.match(refused.stderr, /--server-addr .* is not host:port/);
    }
  });

  it('--sdk prints a program that, run as printed from another directory, serves through this burrow', async () => {
    const token = ok(await burrow('credentials', 'create', '--description', 'sdk'), 'create').stdout.trim();
    const local = http.createServer((_request, response) => response.end('hello from local\n'));
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const localPort = (local.address() as { port: number }).port;
    try {
      for (const flags of [[], ['--inline-ca']]) {
        const program = ok(await burrow('agent-config', '--sdk', '--token', token, '--forward', `http://127.0.0.1:${localPort}`, ...flags), 'agent-config --sdk').stdout;
        const url = await runProgram(program);
        const { hostname: host, port } = new URL(url);
        const body = await new Promise<string>((resolve, reject) => {
          https
            .get({ host: '127.0.0.1', port, servername: host, headers: { host }, ca: server.caCert() }, (response) => {
              let text = '';
              response.on('data', (chunk) => (text += chunk));
              response.on('end', () => resolve(text));
            })
            .on('error', reject);
        });
        assert.equal(body, 'hello from local\n', flags.join(' '));
      }
    } finally {
      local.close();
    }
  });

  it('the ngrok agent (the classic binary) connects and binds with the printed configuration file', async () => {
    const token = ok(await burrow('credentials', 'create', '--description', 'classic agent'), 'create').stdout.trim();
    const dir = makeTempDir('burrow-classic-');
    const file = join(dir, 'ngrok.yml');
    // the one addition: its local web interface on a free port rather than 4040, beside other tests
    writeFileSync(file, `${ok(await burrow('agent-config', '--token', token), 'agent-config').stdout}web_addr: 127.0.0.1:0\n`);
    const binary = join(PROJECT_ROOT, 'node_modules/@expo/ngrok-bin-linux-x64/ngrok');
    const agent = spawn(binary, ['http', '9', '--config', file, '--log', 'stdout', '--log-format', 'json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    after(() => agent.kill('SIGKILL'));
    const started = await new Promise<string | undefined>((resolve) => {
      createInterface({ input: agent.stdout }).on('line', (line) => {
        if (line.includes('"started tunnel"')) resolve(line);
      });
      agent.once('exit', () => resolve(undefined));
      setTimeout(() => resolve(undefined), 30_000).unref();
    });
    assert.ok(started, 'the agent started a tunnel');
    assert.match(String((JSON.parse(started) as { url: string }).url), /^https?:\/\/[^.]+\.burrow\.localhost:\d+$/);
  });

  it('says what is missing instead of printing a configuration that cannot work', async () => {
    const noPlane = await runCli(['agent-config'], { databaseUrl: server.databaseUrl, env: { ...server.plane.env, AGENT_PORT: '0' } });
    assert.equal(noPlane.code, 1);
    assert.match(noPlane.stderr, /AGENT_PORT is 0/);
    const noCa = await runCli(['agent-config'], { databaseUrl: server.databaseUrl, env: { ...server.plane.env, TLS_DIR: makeTempDir() } });
    assert.equal(noCa.code, 1);
    assert.match(noCa.stderr, /No CA at .*ca\.pem yet: start burrow serve once/);
    const inline = await burrow('agent-config', '--inline-ca');
    assert.equal(inline.code, 2);
    const badForward = await burrow('agent-config', '--sdk', '--forward', 'localhost:3000');
    assert.equal(badForward.code, 2);
    assert.match(badForward.stderr, /--forward "localhost:3000" is not a URL/);
    const tcp = ok(await burrow('agent-config', '--sdk', '--forward', 'tcp://localhost:22'), 'a tcp forward').stdout;
    assert.match(tcp, /session\.tcpEndpoint\(\)\.listenAndForward\("tcp:\/\/localhost:22"\)/);
    const ownCert = parse(
      ok(await runCli(['agent-config'], { databaseUrl: server.databaseUrl, env: { ...server.plane.env, AGENT_TLS_CERT: '/x/cert.pem', AGENT_TLS_KEY: '/x/key.pem' } }), 'own cert').stdout,
    ) as Record<string, unknown>;
    assert.equal(ownCert.root_cas, 'host', "an AGENT_TLS_CERT's CA is the system's");
  });
});

/** Writes `program` to agent.mjs in a fresh directory (with this project's node_modules), runs it, and resolves with its first line. */
async function runProgram(program: string): Promise<string> {
  const dir = makeTempDir('burrow-agent-');
  symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'agent.mjs'), program);
  const child = spawn(process.execPath, ['agent.mjs'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const line = await new Promise<string | undefined>((resolve) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', () => resolve(undefined));
    setTimeout(() => resolve(undefined), 30_000).unref();
  });
  assert.ok(line, `the program printed no URL:\n${stderr}`);
  return line;
}
