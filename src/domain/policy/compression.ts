/**
 * compress-response's negotiation (HTTP-POLICY.md §2): the client's Accept-Encoding (RFC 9110
 * §12.5.3, q-values) against the action's algorithms; a tie goes to the action's order.
 */
import type { CompressionAlgorithm } from './types.js';

/** Bodies of a known length below this are not worth a compressor (the reference's "tiny bodies"). */
export const MIN_COMPRESSED_BYTES = 1024;

export function negotiateEncoding(acceptEncoding: readonly string[], algorithms: readonly CompressionAlgorithm[]): CompressionAlgorithm | undefined {
  const weights = new Map<string, number>();
  for (const line of acceptEncoding) {
    for (const part of line.split(',')) {
      const [token, ...params] = part.trim().toLowerCase().split(';');
      if (!token) continue;
      const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      const weight = q === undefined ? 1 : Number(q);
      weights.set(token.trim(), Number.isFinite(weight) ? weight : 0);
    }
  }
  let best: CompressionAlgorithm | undefined;
  let bestWeight = 0;
  for (const algorithm of algorithms) {
    const weight = weights.get(algorithm) ?? weights.get('*') ?? 0;
    if (weight > bestWeight) {
      best = algorithm;
      bestWeight = weight;
    }
  }
  return best;
}
