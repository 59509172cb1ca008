import http from 'node:http';
import https from 'node:https';
import { loadOrCreateCa } from '../../src/tunnels/tls/ca.js';
import { issueCertificate, type IssuedCertificate } from '../../src/tunnels/tls/certificates.js';
import { makeTempDir } from './server-process.js';

/** The edge TLS suites' certificates, each of its own fresh CA. */
export interface EdgeTlsCertificates {
  /** The CA an agent's `.mutualTlsca()` names. */
  clientCaPem: string;
  /** A client certificate of that CA (`client.example.com`). */
  trusted: IssuedCertificate;
  /** The same name from another CA. */
  stranger: IssuedCertificate;
  /** The agent's own CA, for `.termination(cert, key)`: a client trusting only it refuses burrow's certificate. */
  agentCaPem: string;
  agentLeaf: IssuedCertificate;
}

export async function makeEdgeTlsCertificates(agentNames: string[]): Promise<EdgeTlsCertificates> {
  const clientCa = await loadOrCreateCa(makeTempDir('edge-tls-client-ca-'));
  const agentCa = await loadOrCreateCa(makeTempDir('edge-tls-agent-ca-'));
  return {
    clientCaPem: clientCa.certPem,
    trusted: await issueCertificate(clientCa, { dnsNames: ['client.example.com'] }),
    stranger: await issueCertificate(await loadOrCreateCa(makeTempDir('edge-tls-other-ca-')), { dnsNames: ['client.example.com'] }),
    agentCaPem: agentCa.certPem,
    agentLeaf: await issueCertificate(agentCa, { dnsNames: agentNames }),
  };
}

/** A policy copying the connection's conn.tls.* variables into request headers, for the agent to show. */
export const TLS_HEADERS_POLICY = `
on_http_request:
  - actions:
      - type: add-headers
        config:
          headers:
            x-tls-version: "\${conn.tls.version}"
            x-tls-sni: "\${conn.tls.sni}"
            x-tls-cipher: "\${conn.tls.cipher_suite}"
            x-client-cn: "\${conn.tls.client.san.dns_names[0]}"
            x-client-serial: "\${conn.tls.client.serial_number}"
            x-client-not-after: "\${conn.tls.client.validity.not_after}"
            x-client-sig: "\${conn.tls.client.signature_algorithm}"
            x-server-dns: "\${conn.tls.server.san.dns_names.join(',')}"
`;

/** One HTTPS GET of `/` on `servername` (also its Host) at `host:port`, on a fresh connection. */
export function httpsGet(host: string, port: number, servername: string, options: https.RequestOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host, port, servername, path: '/', headers: { host: servername }, agent: false, timeout: 10_000, ...options });
    req.once('response', (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.once('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/** A local HTTP service answering "hello", recording each request's headers in `seen` (what the policy added). */
export async function startHelloService(seen: http.IncomingHttpHeaders[]): Promise<http.Server> {
  const web = http.createServer((req, res) => {
    seen.push(req.headers);
    res.end('hello');
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  return web;
}
