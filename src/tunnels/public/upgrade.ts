// An upgrade request (WebSocket, h2c …) once its head is on the proxy stream: the agent's bytes go
// to the client as they come, but the client's own bytes follow only once the local server has
// switched protocols (101). A local server that declines answers as to any request; after that
// answer the connection closes: it was handed over raw by Node's server and cannot be parsed
// again, and a raw tunnel to the local server would carry later requests without burrow's
// routing or forwarded headers (a client could write its own X-Forwarded-For).
import type { Duplex } from 'node:stream';
import { responseParser } from './llhttp.js';
import { splice } from './splice.js';

/** `head`: the request was a HEAD, whose answer has no body whatever its Content-Length says. */
export function relayUpgrade(client: Duplex, stream: Duplex, head: boolean): void {
  let switched = false;
  let informational = false;
  let declined = false;
  const parser = responseParser({
    onHeaders: () => {},
    onHeadersComplete: (_headers, status, _message, upgrade) => {
      switched = upgrade || status === 101;
      informational = !switched && status < 200;
      // a 1xx has no body, nor an answer to HEAD; another final answer's body is parsed to find its end
      return informational || head ? 1 : 0;
    },
    onBody: () => {},
    onMessageComplete: () => {
      if (!switched && !informational) declined = true;
      informational = false;
    },
  });
  const stopParsing = () => {
    stream.off('data', onData);
    setImmediate(() => parser.close());
  };
  const onData = (chunk: Buffer) => {
    const result = parser.execute(chunk);
    if (typeof result !== 'number') {
      stopParsing();
      stream.destroy();
      client.destroy();
      return;
    }
    if (!client.write(chunk)) {
      stream.pause();
      client.once('drain', () => stream.resume());
    }
    if (switched) {
      stopParsing();
      splice(client, stream, () => {});
    } else if (declined) {
      stopParsing();
      stream.destroy();
      client.end();
    }
  };
  stream.on('data', onData);
  stream.on('error', () => {});
  // the agent's FIN or a reset before any verdict: the client gets what came, then the close
  stream.once('end', () => {
    if (switched || declined) return;
    stopParsing();
    client.end();
  });
  stream.once('close', () => {
    if (!switched && !declined) client.destroy();
  });
  client.once('close', () => {
    if (!switched) stream.destroy();
  });
}
