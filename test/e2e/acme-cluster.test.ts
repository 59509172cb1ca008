// @test-pass postgres
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import type ngrok from '@ngrok/ngrok';
import pg from 'pg';
import { freePorts, waitFor } from '../helpers/data-plane.js';
import { pebbleMissing, startPebble, type Pebble } from '../helpers/pebble.js';
import { api, cleanupProcesses, generateApiKey, makeTempDir, startServer, type ServerProcess } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';

/**
 * ACME with two instances on one PostgreSQL schema (CERTIFICATES.md §1, CLUSTER.md §1): one
 * instance orders a name at a time (the lease on its row), the CA's validation is answered by
 * whichever instance it reaches (challenges in the database), and both serve what was issued.
 * It connects to PostgreSQL itself (PG_ADMIN_URL, else the local `test` database) with a schema of
 * its own, so it runs once, on the PostgreSQL pass.
 */

const ADMIN_URL = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ADDRESS = { one: '127.0.1.1', two: '127.0.1.2' } as const;

async function postgresMissing(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    return undefined;
  } catch (err) {
    return `PostgreSQL is not reachable at ${new URL(ADMIN_URL).host} (${(err as Error).message}): set PG_ADMIN_URL`;
  } finally {
    await client.end().catch(() => {});
  }
}

const skip = pebbleMissing() || (await postgresMissing()) || false;
if (skip) console.log(`# acme-cluster skipped: ${skip}`);

const schema = `acme_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
let pebble: Pebble;
let ports: { httpPort: number; tlsPort: number };
let local: http.Server;
let localUrl: string;
let one: TrafficServer;
let two: TrafficServer;
let apiOnly: ServerProcess;

/** An instance on its own loopback address, with the ports every instance shares (CLUSTER.md §1). */
async function instance(databaseUrl: string, tlsDir: string, address: string, apiKey: string): Promise<TrafficServer> {
  const server = await startDataPlane({
    databaseUrl,
    bootstrapApiKey: apiKey,
    env: {
      EDGE_HOST: address,
      EDGE_HTTP_PORT: String(ports.httpPort),
      EDGE_TLS_PORT: String(ports.tlsPort),
      TLS_DIR: tlsDir,
      ACME_DIRECTORY_URL: pebble.directoryUrl,
      ACME_CHALLENGES: 'tls-alpn-01',
      NODE_EXTRA_CA_CERTS: pebble.trustFile,
    },
  });
  return Object.assign(server, { ...ports, tlsDir, caPath: `${tlsDir}/ca.pem` });
}

before(async () => {
  if (skip) return;
  const [httpPort, tlsPort] = (await freePorts(2)) as [number, number];
  ports = { httpPort, tlsPort };
  pebble = await startPebble(httpPort, tlsPort);
  local = http.createServer((_req, res) => res.end('hello from one'));
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  localUrl = `http://127.0.0.1:${(local.address() as net.AddressInfo).port}`;
  const url = new URL(ADMIN_URL);
  url.searchParams.set('schema', schema);
  const databaseUrl = url.toString();
  // one TLS_DIR: the instances share the sealing key of the ACME keys (and the CA), as the README asks
  const tlsDir = makeTempDir('burrow-tls-');
  const apiKey = generateApiKey();
  one = await instance(databaseUrl, tlsDir, ADDRESS.one, apiKey);
  two = await instance(databaseUrl, tlsDir, ADDRESS.two, apiKey);
  // an API-only instance: writes that no data plane hears of at once
  apiOnly = await startServer({ databaseUrl, bootstrapApiKey: apiKey });
});

after(async () => {
  local?.close();
  await cleanupProcesses();
  await pebble?.stop();
  if (skip) return;
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  await client.query(`drop schema if exists ${schema} cascade`);
  await client.end();
});

/** pebble-challtestsrv answers A queries for `name` with `address`: the CA validates there. */
async function pointDns(name: string, address: string): Promise<void> {
  const response = await fetch(`${pebble.dnsManagementUrl}/add-a`, { method: 'POST', body: JSON.stringify({ host: `${name}.`, addresses: [address] }) });
  assert.equal(response.status, 200);
}

function orders(name: string): Record<string, unknown>[] {
  return [one, two].flatMap((server) => server.logs().filter((line) => line.event === 'acme_order' && line.name === name));
}

function challengesAnswered(server: TrafficServer): number {
  return server.logs().filter((line) => line.event === 'public_connection' && line.outcome === 'acme_challenge').length;
}

