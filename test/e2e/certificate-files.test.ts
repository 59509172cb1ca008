import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import tls from 'node:tls';
import ngrok from '@ngrok/ngrok';
import { loadOrCreateCa, type CertificateAuthority } from '../../src/tunnels/tls/ca.js';
import { issueCertificate, type IssuedCertificate } from '../../src/tunnels/tls/certificates.js';
import { createToken, freePort, startDataPlane, within, type TrafficServer } from '../helpers/traffic.js';
import { cleanupProcesses, makeTempDir, runCli, tempDatabaseUrl } from '../helpers/server-process.js';

/**
 * CERTIFICATES.md §2 through a real `burrow serve` and an SDK agent: EDGE_TLS_CERT/KEY replaced
 * under live HTTPS endpoints, a bad new pair, SIGHUP, EDGE_TLS_CERTS_DIR by SNI, certs list, /metrics.
 */

const EDGE_NAMES = ['burrow.localhost', '*.burrow.localhost'];
const AGENT_NAMES = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] };

let operatorCa: CertificateAuthority;
let root: string;
let env: Record<string, string>;
let server: TrafficServer;
let session: ngrok.Session;
let local: http.Server;
let first: IssuedCertificate;
let agentFirst: IssuedCertificate;
let custom: IssuedCertificate;
let wildcard: IssuedCertificate;

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

/** Writes a pair the way renewal tools do: each file to a temporary name, renamed over the old one (key first). */
function writePair(directory: string, stem: string, pair: { certPem: string; keyPem: string }): void {
  writeFileSync(join(directory, `.${stem}.key.tmp`), pair.keyPem);
  renameSync(join(directory, `.${stem}.key.tmp`), join(directory, `${stem}.key`));
  writeFileSync(join(directory, `.${stem}.crt.tmp`), pair.certPem);
  renameSync(join(directory, `.${stem}.crt.tmp`), join(directory, `${stem}.crt`));
}

function connect(servername: string, port = server.tlsPort): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: operatorCa.certPem, timeout: 5_000, checkServerIdentity: () => undefined }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** The fingerprint of the certificate a new handshake for `servername` gets (its chain checked, not its names). */
async function served(servername: string, port = server.tlsPort): Promise<string> {
  const socket = await connect(servername, port);
  const pem = socket.getPeerX509Certificate()!.toString();
  socket.destroy();
  return fingerprint(pem);
}

/** One HTTP/1.1 request on an open TLS connection: the answer's body. */
function requestOn(socket: tls.TLSSocket, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const match = /\r\n\r\n(.*)$/s.exec(text);
      if (match && match[1]!.includes('served')) {
        socket.off('data', onData);
        resolve(match[1]!);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
  });
}

before(async () => {
  root = makeTempDir('burrow-certfiles-');
  operatorCa = await loadOrCreateCa(join(root, 'operator-ca'));
  // EDGE_TLS_CERT lives under a symlinked directory (as Kubernetes mounts secrets): `live` → v1
  mkdirSync(join(root, 'v1'));
  symlinkSync(join(root, 'v1'), join(root, 'live'));
  first = await issueCertificate(operatorCa, { dnsNames: EDGE_NAMES });
  writePair(join(root, 'v1'), 'edge', first);
  mkdirSync(join(root, 'sni'));
  custom = await issueCertificate(operatorCa, { dnsNames: ['custom.example.com'] });
  wildcard = await issueCertificate(operatorCa, { dnsNames: ['*.example.org'] });
  writePair(join(root, 'sni'), 'custom', custom);
  writePair(join(root, 'sni'), 'wildcard', wildcard);
  agentFirst = await issueCertificate(operatorCa, AGENT_NAMES);
  mkdirSync(join(root, 'agent'));
  writePair(join(root, 'agent'), 'agent', agentFirst);
  env = {
    EDGE_TLS_CERT: join(root, 'live', 'edge.crt'),
    EDGE_TLS_KEY: join(root, 'live', 'edge.key'),
    EDGE_TLS_CERTS_DIR: join(root, 'sni'),
    AGENT_TLS_CERT: join(root, 'agent', 'agent.crt'),
    AGENT_TLS_KEY: join(root, 'agent', 'agent.key'),
  };
  server = await startDataPlane({ env });
  session = await new ngrok.SessionBuilder().authtoken(await createToken(server)).serverAddr(`127.0.0.1:${server.agentPort}`).caCert(Buffer.from(operatorCa.certPem)).connect();
  local = http.createServer((_req, res) => res.end('served'));
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  const address = `http://127.0.0.1:${(local.address() as { port: number }).port}`;
  for (const domain of ['app.burrow.localhost', 'custom.example.com', 'api.example.org', 'other.example.net']) {
    await session.httpEndpoint().domain(domain).listenAndForward(address);
  }
});

