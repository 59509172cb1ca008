// compress-response's body (HTTP-POLICY.md §2): a zlib stream between the agent's body and the
// client, never the whole body in memory. Small chunks are flushed as they come would cost ratio:
// zlib's own buffering decides, and the end flushes the rest.
import zlib from 'node:zlib';
import type { Transform } from 'node:stream';

export type Compression = 'gzip' | 'br' | 'deflate';

export function compressor(algorithm: Compression): Transform {
  switch (algorithm) {
    case 'br':
      // Quality 4: close to gzip's speed with a better ratio (11, the default, is for static files).
      return zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } });
    case 'gzip':
      return zlib.createGzip({ level: 6 });
    case 'deflate':
      return zlib.createDeflate({ level: 6 });
  }
}

/** A whole (small) answer an action made, compressed at once. */
export function compressSync(algorithm: Compression, body: Buffer): Buffer {
  switch (algorithm) {
    case 'br':
      return zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } });
    case 'gzip':
      return zlib.gzipSync(body);
    case 'deflate':
      return zlib.deflateSync(body);
  }
}
