// @test-pass postgres
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import ngrok from '@ngrok/ngrok';
import pg from 'pg';
import { makeCredential, startDataPlaneServer, waitFor, type DataPlaneServer } from '../helpers/data-plane.js';
import { api, cleanupProcesses, generateApiKey } from '../helpers/server-process.js';

/**
 * CLUSTER.md §1: instances on one PostgreSQL database share one CA through it, sealed with
 * CLUSTER_SECRET. Runs when TEST_DATABASE_URL names a PostgreSQL database (a schema of its own).
 */
const postgres = process.env.TEST_DATABASE_URL;

/** The certificate the agent port presents, checked against `ca` for the name localhost. */
function agentCertificate(server: DataPlaneServer, ca: Buffer): Promise<{ authorized: boolean; issuer: string }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: server.plane.agentPort, servername: 'localhost', ca, rejectUnauthorized: false }, () => {
      resolve({ authorized: socket.authorized, issuer: String(socket.getPeerCertificate().issuer.CN) });
      socket.destroy();
    });
    socket.once('error', reject);
  });
}

describe('the cluster CA shared through PostgreSQL', { skip: postgres ? false : 'needs TEST_DATABASE_URL' }, () => {
  const schema = `cca_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const secret = randomBytes(32).toString('hex');
  const key = generateApiKey();
  let databaseUrl: string;
  let one: DataPlaneServer;
  let two: DataPlaneServer;

  before(async () => {
    const url = new URL(postgres!);
    url.searchParams.set('schema', schema);
    databaseUrl = url.toString();
    // Started at the same moment: both would create a CA, one is stored.
    const start = (addr: string) => startDataPlaneServer({ databaseUrl, bootstrapApiKey: key, extraEnv: { CLUSTER_SECRET: secret, CLUSTER_ADDR: addr } });
    [one, two] = await Promise.all([start('127.0.0.1:17001'), start('127.0.0.1:17002')]);
  });

  after(async () => {
    await cleanupProcesses();
    const client = new pg.Client({ connectionString: postgres });
    await client.connect();
    await client.query(`drop schema if exists ${schema} cascade`);
    await client.end();
  });

  it('both write the one CA certificate to their TLS_DIR, and no CA key to disk', () => {
    assert.equal(one.caCert().toString(), two.caCert().toString());
    for (const server of [one, two]) assert.ok(!existsSync(join(server.plane.tlsDir, 'ca-key.pem')));
  });

  it('each agent port presents a certificate from that CA, checked with the other instance\'s ca.pem', async () => {
    const [a, b] = [await agentCertificate(one, two.caCert()), await agentCertificate(two, one.caCert())];
    assert.ok(a.authorized && b.authorized);
    assert.equal(a.issuer, b.issuer);
    assert.match(a.issuer, /^burrow local CA /);
  });

  it('an SDK agent trusting one instance\'s ca.pem connects to the other', async () => {
    const cred = await makeCredential(one, []);
    const session = await new ngrok.SessionBuilder().authtoken(cred.token).serverAddr(two.plane.serverAddr).caCert(one.caCert()).connect();
    try {
      const instanceId = two.logs().find((line) => line.msg === 'instance identity')?.instance_id;
      assert.match(String(instanceId), /^inst_/);
      const start = await waitFor('session_start', () => two.logs().find((line) => line.event === 'session_start'));
      assert.equal(start.instance_id, instanceId);
      // deleted through the other instance: the holder ends the session
      assert.equal((await api(one, 'DELETE', `/credentials/${cred.id}`)).status, 204);
      const end = await waitFor('session_end', () => two.logs().find((line) => line.event === 'session_end'));
      assert.equal(end.instance_id, instanceId);
    } finally {
      await session.close().catch(() => {});
    }
  });

  it('each instance logs its instance_id and cluster_addr, and records the address in the database', async () => {
    const client = new pg.Client({ connectionString: postgres });
    await client.connect();
    try {
      for (const [server, addr] of [[one, '127.0.0.1:17001'], [two, '127.0.0.1:17002']] as const) {
        const line = server.logs().find((entry) => entry.msg === 'instance identity');
        assert.equal(line?.cluster_addr, addr);
        const row = await client.query(`select cluster_addr from ${schema}.instances where id = $1`, [line?.instance_id]);
        assert.equal(row.rows[0]?.cluster_addr, addr);
      }
    } finally {
      await client.end();
    }
  });

  it('a wrong CLUSTER_SECRET, or none, stops the start with a message naming CLUSTER_SECRET', async () => {
    for (const extraEnv of [{ CLUSTER_SECRET: randomBytes(32).toString('hex') }, {}] as Record<string, string>[]) {
      await assert.rejects(startDataPlaneServer({ databaseUrl, bootstrapApiKey: key, extraEnv }), (error: Error) => {
        assert.match(error.message, /exited \(code 1/);
        assert.match(error.message, /CLUSTER_SECRET: (cannot decrypt the cluster CA|is not set, but the database holds the cluster CA)/);
        return true;
      });
    }
    assert.ok(readFileSync(join(one.plane.tlsDir, 'ca.pem')).equals(one.caCert()));
  });
});
