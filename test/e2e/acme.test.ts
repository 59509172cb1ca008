// @test-pass sqlite
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import type ngrok from '@ngrok/ngrok';
import { freePorts, waitFor } from '../helpers/data-plane.js';
import { pebbleMissing, startPebble, type Pebble } from '../helpers/pebble.js';
import { api, cleanupProcesses, makeTempDir, runCli, tempDatabaseUrl } from '../helpers/server-process.js';
import { connectAgent, createToken, startDataPlane, type TrafficServer } from '../helpers/traffic.js';

/**
 * ACME against pebble on loopback (CERTIFICATES.md §1, §3): burrow answers pebble's validations
 * on its own ports, and a client that trusts only pebble's root verifies what an HTTPS endpoint
 * serves. One pebble for the file: its validation ports are burrow's, reused by each start.
 */

const skip = pebbleMissing();
let pebble: Pebble;
let httpPort: number;
let tlsPort: number;
let local: http.Server;
let localUrl: string;

before(async () => {
  if (skip) return;
  [httpPort, tlsPort] = (await freePorts(2)) as [number, number];
  pebble = await startPebble(httpPort, tlsPort);
  local = http.createServer((_req, res) => res.end('hello through ACME'));
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  localUrl = `http://127.0.0.1:${(local.address() as net.AddressInfo).port}`;
});

after(async () => {
  local?.close();
  await cleanupProcesses();
  await pebble?.stop();
});

interface Burrow {
  databaseUrl: string;
  tlsDir: string;
  /** The first start's BOOTSTRAP_API_KEY, kept for a restart. */
  apiKey?: string;
}

async function startBurrow(state: Burrow, challenges: string, env: Record<string, string> = {}, ca: Pebble = pebble, ports = { httpPort, tlsPort }): Promise<TrafficServer> {
  const server = await startDataPlane({
    databaseUrl: state.databaseUrl,
    ...(state.apiKey ? { bootstrapApiKey: state.apiKey } : {}),
    env: {
      EDGE_HTTP_PORT: String(ports.httpPort),
      EDGE_TLS_PORT: String(ports.tlsPort),
      TLS_DIR: state.tlsDir,
      ACME_DIRECTORY_URL: ca.directoryUrl,
      ACME_EMAIL: 'ops@example.com',
      ACME_CHALLENGES: challenges,
      NODE_EXTRA_CA_CERTS: ca.trustFile,
      ...env,
    },
  });
  state.apiKey = server.apiKey;
  return Object.assign(server, { ...ports, tlsDir: state.tlsDir, caPath: `${state.tlsDir}/ca.pem` });
}

function handshake(servername: string, ca: string | undefined, port = tlsPort): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ca, rejectUnauthorized: ca !== undefined, timeout: 10_000 }, () => resolve(socket));
    socket.once('error', reject);
    socket.once('timeout', () => reject(new Error('timeout')));
  });
}

/** A GET through the HTTPS endpoint, trusting only `ca`. */
async function getOver(name: string, ca: string, port = tlsPort, socket?: tls.TLSSocket): Promise<{ status: number; body: string; serial: string }> {
  const secure = socket ?? (await handshake(name, ca, port));
  const serial = secure.getPeerCertificate().serialNumber;
  return new Promise((resolve, reject) => {
    const req = http.request({ createConnection: () => secure, host: name, path: '/', headers: { host: name, connection: 'keep-alive' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, serial }));
    });
    req.on('error', reject);
    req.end();
  });
}

function orders(server: TrafficServer, name?: string): Record<string, unknown>[] {
  return server.logs().filter((line) => line.event === 'acme_order' && (name === undefined || line.name === name));
}

async function issued(server: TrafficServer, name: string): Promise<Record<string, unknown>> {
  return waitFor(`the ACME order of ${name}`, () => orders(server, name).find((line) => line.result === 'issued') ?? (orders(server, name).find((line) => line.result === 'failed') && assert.fail(JSON.stringify(orders(server, name)))), 60_000);
}

let alpnState: Burrow;
let alpnSerial: string;

