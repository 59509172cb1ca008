// dns-01 through ACME_DNS_HOOK (README "The DNS hook"): `<hook> set <record> <txt>` before the
// CA validates, `<hook> unset <record> <txt>` after; exit status 0 means done.
import { execFile } from 'node:child_process';

/** A hook that takes longer is killed and the order fails (and is retried with backoff). */
const HOOK_TIMEOUT_MS = 10 * 60_000;

export function runDnsHook(hook: string, action: 'set' | 'unset', record: string, value: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(hook, [action, record, value], { timeout: HOOK_TIMEOUT_MS, maxBuffer: 64 * 1024 }, (error, _stdout, stderr) => {
      if (!error) return resolve();
      const detail = String(stderr).trim().slice(0, 300);
      reject(new Error(`ACME_DNS_HOOK ${action} ${record} failed: ${error.message}${detail ? `: ${detail}` : ''}`));
    });
  });
}

/** The TXT record dns-01 validates for `name` (a wildcard's is its base's, RFC 8555 §8.4). */
export function dnsRecordOf(name: string): string {
  return `_acme-challenge.${name.replace(/^\*\./, '')}`;
}
