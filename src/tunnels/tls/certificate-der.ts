// What node:crypto's X509Certificate does not expose: the signature algorithm and the extensions,
// read from the DER (RFC 5280 §4.1). Bounded: only the certificate's own bytes are walked, and a
// malformed one yields empty values rather than an error.

interface Tlv {
  tag: number;
  start: number;
  end: number;
}

/** Go's x509.SignatureAlgorithm names, as the reference prints them. */
const SIGNATURE_ALGORITHMS: Readonly<Record<string, string>> = {
  '1.2.840.113549.1.1.4': 'MD5-RSA',
  '1.2.840.113549.1.1.5': 'SHA1-RSA',
  '1.2.840.113549.1.1.11': 'SHA256-RSA',
  '1.2.840.113549.1.1.12': 'SHA384-RSA',
  '1.2.840.113549.1.1.13': 'SHA512-RSA',
  '1.2.840.113549.1.1.10': 'SHA256-RSAPSS',
  '1.2.840.10045.4.1': 'ECDSA-SHA1',
  '1.2.840.10045.4.3.2': 'ECDSA-SHA256',
  '1.2.840.10045.4.3.3': 'ECDSA-SHA384',
  '1.2.840.10045.4.3.4': 'ECDSA-SHA512',
  '1.3.101.112': 'Ed25519',
};

export interface CertificateDetails {
  signatureAlgorithm: string;
  extensions: Array<{ id: string; critical: boolean; value: Uint8Array }>;
}

export function certificateDetails(der: Buffer): CertificateDetails {
  try {
    const certificate = children(der, read(der, 0));
    const [tbs, algorithm] = certificate;
    if (!tbs || !algorithm) return { signatureAlgorithm: '', extensions: [] };
    const oid = oidText(der, children(der, algorithm)[0]);
    return { signatureAlgorithm: SIGNATURE_ALGORITHMS[oid] ?? oid, extensions: extensionsOf(der, tbs) };
  } catch {
    return { signatureAlgorithm: '', extensions: [] };
  }
}

function extensionsOf(der: Buffer, tbs: Tlv): CertificateDetails['extensions'] {
  const wrapper = children(der, tbs).find((field) => field.tag === 0xa3);
  if (!wrapper) return [];
  const list = children(der, wrapper)[0];
  if (!list) return [];
  return children(der, list).map((extension) => {
    const parts = children(der, extension);
    const critical = parts.length === 3 && parts[1]!.tag === 0x01 && der[parts[1]!.start] !== 0;
    const value = parts.at(-1)!;
    return { id: oidText(der, parts[0]), critical, value: new Uint8Array(der.subarray(value.start, value.end)) };
  });
}

function read(der: Buffer, offset: number): Tlv {
  const tag = der[offset]!;
  let length = der[offset + 1]!;
  let start = offset + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4) throw new Error('unsupported length');
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + der[start + i]!;
    start += bytes;
  }
  const end = start + length;
  if (end > der.length) throw new Error('truncated');
  return { tag, start, end };
}

function children(der: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let offset = parent.start; offset < parent.end; ) {
    const child = read(der, offset);
    if (child.end > parent.end) throw new Error('overlong');
    out.push(child);
    offset = child.end;
  }
  return out;
}

function oidText(der: Buffer, tlv: Tlv | undefined): string {
  if (!tlv || tlv.tag !== 0x06 || tlv.end <= tlv.start) return '';
  const first = der[tlv.start]!;
  const arcs = [Math.min(2, Math.floor(first / 40)), first - Math.min(2, Math.floor(first / 40)) * 40];
  let value = 0;
  for (let i = tlv.start + 1; i < tlv.end; i++) {
    value = value * 128 + (der[i]! & 0x7f);
    if (!(der[i]! & 0x80)) {
      arcs.push(value);
      value = 0;
    }
  }
  return arcs.join('.');
}