test('tls-alpn-01: binding an HTTPS endpoint orders its name; a client trusting only pebble verifies it', { skip, timeout: 120_000 }, async () => {
  alpnState = { databaseUrl: tempDatabaseUrl(), tlsDir: makeTempDir('burrow-tls-') };
  const server = await startBurrow(alpnState, 'tls-alpn-01');
  let session: ngrok.Session | undefined;
  try {
    session = await connectAgent(server, await createToken(server));
    const listener = await session.httpEndpoint().domain('alpn.example.com').listenAndForward(localUrl);
    assert.equal(listener.url(), `https://alpn.example.com:${tlsPort}`);
    const line = await issued(server, 'alpn.example.com');
    assert.equal(line.renewal, false);
    const root = await pebble.root();
    const answer = await getOver('alpn.example.com', root);
    assert.equal(answer.status, 200);
    assert.equal(answer.body, 'hello through ACME');
    alpnSerial = answer.serial;
    // burrow's private CA is not what is served for it any more
    await assert.rejects(handshake('alpn.example.com', (await import('node:fs')).readFileSync(server.caPath, 'utf8')), /unable to|self[- ]signed|certificate/i);

    // a name burrow does not serve: refused at the handshake, and never ordered
    await assert.rejects(handshake('nobody.example.com', root), /unrecognized name/i);
    // nor a ClientHello asking for the ACME protocol for it
    const probe = tls.connect({ host: '127.0.0.1', port: tlsPort, servername: 'other.example.com', ALPNProtocols: ['acme-tls/1'], rejectUnauthorized: false });
    await assert.rejects(new Promise((resolve, reject) => probe.once('secureConnect', resolve).once('error', reject)));
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(orders(server).map((entry) => entry.name), ['alpn.example.com']);

    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    assert.match(metrics, /burrow_acme_orders_total\{result="issued"\} 1/);
    await listener.close();
  } finally {
    await session?.close().catch(() => {});
    await server.stop();
  }
});

test('a restart serves the stored certificate without a new order, and orders a new name with the account it registered', { skip, timeout: 120_000 }, async () => {
  assert.ok(alpnState, 'runs after the tls-alpn-01 test');
  // without ACME_EMAIL now: finding the account again must not send an empty update (pebble refuses one)
  const server = await startBurrow(alpnState, 'tls-alpn-01', { ACME_EMAIL: '' });
  let session: ngrok.Session | undefined;
  try {
    session = await connectAgent(server, await createToken(server));
    await session.httpEndpoint().domain('alpn.example.com').listenAndForward(localUrl);
    const answer = await getOver('alpn.example.com', await pebble.root());
    assert.equal(answer.status, 200);
    assert.equal(answer.serial, alpnSerial);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(orders(server), []);
    // burrow certs list and /metrics show it, source acme, no name in the metric's labels
    const listed = await runCli(['certs', 'list', '--json'], { databaseUrl: alpnState.databaseUrl, env: { TLS_DIR: alpnState.tlsDir, ACME_DIRECTORY_URL: pebble.directoryUrl } });
    assert.equal(listed.code, 0, listed.stderr);
    const acmeRows = (JSON.parse(listed.stdout) as { names: string[]; source: string; issuer: string }[]).filter((row) => row.source === 'acme');
    assert.deepEqual(acmeRows.map((row) => row.names), [['alpn.example.com']]);
    assert.match(acmeRows[0]!.issuer, /Pebble/i);
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    assert.equal(metrics.match(/^burrow_certificate_expiry_seconds\{/gm)?.length, 3, 'agent, edge and the ACME certificate');
    assert.doesNotMatch(metrics, /alpn\.example\.com/);

    await session.httpEndpoint().domain('again.example.com').listenAndForward(localUrl);
    await issued(server, 'again.example.com');
    assert.equal((await getOver('again.example.com', await pebble.root())).body, 'hello through ACME');
  } finally {
    await session?.close().catch(() => {});
    await server.stop();
  }
});

test('http-01: the challenge is answered on the HTTP port before any routing', { skip, timeout: 120_000 }, async () => {
  const server = await startBurrow({ databaseUrl: tempDatabaseUrl(), tlsDir: makeTempDir('burrow-tls-') }, 'http-01');
  let session: ngrok.Session | undefined;
  try {
    session = await connectAgent(server, await createToken(server));
    // an unknown token is a 404 from burrow itself, not the offline page of an endpoint
    const missing = await fetch(`http://127.0.0.1:${httpPort}/.well-known/acme-challenge/unknown-token`, { headers: { host: 'whatever.example.com' } });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('ngrok-error-code'), null);
    assert.equal(await missing.text(), 'No such ACME challenge.\n');

    await session.httpEndpoint().domain('http01.example.com').listenAndForward(localUrl);
    await issued(server, 'http01.example.com');
    const answer = await getOver('http01.example.com', await pebble.root());
    assert.equal(answer.status, 200);
    assert.equal(answer.body, 'hello through ACME');
  } finally {
    await session?.close().catch(() => {});
    await server.stop();
  }
});

