/**
 * The bind options served as TLS settings at the edge (bind-options.ts): `MutualTLSCA` (https) and
 * `MutualTLSAtEdge` (tls), `{mutual_tls_ca: <base64 PEM bundle>}`: client certificates required and
 * verified against those CAs; `TLSTermination` (tls), `{cert, key, sealed_key}` (base64 PEM): burrow
 * terminates TLS with that certificate (or, both empty, with the one it serves for the name) and the
 * agent gets plaintext. Wire shapes: ngrok-rust's proto.rs `MutualTls` and `TlsTermination`. Bad
 * PEM refuses the bind with the reference's certificate codes, naming the option; the key never
 * appears in a message.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { AgentRefusal } from './agent-errors.js';
import type { BindProto } from './binds.js';

/** TLS the bind asks burrow to terminate at the edge, beyond what it does anyway. */
export interface EdgeTlsOption {
  /** PEM certificates a client certificate must chain to; absent: none asked for. */
  readonly clientCas?: readonly string[];
  /** The agent's certificate (TLSTermination); absent: the one burrow serves for the name. */
  readonly certificate?: AgentCertificate;
}

/** A certificate chain and its key, from the agent: kept in memory only, never serialised. */
export class AgentCertificate {
  readonly #key: string;

  constructor(
    /** PEM chain, leaf first. */
    readonly cert: string,
    key: string,
  ) {
    this.#key = key;
  }

  /** The PEM private key, for the TLS context only. */
  privateKey(): string {
    return this.#key;
  }

  toJSON(): unknown {
    return { cert: this.cert, key: '[redacted]' };
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
/** A CA bundle the agent sends: more would be a bundle nobody means. */
const MAX_CAS = 100;

/**
 * The edge TLS a bind's Opts ask for, undefined when none; throws the refusal for a bad value.
 * `opts` keys are read in any case, as the protocol layer reads them.
 */
export function edgeTlsOf(opts: Readonly<Record<string, unknown>>, proto: BindProto): EdgeTlsOption | undefined {
  if (proto === 'https') {
    const ca = option(opts, 'MutualTLSCA');
    return ca === undefined ? undefined : { clientCas: caBundle('MutualTLSCA', ca) };
  }
  if (proto !== 'tls') return undefined;
  const ca = option(opts, 'MutualTLSAtEdge');
  const termination = option(opts, 'TLSTermination');
  if (ca === undefined && termination === undefined) return undefined;
  // Client certificates can only be checked where TLS ends: MutualTLSAtEdge alone terminates too.
  const certificate = termination === undefined ? undefined : agentCertificate(termination);
  return { ...(ca !== undefined ? { clientCas: caBundle('MutualTLSAtEdge', ca) } : {}), ...(certificate ? { certificate } : {}) };
}

/**
 * The Opts that `edgeTlsOf(…, proto)` reads back as `edgeTls`, for another instance that serves
 * the bind's public connections (CLUSTER.md §2): it checks them as the bind's were. They hold the
 * agent's key in the clear: they go over the cluster link only, never to a log or a row.
 */
export function edgeTlsOpts(edgeTls: EdgeTlsOption, proto: BindProto): Record<string, unknown> {
  const base64 = (text: string) => Buffer.from(text).toString('base64');
  const opts: Record<string, unknown> = {};
  if (edgeTls.clientCas) opts[proto === 'https' ? 'MutualTLSCA' : 'MutualTLSAtEdge'] = { mutual_tls_ca: base64(edgeTls.clientCas.join('\n')) };
  const certificate = edgeTls.certificate;
  if (certificate) opts.TLSTermination = { cert: base64(certificate.cert), key: base64(certificate.privateKey()) };
  // TLSTermination without a certificate (burrow's own is served): its empty form says so again
  else if (proto === 'tls' && !edgeTls.clientCas) opts.TLSTermination = {};
  return opts;
}

function option(opts: Readonly<Record<string, unknown>>, name: string): Record<string, unknown> | undefined {
  const key = Object.keys(opts).findLast((k) => k.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : opts[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw refusal(301, `Opts.${name} must be an object.`);
  return value as Record<string, unknown>;
}

function field(value: Record<string, unknown>, name: string): unknown {
  const key = Object.keys(value).findLast((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : value[key];
}

/** A base64 field (Go and RS encode []byte so) as text; "" when absent. */
function bytesText(option: string, value: Record<string, unknown>, name: string): string {
  const raw = field(value, name);
  if (raw === undefined || raw === null || raw === '') return '';
  if (typeof raw !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(raw.replace(/\s+/g, ''))) {
    throw refusal(301, `Opts.${option}.${name} must be base64-encoded PEM.`);
  }
  return Buffer.from(raw, 'base64').toString('utf8');
}

function caBundle(option: string, value: Record<string, unknown>): string[] {
  const pem = bytesText(option, value, 'mutual_tls_ca');
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw refusal(1922, `No PEM-encoded certificate was found in Opts.${option}.mutual_tls_ca.`);
  if (blocks.length > MAX_CAS) throw refusal(301, `Opts.${option}.mutual_tls_ca holds ${blocks.length} certificates; at most ${MAX_CAS} are accepted.`);
  blocks.forEach((block, index) => parseCertificate(`Opts.${option}.mutual_tls_ca`, block, index));
  return blocks;
}

function agentCertificate(value: Record<string, unknown>): AgentCertificate | undefined {
  const cert = bytesText('TLSTermination', value, 'cert');
  const key = bytesText('TLSTermination', value, 'key');
  if (key === '' && bytesText('TLSTermination', value, 'sealed_key') !== '') {
    throw refusal(301, 'Opts.TLSTermination: sealed keys need the hosted service\'s key and are not served; send the key itself.');
  }
  if (cert === '' && key === '') return undefined;
  const blocks = cert.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw refusal(1919, 'No certificate PEM data was sent in Opts.TLSTermination.cert.');
  const chain = blocks.map((block, index) => parseCertificate('Opts.TLSTermination.cert', block, index));
  if (key === '') throw refusal(1901, 'No PEM-encoded private key was found in Opts.TLSTermination.key.');
  const privateKey = parseKey(key);
  if (!chain[0]!.checkPrivateKey(privateKey)) throw refusal(1903, 'The private key of Opts.TLSTermination does not belong to its certificate (the first of Opts.TLSTermination.cert).');
  return new AgentCertificate(blocks.join('\n') + '\n', key);
}

function parseCertificate(where: string, pem: string, index: number): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch {
    throw refusal(1900, `The provided certificate is in an unknown or unsupported format. The error encountered while parsing was: "${where}, certificate ${index + 1}, is not a valid X.509 certificate".`);
  }
}

function parseKey(pem: string): KeyObject {
  if (/-----BEGIN CERTIFICATE-----/.test(pem) && !/PRIVATE KEY-----/.test(pem)) throw refusal(1924, 'The provided private key is actually a certificate (Opts.TLSTermination.key).');
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) throw refusal(1901, 'No PEM-encoded private key was found in Opts.TLSTermination.key.');
  if (/ENCRYPTED/.test(pem)) throw refusal(1902, 'The provided private key is encrypted (Opts.TLSTermination.key).');
  try {
    return createPrivateKey(pem);
  } catch {
    // Never the parser's text: it may quote the key.
    throw refusal(1903, 'The provided private key is in an unknown or unsupported format (Opts.TLSTermination.key).');
  }
}

function refusal(code: number, message: string): AgentRefusal {
  return new AgentRefusal(code, message);
}
