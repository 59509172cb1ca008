import { createServer } from 'node:http';

/**
 * The baseline: a bare node:http server that reads each request (body included) and answers
 * 200 with one fixed JSON body, BASELINE_BODY (a real credential answer of burrow). No routing,
 * no parsing, no database: the practical upper bound of one Node process on this machine.
 *
 * Prints `listening <url>` once listening; exits when its stdin closes (the bench is gone).
 */
const body = Buffer.from(process.env.BASELINE_BODY ?? '{}', 'utf8');
const headers = { 'content-type': 'application/json', 'content-length': String(body.length) };

const server = createServer((request, response) => {
  request.on('end', () => {
    response.writeHead(200, headers);
    response.end(body);
  });
  request.resume();
});
server.keepAliveTimeout = 5_000; // burrow's default KEEP_ALIVE_TIMEOUT_MS

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('unexpected address');
  process.stdout.write(`listening http://127.0.0.1:${address.port}\n`);
});

process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => process.exit(0));
