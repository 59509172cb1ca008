/**
 * The `terminate-tls` action (HTTP-POLICY.md §2, on_tcp_connect of tls and https endpoints and TLS
 * edges). Fields, values and defaults as the reference's page "Terminate TLS Action": versions 1.2
 * or 1.3 (default 1.2 to 1.3), mutual TLS CAs as PEM, strategy require-and-verify (default),
 * require-any or request. A custom server certificate is not served: burrow uses the one it serves
 * for the name.
 */
import { X509Certificate } from 'node:crypto';
import type { MapNode, TreeNode } from './parse.js';
import { field, isNull, rejectUnknownKeys, scalarOrKind } from './structure.js';
import { CODES, fail, kindOf, quoted } from './problem.js';
import type { EndpointKind } from './phases.js';

export const TLS_VERSIONS_SERVED = ['1.2', '1.3'] as const;
export const MUTUAL_TLS_STRATEGIES = ['require-and-verify', 'require-any', 'request'] as const;

export interface TerminateTlsAction {
  type: 'terminate-tls';
  config: {
    min_version: (typeof TLS_VERSIONS_SERVED)[number];
    max_version: (typeof TLS_VERSIONS_SERVED)[number];
    /** PEM certificates, as written. */
    mutual_tls_certificate_authorities: string[];
    mutual_tls_verification_strategy: (typeof MUTUAL_TLS_STRATEGIES)[number];
  };
}

const KEYS = ['min_version', 'max_version', 'server_certificate', 'server_private_key', 'mutual_tls_certificate_authorities', 'mutual_tls_verification_strategy'];
const TERMINATING_KINDS: ReadonlySet<EndpointKind> = new Set(['tls', 'https', 'tls-edge']);

export function validateTerminateTls(where: string, config: TreeNode | null, kind: EndpointKind): TerminateTlsAction {
  if (!TERMINATING_KINDS.has(kind)) {
    fail(CODES.actionNotAllowed, `${where}: action type "terminate-tls" is allowed on tls and https endpoints and TLS edges only; a ${kind} endpoint carries no TLS to terminate.`);
  }
  const action: TerminateTlsAction = {
    type: 'terminate-tls',
    config: { min_version: '1.2', max_version: '1.3', mutual_tls_certificate_authorities: [], mutual_tls_verification_strategy: 'require-and-verify' },
  };
  if (!config || isNull(config)) return action;
  if (config.kind !== 'map') fail(CODES.configMalformed, `${where}: config must be a mapping, but it is ${kindOf(scalarOrKind(config))}.`);
  const map: MapNode = config;
  rejectUnknownKeys(map, KEYS, (key) => `${where}: config has the unknown key ${quoted(key, 32)}; terminate-tls accepts ${KEYS.join(', ')}.`, CODES.configMalformed);
  for (const key of ['server_certificate', 'server_private_key']) {
    if (field(map, key)) fail(CODES.configInvalid, `${where}: config.${key} is not supported: burrow terminates with the certificate it serves for the endpoint's name (EDGE_TLS_CERTS_DIR, ACME or its CA).`);
  }
  const min = oneOf(where, map, 'min_version', TLS_VERSIONS_SERVED);
  const max = oneOf(where, map, 'max_version', TLS_VERSIONS_SERVED);
  if (min) action.config.min_version = min;
  if (max) action.config.max_version = max;
  if (action.config.min_version > action.config.max_version) {
    fail(CODES.configInvalid, `${where}: config.min_version (${action.config.min_version}) is above config.max_version (${action.config.max_version}).`);
  }
  const strategy = oneOf(where, map, 'mutual_tls_verification_strategy', MUTUAL_TLS_STRATEGIES);
  if (strategy) action.config.mutual_tls_verification_strategy = strategy;
  const cas = field(map, 'mutual_tls_certificate_authorities');
  if (cas && !isNull(cas.value)) {
    if (cas.value.kind !== 'seq') fail(CODES.configMalformed, `${where}: config.mutual_tls_certificate_authorities must be a list of PEM certificates.`);
    cas.value.items.forEach((item, index) => {
      const pem = item.kind === 'scalar' && typeof item.value === 'string' ? item.value : undefined;
      if (pem === undefined || !isCaCertificate(pem)) {
        fail(CODES.configInvalid, `${where}: config.mutual_tls_certificate_authorities entry ${index + 1} is not a PEM certificate (CA ids are not served: paste the certificate).`);
      }
      action.config.mutual_tls_certificate_authorities.push(pem);
    });
  }
  return action;
}

function oneOf<T extends string>(where: string, map: MapNode, key: string, values: readonly T[]): T | undefined {
  const entry = field(map, key);
  if (!entry || isNull(entry.value)) return undefined;
  const value = entry.value.kind === 'scalar' ? String(entry.value.value) : undefined;
  if (value === undefined || !(values as readonly string[]).includes(value)) {
    fail(CODES.configInvalid, `${where}: config.${key} must be one of ${values.map((v) => `"${v}"`).join(', ')}.`);
  }
  return value as T;
}

function isCaCertificate(pem: string): boolean {
  try {
    new X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}
