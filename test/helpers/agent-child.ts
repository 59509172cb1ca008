// An SDK agent as a child process: argv[2] is a JSON config (see data-plane.ts spawnAgent). Prints
// one JSON line, {"urls": [...]} once every listener is bound (or {"error": "..."}), then serves
// until killed.
import { readFileSync } from 'node:fs';
import ngrok from '@ngrok/ngrok';
import type { ChildEndpoint } from './traffic.js';

const config = JSON.parse(process.argv[2]!) as { serverAddr: string; caPath: string; token: string; endpoints: ChildEndpoint[] };

try {
  const session = await new ngrok.SessionBuilder().authtoken(config.token).serverAddr(config.serverAddr).caCert(readFileSync(config.caPath)).connect();
  const urls: string[] = [];
  for (const endpoint of config.endpoints) {
    let listener: ngrok.Listener;
    if (endpoint.kind === 'tcp') {
      const builder = session.tcpEndpoint();
      if (endpoint.remoteAddr) builder.remoteAddr(endpoint.remoteAddr);
      listener = await builder.listenAndForward(endpoint.forward);
    } else if (endpoint.kind === 'tls') {
      const builder = session.tlsEndpoint();
      if (endpoint.domain) builder.domain(endpoint.domain);
      listener = await builder.listenAndForward(endpoint.forward);
    } else {
      const builder = session.httpEndpoint();
      if (endpoint.kind === 'http') builder.scheme('HTTP');
      if (endpoint.domain) builder.domain(endpoint.domain);
      if (endpoint.pooling) builder.poolingEnabled(true);
      listener = await builder.listenAndForward(endpoint.forward);
    }
    urls.push(listener.url()!);
  }
  process.stdout.write(JSON.stringify({ urls }) + '\n');
} catch (error) {
  process.stdout.write(JSON.stringify({ error: String(error) }) + '\n');
  process.exit(1);
}
setInterval(() => {}, 60_000);
