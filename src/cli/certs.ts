import { Command } from 'commander';
import { listServedCertificates } from '../app/certificates.js';
import { certificateRow } from '../domain/certificates/inventory.js';
import { configFor, print, printRows } from './context.js';

/** burrow certs list: the certificates this configuration serves (CERTIFICATES.md §2). */
export function certsCommand(): Command {
  const certs = new Command('certs').description('TLS certificates served');
  certs
    .command('list')
    .description('list the certificates served: names, issuer, expiry, source (file, private_ca, acme)')
    .option('--json', 'print a JSON array')
    .action(async (options: { json?: boolean }, command: Command) => {
      const rows = (await listServedCertificates(configFor(command))).map(certificateRow);
      if (options.json) return print(JSON.stringify(rows));
      printRows(rows.map((row) => ({ ...row, names: row.names.join(',') })), false);
    });
  return certs;
}
