import localtunnel from 'localtunnel';

/**
 * The `localtunnel` client from npm, forwarding to the local HTTP server (LT_LOCAL_PORT) through
 * the localtunnel server at LT_HOST. Prints `listening http://<subdomain>` (its Host is how the
 * server routes a request to this tunnel); exits when stdin closes.
 */
const tunnel = await localtunnel({ port: Number(process.env.LT_LOCAL_PORT), local_host: '127.0.0.1', host: process.env.LT_HOST!, subdomain: 'burrowbench' });
tunnel.on('error', (error: Error) => process.stderr.write(`localtunnel client: ${error.message}\n`));
process.stdout.write(`listening http://${tunnel.clientId}\n`);
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