/** The served certificate's key: `rsa` (its modulus' bits) or `ec` (its curve). */
function keyOf(socket: tls.TLSSocket): string {
  const peer = socket.getPeerCertificate() as tls.PeerCertificate & { asn1Curve?: string };
  return peer.asn1Curve ? `ec ${peer.asn1Curve}` : `rsa ${peer.bits}`;
}

test('a reserved domain with a certificate management policy is ordered when reserved, with its private_key_type (rsa by default); one without is not; a wildcard without a DNS hook is not', { skip, timeout: 150_000 }, async () => {
  const server = await startBurrow({ databaseUrl: tempDatabaseUrl(), tlsDir: makeTempDir('burrow-tls-') }, 'tls-alpn-01');
  let session: ngrok.Session | undefined;
  try {
    const policy = { authority: 'letsencrypt', private_key_type: 'ecdsa' };
    const managed = await api(server, 'POST', '/reserved_domains', { body: { domain: 'reserved.example.com', certificate_management_policy: policy } });
    assert.equal(managed.status, 201, managed.text);
    // ACME is configured: no ACME_NOT_CONFIGURED job
    assert.notEqual(managed.body.certificate_management_status?.provisioning_job?.error_code, 'ACME_NOT_CONFIGURED');
    const rsa = await api(server, 'POST', '/reserved_domains', { body: { domain: 'rsa.example.com', certificate_management_policy: { authority: 'letsencrypt' } } });
    assert.equal(rsa.body.certificate_management_policy?.private_key_type, 'rsa', "the reference's default");
    assert.equal((await api(server, 'POST', '/reserved_domains', { body: { domain: 'plain.example.com' } })).status, 201);
    const wildcard = await api(server, 'POST', '/reserved_domains', { body: { domain: '*.nohook.example.com', certificate_management_policy: policy } });
    assert.equal(wildcard.body.certificate_management_status?.provisioning_job?.error_code, 'ACME_DNS_HOOK_MISSING');
    // ordered at once when reserved, not at the next sweep (every minute)
    const ecLine = await waitFor('the reserved domain ordered', () => orders(server, 'reserved.example.com').find((line) => line.result === 'issued'), 30_000);
    const rsaLine = await waitFor('the rsa reservation ordered', () => orders(server, 'rsa.example.com').find((line) => line.result === 'issued'), 30_000);
    assert.equal(ecLine.key_type, 'ecdsa');
    assert.equal(rsaLine.key_type, 'rsa');
    const status = (await api(server, 'GET', `/reserved_domains/${managed.body.id}`)).body.certificate_management_status;
    assert.match(status?.renews_at ?? '', /^\d{4}-\d\d-\d\dT/);
    assert.equal(status?.provisioning_job, null);
    const skipped = server.logs().filter((line) => line.event === 'acme_order_skipped');
    assert.deepEqual(skipped.map((line) => [line.name, line.reason]), [['*.nohook.example.com', 'dns_hook_missing']]);
    session = await connectAgent(server, await createToken(server));
    await session.httpEndpoint().domain('reserved.example.com').listenAndForward(localUrl);
    await session.httpEndpoint().domain('rsa.example.com').listenAndForward(localUrl);
    const root = await pebble.root();
    const answer = await getOver('reserved.example.com', root);
    assert.equal(answer.body, 'hello through ACME');
    assert.equal(keyOf(await handshake('reserved.example.com', root)), 'ec prime256v1');
    assert.equal(keyOf(await handshake('rsa.example.com', root)), 'rsa 2048');
    assert.deepEqual(orders(server).map((line) => line.name).sort(), ['reserved.example.com', 'rsa.example.com']);

    // the policy's key type changed: the certificate is ordered again with the new kind of key
    const patched = await api(server, 'PATCH', `/reserved_domains/${managed.body.id}`, { body: { certificate_management_policy: { authority: 'letsencrypt', private_key_type: 'rsa' } } });
    assert.equal(patched.status, 200, patched.text);
    const again = await waitFor('the new key type ordered', () => orders(server, 'reserved.example.com').find((line) => line.key_type === 'rsa'), 30_000);
    assert.equal(again.result, 'issued');
    assert.equal(again.renewal, true);
    assert.equal(keyOf(await handshake('reserved.example.com', root)), 'rsa 2048');
  } finally {
    await session?.close().catch(() => {});
    await server.stop();
  }
});