after(async () => {
  await session?.close().catch(() => {});
  local?.close();
  await cleanupProcesses();
});

test('EDGE_TLS_CERTS_DIR: a pair naming the SNI exactly, then by wildcard, else the edge certificate', { timeout: 30_000 }, async () => {
  assert.equal(await served('custom.example.com'), fingerprint(custom.certPem));
  assert.equal(await served('api.example.org'), fingerprint(wildcard.certPem));
  assert.equal(await served('other.example.net'), fingerprint(first.certPem));
  assert.equal(await served('app.burrow.localhost'), fingerprint(first.certPem));
});

test('certs list and /metrics show every file certificate by id, with no names in labels', { timeout: 60_000 }, async () => {
  const result = await runCli(['certs', 'list', '--json'], { env: { ...env, TLS_DIR: server.tlsDir, AGENT_PORT: String(server.agentPort), EDGE_TLS_PORT: String(server.tlsPort), EDGE_DOMAIN: server.edgeDomain } });
  assert.equal(result.code, 0, result.stderr);
  const rows = JSON.parse(result.stdout) as { id: string; names: string[]; issuer: string; not_after: string; source: string }[];
  for (const row of rows) assert.deepEqual(Object.keys(row), ['id', 'names', 'issuer', 'not_after', 'source']);
  const byNames = new Map(rows.map((row) => [row.names.join(','), row]));
  const edge = byNames.get('*.burrow.localhost,burrow.localhost');
  assert.equal(edge?.source, 'file');
  assert.equal(Date.parse(edge!.not_after), Math.floor(first.notAfter.getTime() / 1000) * 1000);
  assert.match(edge!.issuer, /^burrow local CA /);
  assert.equal(byNames.get('custom.example.com')?.source, 'file');
  assert.equal(byNames.get('*.example.org')?.source, 'file');
  assert.equal(rows.find((row) => row.names.includes('localhost'))?.source, 'file');
  assert.equal(rows.length, 4);

  const text = await runCli(['certs', 'list'], { env: { ...env, TLS_DIR: server.tlsDir, AGENT_PORT: String(server.agentPort), EDGE_TLS_PORT: String(server.tlsPort) } });
  assert.match(text.stdout, /^id\s+names\s+issuer\s+not_after\s+source$/m);
  assert.match(text.stdout, /custom\.example\.com/);

  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const series = metrics.split('\n').filter((line) => line.startsWith('burrow_certificate_expiry_seconds{'));
  assert.equal(series.length, 4, metrics);
  assert.ok(series.includes(`burrow_certificate_expiry_seconds{certificate_id="${edge!.id}"} ${Math.floor(Date.parse(edge!.not_after) / 1000)}`), series.join('\n'));
  assert.ok(!series.some((line) => line.includes('example')));
});

test('replacing the files: the next handshake gets the new certificate, an open connection stays', { timeout: 60_000 }, async () => {
  const open = await connect('app.burrow.localhost');
  assert.equal(await requestOn(open, 'app.burrow.localhost'), 'served');
  const second = await issueCertificate(operatorCa, { dnsNames: EDGE_NAMES });
  writePair(join(root, 'v1'), 'edge', second);
  await within(10_000, async () => (await served('app.burrow.localhost')) === fingerprint(second.certPem));
  assert.equal(fingerprint(open.getPeerX509Certificate()!.toString()), fingerprint(first.certPem));
  assert.equal(await requestOn(open, 'app.burrow.localhost'), 'served');
  open.destroy();
  assert.ok(server.logs().some((line) => line.msg === 'TLS certificate renewed: new connections get the new one' && line.certificate === 'edge'));

  // a bad new pair keeps the second one serving, with an error logged
  const failures = () => server.logs().filter((line) => line.msg === 'TLS certificate renewal failed: the current one is still served' && line.level === 50).length;
  const bad: [string, () => Promise<void>][] = [
    ['unparsable', async () => writeFileSync(join(root, 'v1', 'edge.crt'), 'not a certificate\n')],
    ['key not matching', async () => writePair(join(root, 'v1'), 'edge', { certPem: (await issueCertificate(operatorCa, { dnsNames: EDGE_NAMES })).certPem, keyPem: second.keyPem })],
    ['expired', async () => {
      const shortLived = await issueCertificate(operatorCa, { dnsNames: EDGE_NAMES, days: 1 / 86_400 });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      writePair(join(root, 'v1'), 'edge', shortLived);
    }],
  ];
  for (const [what, breakIt] of bad) {
    const before = failures();
    await breakIt();
    await within(10_000, async () => failures() > before).catch(() => assert.fail(`no error logged for a pair ${what}`));
    assert.equal(await served('app.burrow.localhost'), fingerprint(second.certPem), what);
  }
  writePair(join(root, 'v1'), 'edge', second);
});

