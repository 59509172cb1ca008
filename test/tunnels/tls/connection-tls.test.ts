// conn.tls.* as the TLS port reads them from a real handshake (tunnels/tls/connection-tls.ts), the
// DER details node:crypto does not expose (certificate-der.ts), and set-vars in on_tcp_connect
// reading them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { certificateDetails } from '../../../src/tunnels/tls/certificate-der.js';
import { handshakeTls, helloTls } from '../../../src/tunnels/tls/connection-tls.js';
import { compilePolicy, evaluate } from '../../../src/domain/policy/index.js';
import type { TlsVariables } from '../../../src/domain/policy/tls-variables.js';
import { makeTempDir } from '../../helpers/server-process.js';

/** A self-signed certificate made by openssl, with the fields the variables read. */
function selfSigned(subject: string, san: string): { cert: string; key: string } {
  const dir = makeTempDir('conn-tls-');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', subject,
    '-addext', `subjectAltName=${san}`, '-addext', 'basicConstraints=critical,CA:TRUE',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
  ], { stdio: 'ignore' });
  return { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8') };
}

test('the DER details: the signature algorithm in Go\'s name, and every extension with its criticality', () => {
  const { cert } = selfSigned('/CN=der.example.com', 'DNS:der.example.com');
  const details = certificateDetails(new X509Certificate(cert).raw);
  assert.equal(details.signatureAlgorithm, 'ECDSA-SHA256');
  const ids = details.extensions.map((e) => e.id);
  assert.ok(ids.includes('2.5.29.17'), ids.join(' '));
  assert.equal(details.extensions.find((e) => e.id === '2.5.29.19')?.critical, true);
  assert.equal(details.extensions.find((e) => e.id === '2.5.29.17')?.critical, false);
  assert.ok(details.extensions.every((e) => e.value instanceof Uint8Array && e.value.length > 0));
  // malformed input: empty values, never an error
  assert.deepEqual(certificateDetails(Buffer.from([0x30, 0x82, 0xff])), { signatureAlgorithm: '', extensions: [] });
});

test('a real handshake with a client certificate: version, cipher, SNI, both certificates', { timeout: 20_000 }, async () => {
  const server = selfSigned('/C=US/ST=California/L=Mountain View/O=Burrow Test/CN=srv.example.com', 'DNS:srv.example.com,IP:127.0.0.1');
  const client = selfSigned('/C=DE/O=Org A/OU=Ops/CN=ops', 'DNS:ops.example.com,email:ops@example.com,URI:spiffe://example.com/ops');
  let variables: TlsVariables | undefined;
  const listener = tls.createServer({ cert: server.cert, key: server.key, requestCert: true, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, (secure) => {
    variables = handshakeTls(secure, 'srv.example.com');
    secure.end('done');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  try {
    const port = (listener.address() as { port: number }).port;
    await new Promise<void>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername: 'srv.example.com', ca: server.cert, cert: client.cert, key: client.key, minVersion: 'TLSv1.3', ALPNProtocols: ['http/1.1'] });
      socket.on('data', () => {});
      socket.once('end', () => resolve());
      socket.once('error', reject);
    });
  } finally {
    listener.close();
  }
  const v = variables!;
  assert.equal(v.version, '1.3');
  assert.match(v.cipher_suite, /^TLS_AES_|^TLS_CHACHA20/);
  assert.equal(v.sni, 'srv.example.com');
  assert.equal(v.negotiated_alpn, 'http/1.1');
  assert.equal(v.session_resumed, false);
  assert.equal(v.client.subject.common_name, 'ops');
  assert.deepEqual(v.client.subject.organization, ['Org A']);
  assert.deepEqual(v.client.subject.organizational_unit, ['Ops']);
  assert.deepEqual(v.client.subject.country, ['DE']);
  assert.deepEqual(v.client.san, { dns_names: ['ops.example.com'], email_addresses: ['ops@example.com'], ip_addresses: [], uris: ['spiffe://example.com/ops'] });
  assert.equal(v.client.issuer.common_name, 'ops', 'self-signed: issuer is subject');
  assert.equal(v.client.serial_number, new X509Certificate(client.cert).serialNumber.toLowerCase().replace(/^0+/, ''));
  assert.ok(v.client.pem.startsWith('-----BEGIN CERTIFICATE-----') && v.client.pem.endsWith('-----END CERTIFICATE-----'));
  assert.ok(v.client.validity.not_before < v.client.validity.not_after);
  assert.equal(v.client.signature_algorithm, 'ECDSA-SHA256');
  assert.deepEqual(v.server.subject.locality, ['Mountain View']);
  assert.deepEqual(v.server.subject.province, ['California']);
  assert.deepEqual(v.server.san.ip_addresses, ['127.0.0.1']);
  assert.ok(!('pem' in v.server));
});

test('on_tcp_connect: set-vars and conn.tls.sni (before any handshake), the rest empty', () => {
  const compiled = compilePolicy(
    `on_tcp_connect:
  - actions:
      - type: set-vars
        config: {vars: [{host: "\${conn.tls.sni}", limit: 3}]}
  - expressions: ["vars.host == 'blocked.example.com' && vars.limit == 3 && conn.tls.version == ''"]
    actions: [{type: deny}]
`,
    { subject: 'endpoint', endpoint: 'tls' },
  );
  assert.ok(compiled.ok, compiled.ok ? '' : compiled.error.message);
  const connection = (sni: string | undefined) => ({ clientIp: '192.0.2.1', clientPort: 1, serverIp: '192.0.2.2', serverPort: 443, region: 'eu', startedAt: 0, endpoint: {}, now: 0, tls: sni === undefined ? undefined : helloTls(sni) });
  const blocked = evaluate(compiled.program, connection('blocked.example.com'));
  assert.equal(blocked.allowed, false);
  assert.deepEqual(blocked.rules[0]!.actions[0], { type: 'set-vars', vars: { host: 'blocked.example.com', limit: 3 } });
  assert.equal(evaluate(compiled.program, connection('open.example.com')).allowed, true);
  // the next connection starts without the previous one's variables, and without TLS
  const bare = evaluate(compiled.program, connection(undefined));
  assert.equal(bare.allowed, true);
  assert.deepEqual(bare.rules[0]!.actions[0], { type: 'set-vars', vars: { host: '', limit: 3 } });
});
