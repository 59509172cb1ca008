// An SDK agent that exits when the server tells it to stop, as the ngrok agent does: argv[2] is
// {"serverAddr","caPath","token"}. Prints {"url": ...} once its HTTPS endpoint is bound.
import { readFileSync } from 'node:fs';
import ngrok from '@ngrok/ngrok';

const config = JSON.parse(process.argv[2]!) as { serverAddr: string; caPath: string; token: string };
const session = await new ngrok.SessionBuilder()
  .authtoken(config.token)
  .serverAddr(config.serverAddr)
  .caCert(readFileSync(config.caPath))
  .metadata('console test agent')
  .handleStopCommand(() => {
    process.stdout.write(JSON.stringify({ stopped: true }) + '\n');
    setTimeout(() => process.exit(0), 50);
  })
  .connect();
const listener = await session.httpEndpoint().listenAndForward('http://127.0.0.1:9');
process.stdout.write(JSON.stringify({ url: listener.url() }) + '\n');
setInterval(() => {}, 60_000);