test('SIGHUP reads the files again: a change fs.watch cannot see (the directory swapped by symlink)', { timeout: 60_000 }, async () => {
  // let the reload that the previous test's last write set off happen first: only SIGHUP may read v2
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const third = await issueCertificate(operatorCa, { dnsNames: EDGE_NAMES });
  mkdirSync(join(root, 'v2'));
  writePair(join(root, 'v2'), 'edge', third);
  symlinkSync(join(root, 'v2'), join(root, 'live.new'));
  renameSync(join(root, 'live.new'), join(root, 'live'));
  server.child.kill('SIGHUP');
  // well before the 30 s stat poll could have seen it
  await within(10_000, async () => (await served('app.burrow.localhost')) === fingerprint(third.certPem));
  assert.ok(server.logs().some((line) => line.msg === 'reloading certificates' && line.signal === 'SIGHUP'));
  assert.equal(server.child.exitCode, null, 'SIGHUP does not stop the server');
});

test('the directory: a replaced pair is served at once, a bad one keeps its previous version', { timeout: 60_000 }, async () => {
  const renewed = await issueCertificate(operatorCa, { dnsNames: ['custom.example.com'] });
  writePair(join(root, 'sni'), 'custom', renewed);
  await within(10_000, async () => (await served('custom.example.com')) === fingerprint(renewed.certPem));
  writeFileSync(join(root, 'sni', 'custom.key'), 'garbage\n');
  await within(10_000, async () => server.logs().some((line) => String(line.msg).startsWith('EDGE_TLS_CERTS_DIR: a bad pair') && line.stem === 'custom'));
  assert.equal(await served('custom.example.com'), fingerprint(renewed.certPem));
  assert.equal(await served('api.example.org'), fingerprint(wildcard.certPem));
});

test("the agent port's pair: replaced files reach the next agent handshake, the session open stays", { timeout: 60_000 }, async () => {
  assert.equal(await served('localhost', server.agentPort), fingerprint(agentFirst.certPem));
  const renewed = await issueCertificate(operatorCa, AGENT_NAMES);
  writePair(join(root, 'agent'), 'agent', renewed);
  await within(10_000, async () => (await served('localhost', server.agentPort)) === fingerprint(renewed.certPem));
  // the session opened before still carries traffic
  const open = await connect('app.burrow.localhost');
  assert.equal(await requestOn(open, 'app.burrow.localhost'), 'served');
  open.destroy();
  const second = await new ngrok.SessionBuilder().authtoken(await createToken(server)).serverAddr(`127.0.0.1:${server.agentPort}`).caCert(Buffer.from(operatorCa.certPem)).connect();
  await second.close();
});

test('a bad pair in EDGE_TLS_CERTS_DIR at start stops the start, naming the file', { timeout: 60_000 }, async () => {
  const directory = makeTempDir('burrow-bad-sni-');
  writeFileSync(join(directory, 'broken.crt'), 'not a certificate\n');
  writeFileSync(join(directory, 'broken.key'), custom.keyPem);
  const [agentPort, tlsPort] = [await freePort(), await freePort()];
  const result = await runCli(['serve'], {
    databaseUrl: tempDatabaseUrl(),
    env: { PORT: '0', AGENT_PORT: String(agentPort), EDGE_TLS_PORT: String(tlsPort), EDGE_HTTP_PORT: '0', EDGE_TCP_PORTS: '', TLS_DIR: makeTempDir('burrow-tls-'), EDGE_TLS_CERTS_DIR: directory },
  });
  assert.equal(result.code, 1, result.stderr);
  assert.match(result.stderr, new RegExp(`EDGE_TLS_CERTS_DIR: ${join(directory, 'broken.crt').replace(/[.]/g, '\\.')} contains no PEM certificate`));
});
