// @test-pass sqlite
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePorts, makeCredential, startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { api, cleanupProcesses, makeTempDir } from '../helpers/server-process.js';

/**
 * The classic ngrok agent (2.3.x, Go) against a real `burrow serve` (issue 29, item 1): it opens
 * its Bind stream without waiting for the Auth reply, so a tunnel asked for the moment its local
 * API answers used to be refused about one start in six ("Stream reset by peer"). Each start
 * here asks at once; all must be served, and no session may outlive its agent.
 */

const require = createRequire(import.meta.url);
const BINARY = fileURLToPath(new URL('../../node_modules/@expo/ngrok-bin-linux-x64/ngrok', import.meta.url));
const STARTS = 30;

let server: DataPlaneServer;
let token: string;

before(async () => {
  server = await startDataPlaneServer();
  token = (await makeCredential(server, [])).token;
});

after(cleanupProcesses);

/** An agent configuration for this server, its local API on `webPort`. */
function agentConfig(webPort: number): string {
  const path = join(makeTempDir('burrow-classic-'), 'ngrok.yml');
  const lines = [
    `server_addr: ${server.plane.serverAddr}`,
    `root_cas: ${join(server.plane.tlsDir, 'ca.pem')}`,
    `authtoken: ${token}`,
    'update_check: false',
    `web_addr: 127.0.0.1:${webPort}`,
    'log_level: debug',
    'log: stdout',
    'console_ui: false',
  ];
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

/** The agent's local API answers "not ready" until its session is up: asked again, as @expo/ngrok does. */
function notReady(status: number, body: string): boolean {
  return (status === 503 || status === 502) && /not (yet been )?established|not ready/.test(body);
}

/** One start: the agent, a tunnel asked for as soon as its API answers, its URL; then the agent is stopped. */
async function startOnce(): Promise<{ url: string | undefined; log: string }> {
  const [webPort] = (await freePorts(1)) as [number];
  const config = agentConfig(webPort);
  const child = spawn(BINARY, ['start', '--none', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const base = `http://127.0.0.1:${webPort}/api/tunnels`;
    await waitFor('the agent API', () => fetch(base).then((r) => r.ok, () => false), 20_000);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const response = await fetch(base, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'web', proto: 'http', addr: '8080' }),
      });
      const text = await response.text();
      if (response.status === 201) return { url: (JSON.parse(text) as { public_url?: string }).public_url, log: output.join('') };
      if (!notReady(response.status, text) || Date.now() > deadline) return { url: undefined, log: `${response.status} ${text}\n${output.join('')}` };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}

async function listedSessions(): Promise<number> {
  const listed = await api(server, 'GET', '/tunnel_sessions');
  return (listed.body.tunnel_sessions as unknown[]).length;
}

describe('the classic agent asks for a tunnel at once', () => {
  it(`${STARTS} starts, each with an immediate tunnel request: all served, no session left behind`, async () => {
    const failures: string[] = [];
    let served = 0;
    const queue = Array.from({ length: STARTS }, (_, i) => i);
    // a few agents at a time: the machine is shared, and each start is short
    await Promise.all(
      Array.from({ length: 5 }, async () => {
        while (queue.shift() !== undefined) {
          const { url, log } = await startOnce();
          if (url && /^https?:\/\/[a-z0-9]+\.burrow\.localhost/.test(url)) served++;
          else failures.push(log.split('\n').filter((line) => /^\d{3} |lvl=(eror|warn)/.test(line)).join('\n'));
        }
      }),
    );
    assert.deepEqual(failures, [], `${failures.length} of ${STARTS} starts were not served`);
    assert.equal(served, STARTS);
    await waitFor('every session to be gone', async () => (await listedSessions()) === 0, 5_000);
    // session_end is written after the session's row goes, and read from the child's stdout
    const count = (event: string) => server.logs().filter((l) => l.event === event).length;
    await waitFor('a session_end line for every session_start', () => count('session_start') === count('session_end'), 2_000).catch(() => {});
    assert.equal(count('session_end'), count('session_start'));
  });

  it(`@expo/ngrok: connect() then kill(), ${STARTS} times`, async () => {
    const ngrok = require('@expo/ngrok') as { connect(opts: object): Promise<string>; kill(): Promise<void> };
    for (let i = 0; i < STARTS; i++) {
      const [webPort] = (await freePorts(1)) as [number];
      const url = await ngrok.connect({ configPath: agentConfig(webPort), proto: 'http', addr: 8080 });
      assert.match(url, /^https?:\/\/[a-z0-9]+\.burrow\.localhost/, `start ${i + 1}`);
      await ngrok.kill();
    }
    await waitFor('every session to be gone', async () => (await listedSessions()) === 0, 5_000);
  });
});