function handshake(address: string, servername: string, ca: string | undefined): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: address, port: ports.tlsPort, servername, ca, rejectUnauthorized: ca !== undefined, timeout: 10_000 }, () => resolve(socket));
    socket.once('error', reject);
    socket.once('timeout', () => reject(new Error('timeout')));
  });
}

async function servedSerial(address: string, name: string, root: string): Promise<string> {
  const socket = await handshake(address, name, root);
  const serial = socket.getPeerCertificate().serialNumber;
  socket.destroy();
  return serial;
}

test("an HTTPS endpoint bound on one instance: one order, and the CA's validation answered by the other", { skip, timeout: 120_000 }, async () => {
  const name = 'one.example.com';
  await pointDns(name, ADDRESS.two);
  let session: ngrok.Session | undefined;
  try {
    session = await connectAgent(one, await createToken(one));
    await session.httpEndpoint().domain(name).listenAndForward(localUrl);
    const issued = await waitFor('the order', () => orders(name).find((line) => line.result !== undefined), 60_000);
    assert.equal(issued.result, 'issued', JSON.stringify(issued));
    assert.equal(orders(name).length, 1);
    assert.equal(one.logs().filter((line) => line.event === 'acme_order').length, 1, 'the instance holding the endpoint ordered');
    // the validation reached the other instance, which answered from the database
    assert.ok(challengesAnswered(two) >= 1, 'the other instance answered the tls-alpn-01 validation');
    assert.equal(challengesAnswered(one), 0);
    const root = await pebble.root();
    await servedSerial(ADDRESS.one, name, root);
    // a GET through it, trusting only pebble
    const socket = await handshake(ADDRESS.one, name, root);
    const body = await new Promise<string>((resolve, reject) => {
      http
        .request({ createConnection: () => socket, host: name, path: '/', headers: { host: name } }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve(text));
        })
        .on('error', reject)
        .end();
    });
    assert.equal(body, 'hello from one');
  } finally {
    await session?.close().catch(() => {});
  }
});

test('a TLS edge both instances serve, asked for at the same moment on both: exactly one order, both serve its certificate', { skip, timeout: 120_000 }, async () => {
  const name = 'race.example.com';
  await pointDns(name, ADDRESS.two);
  // through the API-only instance: neither data plane orders it before the handshakes below
  const edge = await api(apiOnly, 'POST', '/edges/tls', { body: { hostports: [`${name}:443`], tls_termination: { terminate_at: 'edge' } } });
  assert.equal(edge.status, 201, edge.text);
  // the first ClientHellos on both: each instance wants the name, one wins the claim, the other waits for its certificate
  const first = await Promise.allSettled([handshake(ADDRESS.one, name, undefined), handshake(ADDRESS.two, name, undefined)]);
  for (const settled of first) if (settled.status === 'fulfilled') settled.value.destroy();
  const issued = await waitFor('the order', () => orders(name).find((line) => line.result !== undefined), 60_000);
  assert.equal(issued.result, 'issued', JSON.stringify(issued));
  const root = await pebble.root();
  // the instance that did not order serves it as soon as the row has it (not at its next sweep)
  const serials = await waitFor(
    'both instances serving the issued certificate',
    async () => {
      const both = await Promise.all([servedSerial(ADDRESS.one, name, root), servedSerial(ADDRESS.two, name, root)].map((p) => p.catch(() => undefined)));
      return both.every((serial) => serial !== undefined) && both;
    },
    15_000,
  );
  assert.equal(serials[0], serials[1], 'the same certificate');
  assert.equal(orders(name).length, 1, `one order: ${JSON.stringify(orders(name))}`);
});

test('the stored certificate is one row with a sealed key: no private key in the database in clear', { skip, timeout: 30_000 }, async () => {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    const rows = await client.query(`select name, key_sealed, order_owner from ${schema}.acme_certificates order by name`);
    assert.deepEqual(
      rows.rows.map((row: { name: string }) => row.name),
      ['one.example.com', 'race.example.com'],
    );
    for (const row of rows.rows as { key_sealed: string; order_owner: string | null }[]) {
      assert.doesNotMatch(row.key_sealed, /PRIVATE KEY/);
      assert.equal(row.order_owner, null, 'the claim was released');
    }
  } finally {
    await client.end();
  }
  assert.ok(readFileSync(`${one.tlsDir}/sealing.key`, 'utf8').trim().length >= 64);
});