test('dns-01 through ACME_DNS_HOOK: the EDGE_DOMAIN wildcard and a reserved wildcard domain, with challtestsrv serving the TXT records', { skip, timeout: 150_000 }, async () => {
  const dir = makeTempDir('dns-hook-');
  const hook = `${dir}/hook.mjs`;
  const calls = `${dir}/calls.log`;
  writeFileSync(
    hook,
    `#!${process.execPath}
import { appendFileSync } from 'node:fs';
const [action, record, value] = process.argv.slice(2);
appendFileSync(${JSON.stringify(calls)}, action + ' ' + record + '\\n');
const path = action === 'set' ? '/set-txt' : '/clear-txt';
const response = await fetch(${JSON.stringify(pebble.dnsManagementUrl)} + path, { method: 'POST', body: JSON.stringify({ host: record + '.', value }) });
process.exit(response.ok ? 0 : 1);
`,
  );
  chmodSync(hook, 0o755);
  const server = await startBurrow({ databaseUrl: tempDatabaseUrl(), tlsDir: makeTempDir('burrow-tls-') }, 'tls-alpn-01', { EDGE_DOMAIN: 'edge.example.com', ACME_DNS_HOOK: hook });
  let session: ngrok.Session | undefined;
  try {
    await waitFor('the wildcard ordered', () => orders(server, '*.edge.example.com').find((line) => line.result === 'issued') ?? (orders(server).find((line) => line.result === 'failed') && assert.fail(JSON.stringify(orders(server)))), 90_000);
    assert.deepEqual(readFileSync(calls, 'utf8').trim().split('\n'), ['set _acme-challenge.edge.example.com', 'unset _acme-challenge.edge.example.com']);
    session = await connectAgent(server, await createToken(server));
    const listener = await session.httpEndpoint().domain('app.edge.example.com').listenAndForward(localUrl);
    assert.equal(listener.url(), `https://app.edge.example.com:${tlsPort}`);
    const answer = await getOver('app.edge.example.com', await pebble.root());
    assert.equal(answer.body, 'hello through ACME');

    // a reserved wildcard domain with a policy: dns-01 too, and the names under it get its certificate
    const reserved = await api(server, 'POST', '/reserved_domains', { body: { domain: '*.wild.example.com', certificate_management_policy: { authority: 'letsencrypt', private_key_type: 'ecdsa' } } });
    assert.equal(reserved.status, 201, reserved.text);
    assert.equal(reserved.body.certificate_management_status?.provisioning_job?.error_code, null);
    await issued(server, '*.wild.example.com');
    assert.deepEqual(readFileSync(calls, 'utf8').trim().split('\n').slice(2), ['set _acme-challenge.wild.example.com', 'unset _acme-challenge.wild.example.com']);
    await session.httpEndpoint().domain('app.wild.example.com').listenAndForward(localUrl);
    const under = await getOver('app.wild.example.com', await pebble.root());
    assert.equal(under.body, 'hello through ACME');
    assert.match((await api(server, 'GET', `/reserved_domains/${reserved.body.id}`)).body.certificate_management_status?.renews_at ?? '', /^\d{4}-/);
    // the names under the wildcards are not ordered on their own
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(orders(server).map((line) => line.name), ['*.edge.example.com', '*.wild.example.com']);
  } finally {
    await session?.close().catch(() => {});
    await server.stop();
  }
});

