// conn.tls.* of a connection burrow terminated: read once from the handshake, when it is done.
// Names and formats follow the reference (Go's crypto/x509): subject fields by attribute, serial
// in lower-case hex, SANs in OpenSSL's text, the PEM with \n newlines.
import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { emptyCertificate, emptyName, tlsVariables, type CertificateVariables, type DistinguishedName, type TlsVariables } from '../../domain/policy/tls-variables.js';
import { certificateDetails } from './certificate-der.js';

/** Before the handshake: only the name the ClientHello asked for. */
export function helloTls(sni: string): TlsVariables {
  return tlsVariables({ sni });
}

export function handshakeTls(secure: TLSSocket, sni: string): TlsVariables {
  const protocol = secure.getProtocol() ?? '';
  const peer = secure.getPeerCertificate();
  const own = secure.getCertificate();
  const client = peer && peer.raw ? certificateOf(peer.raw) : undefined;
  return tlsVariables({
    sni,
    version: protocol.startsWith('TLSv') ? (protocol === 'TLSv1' ? '1.0' : protocol.slice(4)) : protocol,
    cipher_suite: secure.getCipher()?.standardName ?? '',
    negotiated_alpn: typeof secure.alpnProtocol === 'string' ? secure.alpnProtocol : '',
    session_resumed: secure.isSessionReused(),
    client: client ? { ...client.variables, pem: client.pem } : undefined,
    server: own && 'raw' in own && own.raw ? certificateOf(own.raw).variables : undefined,
  });
}

function certificateOf(raw: Buffer): { variables: CertificateVariables; pem: string } {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(raw);
  } catch {
    return { variables: emptyCertificate(), pem: '' };
  }
  const legacy = cert.toLegacyObject();
  const details = certificateDetails(raw);
  return {
    pem: cert.toString().trim(),
    variables: {
      extensions: details.extensions,
      issuer: nameOf(legacy.issuer as unknown as Record<string, string | string[]>),
      subject: nameOf(legacy.subject as unknown as Record<string, string | string[]>),
      san: sansOf(cert.subjectAltName ?? ''),
      serial_number: cert.serialNumber.toLowerCase().replace(/^0+(?=.)/, ''),
      signature_algorithm: details.signatureAlgorithm,
      validity: { not_before: new Date(cert.validFrom), not_after: new Date(cert.validTo) },
    },
  };
}

function nameOf(fields: Record<string, string | string[]> | undefined): DistinguishedName {
  const name = emptyName();
  if (!fields) return name;
  const all = (key: string): string[] => {
    const value = fields[key];
    return value === undefined ? [] : Array.isArray(value) ? [...value] : [value];
  };
  name.common_name = all('CN')[0] ?? '';
  name.country = all('C');
  name.locality = all('L');
  name.organization = all('O');
  name.organizational_unit = all('OU');
  name.postal_code = all('postalCode');
  name.province = all('ST');
  name.street_address = all('street');
  return name;
}

/** `DNS:a, IP Address:1.2.3.4, email:x@y, URI:u` (quoted entries, with commas, are JSON strings). */
function sansOf(text: string): CertificateVariables['san'] {
  const san: CertificateVariables['san'] = { dns_names: [], email_addresses: [], ip_addresses: [], uris: [] };
  for (const entry of text.match(/(?:[^,"]|"(?:[^"\\]|\\.)*")+/g) ?? []) {
    const trimmed = entry.trim();
    const colon = trimmed.indexOf(':');
    if (colon < 0) continue;
    const kind = trimmed.slice(0, colon);
    let value = trimmed.slice(colon + 1);
    if (value.startsWith('"')) {
      try {
        value = JSON.parse(value) as string;
      } catch {
        continue;
      }
    }
    if (kind === 'DNS') san.dns_names.push(value);
    else if (kind === 'email') san.email_addresses.push(value);
    else if (kind === 'IP Address') san.ip_addresses.push(value);
    else if (kind === 'URI') san.uris.push(value);
  }
  return san;
}
