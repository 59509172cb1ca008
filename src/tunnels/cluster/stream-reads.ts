// Reading the small framed parts of link streams (a kind byte, a header, a description) before
// the rest of the stream is piped on: what is not read stays buffered in the stream, paused.
import type { Readable } from 'node:stream';

/** The next `size` bytes (undefined if the stream ends first); the stream is left paused after them. */
export function readExactly(stream: Readable, size: number): Promise<Buffer | undefined> {
  if (size === 0) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve) => {
    const done = (value: Buffer | undefined) => {
      stream.off('readable', onReadable);
      stream.off('end', onEnd);
      stream.off('close', onEnd);
      resolve(value);
    };
    const onReadable = () => {
      const bytes = stream.read(size) as Buffer | null;
      if (bytes !== null) done(bytes);
    };
    const onEnd = () => done(undefined);
    stream.on('readable', onReadable);
    stream.once('end', onEnd);
    stream.once('close', onEnd);
  });
}

/** The rest of the stream as text; undefined past `max` bytes (the stream destroyed) or on a failure. */
export function readToEnd(stream: Readable, max: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        stream.destroy();
        return resolve(undefined);
      }
      chunks.push(chunk);
    });
    stream.once('end', () => resolve(Buffer.concat(chunks).toString()));
    stream.once('close', () => resolve(undefined));
  });
}