test("a TLS edge's hostport is ordered when the edge is created, and served when it terminates at the edge", { skip, timeout: 120_000 }, async () => {
  const server = await startBurrow({ databaseUrl: tempDatabaseUrl(), tlsDir: makeTempDir('burrow-tls-') }, 'tls-alpn-01');
  try {
    const edge = await api(server, 'POST', '/edges/tls', { body: { hostports: ['edge-acme.example.com:443'], tls_termination: { terminate_at: 'edge' } } });
    assert.equal(edge.status, 201, edge.text);
    const line = await issued(server, 'edge-acme.example.com');
    assert.equal(line.key_type, 'ecdsa');
    // the handshake is burrow's, with the CA's certificate (no backend: the connection then closes)
    const root = await pebble.root();
    const secure = await handshake('edge-acme.example.com', root);
    assert.equal(secure.getPeerCertificate().subject.CN, 'edge-acme.example.com');
    secure.destroy();
    // a hostport added by an update is ordered too
    assert.equal((await api(server, 'PATCH', `/edges/tls/${edge.body.id}`, { body: { hostports: ['edge-acme.example.com:443', 'edge-two.example.com:443'] } })).status, 200);
    await issued(server, 'edge-two.example.com');
    (await handshake('edge-two.example.com', root)).destroy();
    assert.deepEqual(orders(server).map((entry) => entry.name), ['edge-acme.example.com', 'edge-two.example.com']);
  } finally {
    await server.stop();
  }
});

test('renewal of a short-lived certificate keeps open connections; the endpoint gone, renewals stop; with the CA down the edge certificate is served and the order retried later', { skip, timeout: 300_000 }, async () => {
  const ports = { httpPort: 0, tlsPort: 0 };
  [ports.httpPort, ports.tlsPort] = (await freePorts(2)) as [number, number];
  const shortLived = await startPebble(ports.httpPort, ports.tlsPort, { validitySeconds: 3600 });
  // renewal is due 10 s after issuance; the sweep (every 3 s here: ACME_RENEW_INTERVAL) renews it
  const state = { databaseUrl: tempDatabaseUrl(), tlsDir: makeTempDir('burrow-tls-') };
  const server = await startBurrow(state, 'tls-alpn-01', { ACME_RENEW_BEFORE: '3590s', ACME_RENEW_INTERVAL: '3s' }, shortLived, ports);
  let session: ngrok.Session | undefined;
  try {
    session = await connectAgent(server, await createToken(server));
    const renewListener = await session.httpEndpoint().domain('renew.example.com').listenAndForward(localUrl);
    // a second name, still bound when the first goes: its renewals show that the sweep ran
    const stillListener = await session.httpEndpoint().domain('still.example.com').listenAndForward(localUrl);
    await issued(server, 'still.example.com');
    const first = await issued(server, 'renew.example.com');
    assert.equal(first.renewal, false);
    const root = await shortLived.root();
    const open = await handshake('renew.example.com', root, ports.tlsPort);
    const before = await getOver('renew.example.com', root, ports.tlsPort, open);
    // the connection opened before the renewal carries a request every few seconds meanwhile (an idle one would meet the keep-alive timeout)
    let renewed: Record<string, unknown> | undefined;
    for (const deadline = Date.now() + 100_000; !renewed && Date.now() < deadline; ) {
      assert.equal((await getOver('renew.example.com', root, ports.tlsPort, open)).serial, before.serial);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      renewed = orders(server, 'renew.example.com').find((line) => line.renewal === true);
    }
    assert.equal(renewed?.result, 'issued');
    assert.equal(open.destroyed, false);
    const kept = await getOver('renew.example.com', root, ports.tlsPort, open);
    assert.equal(kept.serial, before.serial);
    assert.equal(kept.body, 'hello through ACME');
    // the next handshake gets the new certificate
    assert.notEqual((await getOver('renew.example.com', root, ports.tlsPort)).serial, before.serial);
    open.destroy();

    // the endpoint closed: the next sweep renews the name still bound, not this one
    await renewListener.close();
    const closedAt = Date.now();
    const renewOrders = orders(server, 'renew.example.com').length;
    // an order of the name still bound that started after the close: a sweep ran since
    const startedAfter = (line: Record<string, unknown>) => Date.parse(String(line.time)) - Number(line.ms) > closedAt;
    await waitFor('the next sweep renewing the name still bound', () => orders(server, 'still.example.com').find((line) => line.result === 'issued' && startedAfter(line)), 75_000);
    assert.equal(orders(server, 'renew.example.com').length, renewOrders, 'no renewal of a name no endpoint serves');
    await stillListener.close();

    // the CA goes away: a new name gets the private-CA certificate within a few seconds, and the failure is retried later
    await shortLived.stop();
    await session.httpEndpoint().domain('down.example.com').listenAndForward(localUrl);
    const started = Date.now();
    const fallback = await getOver('down.example.com', readFileSync(`${state.tlsDir}/ca.pem`, 'utf8'), ports.tlsPort);
    assert.equal(fallback.body, 'hello through ACME');
    assert.ok(Date.now() - started < 8_000, `the handshake waited ${Date.now() - started} ms`);
    const failed = await waitFor('the failed order', () => orders(server, 'down.example.com').find((line) => line.result === 'failed'), 90_000);
    assert.equal(failed.failures, 1);
    assert.ok(Date.parse(String(failed.retry_at)) > Date.now(), 'a retry is scheduled');
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    assert.match(metrics, /burrow_acme_orders_total\{result="failed"\} 1/);
  } finally {
    await session?.close().catch(() => {});
    await server.stop();
    await shortLived.stop();
  }
});

