// Debian's pebble (Let's Encrypt's test CA) and pebble-challtestsrv (DNS answering 127.0.0.1 for
// every name) on loopback, for the ACME suites. Pebble's own TLS certificate comes from a test CA
// that the burrow child trusts through NODE_EXTRA_CA_CERTS.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { loadOrCreateCa } from '../../src/tunnels/tls/ca.js';
import { issueCertificate } from '../../src/tunnels/tls/certificates.js';
import { freePorts } from './data-plane.js';
import { makeTempDir } from './server-process.js';

export const PEBBLE = '/usr/bin/pebble';
export const CHALLTESTSRV = '/usr/bin/pebble-challtestsrv';

/** Why the ACME suites cannot run here, or undefined when they can. */
export function pebbleMissing(): string | undefined {
  if (!existsSync(PEBBLE) || !existsSync(CHALLTESTSRV)) return 'pebble is not installed (apt-get install pebble; .ci/run does)';
  return undefined;
}

export interface Pebble {
  directoryUrl: string;
  /** The test CA's certificate file that signed pebble's own TLS certificate: NODE_EXTRA_CA_CERTS. */
  trustFile: string;
  /** pebble-challtestsrv's management API (set-txt, clear-txt), for a DNS hook. */
  dnsManagementUrl: string;
  /** PEM of the root pebble issues under (its management endpoint's /roots/0). */
  root(): Promise<string>;
  stop(): Promise<void>;
}

/** Starts challtestsrv and pebble; pebble validates http-01 on `httpPort` and tls-alpn-01 on `tlsPort`. */
export async function startPebble(httpPort: number, tlsPort: number, options: { validitySeconds?: number; eab?: { kid: string; hmacKey: string } } = {}): Promise<Pebble> {
  const dir = makeTempDir('pebble-');
  const ca = await loadOrCreateCa(join(dir, 'ca'));
  const leaf = await issueCertificate(ca, { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
  writeFileSync(join(dir, 'cert.pem'), leaf.certPem);
  writeFileSync(join(dir, 'key.pem'), leaf.keyPem);
  const [listen, management, dns, dnsManagement] = await freePorts(4);
  writeFileSync(
    join(dir, 'pebble.json'),
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${listen}`,
        managementListenAddress: `127.0.0.1:${management}`,
        certificate: join(dir, 'cert.pem'),
        privateKey: join(dir, 'key.pem'),
        httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: options.eab !== undefined,
        ...(options.eab ? { externalAccountMACKeys: { [options.eab.kid]: options.eab.hmacKey } } : {}),
        ...(options.validitySeconds ? { certificateValidityPeriod: options.validitySeconds } : {}),
      },
    }),
  );
  const children: ChildProcess[] = [];
  const run = (command: string, args: string[], env: Record<string, string> = {}) => {
    const child = spawn(command, args, { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'ignore'] });
    process.once('exit', () => child.kill('SIGKILL'));
    children.push(child);
  };
  run(CHALLTESTSRV, ['-dns01', `127.0.0.1:${dns}`, '-http01', '', '-https01', '', '-tlsalpn01', '', '-management', `127.0.0.1:${dnsManagement}`, '-defaultIPv6', '']);
  run(PEBBLE, ['-config', join(dir, 'pebble.json'), '-dnsserver', `127.0.0.1:${dns}`], {
    PEBBLE_VA_NOSLEEP: '1',
    PEBBLE_VA_ALWAYS_VALID: '0',
    PEBBLE_WFE_NONCEREJECT: '0',
    PEBBLE_AUTHZREUSE: '0',
  });
  const get = (url: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      https
        .get(url, { ca: ca.certPem, timeout: 2_000 }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        })
        .on('error', reject)
        .on('timeout', function (this: { destroy(): void }) {
          this.destroy();
        });
    });
  const directoryUrl = `https://127.0.0.1:${listen}/dir`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    const ok = await get(directoryUrl).then((r) => r.status === 200, () => false);
    if (ok) break;
    if (Date.now() > deadline) throw new Error('pebble did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    directoryUrl,
    dnsManagementUrl: `http://127.0.0.1:${dnsManagement}`,
    trustFile: ca.caPath,
    root: async () => (await get(`https://127.0.0.1:${management}/roots/0`)).body,
    stop: async () => {
      for (const child of children) {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGKILL');
          await new Promise((resolve) => child.once('exit', resolve));
        }
      }
    },
  };
}