test('a CA that requires external account binding: ACME_EAB_KID and ACME_EAB_HMAC_KEY register the account', { skip, timeout: 150_000 }, async () => {
  const ports = { httpPort: 0, tlsPort: 0 };
  [ports.httpPort, ports.tlsPort] = (await freePorts(2)) as [number, number];
  const eab = { kid: 'kid-burrow', hmacKey: 'zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W' };
  const bound = await startPebble(ports.httpPort, ports.tlsPort, { eab });
  const servers: TrafficServer[] = [];
  let session: ngrok.Session | undefined;
  try {
    // without the binding the CA refuses the account: the order fails, nothing is served from it
    const refused = await startBurrow({ databaseUrl: tempDatabaseUrl(), tlsDir: makeTempDir('burrow-tls-') }, 'tls-alpn-01', {}, bound, ports);
    servers.push(refused);
    session = await connectAgent(refused, await createToken(refused));
    await session.httpEndpoint().domain('eab.example.com').listenAndForward(localUrl);
    const failed = await waitFor('the refused order', () => orders(refused, 'eab.example.com').find((line) => line.result === 'failed'), 60_000);
    assert.match(JSON.stringify(failed.err), /externalAccount|external account/i);
    await session.close();
    await refused.stop();

    const server = await startBurrow({ databaseUrl: tempDatabaseUrl(), tlsDir: makeTempDir('burrow-tls-') }, 'tls-alpn-01', { ACME_EAB_KID: eab.kid, ACME_EAB_HMAC_KEY: eab.hmacKey }, bound, ports);
    servers.push(server);
    session = await connectAgent(server, await createToken(server));
    await session.httpEndpoint().domain('eab.example.com').listenAndForward(localUrl);
    await issued(server, 'eab.example.com');
    assert.equal((await getOver('eab.example.com', await bound.root(), ports.tlsPort)).body, 'hello through ACME');
  } finally {
    await session?.close().catch(() => {});
    for (const server of servers) await server.stop();
    await bound.stop();
  }
});
